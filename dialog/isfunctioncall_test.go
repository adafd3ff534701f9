package dialog

import "testing"

// A tool message carries the call it answers, with its result, in
// FunctionCalls; it requests nothing, so it is not a function call.
func TestIsFunctionCallToolResult(t *testing.T) {
	fc := FunctionCall{ID: "call_1", Name: "fact", Arguments: []byte(`{}`)}
	request := &Message{Role: RoleToolCall, FunctionCalls: []FunctionCall{fc}}
	fc.Result = "42"
	result := &Message{Role: RoleTool, ToolCallID: "call_1", Content: "42", FunctionCalls: []FunctionCall{fc}}
	if !request.IsFunctionCall() {
		t.Error("a tool_call message requesting a call: IsFunctionCall is false")
	}
	if result.IsFunctionCall() {
		t.Error("a tool message answering a call: IsFunctionCall is true")
	}
	if (&Message{Role: RoleAssistant, Content: "hi"}).IsFunctionCall() {
		t.Error("a plain assistant message: IsFunctionCall is true")
	}
}
