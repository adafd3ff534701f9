package tactics

import (
	"context"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// actionAs is a manager of one's own that passes the messages on and
// names its action as given.
type actionAs string

func (a actionAs) Fit(ctx context.Context, in contextmgr.Input) (contextmgr.Result, error) {
	return contextmgr.Result{Messages: in.Messages, Action: string(a)}, nil
}

// A context record names what a custom manager did: its own action, or
// "fit" when it names none (not an empty action).
func TestCustomManagerAction(t *testing.T) {
	for action, want := range map[string]string{"": contextmgr.ActionFit, "kept": "kept"} {
		a, run := newAgent(t, &script{replies: []any{text("hi")}}, dialog.MustPrompt("sys", "Be brief."))
		a.Context, a.ContextName = actionAs(action), "mine"
		a.ReceivePrompt(dialog.MustPrompt("q", "Hello."), nil)
		if _, _, err := a.Respond(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, recs := run.forest(t)
		var got []string
		for _, r := range recs {
			if r.Kind == logs.KindContext {
				got = append(got, r.Context.Manager+"/"+r.Context.Action)
			}
		}
		if len(got) != 1 || got[0] != "mine/"+want {
			t.Errorf("Action %q: context records %q, want [mine/%s]", action, got, want)
		}
	}
}
