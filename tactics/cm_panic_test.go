package tactics

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
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
