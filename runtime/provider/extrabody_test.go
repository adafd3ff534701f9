package provider

import (
	"encoding/json"
	"strings"
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
