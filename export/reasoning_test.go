package export_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/export"
)

// With Reasoning, a reply's reasoning text is in the line, for
// distillation: openai's reasoning_content, sharegpt's <think> before the
// text (also on a turn that only calls tools); without it, the lines are
// as before, and signatures and redacted data never appear.
func TestEncodeReasoning(t *testing.T) {
	d := &export.Dialog{Messages: []*dialog.Message{
		{Role: dialog.RoleUser, Content: "2+2?"},
		{Role: dialog.RoleToolCall, Reasoning: []dialog.Reasoning{{Text: "use the tool", Signature: "SIG"}},
			FunctionCalls: []dialog.FunctionCall{{ID: "c1", Name: "calc", Arguments: json.RawMessage(`{"x":"2+2"}`)}}},
		{Role: dialog.RoleTool, ToolCallID: "c1", Content: "4"},
		{Role: dialog.RoleAssistant, Content: "4", Reasoning: []dialog.Reasoning{{Redacted: "SECRET"}, {Text: "the tool said 4"}}},
	}}
	line := func(f export.Format, o export.Options) string {
		b, err := export.Encode(f, d, o)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var oa struct {
		Messages []struct {
			ReasoningContent string `json:"reasoning_content"`
		} `json:"messages"`
	}
	raw := line(export.OpenAI, export.Options{Reasoning: true})
	if err := json.Unmarshal([]byte(raw), &oa); err != nil {
		t.Fatal(err)
	}
	if oa.Messages[1].ReasoningContent != "use the tool" || oa.Messages[3].ReasoningContent != "the tool said 4" || oa.Messages[0].ReasoningContent != "" {
		t.Errorf("openai line: %s", raw)
	}
	sg := line(export.ShareGPT, export.Options{Reasoning: true})
	for _, want := range []string{`{"from":"gpt","value":"<think>\nuse the tool\n</think>\n\n"}`, `{"from":"gpt","value":"<think>\nthe tool said 4\n</think>\n\n4"}`} {
		if !strings.Contains(sg, want) {
			t.Errorf("sharegpt line %s\nlacks %s", sg, want)
		}
	}
	for _, f := range []export.Format{export.OpenAI, export.ShareGPT} {
		if l := line(f, export.Options{}); strings.Contains(l, "reasoning") || strings.Contains(l, "think") {
			t.Errorf("%s line without Reasoning has it: %s", f, l)
		}
		if l := line(f, export.Options{Reasoning: true}); strings.Contains(l, "SIG") || strings.Contains(l, "SECRET") {
			t.Errorf("%s line holds a signature or redacted data: %s", f, l)
		}
	}
}
