package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// Gemini 3 signs a reply's first function call; the signature, which
// Google's client drops, is kept on the message (as a reasoning block
// naming the call) and goes back on that call's part in the next request,
// which Gemini 3 refuses without it. Streamed or not, with or without text
// before the calls.
func TestGeminiThoughtSignatures(t *testing.T) {
	calls := []providertest.ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}, {Name: "get_weather", Arguments: `{"city":"Rome"}`}}
	for _, tc := range []struct {
		name     string
		text     string
		streamed bool
	}{{"whole", "", false}, {"streamed", "", true}, {"with text", "Let me check.", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewGeminiServer(t,
				providertest.Reply{Text: tc.text, Thinking: []providertest.Thinking{{Text: "two cities"}}, ToolCalls: calls},
				providertest.Reply{Text: "Sunny in both."})
			m := openFake(t, "googleai/gemini-3-pro-preview", srv)
			var stream func(context.Context, Chunk) error
			if tc.streamed {
				stream = func(context.Context, Chunk) error { return nil }
			}
			req := &Request{Messages: []*dialog.Message{userMsg("Weather in Paris and Rome?")}, Tools: []*dialog.Function{weatherTool(t)}, Stream: stream}
			first := generate(t, m, req).Message
			want := []dialog.Reasoning{{Signature: providertest.Signature("two cities"), Call: first.FunctionCalls[0].ID}}
			if !reflect.DeepEqual(first.Reasoning, want) {
				t.Fatalf("reasoning %+v, want %+v", first.Reasoning, want)
			}
			msgs := []*dialog.Message{req.Messages[0], &first}
			for _, fc := range first.FunctionCalls {
				msgs = append(msgs, &dialog.Message{Role: dialog.RoleTool, Name: fc.Name, ToolCallID: fc.ID, Content: "sunny"})
			}
			second := generate(t, m, &Request{Messages: msgs, Tools: req.Tools, Stream: stream}).Message
			if second.Content != "Sunny in both." {
				t.Fatalf("second reply %q", second.Content)
			}
			parts := providertest.GeminiParts(providertest.GeminiContents(srv.LastRequest().JSON())[1])
			var sigs []any
			for _, p := range parts {
				sigs = append(sigs, p["thoughtSignature"])
			}
			wantSigs := []any{providertest.Signature("two cities"), nil}
			if tc.text != "" {
				wantSigs = append([]any{nil}, wantSigs...)
			}
			if !reflect.DeepEqual(sigs, wantSigs) {
				t.Errorf("the model turn's parts carry signatures %v, want %v", sigs, wantSigs)
			}
		})
	}
}

// Without its signature, a Gemini 3 tool round is refused (the fake's
// check, which makes the tests of signatures prove something); a Gemini 2.5
// one is not, nor one with Google's placeholder.
func TestGeminiFakeChecksSignatures(t *testing.T) {
	srv := providertest.NewGeminiServer(t, providertest.Reply{Text: "ok"}, providertest.Reply{Text: "ok"})
	post := func(model, sig string) int {
		call := `{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}` + sig + `}`
		body := `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]},{"role":"model","parts":[` + call + `]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"sunny"}}}]}]}`
		req, err := http.NewRequest("POST", srv.URL+"/v1beta/models/"+model+":generateContent", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-goog-api-key", "k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		model, sig string
		want       int
	}{
		{"gemini-3-pro-preview", "", http.StatusBadRequest},
		{"gemini-3-pro-preview", `,"thoughtSignature":"forged"`, http.StatusBadRequest},
		{"gemini-3-pro-preview", `,"thoughtSignature":"skip_thought_signature_validator"`, http.StatusOK},
		{"gemini-2.5-flash", "", http.StatusOK},
	} {
		if got := post(tc.model, tc.sig); got != tc.want {
			t.Errorf("%s with signature %q: status %d, want %d", tc.model, tc.sig, got, tc.want)
		}
	}
}

// The results of a turn's parallel calls, one tool message each in the
// dialog, go to Gemini in one content, as it requires (it refuses a
// function call turn answered by fewer function responses).
func TestGeminiParallelResultsInOneContent(t *testing.T) {
	srv := providertest.NewGeminiServer(t)
	var calls []dialog.FunctionCall
	msgs := []*dialog.Message{userMsg("Weather in Paris and Rome?"), nil}
	for i, city := range []string{"Paris", "Rome"} {
		id := fmt.Sprintf("call_%d", i+1)
		calls = append(calls, dialog.FunctionCall{ID: id, Name: "get_weather", Arguments: json.RawMessage(`{"city":"` + city + `"}`)})
		msgs = append(msgs, &dialog.Message{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: id, Content: "sunny in " + city})
	}
	msgs[1] = &dialog.Message{Role: dialog.RoleToolCall, FunctionCalls: calls}
	generate(t, openFake(t, "googleai/gemini-2.5-flash", srv), &Request{Messages: append(msgs, userMsg("And tomorrow?")), Tools: []*dialog.Function{weatherTool(t)}})
	contents := providertest.GeminiContents(srv.LastRequest().JSON())
	if len(contents) != 4 || len(providertest.GeminiParts(contents[2])) != 2 {
		t.Fatalf("contents %v: want the two responses in the third", contents)
	}
	for i, p := range providertest.GeminiParts(contents[2]) {
		r, _ := p["functionResponse"].(map[string]any)
		if r["name"] != "get_weather" || !strings.Contains(fmt.Sprint(r["response"]), []string{"Paris", "Rome"}[i]) {
			t.Errorf("response %d: %v", i, p)
		}
	}
}

// Thought summaries (includeThoughts), which Google's client takes for
// text, are the reply's reasoning, not its text, streamed or not.
func TestGeminiThoughtSummaries(t *testing.T) {
	include := Params{ExtraBody: json.RawMessage(`{"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`)}
	for _, streamed := range []bool{false, true} {
		srv := providertest.NewGeminiServer(t, providertest.Reply{Text: "Paris.", Thinking: []providertest.Thinking{{Text: "The capital of France. "}, {Text: "That is Paris."}}})
		var stream func(context.Context, Chunk) error
		if streamed {
			stream = func(context.Context, Chunk) error { return nil }
		}
		msg := generate(t, openFake(t, "googleai/gemini-2.5-flash", srv), &Request{Messages: []*dialog.Message{userMsg("Capital of France?")}, Params: include, Stream: stream}).Message
		if msg.Content != "Paris." || msg.ReasoningText() != "The capital of France. That is Paris." {
			t.Errorf("streamed %v: reply %q, reasoning %q", streamed, msg.Content, msg.ReasoningText())
		}
	}
}
