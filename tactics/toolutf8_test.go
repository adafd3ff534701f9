package tactics

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// A tool whose text is not UTF-8 (its output cut in the middle of a rune)
// is answered with the text the log records: each stray byte a U+FFFD.
// The model saw the raw bytes while the log kept U+FFFD, so a replay,
// which serves the logged result, sent another request and diverged.
func TestToolResultNotUTF8(t *testing.T) {
	cut, _ := dialog.NewFunction("cut", "cuts", func(_ context.Context, in struct{}) (string, error) {
		return strings.Repeat("é", 4)[:7] + "\xff\xfe end", nil
	})
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(cut))
	m := &script{replies: []any{toolCall("c1", "cut", `{}`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	sent := m.reqs[1].Messages[len(m.reqs[1].Messages)-1]
	_, recs := run.forest(t)
	var logged string
	for _, r := range recs {
		if r.Kind == logs.KindToolCall {
			logged = r.ToolCall.Result
		}
	}
	if !utf8.ValidString(sent.Content) || !strings.HasSuffix(sent.Content, "ééé\uFFFD\uFFFD\uFFFD end") {
		t.Fatalf("the model got %q", sent.Content)
	}
	if logged != sent.FunctionCalls[0].Result {
		t.Fatalf("the log has %q, the model got %q", logged, sent.FunctionCalls[0].Result)
	}
}
