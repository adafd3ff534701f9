package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

func TestExpandGridAndZip(t *testing.T) {
	axes := []Axis{{Path: "a", Values: []any{1, 2}}, {Path: "b", Values: []any{"x", "y", "z"}}}
	zip := []Axis{{Path: "m", Values: []any{"m1", "m2"}}, {Path: "s", Values: []any{10, 20}}}
	got := expand(axes, nil)
	if len(got) != 6 {
		t.Fatalf("grid: %d points, want 6", len(got))
	}
	if got[0][0].Value != 1 || got[0][1].Value != "x" || got[1][1].Value != "y" || got[3][0].Value != 2 {
		t.Errorf("grid order (first axis slowest): %v", got)
	}
	got = expand(axes, zip)
	if len(got) != 12 {
		t.Fatalf("grid x zip: %d points, want 12", len(got))
	}
	for _, p := range got {
		if len(p) != 4 {
			t.Fatalf("point %v: want 4 settings", p)
		}
		// Zipped values stay paired.
		if (p[2].Value == "m1") != (p[3].Value == 10) {
			t.Errorf("zip unpaired: %v", p)
		}
	}
	if got := expand(nil, zip); len(got) != 2 || got[1][0].Value != "m2" || got[1][1].Value != 20 || got[1][1].Index != 1 {
		t.Errorf("zip only: %v", got)
	}
	if got := expand(nil, nil); len(got) != 1 || len(got[0]) != 0 {
		t.Errorf("no axes: %v, want one empty point", got)
	}
}

var registerTestLen sync.Once

func TestScorers(t *testing.T) {
	row := func(expected any) *Row {
		return &Row{ID: "r", Task: "q", Expected: text(expected), ExpectedValue: expected}
	}
	cases := []struct {
		scorer string
		params map[string]any
		answer string
		want   any
		score  float64
	}{
		{"exact", nil, " Paris ", "Paris", 1},
		{"exact", nil, "paris", "Paris", 0},
		{"normalized", nil, "The  Paris!", "paris", 1},
		{"normalised", nil, "Lyon", "paris", 0},
		{"contains", nil, "It is Paris, France", "Paris", 1},
		{"contains", nil, "It is paris", "Paris", 0},
		{"contains", map[string]any{"ignore_case": true}, "It is paris", "Paris", 1},
		{"regex", map[string]any{"pattern": `^\d+$`}, "42", "x", 1},
		{"regex", nil, "answer: 42", `4\d`, 1},
		{"regex", nil, "answer: 52", `4\d`, 0},
		{"numeric", nil, "The answer is 3.5.", 3.5, 1},
		{"numeric", nil, "1,024", int64(1024), 1},
		{"numeric", nil, "-5", int64(-5), 1},
		{"numeric", nil, "about 3.4", 3.5, 0},
		{"numeric", map[string]any{"tolerance": 0.11}, "about 3.4", 3.5, 1},
		{"numeric", map[string]any{"relative": 0.05}, "102", int64(100), 1},
		{"numeric", nil, "no number", int64(1), 0},
		{"json_field", map[string]any{"field": "city"}, `{"city": "Paris"}`, "Paris", 1},
		{"json_field", map[string]any{"field": "n.0"}, `{"n": [7]}`, int64(7), 1},
		{"json_field", map[string]any{"field": "n", "value": 8}, `{"n": 8.0}`, "ignored", 1},
		{"json_field", map[string]any{"field": "city"}, `not json`, "Paris", 0},
	}
	for _, c := range cases {
		sc, err := NewScorer(c.scorer, c.params, Env{})
		if err != nil {
			t.Fatalf("%s %v: %v", c.scorer, c.params, err)
		}
		got, err := sc.Score(context.Background(), &Sample{Row: row(c.want), Answer: c.answer})
		if err != nil {
			t.Errorf("%s(%q, %v): %v", c.scorer, c.answer, c.want, err)
			continue
		}
		if got != c.score {
			t.Errorf("%s %v (%q vs %v) = %v, want %v", c.scorer, c.params, c.answer, c.want, got, c.score)
		}
	}
	if _, err := NewScorer("exakt", nil, Env{}); err == nil || !strings.Contains(err.Error(), `did you mean "exact"`) {
		t.Errorf("unknown scorer: %v", err)
	}
	if _, err := NewScorer("numeric", map[string]any{"tolerence": 1}, Env{}); err == nil || !strings.Contains(err.Error(), `"tolerance"`) {
		t.Errorf("unknown param: %v", err)
	}
	// Custom scorers register in Go.
	registerTestLen.Do(func() {
		RegisterScorer("test_len", func(map[string]any, Env) (Scorer, error) {
			return ScorerFunc(func(_ context.Context, s *Sample) (float64, error) { return float64(len(s.Answer)), nil }), nil
		})
	})
	sc, err := NewScorer("test_len", nil, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := sc.Score(context.Background(), &Sample{Row: row(""), Answer: "abc"}); v != 3 {
		t.Errorf("custom scorer = %v", v)
	}
	for _, c := range []struct {
		reply string
		want  float64
		ok    bool
	}{{"<score>1</score>", 1, true}, {"meh <score> 0.5 </score>", 0.5, true}, {"Yes.", 1, true}, {"incorrect", 0, true}, {"<score>7</score>", 0, false}, {"hmm", 0, false}} {
		got, err := ParseGrade(c.reply)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseGrade(%q) = %v, %v", c.reply, got, err)
		}
	}
}

