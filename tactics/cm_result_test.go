package tactics

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
)

// shaper returns what out makes of the messages.
type shaper struct {
	out func([]*dialog.Message) []*dialog.Message
}

func (s shaper) Fit(_ context.Context, in contextmgr.Input) (contextmgr.Result, error) {
	return contextmgr.Result{Messages: s.out(in.Messages), Action: "shape"}, nil
}

// A context manager's result that no provider takes is refused before the
// call, naming the manager: a nil message crashed the agent, and no
// messages at all went to the model as an empty request.
func TestContextManagerBadResult(t *testing.T) {
	for name, c := range map[string]struct {
		out  func([]*dialog.Message) []*dialog.Message
		want string
	}{
		"nil message": {func(m []*dialog.Message) []*dialog.Message { return []*dialog.Message{m[0], nil} },
			"context manager odd: message 1 of the 2 it returned is nil"},
		"no messages": {func([]*dialog.Message) []*dialog.Message { return nil },
			"context manager odd: it returned no messages, for a dialog of 1"},
	} {
		m := &script{replies: []any{text("a")}}
		a, _ := newAgent(t, m, nil)
		a.Context, a.ContextName = shaper{c.out}, "odd"
		a.Receive("go")
		_, _, err := a.Respond(t.Context())
		if err == nil || !strings.Contains(err.Error(), c.want) || len(m.reqs) != 0 {
			t.Errorf("%s: err %v, %d model calls; want %q and no call", name, err, len(m.reqs), c.want)
		}
	}
}
