package provider

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// DeepSeek's thinking mode refuses a request whose earlier tool rounds
// lost their reasoning_content: each tool round an OpenAI-compatible
// provider made goes back with its reasoning, found by its call's id;
// other providers' rounds, and replies without calls, go as they are.
func TestReasoningContentBack(t *testing.T) {
	call := func(id string) []dialog.FunctionCall {
		return []dialog.FunctionCall{{ID: id, Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}
	}
	result := func(id string) *dialog.Message {
		return &dialog.Message{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: id, Content: "sunny"}
	}
	thought := []dialog.Reasoning{{Text: "I should look it up."}}
	msgs := []*dialog.Message{
		systemMsg("You help."), userMsg("Weather in Paris?"),
		{Role: dialog.RoleToolCall, FunctionCalls: call("c1"), Model: "openai/deepseek-v4-flash", Reasoning: thought}, result("c1"),
		{Role: dialog.RoleAssistant, Content: "Sunny.", Model: "openai/deepseek-v4-flash", Reasoning: []dialog.Reasoning{{Text: "Easy."}}},
		userMsg("And tomorrow?"),
		{Role: dialog.RoleToolCall, FunctionCalls: call("c2"), Model: "openai/deepseek-v4-flash", Reasoning: []dialog.Reasoning{{Text: "Again."}}}, result("c2"),
	}
	srv := providertest.NewOpenAIServer(t, providertest.Reply{Text: "Sunny again."})
	m := openFake(t, "openai/deepseek-v4-flash", srv)
	if got := generate(t, m, &Request{Messages: msgs, Tools: []*dialog.Function{weatherTool(t)}}).Message.Content; got != "Sunny again." {
		t.Fatalf("reply %q", got)
	}
	sent := assistantField(srv, "reasoning_content")
	if want := []any{"I should look it up.", nil, "Again."}; !jsonEqual(t, sent, want) {
		t.Errorf("assistant messages' reasoning_content %v, want %v", sent, want)
	}

	// A tool round another provider made has nothing to send: DeepSeek
	// refuses it, as the fake does.
	msgs[2].Model = "anthropic/claude-sonnet-4-5"
	if e := generateErr(t, t.Context(), m, &Request{Messages: msgs, Tools: []*dialog.Function{weatherTool(t)}}); e.Kind != ErrBadRequest {
		t.Errorf("another provider's round: %v, want DeepSeek's 400", e)
	}
	if rc := providertest.Messages(srv.LastRequest().JSON())[2]["reasoning_content"]; rc != nil {
		t.Errorf("another provider's reasoning went to OpenAI: %v", rc)
	}
}

// assistantField is the member key of each assistant message of the last
// request srv got (nil where it has none).
func assistantField(srv *providertest.Server, key string) []any {
	var out []any
	for _, m := range providertest.Messages(srv.LastRequest().JSON()) {
		if m["role"] == "assistant" {
			out = append(out, m[key])
		}
	}
	return out
}

// A server that gives its tool calls no ids has them named call_1 on every
// round (see functionCall): each round's reasoning still goes back on its
// own message, not the first round's on all of them.
func TestReasoningContentRepeatedIDs(t *testing.T) {
	round := func(city, thought string) *dialog.Message {
		return &dialog.Message{Role: dialog.RoleToolCall, Model: "openai/deepseek-v4-flash", Reasoning: []dialog.Reasoning{{Text: thought}},
			FunctionCalls: []dialog.FunctionCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"` + city + `"}`)}}}
	}
	result := &dialog.Message{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "call_1", Content: "sunny"}
	msgs := []*dialog.Message{
		systemMsg("You help."), userMsg("Weather in Paris, then Rome?"),
		round("Paris", "Paris first."), result,
		round("Rome", "Now Rome."), result,
	}
	srv := providertest.NewOpenAIServer(t, providertest.Reply{Text: "Sunny in both."})
	generate(t, openFake(t, "openai/deepseek-v4-flash", srv), &Request{Messages: msgs, Tools: []*dialog.Function{weatherTool(t)}})
	sent := assistantField(srv, "reasoning_content")
	if want := []any{"Paris first.", "Now Rome."}; !jsonEqual(t, sent, want) {
		t.Errorf("assistant messages' reasoning_content %v, want %v", sent, want)
	}
}

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

// An Ollama tool round goes back with the thinking Ollama gave with it;
// another provider's round, and a reply without calls, go without.
func TestOllamaThinkingBack(t *testing.T) {
	call := func(id string) []dialog.FunctionCall {
		return []dialog.FunctionCall{{ID: id, Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}
	}
	result := func(id string) *dialog.Message {
		return &dialog.Message{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: id, Content: "sunny"}
	}
	msgs := []*dialog.Message{
		userMsg("Weather?"),
		{Role: dialog.RoleToolCall, FunctionCalls: call("c1"), Model: "ollama/gpt-oss", Reasoning: []dialog.Reasoning{{Text: "Look it up."}}}, result("c1"),
		{Role: dialog.RoleAssistant, Content: "Sunny.", Model: "ollama/gpt-oss", Reasoning: []dialog.Reasoning{{Text: "Easy."}}},
		userMsg("And Rome?"),
		{Role: dialog.RoleToolCall, FunctionCalls: call("c2"), Model: "openai/gpt-4o", Reasoning: []dialog.Reasoning{{Text: "Not Ollama's."}}}, result("c2"),
	}
	srv := providertest.NewOllamaServer(t, providertest.Reply{Text: "Sunny too."})
	generate(t, openFake(t, "ollama/gpt-oss", srv), &Request{Messages: msgs, Tools: []*dialog.Function{weatherTool(t)}})
	sent := assistantField(srv, "thinking")
	if want := []any{"Look it up.", nil, nil}; !jsonEqual(t, sent, want) {
		t.Errorf("assistant messages' thinking %v, want %v", sent, want)
	}
}
