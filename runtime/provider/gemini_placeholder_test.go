package provider

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// firstCallSignatures is, for each model content of a Gemini request, the
// thoughtSignature of its first function call part (nil for none; contents
// without calls left out).
func firstCallSignatures(t *testing.T, body map[string]any) []any {
	t.Helper()
	var sigs []any
	contents, _ := body["contents"].([]any)
	for _, c := range contents {
		parts, _ := c.(map[string]any)["parts"].([]any)
		for _, p := range parts {
			if p := p.(map[string]any); p["functionCall"] != nil {
				sigs = append(sigs, p["thoughtSignature"])
				break
			}
		}
	}
	return sigs
}

// A tool round of the current turn that Gemini 3 did not make (here,
// another provider's) has no thought signature, which Gemini 3 refuses:
// its first call goes with Google's placeholder. Earlier turns, calls
// Gemini signed, and models before Gemini 3 (which a signature Gemini made
// still goes back to) are left as they are.
func TestGeminiPlaceholderSignature(t *testing.T) {
	round := func(id, model, text string, reasoning ...dialog.Reasoning) []*dialog.Message {
		calls := []dialog.FunctionCall{
			{ID: id + "a", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{ID: id + "b", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)},
		}
		role := dialog.RoleToolCall
		if text != "" {
			role = dialog.RoleAssistant
		}
		return []*dialog.Message{
			{Role: role, Content: text, FunctionCalls: calls, Model: model, Reasoning: reasoning},
			{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: id + "a", Content: "sunny"},
			{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: id + "b", Content: "rainy"},
		}
	}
	signed := dialog.Reasoning{Signature: providertest.Signature("two cities"), Call: "g1a"}
	var msgs []*dialog.Message
	msgs = append(msgs, userMsg("Weather in Paris and Rome?"))
	msgs = append(msgs, round("o1", "openai/gpt-4o", "")...) // an earlier turn: left alone
	msgs = append(msgs, userMsg("And now?"))
	msgs = append(msgs, round("o2", "openai/gpt-4o", "Let me look.")...)
	msgs = append(msgs, round("g1", "googleai/gemini-3-pro-preview", "", signed)...)
	msgs = append(msgs, round("o3", "anthropic/claude-sonnet-4-5", "")...)

	for _, tc := range []struct {
		model string
		want  []any
	}{
		{"gemini-3-pro-preview", []any{nil, placeholderSignature, providertest.Signature("two cities"), placeholderSignature}},
		{"gemini-2.5-flash", []any{nil, nil, providertest.Signature("two cities"), nil}},
	} {
		srv := providertest.NewGeminiServer(t, providertest.Reply{Text: "Sunny, then rain."})
		msg := generate(t, openFake(t, "googleai/"+tc.model, srv), &Request{Messages: msgs, Tools: []*dialog.Function{weatherTool(t)}}).Message
		if msg.Content != "Sunny, then rain." {
			t.Errorf("%s: reply %q", tc.model, msg.Content)
		}
		if got := firstCallSignatures(t, srv.LastRequest().JSON()); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: first calls' signatures %v, want %v", tc.model, got, tc.want)
		}
	}
	// The dialog is not changed: the placeholder is the request's only.
	if len(msgs[5].Reasoning) != 0 || len(msgs[8].Reasoning) != 1 {
		t.Errorf("the dialog's reasoning changed: %+v, %+v", msgs[5].Reasoning, msgs[8].Reasoning)
	}
}

func TestSignsCalls(t *testing.T) {
	for model, want := range map[string]bool{
		"gemini-3-pro-preview": true, "gemini-3-flash": true, "gemini-4": true,
		"gemini-2.5-flash": false, "gemini-1.5-pro": false, "gemma-3-27b-it": false, "gemini-": false, "": false,
	} {
		if got := signsCalls(model); got != want {
			t.Errorf("signsCalls(%q) = %v, want %v", model, got, want)
		}
	}
}
