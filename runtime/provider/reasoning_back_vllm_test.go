package provider

import (
	"context"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// vLLM names a reply's reasoning "reasoning" and reads back only that
// member of an earlier tool round (it drops a reasoning_content): each
// tool round goes back to the model that made it with its reasoning under
// "reasoning", streamed or not; the fake refuses a round without.
func TestReasoningBackVLLM(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		srv := providertest.NewOpenAIServer(t,
			providertest.Reply{Thinking: []providertest.Thinking{{Text: "I should look it up."}}, ReasoningField: "reasoning",
				ToolCalls: []providertest.ToolCall{{ID: "call_w1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			providertest.Reply{Thinking: []providertest.Thinking{{Text: "And Lyon too."}}, ReasoningField: "reasoning",
				ToolCalls: []providertest.ToolCall{{ID: "call_w2", Name: "get_weather", Arguments: `{"city":"Lyon"}`}}},
			providertest.Reply{Text: "Sunny in both."})
		m := openFake(t, "openai/MiniMaxAI/MiniMax-M2", srv)
		req := &Request{Messages: []*dialog.Message{userMsg("Weather in Paris and Lyon?")}, Tools: []*dialog.Function{weatherTool(t)}}
		if streamed {
			req.Stream = func(context.Context, Chunk) error { return nil }
		}
		for i, id := range []string{"call_w1", "call_w2"} {
			reply := generate(t, m, req).Message
			if len(reply.FunctionCalls) != 1 {
				t.Fatalf("streamed %v: round %d: calls %+v", streamed, i+1, reply.FunctionCalls)
			}
			req.Messages = append(req.Messages, &reply,
				&dialog.Message{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: id, Content: "sunny"})
		}
		if got := generate(t, m, req).Message.Content; got != "Sunny in both." {
			t.Fatalf("streamed %v: reply %q", streamed, got)
		}
		if sent, want := assistantField(srv, "reasoning"), []any{"I should look it up.", "And Lyon too."}; !jsonEqual(t, sent, want) {
			t.Errorf("streamed %v: assistant messages' reasoning %v, want %v", streamed, sent, want)
		}
		if sent := assistantField(srv, "reasoning_content"); !jsonEqual(t, sent, []any{nil, nil}) {
			t.Errorf("streamed %v: assistant messages' reasoning_content %v, want none", streamed, sent)
		}
	}
}

// Groq refuses "reasoning" on a message to a model that does not reason:
// reasoning that came under "reasoning" goes back to the model that wrote
// it alone, not to another model of the provider.
func TestReasoningBackOtherModel(t *testing.T) {
	srv := providertest.NewOpenAIServer(t,
		providertest.Reply{Thinking: []providertest.Thinking{{Text: "I should look it up."}}, ReasoningField: "reasoning",
			ToolCalls: []providertest.ToolCall{{ID: "call_w1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		providertest.Reply{Text: "Sunny."})
	m := openFake(t, "openai/openai/gpt-oss-120b", srv)
	req := &Request{Messages: []*dialog.Message{userMsg("Weather in Paris?")}, Tools: []*dialog.Function{weatherTool(t)}}
	reply := generate(t, m, req).Message
	req.Messages = append(req.Messages, &reply,
		&dialog.Message{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "call_w1", Content: "sunny"})
	req.Model = "moonshotai/kimi-k2-instruct"
	generate(t, m, req)
	body := srv.LastRequest().JSON()
	if body["model"] != "moonshotai/kimi-k2-instruct" {
		t.Fatalf("request went to %v", body["model"])
	}
	for _, key := range []string{"reasoning", "reasoning_content"} {
		if sent := assistantField(srv, key); !jsonEqual(t, sent, []any{nil}) {
			t.Errorf("another model got the assistant message's %s: %v", key, sent)
		}
	}
}
