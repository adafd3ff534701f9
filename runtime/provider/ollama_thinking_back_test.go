package provider

import (
	"encoding/json"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

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
