package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
)

// crashSpec runs six rows, one call each at $0.001 and 12 tokens
// (countingModel), one sample at a time.
const crashSpec = "config: config.yaml\ndataset: rows.jsonl\nconcurrency: 1\ncache: off\n"

// What samples a kill -9 left without a record (their run logs hold
// model calls, and no run_end) counts toward the budget when the sweep
// resumes, as it counted while they ran.
func TestBudgetCountsSamplesKilledMidRun(t *testing.T) {
	path := writeSweep(t, crashSpec, map[string]string{})
	m := &countingModel{}
	run(t, path, Options{Open: m.opener()})
	dir := resultsDir(path)
	if u, tok := spentOf(t, dir); u < 0.0059 || u > 0.0061 || tok != 72 {
		t.Fatalf("six samples spent $%v, %d tokens; want $0.006, 72", u, tok)
	}

	// A crash that lost the records of three samples: their logs stay,
	// cut before run_end, as a kill -9 leaves them.
	samples := filepath.Join(dir, SamplesFile)
	b, err := os.ReadFile(samples)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d records, want 6", len(lines))
	}
	if err := os.WriteFile(samples, []byte(strings.Join(lines[:3], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, r := range standing(t, dir) {
		kept[r.RunID] = true
	}
	entries, err := os.ReadDir(filepath.Join(dir, RunsDir))
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, e := range entries {
		if kept[e.Name()] {
			continue
		}
		lost++
		cutRunEnd(t, filepath.Join(dir, RunsDir, e.Name(), logs.EventsFile))
	}
	if lost != 3 {
		t.Fatalf("%d run logs without a record, want 3", lost)
	}

	// The records say $0.003 and 36 tokens; the sweep spent $0.006 and
	// 72. A budget of $0.005 is spent already: nothing runs.
	for _, c := range []struct{ budget, want string }{
		{"budget: {max_cost: 0.005}\n", "spent $0.0060 of max_cost $0.0050"},
		{"budget: {max_tokens: 60}\n", "spent 72 tokens of max_tokens 60"},
	} {
		setSpec(t, path, crashSpec+c.budget)
		calls := m.n.Load()
		rep, err := newSweep(t, path, Options{Open: m.opener()}).Run(context.Background())
		if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s", strings.TrimSpace(c.budget), err, c.want)
		}
		if rep == nil || rep.Ran != 0 || m.n.Load() != calls {
			t.Errorf("%s: %d calls (report %v); want none", strings.TrimSpace(c.budget), m.n.Load()-calls, rep != nil)
			if rep != nil {
				t.Errorf("ran %d samples, want 0", rep.Ran)
			}
		}
	}

	// With room in the budget, the three run again; the logs of the lost
	// tries still count, once: $0.009 in all.
	setSpec(t, path, crashSpec+"budget: {max_cost: 0.0095}\n")
	rep, err := newSweep(t, path, Options{Open: m.opener()}).Run(context.Background())
	if err != nil || rep.Ran != 3 {
		t.Fatalf("ran %d, %v; want 3", rep.Ran, err)
	}
	s := newSweep(t, path, Options{Open: m.opener()})
	recorded, _ := spentOf(t, dir)
	if u, _ := s.unrecordedSpending(); u+recorded < 0.0089 || u+recorded > 0.0091 {
		t.Errorf("recorded $%v + unrecorded $%v, want $0.009", recorded, u)
	}
}

// cutRunEnd removes the run_end record of the log at path.
func cutRunEnd(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.Contains(l, `"kind":"run_end"`) {
			keep = append(keep, l)
		}
	}
	if len(keep) == len(strings.SplitAfter(string(b), "\n")) {
		t.Fatalf("%s has no run_end", path)
	}
	if err := os.WriteFile(path, []byte(strings.Join(keep, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The earlier tries of a sample the spec's retries ran again are in its
// record's spending (and retried_runs): their logs are not counted twice.
func TestBudgetCountsRetriedTriesOnce(t *testing.T) {
	cfg := `tactic_type: best_of_n
params: {n: 2}
global: {model_name: mock/m, max_retries: 0}
agent_configs:
  - {name: solver, system_prompt: Solve.}
  - {name: judge, system_prompt: Judge.}
`
	spec := "config: config.yaml\ndataset: rows.jsonl\nconcurrency: 1\ncache: off\nretries: 1\n"
	path := writeSweep(t, spec, map[string]string{"config.yaml": cfg, "rows.jsonl": rowsJSONL(1)})
	// The first try's judge call (the third call) fails on the server:
	// the try spent $0.002, the next one $0.003.
	m := &countingModel{fail: func(n int64) error {
		if n == 3 {
			return &provider.Error{Kind: provider.ErrServer, Provider: "mock", Status: 503, Err: errors.New("down")}
		}
		return nil
	}}
	run(t, path, Options{Open: m.opener()})
	dir := resultsDir(path)
	var rec *Record
	for _, r := range standing(t, dir) {
		rec = r
	}
	if rec == nil {
		t.Fatal("no record")
	}
	if rec.Status != "ok" || len(rec.RetriedRuns) != 1 || rec.RetriedRuns[0] == rec.RunID {
		t.Fatalf("record: status %s, run %s, retried_runs %v; want ok, with one earlier try in retried_runs", rec.Status, rec.RunID, rec.RetriedRuns)
	}
	if _, err := os.Stat(filepath.Join(dir, RunsDir, rec.RetriedRuns[0], logs.EventsFile)); err != nil {
		t.Fatalf("the earlier try's log: %v", err)
	}
	if rec.SpentUSD < 0.0049 || rec.SpentUSD > 0.0051 {
		t.Errorf("the record spent $%v, want $0.005 (both tries)", rec.SpentUSD)
	}
	s := newSweep(t, path, Options{Open: m.opener()})
	if u, tok := s.unrecordedSpending(); u != 0 || tok != 0 {
		t.Errorf("unrecorded $%v, %d tokens; want none: the earlier try is in the record", u, tok)
	}
}
