package provider

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// extra_body on a Bedrock model that is not Anthropic's, whose body
// lllm-go does not edit, is refused, at the config check (CheckFor) and at
// the call, rather than silently dropped while the log says it was sent.
func TestBedrockExtraBodyOnlyAnthropic(t *testing.T) {
	extra := Params{ExtraBody: json.RawMessage(`{"top_p":0.5}`)}
	for model, refused := range map[string]bool{
		"bedrock/meta.llama3-8b-instruct-v1:0":                 true,
		"Bedrock/mistral.mistral-large-2407-v1:0":              true,
		"bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0": false,
		"openai/meta.llama3-8b-instruct-v1:0":                  false,
	} {
		err := extra.CheckFor(model)
		if (err != nil) != refused || refused && !strings.Contains(err.Error(), "only Anthropic models on bedrock") {
			t.Errorf("CheckFor(%q) = %v, want refused %v", model, err, refused)
		}
	}
	if err := (Params{}).CheckFor("bedrock/meta.llama3-8b-instruct-v1:0"); err != nil {
		t.Errorf("params without extra_body refused: %v", err)
	}

	providertest.SetBedrockEnv(t, "us-east-1")
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"generation":"hi","prompt_token_count":3,"generation_token_count":1,"stop_reason":"stop"}`))
	}))
	defer srv.Close()
	m, err := Open(context.Background(), "bedrock/meta.llama3-8b-instruct-v1:0", Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	e := generateErr(t, context.Background(), m, &Request{Messages: []*dialog.Message{userMsg("hi")}, Params: extra})
	if e.Kind != ErrBadRequest || !strings.Contains(e.Error(), "remove extra_body") || calls.Load() != 0 {
		t.Errorf("Generate with extra_body on a Llama model: %v, %d requests sent; want a bad request, none sent", e, calls.Load())
	}
}
