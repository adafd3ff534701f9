package conversation

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
)

// TestQAServedTurnTreeCountsOnlyItsOwnUsage: the run log of a served turn
// holds the live history (earlier replies, stored with the usage and
// dollars of the runs that made them) in the dialog of this turn. lllm
// tree, diff and the viewer attribute a dialog's messages' usage to it,
// so the third turn's tree says it spent what all three turns spent,
// while its run_end (and lllm runs) says what it spent itself. A turn's
// dialog should cost what its own model calls cost, as a one-turn run's
// does.
func TestQAServedTurnTreeCountsOnlyItsOwnUsage(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		r := withUsage(text("reply"), 100, 10)
		r.Message.USD = 0.5
		return r, nil
	}}
	root := filepath.Join(t.TempDir(), "runs")
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{LogDir: root})
	for _, msg := range []string{"one", "two", "three"} {
		run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: msg})
	}
	sums := runsUnder(t, root)
	if len(sums) != 3 {
		t.Fatalf("%d runs, want 3", len(sums))
	}
	last := sums[len(sums)-1]
	if tot := last.End.Totals; tot.Cost.Usage.InputTokens != 100 || tot.Cost.USD != 0.5 {
		t.Fatalf("the third turn's totals %+v, want 100 input tokens and $0.50", tot)
	}
	r, err := logs.Open(root, last.ID)
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := inspect.Load(context.Background(), r, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Roots) != 1 {
		t.Fatalf("%d roots", len(tree.Roots))
	}
	canon := tree.Roots[0]
	if got := canon.Cost; got.Usage.InputTokens != 100 || got.USD != 0.5 {
		t.Errorf("the third turn's dialog %s/%s costs %d input tokens and $%.2f (the usage of every earlier turn's reply included); "+
			"its run spent 100 and $0.50", canon.Owner, canon.Alias, got.Usage.InputTokens, got.USD)
	}
}
