package cli

import (
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// show prints a reply's reasoning under it, each block's lines indented
// alike, and a redacted block as such (never its data).
func TestShowReasoning(t *testing.T) {
	m := &dialog.Message{Role: dialog.RoleAssistant, Content: "42", Reasoning: []dialog.Reasoning{
		{Text: "six times seven\nis 42", Signature: "sig-abc"},
		{Redacted: "EmwKAhgBEgy3va3pzix"},
	}}
	var b strings.Builder
	writeMessage(&b, 3, m)
	want := "[3] assistant: 42\n" +
		"    reasoning: six times seven\n" +
		"               is 42\n" +
		"    reasoning: [redacted by the provider]\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
