package provider

import (
	"context"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// Reasoning that came under "reasoning" alone (vLLM, OpenRouter, Groq,
// Cerebras) does not go back as reasoning_content, which Groq and Cerebras
// refuse ("property 'reasoning_content' is unsupported"); DeepSeek's,
// under "reasoning_content", does, streamed or not.
func TestReasoningFieldBack(t *testing.T) {
	for _, tc := range []struct {
		field string
		back  bool
	}{
		{"reasoning_content", true},
		{"reasoning", false},
		{"reasoning_content,reasoning", true},
	} {
		for _, streamed := range []bool{false, true} {
			srv := providertest.NewOpenAIServer(t,
				providertest.Reply{Thinking: []providertest.Thinking{{Text: "I should look it up."}}, ReasoningField: tc.field,
					ToolCalls: []providertest.ToolCall{{ID: "call_w1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
				providertest.Reply{Text: "Sunny."})
			m := openFake(t, "openai/gpt-oss-120b", srv)
			tools := []*dialog.Function{weatherTool(t)}
			req := &Request{Messages: []*dialog.Message{userMsg("Weather in Paris?")}, Tools: tools}
			if streamed {
				req.Stream = func(_ context.Context, _ Chunk) error { return nil }
			}
			first := generate(t, m, req).Message
			if first.ReasoningText() != "I should look it up." || len(first.FunctionCalls) != 1 {
				t.Fatalf("%s, streamed %v: first reply reasoning %q, calls %+v", tc.field, streamed, first.ReasoningText(), first.FunctionCalls)
			}
			req.Messages = append(req.Messages, &first,
				&dialog.Message{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "call_w1", Content: "sunny"})
			generate(t, m, req)
			rc, sent := providertest.Messages(srv.LastRequest().JSON())[1]["reasoning_content"]
			if sent != tc.back || tc.back && rc != "I should look it up." {
				t.Errorf("%s, streamed %v: reasoning_content sent %v (%v), want sent %v", tc.field, streamed, sent, rc, tc.back)
			}
		}
	}
}
