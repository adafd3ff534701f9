package tactics

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// Arguments a model of our own making hands over as broken JSON are kept,
// as a JSON string of their text (the tool_call record holds that, as it
// did), and the model is told that they are not valid JSON and why.
func TestBrokenToolArgumentsAnswered(t *testing.T) {
	called := false
	f, _ := dialog.NewFunction("lookup", "looks up", func(context.Context, struct {
		Term string `json:"term"`
	}) (string, error) {
		called = true
		return "found", nil
	})
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(f))
	m := &script{replies: []any{toolCall("c1", "lookup", `{"term": "go"`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	const want = "invalid arguments: not valid JSON (unexpected end of JSON input, at byte 13): send the arguments as one JSON object"
	sent := m.reqs[1].Messages[len(m.reqs[1].Messages)-1]
	if called || sent.Content != "Error: "+want {
		t.Fatalf("the model got %q (tool called: %v)", sent.Content, called)
	}
	_, recs := run.forest(t)
	var calls []*logs.ToolCall
	for _, r := range recs {
		if r.Kind == logs.KindToolCall {
			calls = append(calls, r.ToolCall)
		}
	}
	var args string
	if len(calls) == 1 {
		json.Unmarshal(calls[0].Arguments, &args)
	}
	if len(calls) != 1 || calls[0].Error != want || args != `{"term": "go"` {
		t.Fatalf("tool_call records %+v", calls)
	}
}
