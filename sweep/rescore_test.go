package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// rescoreModel answers "What is N + N?" with 2N (but 11 for 5 + 5) and
// grades answers 2, 4, 6, 8 and 12 right, counting the tactic's calls and
// the judge's apart, at $0.001 and 10+2 tokens a call. tacticDown and
// judgeDown, when set, fail the calls whose text they match on the
// provider (a 503).
type rescoreModel struct {
	tactic, judge atomic.Int64
	tacticDown    func(text string) bool
	judgeDown     func(text string) bool
}

func (m *rescoreModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	text := lastText(req)
	down := &provider.Error{Kind: provider.ErrServer, Provider: "mock", Status: 503, Err: errors.New("down")}
	var reply string
	if strings.Contains(text, "Answer to grade") {
		m.judge.Add(1)
		if m.judgeDown != nil && m.judgeDown(text) {
			return nil, down
		}
		reply = "<score>0</score>"
		for _, ok := range []string{"2", "4", "6", "8", "12"} {
			if strings.Contains(text, "Answer to grade:\n"+ok+"\n") {
				reply = "<score>1</score>"
			}
		}
	} else {
		m.tactic.Add(1)
		if m.tacticDown != nil && m.tacticDown(text) {
			return nil, &provider.Error{Kind: provider.ErrBadRequest, Provider: "mock", Status: 400, Err: errors.New("refused")}
		}
		var n int
		fmt.Sscanf(text, "What is %d", &n)
		reply = strconv.Itoa(2 * n)
		if n == 5 {
			reply = "11"
		}
	}
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: reply,
		Usage: dialog.Usage{InputTokens: 10, OutputTokens: 2}, USD: 0.001}}, nil
}

func (m *rescoreModel) opener() func(context.Context, string, provider.Config) (provider.Model, error) {
	return func(context.Context, string, provider.Config) (provider.Model, error) { return m, nil }
}

// rescoreSpec is a 2-cell, 6-row, 2-repeat sweep (24 samples) scored by
// numeric, without a cache, so that a sample run again calls the model.
const rescoreSpec = "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nconcurrency: 4\ncache: off\n" +
	"scorers: [numeric]\naxes:\n  agent_configs.assistant.model_args.max_tokens: [100, 200]\n"

