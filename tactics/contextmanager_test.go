package tactics

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
)

// panicky is a context manager with a bug.
type panicky struct{}

func (panicky) Fit(context.Context, contextmgr.Input) (contextmgr.Result, error) {
	panic("index out of range in the manager")
}

// A context manager that panics fails the Respond with an error naming
// it, as a tool that panics fails its call: on the goroutines of a
// tactic's branches (which no Session.call recovers) it took the whole
// process down.
func TestContextManagerPanicIsAnError(t *testing.T) {
	a, run := newAgent(t, &script{replies: []any{text("a"), text("b")}}, nil)
	a.Context, a.ContextName = panicky{}, "buggy"
	a.Receive("go")
	for _, b := range []string{"b0", "b1"} {
		if err := a.Fork("main", b, 0, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, b := range []string{"b0", "b1"} {
		wg.Go(func() { _, _, errs[i] = a.RespondTo(context.Background(), b) })
	}
	wg.Wait()
	for _, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "context manager buggy: panicked: index out of range in the manager") {
			t.Errorf("Respond: %v", err)
		}
	}
	if f, _ := run.forest(t); len(f.IDs()) != 5 {
		t.Errorf("%d dialogs in the log, want main, b0, b1 and a working copy of each", len(f.IDs()))
	}
}

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
