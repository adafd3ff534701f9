package builtin

import (
	"path/filepath"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// TestForestByAliasOnQuickstartRun: the forest rebuilt from a run of the
// quickstart (best_of_n on the mock) finds each agent's dialogs by alias.
func TestForestByAliasOnQuickstartRun(t *testing.T) {
	cfg, err := config.Load(filepath.Join("..", "..", "configs", "quickstart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := tactics.Run(t.Context(), cfg, "Name a prime number above 10.", tactics.RunOptions{LogDir: dir})
	if err != nil || res.Status != logs.StatusOK {
		t.Fatalf("run: %v %+v", err, res)
	}
	run, err := logs.Open(dir, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := run.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	one := func(owner, alias string) *dialog.Dialog {
		t.Helper()
		ds := f.ByAlias(owner, alias)
		if len(ds) != 1 {
			t.Fatalf("ByAlias(%q, %q): %d dialogs, want 1", owner, alias, len(ds))
		}
		if ds[0].Owner() != owner || ds[0].Alias() != alias {
			t.Fatalf("ByAlias(%q, %q) gave %s/%s", owner, alias, ds[0].Owner(), ds[0].Alias())
		}
		return ds[0]
	}
	solver, judge := one("solver", "main"), one("judge", "main")
	if !solver.Node().IsRoot() || !judge.Node().IsRoot() || solver == judge {
		t.Errorf("solver/main %+v and judge/main %+v: want two roots", solver.Node(), judge.Node())
	}
	try2 := one("solver", "try2")
	if try2.Node().ParentID != solver.ID() || try2.Tail().Content != "13: it has no divisor but 1 and itself." {
		t.Errorf("solver/try2: parent %s, last message %q", try2.Node().ParentID, try2.Tail().Content)
	}
	for _, miss := range [][2]string{{"judge", "try2"}, {"solver", "nope"}, {"", "main"}} {
		if ds := f.ByAlias(miss[0], miss[1]); len(ds) != 0 {
			t.Errorf("ByAlias(%q, %q) = %d dialogs, want none", miss[0], miss[1], len(ds))
		}
	}
}

// TestForestByAliasReused: an alias an agent closed and opened again names
// both dialogs, in the order they were opened.
func TestForestByAliasReused(t *testing.T) {
	model, err := provider.Open(t.Context(), "mock/demo", provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "reuse"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &tactics.Agent{Name: "solver", System: dialog.MustPrompt("sys", "You solve."), Model: model, ModelName: "mock/demo", Log: w}
	for _, task := range []string{"first task", "second task"} {
		if err := a.Open("main", nil); err != nil {
			t.Fatal(err)
		}
		if err := a.Receive(task); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Respond(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := a.Close("main"); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	f, _, err := run.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ds := f.ByAlias("solver", "main")
	if len(ds) != 2 {
		t.Fatalf("ByAlias(solver, main): %d dialogs, want 2", len(ds))
	}
	for i, want := range []string{"first task", "second task"} {
		// The system prompt, the task, the reply.
		if msgs := ds[i].Messages(); len(msgs) != 3 || msgs[1].Content != want {
			t.Errorf("dialog %d of solver/main: %d messages, want 3 with the task %q", i, len(msgs), want)
		}
	}
}
