package provider

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// Google's client takes a model named "models/gemini-3-pro-preview" for
// gemini-3-pro-preview: a tool round of the current turn that another
// provider made goes to it with the placeholder signature all the same,
// not refused for a missing one.
func TestGeminiPlaceholderModelsPrefix(t *testing.T) {
	msgs := []*dialog.Message{
		userMsg("Weather in Paris?"),
		{Role: dialog.RoleToolCall, Model: "openai/gpt-4o", FunctionCalls: []dialog.FunctionCall{{ID: "c1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
		{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "c1", Content: "sunny"},
	}
	for model, want := range map[string][]any{
		"models/gemini-3-pro-preview": {placeholderSignature},
		"models/gemini-2.5-flash":     {nil},
	} {
		srv := providertest.NewGeminiServer(t, providertest.Reply{Text: "Sunny."})
		msg := generate(t, openFake(t, "googleai/"+model, srv), &Request{Messages: msgs, Tools: []*dialog.Function{weatherTool(t)}}).Message
		if msg.Content != "Sunny." {
			t.Errorf("%s: reply %q", model, msg.Content)
		}
		if got := firstCallSignatures(t, srv.LastRequest().JSON()); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: first calls' signatures %v, want %v", model, got, want)
		}
	}
	if !signsCalls("models/gemini-3-flash") || signsCalls("models/gemini-2.5-pro") || signsCalls("models/") {
		t.Error("signsCalls ignores models/ wrongly")
	}
}
