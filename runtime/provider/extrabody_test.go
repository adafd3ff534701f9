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

// ExtraBody reaches the wire as the provider's API spells it, after every
// other setting: an object merges into the member of its name, a value
// replaces, null deletes.
func TestExtraBody(t *testing.T) {
	temp := 0.3
	for _, tc := range []struct {
		model string
		srv   func(testing.TB, ...providertest.Reply) *providertest.Server
		extra string
		check func(body map[string]any) string
	}{
		{"openai/gpt-5-mini", providertest.NewOpenAIServer, `{"reasoning_effort":"low","temperature":null}`,
			func(b map[string]any) string {
				if b["reasoning_effort"] != "low" {
					return "reasoning_effort not sent"
				}
				if _, ok := b["temperature"]; ok {
					return "temperature not deleted"
				}
				return ""
			}},
		{"anthropic/claude-sonnet-4-5", providertest.NewAnthropicServer, `{"thinking":{"type":"enabled","budget_tokens":2048}}`,
			func(b map[string]any) string {
				th, _ := b["thinking"].(map[string]any)
				if th["type"] != "enabled" || th["budget_tokens"] != 2048.0 {
					return "thinking not sent"
				}
				return ""
			}},
		{"googleai/gemini-2.5-flash", providertest.NewGeminiServer, `{"generationConfig":{"thinkingConfig":{"thinkingBudget":0}}}`,
			func(b map[string]any) string {
				gen, _ := b["generationConfig"].(map[string]any)
				th, _ := gen["thinkingConfig"].(map[string]any)
				if th["thinkingBudget"] != 0.0 {
					return "thinkingConfig not merged"
				}
				if gen["temperature"] != 0.3 {
					return "generationConfig's own members lost in the merge"
				}
				return ""
			}},
		{"ollama/qwen3", providertest.NewOllamaServer, `{"think":false}`,
			func(b map[string]any) string {
				if b["think"] != false {
					return "think not sent"
				}
				return ""
			}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			srv := tc.srv(t)
			m := openFake(t, tc.model, srv)
			generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")},
				Params: Params{Temperature: &temp, ExtraBody: json.RawMessage(tc.extra)}})
			body := srv.LastRequest().JSON()
			if problem := tc.check(body); problem != "" {
				t.Errorf("%s: body %v", problem, body)
			}
		})
	}
}

// What would send another request than the one described is refused, by
// Check and by Generate, with one error naming the field.
func TestExtraBodyRefused(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	m := openFake(t, "openai/gpt-4o", srv)
	for extra, want := range map[string]string{
		`"low"`:                     "must be a map",
		`[1]`:                       "must be a map",
		`{"messages":[]}`:           "extra_body: messages: lllm-go sets this member",
		`{"stream":false}`:          "extra_body: stream: lllm-go sets this member",
		`{"a\"b":1}`:                "without quotes",
		`{"x":{"y\\z":1}}`:          "without quotes",
		`{"metadata":{"stream":1}}`: "",
	} {
		p := Params{ExtraBody: json.RawMessage(extra)}
		err := p.Check()
		if want == "" {
			if err != nil {
				t.Errorf("Check(%s) = %v, want nil: only top-level members are owned", extra, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%s) = %v, want %q", extra, err, want)
		}
		n := len(srv.Requests())
		if _, err := m.Generate(t.Context(), &Request{Messages: []*dialog.Message{userMsg("hi")}, Params: p}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Generate with %s: %v, want %q", extra, err, want)
		}
		if len(srv.Requests()) != n {
			t.Errorf("Generate with %s sent a request", extra)
		}
	}
}

// An empty object in extra_body merges as a JSON merge patch does: it
// leaves an object there as it is (model_args' own settings in it
// included), and makes an empty one where there is none or where there is
// something else.
func TestExtraBodyEmptyObjectMerges(t *testing.T) {
	for _, tc := range []struct{ body, extra, want string }{
		{`{"options":{"temperature":0.3,"top_p":0.3}}`, `{"options":{}}`, `{"options":{"temperature":0.3,"top_p":0.3}}`},
		{`{"model":"m"}`, `{"web_search_options":{}}`, `{"model":"m","web_search_options":{}}`},
		{`{"a":1}`, `{"a":{}}`, `{"a":{}}`},
		{`{"generationConfig":{"candidateCount":1}}`, `{"generationConfig":{"thinkingConfig":{}}}`, `{"generationConfig":{"candidateCount":1,"thinkingConfig":{}}}`},
		{`{"generationConfig":{"thinkingConfig":{"thinkingBudget":5}}}`, `{"generationConfig":{"thinkingConfig":{}}}`, `{"generationConfig":{"thinkingConfig":{"thinkingBudget":5}}}`},
	} {
		es, err := extraEdits(json.RawMessage(tc.extra))
		if err != nil {
			t.Fatal(err)
		}
		got, err := editJSON([]byte(tc.body), es)
		if err != nil {
			t.Fatalf("%s + %s: %v", tc.body, tc.extra, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s + extra_body %s = %s, want %s", tc.body, tc.extra, got, tc.want)
		}
	}
}

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