// standing are the records standing for the samples of dir, by key.
func standing(t *testing.T, dir string) map[string]*Record {
	t.Helper()
	out := map[string]*Record{}
	if _, err := EachRecord(dir, func(r *Record) error {
		out[r.Key()] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// resultsDir is where newSweep puts the results of the spec at path.
func resultsDir(path string) string { return filepath.Join(filepath.Dir(path), "results") }

// setSpec rewrites the spec at path.
func setSpec(t *testing.T, path, spec string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
}

// spentOf is what the records of dir say the sweep spent (the budget's
// count).
func spentOf(t *testing.T, dir string) (float64, int) {
	t.Helper()
	rs, _, err := loadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rs.spent()
}

// Adding a scorer to a finished sweep re-scores every sample from its run
// log: no tactic call and no cache hit, every sample gets the new score
// and keeps its answer and old score, the table is a fresh run's, the
// budget does not count the samples twice, and running again does nothing.
func TestRescoreAddedScorer(t *testing.T) {
	// With the cache on (temperature 0): before re-scoring, a re-run was
	// 24 cache hits.
	spec := strings.Replace(rescoreSpec, "cache: off\n", "", 1)
	path := writeSweep(t, spec, map[string]string{})
	m := &rescoreModel{}
	first := run(t, path, Options{Open: m.opener()})
	if first.Ran != 24 || m.tactic.Load() != 24 {
		t.Fatalf("first run: ran %d, %d tactic calls; want 24 and 24", first.Ran, m.tactic.Load())
	}
	dir := resultsDir(path)
	before := standing(t, dir)
	usd, tok := spentOf(t, dir)

	setSpec(t, path, strings.Replace(spec, "[numeric]", "[numeric, exact]", 1))
	s := newSweep(t, path, Options{Open: m.opener()})
	if p := s.Plan(); p.ToRun != 0 || p.ToRescore != 24 || p.Done != 0 || p.Calls != 0 {
		t.Errorf("dry run: to run %d, to re-score %d, done %d, calls %d; want 0, 24, 0, 0", p.ToRun, p.ToRescore, p.Done, p.Calls)
	}
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.tactic.Load() != 24 || rep.Calls != 0 || rep.CacheHits != 0 {
		t.Errorf("re-scoring made %d tactic calls, %d model calls, %d cache hits; want none", m.tactic.Load()-24, rep.Calls, rep.CacheHits)
	}
	if rep.Rescored != 24 || rep.Ran != 0 || rep.Done != 24 || rep.Samples != 24 {
		t.Errorf("report: rescored %d, ran %d, done %d of %d; want 24, 0, 24 of 24", rep.Rescored, rep.Ran, rep.Done, rep.Samples)
	}
	after := standing(t, dir)
	if len(after) != 24 {
		t.Fatalf("%d samples stand, want 24", len(after))
	}
	for k, r := range after {
		o := before[k]
		wantExact := 1.0
		if r.Row == "r5" {
			wantExact = 0 // answered 11
		}
		if r.Answer != o.Answer || r.RunID != o.RunID || r.Scores["numeric"] != o.Scores["numeric"] || r.Scores["exact"] != wantExact {
			t.Errorf("sample %s/%d: answer %q run %s scores %v; was %q %s %v, want exact %v", r.Row, r.Repeat, r.Answer, r.RunID, r.Scores, o.Answer, o.RunID, o.Scores, wantExact)
		}
		if r.Rescored != 1 || r.ScorerSpecs["exact"] == "" || r.ScorerSpecs["numeric"] != o.ScorerSpecs["numeric"] || !r.Finished.After(o.Finished) {
			t.Errorf("sample %s/%d: rescored %d, specs %v, finished %v (was %v)", r.Row, r.Repeat, r.Rescored, r.ScorerSpecs, r.Finished, o.Finished)
		}
		if r.Calls != o.Calls || r.SpentUSD != o.SpentUSD || r.CarriedUSD != o.SpentUSD || r.TokensIn != o.TokensIn || r.Cost != o.Cost {
			t.Errorf("sample %s/%d: calls %d spent %v carried %v tokens %d cost %v; was %d %v - %d %v", r.Row, r.Repeat, r.Calls, r.SpentUSD, r.CarriedUSD, r.TokensIn, r.Cost, o.Calls, o.SpentUSD, o.TokensIn, o.Cost)
		}
	}
	if u, k := spentOf(t, dir); math.Abs(u-usd) > 1e-12 || k != tok {
		t.Errorf("the budget counts $%v and %d tokens spent after re-scoring, $%v and %d before: re-scoring spent nothing", u, k, usd, tok)
	}
	fresh := run(t, path, Options{Open: (&rescoreModel{}).opener(), Dir: filepath.Join(t.TempDir(), "fresh")})
	sameTable(t, "the re-scored table differs from a fresh run's", rep, fresh)
	disk, _, err := LoadReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	sameTable(t, "the report read from disk differs from the run's", disk, rep)

	// Once more: all done, nothing run or re-scored, nothing appended.
	s = newSweep(t, path, Options{Open: m.opener()})
	if p := s.Plan(); p.ToRun != 0 || p.ToRescore != 0 || p.Done != 24 {
		t.Errorf("dry run after re-scoring: to run %d, to re-score %d, done %d; want 0, 0, 24", p.ToRun, p.ToRescore, p.Done)
	}
	again, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if again.Ran != 0 || again.Rescored != 0 || again.Calls != 0 || again.CacheHits != 0 || m.tactic.Load() != 24 {
		t.Errorf("third run: ran %d, rescored %d, calls %d, hits %d", again.Ran, again.Rescored, again.Calls, again.CacheHits)
	}
	for k, n := range keysIn(t, dir) {
		if n != 2 {
			t.Errorf("sample %q has %d records, want 2 (its run, its re-score)", strings.ReplaceAll(k, "\x00", "/"), n)
		}
	}
}

// rescoreCounted counts the calls of the test_rescore_counted scorer.
var rescoreCounted atomic.Int64

func init() {
	// test_rescore_counted scores the answer's length times weight
	// (default 1), counting its calls.
	RegisterScorer("test_rescore_counted", func(params map[string]any, _ Env) (Scorer, error) {
		if err := paramsErr("test_rescore_counted", params, "weight"); err != nil {
			return nil, err
		}
		w, err := floatParam("test_rescore_counted", params, "weight")
		if err != nil {
			return nil, err
		}
		if w == 0 {
			w = 1
		}
		return ScorerFunc(func(_ context.Context, s *Sample) (float64, error) {
			rescoreCounted.Add(1)
			if len(s.Result) == 0 {
				return 0, errors.New("no result")
			}
			return w * float64(len(s.Answer)), nil
		}), nil
	})
}

// Changing a scorer's params recomputes that score only.
func TestRescoreChangedParams(t *testing.T) {
	spec := strings.Replace(rescoreSpec, "[numeric]", "[numeric, test_rescore_counted]", 1)
	path := writeSweep(t, spec, map[string]string{})
	m := &rescoreModel{}
	rescoreCounted.Store(0)
	run(t, path, Options{Open: m.opener()})
	if n := rescoreCounted.Load(); n != 24 {
		t.Fatalf("the counted scorer ran %d times, want 24", n)
	}
	dir := resultsDir(path)
	before := standing(t, dir)

	// 11 for 5 + 5 passes with a tolerance of 1.
	setSpec(t, path, strings.Replace(spec, "[numeric,", "[{type: numeric, tolerance: 1},", 1))
	rescoreCounted.Store(0)
	rep := run(t, path, Options{Open: m.opener()})
	if rep.Rescored != 24 || rep.Ran != 0 || m.tactic.Load() != 24 {
		t.Errorf("rescored %d, ran %d, %d tactic calls; want 24, 0, 24", rep.Rescored, rep.Ran, m.tactic.Load())
	}
	if n := rescoreCounted.Load(); n != 0 {
		t.Errorf("the unchanged scorer ran %d times, want 0", n)
	}
	for k, r := range standing(t, dir) {
		o := before[k]
		if o.Scores["numeric"] != map[bool]float64{true: 0, false: 1}[r.Row == "r5"] {
			t.Fatalf("sample %s before: numeric %v", r.Row, o.Scores["numeric"])
		}
		if r.Scores["numeric"] != 1 || r.Scores["test_rescore_counted"] != o.Scores["test_rescore_counted"] || r.ScorerSpecs["numeric"] == o.ScorerSpecs["numeric"] {
			t.Errorf("sample %s/%d: scores %v specs %v; was %v %v", r.Row, r.Repeat, r.Scores, r.ScorerSpecs, o.Scores, o.ScorerSpecs)
		}
	}

	// The counted scorer's weight changed: it runs, on the result the
	// run log holds, and numeric does not change.
	setSpec(t, path, strings.Replace(spec, "[numeric, test_rescore_counted]", "[{type: numeric, tolerance: 1}, {type: test_rescore_counted, weight: 2}]", 1))
	rep = run(t, path, Options{Open: m.opener()})
	if rep.Rescored != 24 || rescoreCounted.Load() != 24 {
		t.Errorf("rescored %d, the counted scorer ran %d times; want 24 and 24", rep.Rescored, rescoreCounted.Load())
	}
	for _, r := range standing(t, dir) {
		if want := 2 * float64(len(r.Answer)); r.Scores["test_rescore_counted"] != want || r.Rescored != 2 || len(r.ScoreErrors) > 0 {
			t.Errorf("sample %s/%d: scores %v, errors %v, rescored %d; want counted %v", r.Row, r.Repeat, r.Scores, r.ScoreErrors, r.Rescored, want)
		}
	}
}

// A sample whose run log is gone runs again, and so does one whose log
// has no run_end (a crash while it was written), found only when read;
// the others are re-scored.
func TestRescoreMissingRunLog(t *testing.T) {
	path := writeSweep(t, rescoreSpec, map[string]string{})
	m := &rescoreModel{}
	run(t, path, Options{Open: m.opener()})
	dir := resultsDir(path)
	var gone, torn *Record
	for _, r := range standing(t, dir) {
		switch {
		case gone == nil:
			gone = r
		case torn == nil:
			torn = r
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, gone.RunDir)); err != nil {
		t.Fatal(err)
	}
	// Keep only the first line of the other's log.
	logPath := filepath.Join(dir, torn.RunDir, logs.EventsFile)
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if err := os.WriteFile(logPath, []byte(first+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	setSpec(t, path, strings.Replace(rescoreSpec, "[numeric]", "[numeric, exact]", 1))
	s := newSweep(t, path, Options{Open: m.opener()})
	if p := s.Plan(); p.ToRun != 1 || p.ToRescore != 23 || p.Done != 0 {
		t.Errorf("dry run: to run %d, to re-score %d, done %d; want 1 (the log is gone), 23, 0", p.ToRun, p.ToRescore, p.Done)
	}
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ran != 2 || rep.Reran != 1 || rep.Rescored != 22 || rep.Done != 24 {
		t.Errorf("ran %d (reran %d), rescored %d, done %d; want 2 (1), 22, 24", rep.Ran, rep.Reran, rep.Rescored, rep.Done)
	}
	if n := m.tactic.Load() - 24; n != 2 {
		t.Errorf("%d tactic calls, want 2: the samples without a usable log", n)
	}
	for k, r := range standing(t, dir) {
		ranAgain := k == gone.Key() || k == torn.Key()
		if ranAgain != (r.Rescored == 0) || ranAgain && r.RunID == gone.RunID || ranAgain && r.RunID == torn.RunID {
			t.Errorf("sample %s/%d: rescored %d, run %s", r.Row, r.Repeat, r.Rescored, r.RunID)
		}
		if _, ok := r.Scores["exact"]; !ok {
			t.Errorf("sample %s/%d has no exact score", r.Row, r.Repeat)
		}
	}
}

// A row whose task or expected answer changed runs again, even when a
// scorer was added too; the other rows are re-scored.
func TestRescoreChangedRowRunsAgain(t *testing.T) {
	rows := rowsJSONL(6)
	for _, c := range []struct{ name, rows string }{
		{"expected", strings.Replace(rows, `"What is 4 + 4?", "expected": 8`, `"What is 4 + 4?", "expected": 9`, 1)},
		{"task", strings.Replace(rows, `"What is 2 + 2?", "expected": 4`, `"What is 3 + 3?", "expected": 6`, 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeSweep(t, rescoreSpec, map[string]string{"rows.jsonl": rows})
			m := &rescoreModel{}
			run(t, path, Options{Open: m.opener()})
			setSpec(t, path, strings.Replace(rescoreSpec, "[numeric]", "[numeric, exact]", 1))
			if err := os.WriteFile(filepath.Join(filepath.Dir(path), "rows.jsonl"), []byte(c.rows), 0o644); err != nil {
				t.Fatal(err)
			}
			s := newSweep(t, path, Options{Open: m.opener()})
			if p := s.Plan(); p.ToRun != 4 || p.ToRescore != 20 {
				t.Errorf("dry run: to run %d, to re-score %d; want 4 (the changed row), 20", p.ToRun, p.ToRescore)
			}
			rep, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Ran != 4 || rep.Rescored != 20 || m.tactic.Load() != 28 || rep.Done != 24 {
				t.Errorf("ran %d, rescored %d, %d tactic calls, done %d; want 4, 20, 28, 24", rep.Ran, rep.Rescored, m.tactic.Load(), rep.Done)
			}
			fresh := run(t, path, Options{Open: (&rescoreModel{}).opener(), Dir: filepath.Join(t.TempDir(), "fresh")})
			sameTable(t, "the resumed table differs from a fresh run's", rep, fresh)
		})
	}
}

// A failed sample is never re-scored: one that failed on the provider runs
// again, as before; one that failed for a reason of its own runs again
// only because its scorers changed, as before.
func TestRescoreFailedSamples(t *testing.T) {
	registerEdgeTactic.Do(func() {
		tactics.Register("edge_chat", func(map[string]any) (tactics.Tactic, error) { return edgeTactic{}, nil })
	})
	// r3 fails on the provider (retryable), r4 and r5 in the tactic
	// (final); r1, r2 and r6 succeed.
	cfg := strings.Replace(chatConfig, "tactic_type: chat", "tactic_type: edge_chat", 1)
	spec := "config: config.yaml\ndataset: rows.jsonl\ncache: off\nscorers: [numeric]\n"
	path := writeSweep(t, spec, map[string]string{"config.yaml": cfg})
	m := &rescoreModel{tacticDown: func(text string) bool { return strings.Contains(text, "3 + 3") }}
	run(t, path, Options{Open: m.opener()})
	dir := resultsDir(path)
	failed := 0
	for _, r := range standing(t, dir) {
		if r.Status != "ok" {
			failed++
		}
	}
	if failed != 3 {
		t.Fatalf("%d samples failed, want 3", failed)
	}

	// The same spec: the provider failure runs again, nothing is re-scored.
	s := newSweep(t, path, Options{Open: m.opener()})
	if p := s.Plan(); p.ToRun != 1 || p.ToRescore != 0 {
		t.Errorf("dry run: to run %d, to re-score %d; want 1, 0", p.ToRun, p.ToRescore)
	}
	// A scorer added as well: the 3 that succeeded are re-scored, and so
	// are the 2 that failed in the tactic (a 0 for the new scorer, as a
	// run would give them, without running them); the provider failure
	// runs.
	setSpec(t, path, strings.Replace(spec, "[numeric]", "[numeric, exact]", 1))
	m.tacticDown = nil
	s = newSweep(t, path, Options{Open: m.opener()})
	if p := s.Plan(); p.ToRun != 1 || p.ToRescore != 5 || p.Calls != 1 {
		t.Errorf("dry run with a scorer added: to run %d, to re-score %d, %d calls; want 1, 5, 1", p.ToRun, p.ToRescore, p.Calls)
	}
	before := standing(t, dir)
	calls := m.tactic.Load()
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ran != 1 || rep.Rescored != 5 || m.tactic.Load()-calls != 1 {
		t.Errorf("ran %d, rescored %d, %d tactic calls; want 1, 5, 1", rep.Ran, rep.Rescored, m.tactic.Load()-calls)
	}
	for _, r := range standing(t, dir) {
		own := r.Row == "r4" || r.Row == "r5"
		if (r.Status == "ok") == own || (r.Rescored == 1) != (r.Row != "r3") {
			t.Errorf("sample %s: %s, rescored %d", r.Row, r.Status, r.Rescored)
		}
		if !own {
			continue
		}
		o := before[r.Key()]
		if s, ok := r.Scores["exact"]; !ok || s != 0 || r.Scores["numeric"] != 0 || r.Error != o.Error || r.RunID != o.RunID || r.ScorerSpecs["exact"] == "" {
			t.Errorf("failed sample %s re-scored as %+v, was %+v", r.Row, r, o)
		}
	}
	fresh := run(t, path, Options{Open: (&rescoreModel{}).opener(), Dir: filepath.Join(t.TempDir(), "fresh")})
	sameTable(t, "the re-scored table differs from a fresh run's", rep, fresh)
}

// A judge added to a finished sweep: its calls (and only its) are made
// and counted in the new records and the budget; the tactic's are not.
func TestRescoreAddedJudge(t *testing.T) {
	path := writeSweep(t, rescoreSpec, map[string]string{"judge.yaml": edgeJudge})
	m := &rescoreModel{}
	run(t, path, Options{Open: m.opener()})
	dir := resultsDir(path)
	before := standing(t, dir)
	usd, tok := spentOf(t, dir)

	setSpec(t, path, strings.Replace(rescoreSpec, "[numeric]", "[numeric, {type: judge, config: judge.yaml, name: graded}]", 1))
	s := newSweep(t, path, Options{Open: m.opener()})
	if p := s.Plan(); p.ToRescore != 24 || p.Calls != 24 {
		t.Errorf("dry run: to re-score %d, about %d calls; want 24 and 24 (the judge's)", p.ToRescore, p.Calls)
	}
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.tactic.Load() != 24 || m.judge.Load() != 24 || rep.Calls != 24 || rep.Rescored != 24 {
		t.Errorf("%d tactic calls, %d judge calls, %d model calls, rescored %d; want 24 (the first run's), 24, 24, 24",
			m.tactic.Load(), m.judge.Load(), rep.Calls, rep.Rescored)
	}
	for k, r := range standing(t, dir) {
		o := before[k]
		want := 1.0
		if r.Row == "r5" {
			want = 0
		}
		if r.Scores["graded"] != want || r.Scores["numeric"] != o.Scores["numeric"] {
			t.Errorf("sample %s/%d: scores %v, want graded %v", r.Row, r.Repeat, r.Scores, want)
		}
		if r.Calls != o.Calls+1 || math.Abs(r.SpentUSD-o.SpentUSD-0.001) > 1e-12 || r.SpentTokens != o.SpentTokens+12 || r.CarriedUSD != o.SpentUSD || r.CarriedTokens != o.SpentTokens {
			t.Errorf("sample %s/%d: calls %d spent $%v %d tokens, carried $%v %d; was %d, $%v, %d", r.Row, r.Repeat,
				r.Calls, r.SpentUSD, r.SpentTokens, r.CarriedUSD, r.CarriedTokens, o.Calls, o.SpentUSD, o.SpentTokens)
		}
	}
	if u, k := spentOf(t, dir); math.Abs(u-usd-0.024) > 1e-9 || k != tok+24*12 {
		t.Errorf("the budget counts $%v and %d tokens, want $%v and %d: the judge's calls, once", u, k, usd+0.024, tok+24*12)
	}
}

// A judge that fails on the provider while a sample is re-scored leaves
// the sample's answer and record standing, unrecorded again; the next run
// re-scores it, still without running the tactic.
func TestRescoreJudgeFailureKeepsTheRecord(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\ncache: off\nscorers: [numeric]\n"
	path := writeSweep(t, spec, map[string]string{"judge.yaml": edgeJudge})
	m := &rescoreModel{}
	run(t, path, Options{Open: m.opener()})
	dir := resultsDir(path)

	setSpec(t, path, strings.Replace(spec, "[numeric]", "[numeric, {type: judge, config: judge.yaml, name: graded}]", 1))
	m.judgeDown = func(text string) bool { return strings.Contains(text, "What is 2 + 2?") }
	rep, err := newSweep(t, path, Options{Open: m.opener()}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rescored != 5 || rep.RescoreFailed != 1 || rep.Ran != 0 || rep.Done != 5 || !strings.Contains(rep.RescoreError, "503") {
		t.Errorf("rescored %d, failed %d (%q), ran %d, done %d; want 5, 1, 0, 5", rep.Rescored, rep.RescoreFailed, rep.RescoreError, rep.Ran, rep.Done)
	}
	if n := keysIn(t, dir); len(n) != 6 {
		t.Errorf("%d samples recorded, want 6", len(n))
	}
	for k, n := range keysIn(t, dir) {
		if want := map[bool]int{true: 1, false: 2}[strings.Contains(k, "\x00r2\x00")]; n != want {
			t.Errorf("sample %q: %d records, want %d", strings.ReplaceAll(k, "\x00", "/"), n, want)
		}
	}
	if r := standing(t, dir)[(&Record{Cell: rep.Cells[0].Hash, Row: "r2"}).Key()]; r == nil || r.Status != "ok" || r.Answer != "4" || r.Rescored != 0 {
		t.Errorf("r2 after its judge failed: %+v; want its first record", r)
	}

	m.judgeDown = nil
	s := newSweep(t, path, Options{Open: m.opener()})
	if p := s.Plan(); p.ToRun != 0 || p.ToRescore != 1 {
		t.Errorf("dry run: to run %d, to re-score %d; want 0, 1", p.ToRun, p.ToRescore)
	}
	rep, err = s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rescored != 1 || rep.Ran != 0 || rep.Done != 6 || m.tactic.Load() != 6 || rep.Cells[0].Scores[1].Mean != 5.0/6 {
		t.Errorf("after the judge came back: rescored %d, ran %d, done %d, %d tactic calls, graded %+v", rep.Rescored, rep.Ran, rep.Done, m.tactic.Load(), rep.Cells[0].Scores[1])
	}
}

// Shards re-score into their own samples files, and merged they give the
// table of one process.
func TestRescoreShards(t *testing.T) {
	path := writeSweep(t, rescoreSpec, map[string]string{})
	m := &rescoreModel{}
	run(t, path, Options{Open: m.opener()})
	dir := resultsDir(path)
	lines := func(name string) int {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
	setSpec(t, path, strings.Replace(rescoreSpec, "[numeric]", "[numeric, exact]", 1))
	total := 0
	for i := range 2 {
		rep := run(t, path, Options{Open: m.opener(), Shard: Shard{Index: i, Count: 2}})
		n := lines(fmt.Sprintf("samples.shard-%d-of-2.jsonl", i))
		if rep.Rescored == 0 || rep.Ran != 0 || n != rep.Rescored {
			t.Errorf("shard %d/2: rescored %d, ran %d, %d records in its file", i, rep.Rescored, rep.Ran, n)
		}
		total += rep.Rescored
	}
	if total != 24 || lines(SamplesFile) != 24 || m.tactic.Load() != 24 {
		t.Errorf("shards re-scored %d samples, %d records in %s, %d tactic calls; want 24, 24, 24", total, lines(SamplesFile), SamplesFile, m.tactic.Load())
	}
	_, err := EachRecord(dir, func(r *Record) error {
		want := "1/2"
		if (Shard{Index: 0, Count: 2}).Has(r.Cell, r.Row, r.Repeat) {
			want = "0/2"
		}
		if r.Shard != want {
			t.Errorf("sample %s/%d: shard %q", r.Row, r.Repeat, r.Shard)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	merged, _, err := Merge(dir)
	if err != nil {
		t.Fatal(err)
	}
	fresh := run(t, path, Options{Open: (&rescoreModel{}).opener(), Dir: filepath.Join(t.TempDir(), "fresh")})
	sameTable(t, "merged re-scored shards differ from a fresh run", merged, fresh)
}

// rewriteRecords rewrites every record of dir's samples files with edit,
// as JSON objects.
func rewriteRecords(t *testing.T, dir string, edit func(r map[string]any)) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "samples*.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r map[string]any
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			edit(r)
			nb, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			out = append(append(out, nb...), '\n')
		}
		if err := os.WriteFile(f, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A record finished "later" than now (another machine's clock ahead) is
// still replaced by its re-score, which then stands: a run after it has
// nothing left to do.
func TestRescoreStandsOverAFutureRecord(t *testing.T) {
	path := writeSweep(t, rescoreSpec, map[string]string{})
	m := &rescoreModel{}
	run(t, path, Options{Open: m.opener()})
	dir := resultsDir(path)
	ahead := time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)
	rewriteRecords(t, dir, func(r map[string]any) { r["finished"] = ahead })

	setSpec(t, path, strings.Replace(rescoreSpec, "[numeric]", "[numeric, exact]", 1))
	if rep := run(t, path, Options{Open: m.opener()}); rep.Rescored != 24 || rep.Done != 24 {
		t.Errorf("rescored %d, done %d; want 24 and 24", rep.Rescored, rep.Done)
	}
	s := newSweep(t, path, Options{Open: m.opener()})
	if p := s.Plan(); p.ToRun != 0 || p.ToRescore != 0 {
		t.Errorf("after re-scoring: to run %d, to re-score %d; want nothing", p.ToRun, p.ToRescore)
	}
	if rep, err := s.Run(context.Background()); err != nil || rep.Rescored != 0 || rep.Ran != 0 || m.tactic.Load() != 24 {
		t.Errorf("again: %v, rescored %d, ran %d, %d tactic calls", err, rep.Rescored, rep.Ran, m.tactic.Load())
	}
}

// Records from before row_hash and scorer_specs: their scores stand by
// name and are kept; they are re-scored when their expected answer and
// their run log's task are the row's, and run again otherwise.
func TestRescoreOldRecords(t *testing.T) {
	rows := rowsJSONL(6)
	path := writeSweep(t, rescoreSpec, map[string]string{"rows.jsonl": rows})
	m := &rescoreModel{}
	run(t, path, Options{Open: m.opener()})
	dir := resultsDir(path)
	rewriteRecords(t, dir, func(r map[string]any) {
		delete(r, "row_hash")
		delete(r, "scorer_specs")
	})
	// r2's task and r4's expected answer changed; a scorer was added.
	rows = strings.Replace(rows, `"What is 2 + 2?", "expected": 4`, `"What is 3 + 3?", "expected": 4`, 1)
	rows = strings.Replace(rows, `"What is 4 + 4?", "expected": 8`, `"What is 4 + 4?", "expected": 9`, 1)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "rows.jsonl"), []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	setSpec(t, path, strings.Replace(rescoreSpec, "[numeric]", "[numeric, exact]", 1))
	s := newSweep(t, path, Options{Open: m.opener()})
	// r4's expected answer is in its record: it runs; r2's task is only in
	// its run log: found when re-scoring, it runs then.
	if p := s.Plan(); p.ToRun != 4 || p.ToRescore != 20 {
		t.Errorf("dry run: to run %d, to re-score %d; want 4, 20", p.ToRun, p.ToRescore)
	}
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ran != 8 || rep.Reran != 4 || rep.Rescored != 16 || m.tactic.Load() != 32 {
		t.Errorf("ran %d (reran %d), rescored %d, %d tactic calls; want 8 (4), 16, 32", rep.Ran, rep.Reran, rep.Rescored, m.tactic.Load())
	}
	for _, r := range standing(t, dir) {
		rerun := r.Row == "r2" || r.Row == "r4"
		if rerun == (r.Rescored == 1) || r.RowHash == "" || len(r.ScorerSpecs) != 2 {
			t.Errorf("sample %s/%d: rescored %d, row_hash %q, specs %v", r.Row, r.Repeat, r.Rescored, r.RowHash, r.ScorerSpecs)
		}
	}
	fresh := run(t, path, Options{Open: (&rescoreModel{}).opener(), Dir: filepath.Join(t.TempDir(), "fresh")})
	sameTable(t, "the resumed table differs from a fresh run's", rep, fresh)
	if again := run(t, path, Options{Open: m.opener()}); again.Ran != 0 || again.Rescored != 0 {
		t.Errorf("again: ran %d, rescored %d", again.Ran, again.Rescored)
	}
}