func TestStats(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if m := mean([]float64{1, 0, 1, 1}); m != 0.75 {
		t.Errorf("mean = %v", m)
	}
	// Sample sd of {1,0,1,1} is 0.5; over sqrt(4) = 0.25.
	if se := stdErr([]float64{1, 0, 1, 1}); !near(se, 0.25) {
		t.Errorf("stderr = %v, want 0.25", se)
	}
	if stdErr([]float64{1}) != 0 || mean(nil) != 0 {
		t.Error("degenerate cases")
	}
	// pass@k = 1 - C(n-c, k)/C(n, k).
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{{5, 2, 1, 0.4}, {5, 2, 2, 0.7}, {5, 0, 3, 0}, {5, 3, 3, 1}, {4, 4, 1, 1}, {10, 3, 5, 1 - 21.0/252}} {
		if got := passAtK(c.n, c.c, c.k); !near(got, c.want) {
			t.Errorf("passAtK(%d,%d,%d) = %v, want %v", c.n, c.c, c.k, got, c.want)
		}
	}
	if !math.IsNaN(passAtK(2, 1, 3)) {
		t.Error("k > n should be NaN")
	}
	xs := []float64{5, 1, 4, 2, 3}
	if percentile(xs, 50) != 3 || percentile(xs, 100) != 5 || !near(percentile(xs, 95), 4.8) {
		t.Errorf("percentiles: %v %v %v", percentile(xs, 50), percentile(xs, 100), percentile(xs, 95))
	}
	// A cell's aggregate: two rows, two repeats each.
	recs := []*Record{
		{Row: "a", Status: "ok", Scores: map[string]float64{"s": 1}, LatencyMS: 10},
		{Row: "a", Repeat: 1, Status: "ok", Scores: map[string]float64{"s": 0}, LatencyMS: 20},
		{Row: "b", Status: "failed", Scores: map[string]float64{"s": 0}, LatencyMS: 30},
		{Row: "b", Repeat: 1, Status: "ok", Scores: map[string]float64{"s": 0}, LatencyMS: 40},
	}
	a := newCellAgg(1)
	for _, r := range recs {
		a.add(r, int32(r.Row[0]-'a'), []string{"s"}, 0)
	}
	cr := a.report(ManifestCell{Hash: "h"}, []string{"s"}, []int{1, 2})
	if cr.N != 4 || cr.Errors != 1 || cr.Scores[0].Mean != 0.25 || !near(cr.Scores[0].StdErr, 0.25) {
		t.Errorf("aggregate: %+v", cr)
	}
	if cr.PassAtK["1"] != 0.25 || cr.PassAtK["2"] != 0.5 || cr.P50MS != 25 {
		t.Errorf("aggregate pass@k / p50: %+v", cr)
	}
}

