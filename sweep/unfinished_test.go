package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/tactics"
)

// Unfinished counts the samples a run left to try again: those that failed
// on the provider, those whose re-score failed, and those of a changed row
// whose new run failed (whose earlier record, for the row as it was, still
// stands); not those that failed in their tactic, even with RerunFailed;
// and, with a shard, only the shard's.
func TestUnfinished(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\ncache: off\nscorers: [numeric]\n"
	path := writeSweep(t, spec, map[string]string{"judge.yaml": edgeJudge})
	m := &rescoreModel{tacticDown: func(text string) bool { return strings.Contains(text, "What is 3 + 3?") }}

	s := newSweep(t, path, Options{Open: m.opener()})
	if n := s.Unfinished(); n != 6 {
		t.Errorf("before any run: %d unfinished, want the 6 samples", n)
	}
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Unfinished(); n != 1 || rep.ToRetry != 1 {
		t.Errorf("r3 failed on the provider: %d unfinished, %d to retry; want 1, 1", n, rep.ToRetry)
	}

	// Fixed: nothing left.
	m.tacticDown = nil
	s = newSweep(t, path, Options{Open: m.opener()})
	if _, err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := s.Unfinished(); n != 0 {
		t.Errorf("after the retry: %d unfinished", n)
	}

	// A judge added, which fails on the provider for r2 while it is
	// re-scored: r2's old record stands, without the judge's score. The
	// report's to_retry does not count it; Unfinished does.
	setSpec(t, path, strings.Replace(spec, "[numeric]", "[numeric, {type: judge, config: judge.yaml, name: graded}]", 1))
	m.judgeDown = func(text string) bool { return strings.Contains(text, "What is 2 + 2?") }
	s = newSweep(t, path, Options{Open: m.opener()})
	if rep, err = s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := s.Unfinished(); n != 1 || rep.RescoreFailed != 1 || rep.ToRetry != 0 {
		t.Errorf("a failed re-score: %d unfinished, %d re-scores failed, %d to retry; want 1, 1, 0", n, rep.RescoreFailed, rep.ToRetry)
	}
	m.judgeDown = nil
	setSpec(t, path, spec)

	// Row r4 changed, and its new run fails on the provider: its old
	// record (a success) stands, for the row as it was.
	rows := strings.Replace(rowsJSONL(6), "What is 4 + 4?", "What is 4 + 4, again?", 1)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "rows.jsonl"), []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	m.tacticDown = func(text string) bool { return strings.Contains(text, "again") }
	s = newSweep(t, path, Options{Open: m.opener()})
	if rep, err = s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := s.Unfinished(); n != 1 || rep.Ran != 1 {
		t.Errorf("a changed row whose run failed: %d unfinished, %d ran; want 1, 1", n, rep.Ran)
	}

	// With a shard, only the shard's samples count.
	var with, without Shard
	for i := range 2 {
		sh := Shard{Index: i, Count: 2}
		if sh.Has(rep.Cells[0].Hash, "r4", 0) {
			with = sh
		} else {
			without = sh
		}
	}
	if n := newSweep(t, path, Options{Open: m.opener(), Shard: with}).Unfinished(); n != 1 {
		t.Errorf("shard %s, which has r4: %d unfinished, want 1", with, n)
	}
	if n := newSweep(t, path, Options{Open: m.opener(), Shard: without}).Unfinished(); n != 0 {
		t.Errorf("shard %s, which has not r4: %d unfinished, want 0", without, n)
	}
}

// A sample that failed in its tactic is finished: a re-run would not
// change it, and RerunFailed, which runs it again, does not make it
// unfinished.
func TestUnfinishedTacticFailure(t *testing.T) {
	registerEdgeTactic.Do(func() {
		tactics.Register("edge_chat", func(map[string]any) (tactics.Tactic, error) { return edgeTactic{}, nil })
	})
	cfg := strings.Replace(chatConfig, "tactic_type: chat", "tactic_type: edge_chat", 1)
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\nscorers: [numeric]\n", map[string]string{"config.yaml": cfg})
	s := newSweep(t, path, Options{})
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cells[0].Errors != 2 || rep.ToRetry != 0 {
		t.Fatalf("errors %d, to retry %d; want the tactic's 2 failures, none to retry", rep.Cells[0].Errors, rep.ToRetry)
	}
	if n := s.Unfinished(); n != 0 {
		t.Errorf("%d unfinished, want 0", n)
	}
	s = newSweep(t, path, Options{RerunFailed: true})
	if _, err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := s.Unfinished(); n != 0 {
		t.Errorf("after --rerun-failed: %d unfinished, want 0", n)
	}
}
