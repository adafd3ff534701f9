package sweep

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
)

// lllm replay writes a replay's log beside the run it replays: for a
// sample of a sweep, into the sweep's runs/, where no record names it.
// A replay calls no model (its calls are served from the recording), so
// it spends nothing of the sweep's budget, however many there are.
func TestReplaysOfSamplesSpendNothing(t *testing.T) {
	path := writeSweep(t, crashSpec, map[string]string{})
	m := &countingModel{}
	run(t, path, Options{Open: m.opener()})
	dir := resultsDir(path)
	runs := filepath.Join(dir, RunsDir)
	entries, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		r, err := logs.Open(runs, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		rec, err := replay.Load(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := replay.Run(context.Background(), rec, replay.Options{})
		if err != nil {
			t.Fatalf("replay of %s: %v", e.Name(), err)
		}
		if rep.Divergence != nil {
			t.Fatalf("replay of %s diverged: %v", e.Name(), rep.Divergence)
		}
	}
	after, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 2*len(entries) {
		t.Fatalf("%d run logs after %d replays of %d samples; want the replays' logs in runs/", len(after), len(entries), len(entries))
	}
	s := newSweep(t, path, Options{Open: m.opener()})
	if u, tok := s.unrecordedSpending(); u != 0 || tok != 0 {
		t.Errorf("unrecorded $%v, %d tokens after replaying every sample; want none", u, tok)
	}
	// The budget the records leave room for still runs a new row.
	setSpec(t, path, crashSpec+"budget: {max_tokens: 90}\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "rows.jsonl"), []byte(rowsJSONL(7)), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := newSweep(t, path, Options{Open: m.opener()}).Run(context.Background())
	if err != nil || rep.Ran != 1 {
		t.Fatalf("ran %d, %v; want the new row's sample, within the budget", rep.Ran, err)
	}
}