// A cell keeps at most LatencySample latencies, the same ones whatever the
// order the records come in, and its percentiles stay close to the exact
// ones.
func TestLatencySample(t *testing.T) {
	const n = 20 * LatencySample
	lat := make([]float64, n)
	for i := range lat {
		lat[i] = float64((i * 7919) % n) // a permutation of 0..n-1
	}
	var fwd, rev latencySample
	for i := range n {
		fwd.add(sampleHash("c", strconv.Itoa(i), 0), lat[i])
		j := n - 1 - i
		rev.add(sampleHash("c", strconv.Itoa(j), 0), lat[j])
	}
	if len(fwd.h) != LatencySample {
		t.Fatalf("kept %d latencies, want %d", len(fwd.h), LatencySample)
	}
	for _, p := range []float64{50, 95} {
		got, exact := fwd.percentile(p), percentile(lat, p)
		if got != rev.percentile(p) {
			t.Errorf("p%v depends on the order: %v, %v", p, got, rev.percentile(p))
		}
		// Within 2 points of rank (about 4 standard errors).
		if math.Abs(got-exact) > 0.02*n {
			t.Errorf("p%v = %v, exact %v", p, got, exact)
		}
	}
}

func TestDatasetErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ name, body, want string }{
		{"noid.jsonl", `{"id": 1, "input": "a"}` + "\n\n" + `{"input": "b"}`, `noid.jsonl:3: no "id"`},
		{"bad.jsonl", `{"id": 1, "input": "a"}` + "\n" + `{"id": 2, "input": }`, `bad.jsonl:2: not a JSON object`},
		{"dup.jsonl", `{"id": 1, "input": "a"}` + "\n" + `{"id": 1, "input": "b"}`, `dup.jsonl:2: id "1" is taken by line 1`},
		{"noinput.jsonl", `{"id": 1, "question": "a"}`, `noinput.jsonl:1: no "input"`},
		{"noid.csv", "id,input\n1,a\n,b\n", `noid.csv:3: no "id"`},
		{"empty.jsonl", "\n", "has no rows"},
		{"two.jsonl", `{"id": 1, "input": "a"}{"id": 2, "input": "b"}` + "\n", `two.jsonl:1: more than one JSON value on the line`},
		{"junk.jsonl", `{"id": 1, "input": "a"}` + "\n" + `{"id": 2, "input": "b"} x` + "\n", `junk.jsonl:2: more than one JSON value`},
		{"long.jsonl", `{"id": 1, "input": "a"}` + "\n" + `{"id": 2, "input": "` + strings.Repeat("x", maxLine) + `"}`, `long.jsonl:2: the line is over 64 MiB`},
	} {
		_, err := LoadDataset(write(c.name, c.body), DatasetSpec{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if rows, err := LoadDataset(write("bom.jsonl", "\ufeff"+`{"id": "a", "input": "x"}`+"\n"), DatasetSpec{}); err != nil || len(rows) != 1 || rows[0].ID != "a" {
		t.Errorf("JSONL with a byte order mark: %v, %+v", err, rows)
	}
	rows, err := LoadDataset(write("ok.csv", "key,q,a\nk1,\"What, then?\",7\n"), DatasetSpec{ID: "key", Task: "Q: {q}", Expected: "a"})
	if err != nil || len(rows) != 1 || rows[0].ID != "k1" || rows[0].Task != "Q: What, then?" || rows[0].Expected != "7" {
		t.Errorf("csv: %+v, %v", rows, err)
	}
}

func TestSpecErrors(t *testing.T) {
	base := "config: config.yaml\ndataset: rows.jsonl\n"
	for _, c := range []struct{ spec, want string }{
		{base + "repeets: 2\n", `sweep.yaml:3: unknown key "repeets" (did you mean "repeats"?)`},
		{base + "axes:\n  global.modl_name: [mock/a]\n", `did you mean "global.model_name"?`},
		{base + "axes:\n  global.model_args.temprature: [0]\n", `did you mean "global.model_args.temperature"?`},
		{base + "axes:\n  agent_configs.assistant.model_args.max_tokens: [1, 2]\n  params.n: [3]\n", `chat takes no params`},
		{base + "scorers: [exakt]\n", `sweep.yaml:3: unknown scorer "exakt" (did you mean "exact"?)`},
		{base + "zip:\n  global.model_name: [mock/a, mock/b]\n  global.model_args.temperature: [0]\n", "must be as long"},
		{base + "axes:\n  global.model_name: [mock/a, mock/a]\n", "resolve to the same config"},
		{"dataset: rows.jsonl\n", "no config"},
		{base + "cache: maybe\n", `want auto, on or off`},
	} {
		path := writeSweep(t, c.spec, map[string]string{})
		spec, err := LoadSpec(path)
		if err == nil {
			_, err = New(context.Background(), spec, Options{Dir: filepath.Join(filepath.Dir(path), "out")})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("spec %q: %v, want %q", c.spec, err, c.want)
		}
	}
	// Every problem is reported at once: those of the spec alone together,
	// then those that need the config and the dataset together.
	_, err := ParseSpec("s.yaml", []byte("config: c.yaml\ndataset: d.jsonl\nrepeets: 2\nrepeats: many\nbudget: {max_cots: 1}\naxes:\n  a: []\ncache: maybe\n"))
	for _, want := range []string{`s.yaml:3: unknown key "repeets"`, "s.yaml:4: cannot unmarshal", `s.yaml:5: unknown key "max_cots" in budget (did you mean "max_cost"?)`,
		"s.yaml:7: axes.a: want a non-empty list", `s.yaml:8: cache: "maybe"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("spec with five problems: %v\nwant %q among them", err, want)
		}
	}
	path := writeSweep(t, "config: config.yaml\ndataset: missing.jsonl\nscorers: [exakt]\naxes:\n  global.modl_name: [mock/a]\n", map[string]string{})
	spec, err := LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), spec, Options{Dir: filepath.Join(filepath.Dir(path), "out")})
	for _, want := range []string{"missing.jsonl", `did you mean "global.model_name"?`, `unknown scorer "exakt"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("sweep with three problems: %v\nwant %q among them", err, want)
		}
	}
	// A bad dataset stops the sweep before anything is written.
	path = writeSweep(t, base, map[string]string{"rows.jsonl": `{"id": "a", "input": "x"}` + "\n{oops\n"})
	spec, err = LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(filepath.Dir(path), "out")
	if _, err := New(context.Background(), spec, Options{Dir: out}); err == nil || !strings.Contains(err.Error(), "rows.jsonl:2:") {
		t.Errorf("bad row: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the sweep directory exists after a bad dataset: %v", err)
	}
}

func TestRunResumeAndNewCells(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nscorers: [numeric]\naxes:\n  agent_configs.assistant.model_args.max_tokens: [100, 200]\n"
	path := writeSweep(t, spec, map[string]string{})
	rep := run(t, path, Options{})
	if rep.Calls != 24 || rep.Ran != 24 || len(rep.Cells) != 2 || rep.Done != 24 || rep.Samples != 24 {
		t.Fatalf("first run: calls %d ran %d cells %d done %d/%d", rep.Calls, rep.Ran, len(rep.Cells), rep.Done, rep.Samples)
	}
	for _, c := range rep.Cells {
		// r5 is answered wrong: 5 of 6 rows right.
		if c.N != 12 || math.Abs(c.Scores[0].Mean-10.0/12) > 1e-9 || c.PassAtK["2"] != 5.0/6 || c.Errors != 0 {
			t.Errorf("cell %+v", c)
		}
	}
	// Again: nothing to run.
	rep2 := run(t, path, Options{})
	if rep2.Calls != 0 || rep2.Ran != 0 || rep2.Done != 24 {
		t.Errorf("second run: calls %d ran %d done %d", rep2.Calls, rep2.Ran, rep2.Done)
	}
	if !reflect.DeepEqual(stripReport(rep), stripReport(rep2)) {
		t.Errorf("reports differ:\n%+v\n%+v", rep.Cells, rep2.Cells)
	}
	// A new axis value runs only the new cell.
	spec3 := strings.Replace(spec, "[100, 200]", "[100, 200, 300]", 1)
	if err := os.WriteFile(path, []byte(spec3), 0o644); err != nil {
		t.Fatal(err)
	}
	rep3 := run(t, path, Options{})
	if rep3.Calls != 12 || rep3.Ran != 12 || len(rep3.Cells) != 3 || rep3.Done != 36 {
		t.Errorf("new cell: calls %d ran %d cells %d done %d", rep3.Calls, rep3.Ran, len(rep3.Cells), rep3.Done)
	}
	for k, n := range keysIn(t, filepath.Join(filepath.Dir(path), "results")) {
		if n != 1 {
			t.Errorf("sample %q recorded %d times", k, n)
		}
	}
	// The report from disk is the same as the run's.
	disk, _, err := LoadReport(filepath.Join(filepath.Dir(path), "results"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stripReport(disk), stripReport(rep3)) {
		t.Errorf("report from disk differs:\n%+v\n%+v", disk.Cells, rep3.Cells)
	}
	// Every sample has its run log under runs/.
	runs, _ := os.ReadDir(filepath.Join(filepath.Dir(path), "results", RunsDir))
	if len(runs) != 36 {
		t.Errorf("%d run logs, want 36", len(runs))
	}
}

// stripReport keeps what a report says about results, not about the
// invocation that made it (nor its latencies), as JSON.
func stripReport(r *Report) string {
	out := make([]CellReport, len(r.Cells))
	for i, c := range r.Cells {
		c.P50MS, c.P95MS = 0, 0
		c.settings = nil
		out[i] = c
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestCache(t *testing.T) {
	// best_of_n: the solver (temperature 0.9) asks the same request in three
	// forks; the judge (temperature 0) picks. With cache: on, every call is
	// cached by position and repeat, so candidates and repeats stay distinct.
	cfg := `tactic_type: best_of_n
params: {n: 3}
global: {model_name: mock/m}
agent_configs:
  - {name: solver, system_prompt: Solve., model_args: {temperature: 0.9}}
  - {name: judge, system_prompt: Judge., model_args: {temperature: 0}}
mock:
  rules: [{match: Candidate answers, reply: {text: "<choice>1</choice>"}}]
`
	spec := "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\ncache: on\nanswer: candidates\n"
	path := writeSweep(t, spec, map[string]string{"config.yaml": cfg, "rows.jsonl": rowsJSONL(3)})
	m := &countingModel{}
	rep := run(t, path, Options{Open: m.opener()})
	if rep.Calls != 24 || rep.CacheHits != 0 {
		t.Fatalf("first run: calls %d hits %d, want 24 and 0", rep.Calls, rep.CacheHits)
	}
	dir := filepath.Join(filepath.Dir(path), "results")
	first := answers(t, dir)
	seen := map[string]bool{}
	for _, a := range first {
		if seen[a] {
			t.Errorf("two samples have the same candidates %s: repeats or forks shared a reply", a)
		}
		seen[a] = true
	}
	// Forget the samples (not the cache): every reply comes from the cache,
	// each to the same place as before.
	if err := os.Remove(filepath.Join(dir, SamplesFile)); err != nil {
		t.Fatal(err)
	}
	rep = run(t, path, Options{Open: m.opener()})
	if rep.Calls != 0 || rep.CacheHits != 24 || m.n.Load() != 24 {
		t.Errorf("cached run: calls %d hits %d model calls %d", rep.Calls, rep.CacheHits, m.n.Load())
	}
	if got := answers(t, dir); !reflect.DeepEqual(got, first) {
		t.Errorf("cached answers differ:\n%v\n%v", got, first)
	}

	// auto caches only temperature 0 (the judge). On the mock, whose
	// replies depend only on the request, the judge's requests repeat.
	spec = strings.Replace(spec, "cache: on", "cache: auto", 1)
	path = writeSweep(t, spec, map[string]string{"config.yaml": cfg, "rows.jsonl": rowsJSONL(3)})
	dir = filepath.Join(filepath.Dir(path), "results")
	if rep = run(t, path, Options{}); rep.Calls != 24 || rep.CacheHits != 0 {
		t.Errorf("auto, first: calls %d hits %d, want 24 and 0", rep.Calls, rep.CacheHits)
	}
	os.Remove(filepath.Join(dir, SamplesFile))
	if rep = run(t, path, Options{}); rep.Calls != 18 || rep.CacheHits != 6 {
		t.Errorf("auto, again: calls %d hits %d, want 18 and 6", rep.Calls, rep.CacheHits)
	}
}

func answers(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if _, err := EachRecord(dir, func(r *Record) error {
		out[r.Key()] = r.Answer
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCacheNeverStoresErrors(t *testing.T) {
	cache, err := openCache(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	inner := &countingModel{fail: func(n int64) error {
		if n == 1 {
			return &provider.Error{Kind: provider.ErrServer, Provider: "mock", Status: 500, Err: errors.New("boom")}
		}
		return nil
	}}
	s := &Sweep{Spec: &Spec{}, limiters: map[string]*limiter{}}
	x := &execution{s: s, cache: cache, policy: "on", conc: 2, cancel: func() {}}
	m := &model{inner: inner, name: "mock/m", provider: "mock", x: x}
	zero := 0.0
	req := &provider.Request{Messages: []*dialog.Message{{Role: dialog.RoleUser, Content: "hi"}}, Params: provider.Params{Temperature: &zero}}
	call := func(repeat int) (string, error) {
		ctx := provider.WithCallInfo(withState(context.Background(), &sampleState{repeat: repeat}), provider.CallInfo{Agent: "a", Dialog: "main", Turn: 1})
		r, err := m.Generate(ctx, req)
		if err != nil {
			return "", err
		}
		return r.Message.Text(), nil
	}
	if _, err := call(0); err == nil {
		t.Fatal("the first call should fail")
	}
	a, err := call(0) // the error was not cached: the model is called
	if err != nil || a != "reply 2" {
		t.Fatalf("after an error: %q, %v", a, err)
	}
	b, _ := call(0) // now cached
	c, _ := call(1) // another repeat: its own reply
	if b != "reply 2" || c != "reply 3" || inner.n.Load() != 3 || x.hits.Load() != 1 || x.calls.Load() != 3 {
		t.Errorf("hit %q, repeat %q, model calls %d, hits %d, calls %d", b, c, inner.n.Load(), x.hits.Load(), x.calls.Load())
	}
	// Concurrent use is safe.
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = call(i % 4) }()
	}
	wg.Wait()
}

func TestKillSafety(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nconcurrency: 3\naxes:\n  agent_configs.assistant.model_args.max_tokens: [100, 200]\n"
	path := writeSweep(t, spec, map[string]string{})
	dir := filepath.Join(filepath.Dir(path), "results")

	// Cancel mid-sweep: the samples in flight are lost, nothing else.
	s := newSweep(t, path, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	s.opts.Progress = func(p Progress) {
		if p.Done == 7 {
			cancel()
		}
	}
	rep, err := s.Run(ctx)
	if !errors.Is(err, context.Canceled) || rep == nil || rep.Done < 7 || rep.Done >= 24 {
		t.Fatalf("cancelled run: %v, done %d", err, rep.Done)
	}
	done := rep.Done

	// A crash while a record was written leaves a torn last line.
	f, err := os.OpenFile(filepath.Join(dir, SamplesFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"cell":"abc","row":"r1","rep`)
	f.Close()

	s = newSweep(t, path, Options{})
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], "torn last line") {
		t.Errorf("warnings: %v", w)
	}
	rep, err = s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Done != 24 || rep.Ran != 24-done || rep.Calls != 24-done {
		t.Errorf("resumed: done %d ran %d calls %d, want 24, %d, %d", rep.Done, rep.Ran, rep.Calls, 24-done, 24-done)
	}
	counts := keysIn(t, dir)
	if len(counts) != 24 {
		t.Errorf("%d samples recorded, want 24", len(counts))
	}
	for k, n := range counts {
		if n != 1 {
			t.Errorf("sample %q recorded %d times", k, n)
		}
	}
}

func TestShardsMergeEqualsOneProcess(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nscorers: [numeric, exact]\naxes:\n  agent_configs.assistant.model_args.max_tokens: [100, 200, 300]\n"
	path := writeSweep(t, spec, map[string]string{})
	whole := run(t, path, Options{Dir: filepath.Join(t.TempDir(), "whole")})

	// Three shards on one shared directory, at once.
	shared := filepath.Join(t.TempDir(), "shared")
	var wg sync.WaitGroup
	ran := make([]int, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ran[i] = run(t, path, Options{Dir: shared, Shard: Shard{i, 3}}).Ran
		}()
	}
	wg.Wait()
	if ran[0]+ran[1]+ran[2] != 36 || ran[0] == 0 || ran[1] == 0 || ran[2] == 0 {
		t.Errorf("shards ran %v samples, want a share each summing to 36", ran)
	}
	merged, _, err := Merge(shared)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stripReport(merged), stripReport(whole)) {
		t.Errorf("merged shards differ from one process:\n%+v\n%+v", merged.Cells, whole.Cells)
	}
	// Shards that wrote separate copies (one machine each), merged into a
	// fresh directory.
	var copies []string
	for i := range 3 {
		d := filepath.Join(t.TempDir(), "node")
		run(t, path, Options{Dir: d, Shard: Shard{i, 3}})
		copies = append(copies, d)
	}
	into := filepath.Join(t.TempDir(), "into")
	merged, _, err = Merge(into, copies...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stripReport(merged), stripReport(whole)) {
		t.Errorf("merged copies differ from one process:\n%+v\n%+v", merged.Cells, whole.Cells)
	}
	runs, _ := os.ReadDir(filepath.Join(into, RunsDir))
	if len(runs) != 36 {
		t.Errorf("%d run logs merged, want 36", len(runs))
	}
	// Merging again changes nothing; a run over the merged directory has
	// nothing to do.
	again, _, err := Merge(into, copies...)
	if err != nil || !reflect.DeepEqual(stripReport(again), stripReport(whole)) {
		t.Errorf("second merge: %v", err)
	}
	if rep := run(t, path, Options{Dir: into}); rep.Calls != 0 {
		t.Errorf("run after merge made %d calls", rep.Calls)
	}
}

func TestBudgetStop(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nrepeats: 4\nconcurrency: 2\nbudget: {max_cost: 0.0095}\n"
	path := writeSweep(t, spec, map[string]string{})
	m := &countingModel{} // $0.001 a call
	s := newSweep(t, path, Options{Open: m.opener()})
	rep, err := s.Run(context.Background())
	if !errors.Is(err, ErrBudget) || rep == nil {
		t.Fatalf("err %v", err)
	}
	// Launching stops at $0.0095; the in-flight ones finish and are kept.
	if rep.Done < 10 || rep.Done > 12 || rep.Ran != rep.Done || !strings.Contains(rep.Stopped, "max_cost") {
		t.Errorf("done %d ran %d stopped %q", rep.Done, rep.Ran, rep.Stopped)
	}
	// The budget counts what earlier runs spent: a re-run stops at once.
	rep, err = newSweep(t, path, Options{Open: m.opener()}).Run(context.Background())
	if !errors.Is(err, ErrBudget) || rep.Ran != 0 {
		t.Errorf("re-run: %v, ran %d", err, rep.Ran)
	}
}

func TestConsecutiveFailuresStop(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nrepeats: 5\nconcurrency: 2\nmax_consecutive_errors: 4\n"
	path := writeSweep(t, spec, map[string]string{})
	m := &countingModel{fail: func(int64) error {
		return &provider.Error{Kind: provider.ErrAuth, Provider: "mock", Status: 401, Err: errors.New("invalid key")}
	}}
	rep, err := newSweep(t, path, Options{Open: m.opener()}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "4 model calls in a row failed") || !strings.Contains(err.Error(), "invalid key") {
		t.Fatalf("err %v", err)
	}
	if rep.Done >= 30 || m.n.Load() > 8 {
		t.Errorf("done %d, model calls %d: the sweep went on", rep.Done, m.n.Load())
	}
	// Provider failures are recorded but not final: a re-run tries them.
	s := newSweep(t, path, Options{})
	if _, err := EachRecord(s.Dir, func(r *Record) error {
		if e, ok := s.records.get(r.Cell, r.Row, r.Repeat); r.Status != "failed" || !r.Retry || !ok || e.done() {
			t.Errorf("record %+v", r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rep, err = newSweep(t, path, Options{}).Run(context.Background())
	if err != nil || rep.Done != 30 || rep.Cells[0].Errors != 0 {
		t.Errorf("re-run with a working provider: %v, done %d, errors %d", err, rep.Done, rep.Cells[0].Errors)
	}
}

func TestAdaptiveConcurrencyOn429(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	srv.SetMaxRecorded(1)
	ok := providertest.Reply{Text: "42", Delay: 5 * time.Millisecond, Usage: providertest.Usage{Input: 5, Output: 1}}
	srv.SetDefault(ok)
	for range 6 {
		srv.Enqueue(providertest.RateLimited("0"))
	}
	cfg := "tactic_type: chat\nglobal:\n  model_name: openai/gpt-4o-mini\n  base_url: " + srv.BaseURL() +
		"\n  model_args: {temperature: 0}\nagent_configs:\n  - {name: assistant, system_prompt: Answer.}\n"
	spec := "config: config.yaml\ndataset: rows.jsonl\nconcurrency: 8\ncache: off\n"
	path := writeSweep(t, spec, map[string]string{"config.yaml": cfg, "rows.jsonl": rowsJSONL(40)})
	s := newSweep(t, path, Options{})
	var mu sync.Mutex
	var limits []int
	s.opts.Progress = func(Progress) {
		mu.Lock()
		limits = append(limits, s.lastLimiter("openai").Limit())
		mu.Unlock()
	}
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l := s.lastLimiter("openai")
	if rep.Done != 40 || rep.Cells[0].Errors != 0 {
		t.Errorf("done %d errors %d", rep.Done, rep.Cells[0].Errors)
	}
	if l.MinLimit() >= 8 {
		t.Errorf("the limit never shrank on 429s: min %d", l.MinLimit())
	}
	if l.Limit() <= l.MinLimit() {
		t.Errorf("the limit did not grow back: now %d, min %d (over time %v)", l.Limit(), l.MinLimit(), limits)
	}
	t.Logf("limit over time: %v (min %d)", limits, l.MinLimit())
}

func TestLimiter(t *testing.T) {
	l := newLimiter(4)
	ctx := context.Background()
	var ps []permit
	for range 4 {
		p, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	// Full: a fifth waits until cancelled.
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(cctx); err == nil {
		t.Fatal("acquired past the limit")
	}
	// Four 429s of one round cut once: 4 -> 2.
	for _, p := range ps {
		p.Release(permitRateLimited)
	}
	if l.Limit() != 2 {
		t.Errorf("limit after one round of 429s = %d, want 2", l.Limit())
	}
	// Successes grow it back, one per limit's worth.
	for range 20 {
		p, _ := l.Acquire(ctx)
		p.Release(permitOK)
	}
	if l.Limit() != 4 || l.MinLimit() != 2 {
		t.Errorf("limit %d min %d, want 4 and 2", l.Limit(), l.MinLimit())
	}
}

func TestJudgeScorer(t *testing.T) {
	judgeCfg := `tactic_type: chat
global: {model_name: mock/judge, model_args: {temperature: 0}}
agent_configs:
  - {name: judge, system_prompt: You grade answers.}
mock:
  rules:
    - {regex: "Answer to grade:\\s*(2|4|6|8|12)\\s", reply: {text: "<score>1</score>"}}
    - {match: "Answer to grade", reply: {text: "<score>0</score>"}}
`
	spec := "config: config.yaml\ndataset: rows.jsonl\nscorers:\n  - numeric\n  - {type: judge, config: judge.yaml, name: graded}\n"
	path := writeSweep(t, spec, map[string]string{"judge.yaml": judgeCfg})
	rep := run(t, path, Options{})
	c := rep.Cells[0]
	if c.Scores[1].Name != "graded" || math.Abs(c.Scores[1].Mean-5.0/6) > 1e-9 || c.Scores[0].Mean != c.Scores[1].Mean {
		t.Errorf("judge scores: %+v", c.Scores)
	}
	// The judge's calls count as the sweep's: 6 samples + 6 judgements.
	if rep.Calls != 12 {
		t.Errorf("calls %d, want 12", rep.Calls)
	}
}

func TestReportFormats(t *testing.T) {
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\naxes:\n  global.model_args.temperature: [0, 0.5]\n", map[string]string{})
	rep := run(t, path, Options{})
	for _, f := range Formats {
		var b strings.Builder
		if err := rep.Write(&b, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out := b.String()
		wants := []string{"temperature", "pass@2", "0.5"}
		if f == "json" {
			wants = []string{`"cells"`, `"calls": 24`, `"pass_at_k"`}
		}
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks %q:\n%s", f, want, out)
			}
		}
		if f == "csv" && strings.Count(out, "\n") != 3 {
			t.Errorf("csv: want a header and 2 rows:\n%s", out)
		}
	}
}
