package tactics

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
)

// A Respond cancelled in a tool round leaves a working dialog whose last
// reply called tools: the tree says the run stopped there (cancelled, or
// interrupted when its log has no run_end), not that a reply failed to
// parse, which no tool call ever does.
func TestTreeOfRunStoppedInToolRound(t *testing.T) {
	for _, finish := range []bool{true, false} {
		ctx, cancel := context.WithCancel(t.Context())
		stop, _ := dialog.NewFunction("stop", "stops", func(_ context.Context, in struct{}) (string, error) {
			cancel()
			return "stopped", nil
		})
		p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(stop),
			dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
		w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "stop"}, logs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		a := &Agent{Name: "solver", Model: &script{replies: []any{toolCall("c1", "stop", `{}`), text("<answer>x</answer>")}},
			ModelName: "mock/test", Log: w}
		if err := a.Open("main", nil); err != nil {
			t.Fatal(err)
		}
		a.ReceivePrompt(p, nil)
		if _, _, err := a.Respond(ctx); err == nil {
			t.Fatal("Respond was not cancelled")
		}
		if finish {
			if err := w.Finish(logs.RunEnd{Status: logs.StatusCancelled, Error: "cancelled"}); err != nil {
				t.Fatal(err)
			}
		} else if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		tree, _, err := inspect.Load(t.Context(), run, inspect.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := "no final reply: stopped in a tool round (the run was interrupted)"
		if finish {
			want = "no final reply: stopped in a tool round (the run was cancelled)"
		}
		var reasons []string
		for _, n := range tree.Nodes {
			if n.Failed {
				reasons = append(reasons, n.FailReason)
			}
		}
		if len(reasons) != 1 || reasons[0] != want {
			t.Errorf("finished %v: failed attempts %q, want [%q]", finish, reasons, want)
		}
		_ = strings.Contains
	}
}
