package provider

import (
	"encoding/json"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

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
