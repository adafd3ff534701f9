package sweep

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lllm-go/lllm/tactics"
)

// fixableTactic is the chat tactic with a bug: it gives up on "4 + 4"
// until fixed is set, as a tactic's Go code might before its author
// fixes it (no config hash sees that change).
type fixableTactic struct{ fixed *atomic.Bool }

func (fixableTactic) Agents() []string { return []string{"assistant"} }

func (f fixableTactic) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	if strings.Contains(task, "4 + 4") && !f.fixed.Load() {
		return nil, errors.New("fixable: a bug")
	}
	return s.Sub(ctx, "chat", nil, task)
}

var (
	registerFixable sync.Once
	fixableFixed    atomic.Bool
)

// A sample that failed in its tactic is final: running the sweep again
// leaves it, unless Options.RerunFailed says to run it again, as after
// its tactic's code was fixed.
func TestRerunFailed(t *testing.T) {
	registerFixable.Do(func() {
		tactics.Register("test_fixable", func(map[string]any) (tactics.Tactic, error) { return fixableTactic{&fixableFixed}, nil })
	})
	fixableFixed.Store(false)
	cfg := strings.Replace(chatConfig, "tactic_type: chat", "tactic_type: test_fixable", 1)
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\ncache: off\nscorers: [numeric]\n", map[string]string{"config.yaml": cfg})
	first := run(t, path, Options{})
	if first.Ran != 6 {
		t.Fatalf("first run ran %d samples, want 6", first.Ran)
	}
	dir := resultsDir(path)
	if r := rowRecord(standing(t, dir), "r4"); r == nil || r.Status != "failed" || r.Retry {
		t.Fatalf("r4 stands as %+v, want a final failure", r)
	}

	fixableFixed.Store(true)
	if p := newSweep(t, path, Options{}).Plan(); p.ToRun != 0 || p.Done != 6 {
		t.Errorf("without RerunFailed: to run %d, done %d; want 0, 6", p.ToRun, p.Done)
	}
	s := newSweep(t, path, Options{RerunFailed: true})
	if p := s.Plan(); p.ToRun != 1 || p.Done != 5 || p.ToRescore != 0 {
		t.Errorf("with RerunFailed: to run %d, done %d, to re-score %d; want 1, 5, 0", p.ToRun, p.Done, p.ToRescore)
	}
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ran != 1 || rep.Done != 6 {
		t.Errorf("re-run: ran %d, done %d; want 1, 6", rep.Ran, rep.Done)
	}
	r4 := rowRecord(standing(t, dir), "r4")
	if r4 == nil || r4.Status != "ok" || r4.Scores["numeric"] != 1 {
		t.Fatalf("r4 stands as %+v after the re-run, want ok and scored 1", r4)
	}
	if n := keysIn(t, dir)[r4.Key()]; n != 2 {
		t.Errorf("r4 has %d records, want 2 (the failure stays in the file)", n)
	}
	// Nothing failed now: a second RerunFailed run has nothing to do.
	if p := newSweep(t, path, Options{RerunFailed: true}).Plan(); p.ToRun != 0 || p.Done != 6 {
		t.Errorf("after the fix: to run %d, done %d; want 0, 6", p.ToRun, p.Done)
	}
}

// rowRecord is the record of row's first repeat among recs, those of a
// one-cell sweep, or nil.
func rowRecord(recs map[string]*Record, row string) *Record {
	for _, r := range recs {
		if r.Row == row && r.Repeat == 0 {
			return r
		}
	}
	return nil
}

// A sample that failed on the provider is finished for the table (an
// error) but not done: the report counts it under ToRetry, as the dry run
// counts it to run.
func TestReportToRetry(t *testing.T) {
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\ncache: off\nretries: 0\nscorers: [numeric]\n", map[string]string{})
	m := &rescoreModel{tacticDown: func(text string) bool { return strings.Contains(text, "3 + 3") }}
	rep := run(t, path, Options{Open: m.opener()})
	if rep.Samples != 6 || rep.Done != 5 || rep.ToRetry != 1 || rep.Cells[0].N != 6 || rep.Cells[0].Errors != 1 || rep.Cells[0].ToRetry != 1 {
		t.Errorf("report: %d samples, %d done, %d to retry; cell n %d, errors %d, to retry %d; want 6, 5, 1; 6, 1, 1",
			rep.Samples, rep.Done, rep.ToRetry, rep.Cells[0].N, rep.Cells[0].Errors, rep.Cells[0].ToRetry)
	}
	if p := newSweep(t, path, Options{Open: m.opener()}).Plan(); p.Done != rep.Done || p.ToRun != rep.ToRetry {
		t.Errorf("dry run: %d done, %d to run; the report said %d done, %d to retry", p.Done, p.ToRun, rep.Done, rep.ToRetry)
	}
	m.tacticDown = nil
	if rep := run(t, path, Options{Open: m.opener()}); rep.Done != 6 || rep.ToRetry != 0 || rep.Ran != 1 {
		t.Errorf("second run: %d done, %d to retry, ran %d; want 6, 0, 1", rep.Done, rep.ToRetry, rep.Ran)
	}
}

// A dry run's estimate for a tactic that is not built in is a guess until samples finish, and the plan says which tactics it guessed for.
func TestPlanGuessesForOwnTactics(t *testing.T) {
	registerFixable.Do(func() {
		tactics.Register("test_fixable", func(map[string]any) (tactics.Tactic, error) { return fixableTactic{&fixableFixed}, nil })
	})
	fixableFixed.Store(true)
	cfg := strings.Replace(chatConfig, "tactic_type: chat", "tactic_type: test_fixable", 1)
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\ncache: off\nscorers: [numeric]\n", map[string]string{"config.yaml": cfg})
	if p := newSweep(t, path, Options{}).Plan(); !slices.Equal(p.Guessed, []string{"test_fixable"}) {
		t.Errorf("before any sample: guessed %q", p.Guessed)
	}
	run(t, path, Options{})
	if p := newSweep(t, path, Options{}).Plan(); p.Guessed != nil {
		t.Errorf("after the samples: guessed %q", p.Guessed)
	}
	chat := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\ncache: off\nscorers: [numeric]\n", map[string]string{"config.yaml": chatConfig})
	if p := newSweep(t, chat, Options{}).Plan(); p.Guessed != nil {
		t.Errorf("a built-in tactic: guessed %q", p.Guessed)
	}
}
