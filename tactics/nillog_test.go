package tactics

import (
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// An Agent whose Log is a nil *logs.Writer (an interface that is not nil)
// fails with an error saying so, and does not panic.
func TestAgentNilWriterLog(t *testing.T) {
	var w *logs.Writer
	a := &Agent{Name: "a", System: dialog.MustPrompt("sys", "Hi."), Model: &script{replies: []any{text("ok")}}, ModelName: "script/test", Log: w}
	err := a.Open("main", nil)
	if err == nil {
		if err = a.Receive("hello"); err == nil {
			_, _, err = a.Respond(t.Context())
		}
	}
	if err == nil || !strings.Contains(err.Error(), "nil *logs.Writer") {
		t.Fatalf("err = %v, want the nil writer named", err)
	}
}
