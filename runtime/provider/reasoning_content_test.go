package provider

import (
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
