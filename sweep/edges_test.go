package sweep

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
	"github.com/lllm-go/lllm/tactics"
)

// edgeModel answers each call with reply(request, call number), at $0.001
// and 10+2 tokens a call.
type edgeModel struct {
	n     atomic.Int64
	reply func(req *provider.Request, n int64) (string, error)
}

func (m *edgeModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	n := m.n.Add(1)
	text, err := m.reply(req, n)
	if err != nil {
		return nil, err
	}
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: text,
		Usage: dialog.Usage{InputTokens: 10, OutputTokens: 2}, USD: 0.001}}, nil
}

func (m *edgeModel) opener() func(context.Context, string, provider.Config) (provider.Model, error) {
	return func(context.Context, string, provider.Config) (provider.Model, error) { return m, nil }
}

// edgeArith answers "What is N + N?" with 2N (but 11 for 5 + 5) and
// grades answers as edgeJudge does, each call after latency.
func edgeArith(latency time.Duration) *edgeModel {
	grade := regexp.MustCompile(`Answer to grade:\s*(2|4|6|8|12)\s`)
	return &edgeModel{reply: func(req *provider.Request, _ int64) (string, error) {
		time.Sleep(latency)
		text := lastText(req)
		if strings.Contains(text, "Answer to grade") {
			if grade.MatchString(text) {
				return "<score>1</score>", nil
			}
			return "<score>0</score>", nil
		}
		var n int
		fmt.Sscanf(text, "What is %d", &n)
		if n == 5 {
			return "11", nil
		}
		return strconv.Itoa(2 * n), nil
	}}
}

// lastText is the text of a request's last message.
func lastText(req *provider.Request) string { return req.Messages[len(req.Messages)-1].Text() }

// edgeJudge grades answers 2, 4, 6, 8 and 12 right, on the mock.
const edgeJudge = `tactic_type: chat
global: {model_name: mock/judge, model_args: {temperature: 0}}
agent_configs:
  - {name: judge, system_prompt: You grade answers.}
mock:
  latency: 2ms
  rules:
    - {regex: "Answer to grade:\\s*(2|4|6|8|12)\\s", reply: {text: "<score>1</score>"}}
    - {match: "Answer to grade", reply: {text: "<score>0</score>"}}
`

// edgeSlowChat is chatConfig with a mock latency.
var edgeSlowChat = strings.Replace(chatConfig, "mock:\n", "mock:\n  latency: 3ms\n", 1)

// edgeSpec is a 2-cell, 6-row, 2-repeat sweep scored by numeric and a judge.
const edgeSpec = "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nconcurrency: 4\n" +
	"scorers:\n  - numeric\n  - {type: judge, config: judge.yaml, name: graded}\n" +
	"axes:\n  agent_configs.assistant.model_args.max_tokens: [100, 200]\n"

// onceEach checks that every sample of dir has exactly one record, and n in all.
func onceEach(t *testing.T, dir string, n int) {
	t.Helper()
	counts := keysIn(t, dir)
	if len(counts) != n {
		t.Errorf("%d samples recorded, want %d", len(counts), n)
	}
	for k, c := range counts {
		if c != 1 {
			t.Errorf("sample %q recorded %d times: a finished sample ran again", strings.ReplaceAll(k, "\x00", "/"), c)
		}
	}
}

// noScoreErrors checks that no record of dir kept a scorer's error.
func noScoreErrors(t *testing.T, dir string) {
	t.Helper()
	if _, err := EachRecord(dir, func(r *Record) error {
		if len(r.ScoreErrors) > 0 {
			t.Errorf("sample %s/%d recorded as finished with score errors %v", r.Row, r.Repeat, r.ScoreErrors)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// sameTable checks that got and want report the same results (stripReport),
// showing them one line per cell when they differ.
func sameTable(t *testing.T, what string, got, want *Report) {
	t.Helper()
	if stripReport(got) == stripReport(want) {
		return
	}
	line := func(r *Report) string {
		var b strings.Builder
		for _, c := range r.Cells {
			fmt.Fprintf(&b, "\n  %v n=%d/%d errors=%d", c.Settings, c.N, c.Expected, c.Errors)
			for _, s := range c.Scores {
				fmt.Fprintf(&b, " %s=%.4f±%.4f", s.Name, s.Mean, s.StdErr)
			}
			fmt.Fprintf(&b, " pass@k=%v tokens=%d/%d", c.PassAtK, c.Cost.InputTokens, c.Cost.OutputTokens)
		}
		return b.String()
	}
	t.Errorf("%s:%s\nwant:%s", what, line(got), line(want))
}

// Cancelling a sweep at random moments, then resuming, never re-runs or
// loses a finished sample, and ends with the table of an uninterrupted run.
func TestEdgeResumeAfterRandomCancels(t *testing.T) {
	path := writeSweep(t, edgeSpec, map[string]string{"config.yaml": edgeSlowChat, "judge.yaml": edgeJudge})
	whole := run(t, path, Options{Dir: filepath.Join(t.TempDir(), "whole")})
	dir := filepath.Join(t.TempDir(), "cut")
	rng := rand.New(rand.NewPCG(1, 2))
	ran, runs := 0, 0
	var final *Report
	for runs < 40 {
		runs++
		// Cancel at a random moment after the k-th sample of this run ends.
		ctx, cancel := context.WithCancel(context.Background())
		k, delay := 1+rng.IntN(4), time.Duration(rng.IntN(4000))*time.Microsecond
		s := newSweep(t, path, Options{Dir: dir})
		s.opts.Progress = func(p Progress) {
			if p.Done == k {
				time.AfterFunc(delay, cancel)
			}
		}
		rep, err := s.Run(ctx)
		cancel()
		if rep == nil {
			t.Fatalf("run %d: no report: %v", runs, err)
		}
		ran += rep.Ran
		if err == nil {
			final = rep
			break
		}
		if !errors.Is(err, context.Canceled) || rep.Stopped != "interrupted" {
			t.Fatalf("run %d: %v, stopped %q", runs, err, rep.Stopped)
		}
	}
	if final == nil {
		t.Fatalf("not done after %d runs", runs)
	}
	t.Logf("%d runs", runs)
	if ran != 24 || final.Done != 24 {
		t.Errorf("the runs finished %d samples in all (done %d), want 24", ran, final.Done)
	}
	onceEach(t, dir, 24)
	noScoreErrors(t, dir)
	sameTable(t, "resumed table differs from an uninterrupted run's", final, whole)
}

// A sweep cancelled while a judge scores a sample does not record that
// sample with the judge's error as its final score.
func TestEdgeCancelDuringScoringIsNotFinal(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nconcurrency: 1\nscorers:\n  - numeric\n  - {type: judge, config: judge.yaml, name: graded}\n"
	path := writeSweep(t, spec, map[string]string{"judge.yaml": edgeJudge, "rows.jsonl": rowsJSONL(3)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &edgeModel{reply: func(req *provider.Request, _ int64) (string, error) {
		if !strings.Contains(lastText(req), "Answer to grade") {
			return "2", nil
		}
		if ctx.Err() == nil {
			cancel() // Ctrl-C while the first sample is being judged
			return "", fmt.Errorf("judge call: %w", context.Canceled)
		}
		return "<score>1</score>", nil
	}}
	if _, err := newSweep(t, path, Options{Open: m.opener()}).Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	rep := run(t, path, Options{Open: m.opener()})
	if c := rep.Cells[0]; rep.Done != 3 || c.Scores[1].Mean != 1 {
		t.Errorf("after resuming: done %d, graded %+v; want 3 samples all graded 1", rep.Done, c.Scores[1])
	}
	noScoreErrors(t, filepath.Join(filepath.Dir(path), "results"))
}

// TestEdgeHelperProcess is the child process of the SIGKILL tests; it does
// nothing unless EDGE_HELPER says what to do.
func TestEdgeHelperProcess(t *testing.T) {
	switch os.Getenv("EDGE_HELPER") {
	case "sweep":
		s := newSweep(t, os.Getenv("EDGE_SPEC"), Options{Dir: os.Getenv("EDGE_DIR"), Open: edgeArith(10 * time.Millisecond).opener(), Progress: func(Progress) {
			fmt.Println("EDGE-PROGRESS")
		}})
		if _, err := s.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	case "cache":
		path := os.Getenv("EDGE_CACHE")
		c, err := openCache(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			c.Put(fmt.Sprint("d", i), edgeReply(fmt.Sprint("d", i)))
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if c, err = openCache(path); err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			c.Put(fmt.Sprint("k", i), edgeReply(fmt.Sprint("k", i)))
			if _, ok := c.Get(fmt.Sprint("k", i)); !ok {
				t.Fatal("a reply just put is not there")
			}
			fmt.Println("EDGE-PROGRESS")
			time.Sleep(100 * time.Microsecond)
		}
	}
}

func edgeReply(text string) *provider.Response {
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: "reply to " + text}}
}

// killAfter runs the helper process with env and SIGKILLs it after it
// printed n progress lines; it says whether the child ended on its own.
func killAfter(t *testing.T, n int, env ...string) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestEdgeHelperProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if sc.Text() == "EDGE-PROGRESS" {
			if seen++; seen == n {
				cmd.Process.Kill()
				break
			}
		}
	}
	err = cmd.Wait()
	if seen < n && err != nil {
		t.Fatalf("helper failed: %v", err)
	}
	return seen < n
}

// A sweep SIGKILLed at random moments, then resumed, never re-runs or
// loses a finished sample, and ends with the table of an uninterrupted run.
func TestEdgeResumeAfterSIGKILL(t *testing.T) {
	path := writeSweep(t, edgeSpec, map[string]string{"judge.yaml": edgeJudge})
	m := edgeArith(10 * time.Millisecond)
	whole := run(t, path, Options{Dir: filepath.Join(t.TempDir(), "whole"), Open: m.opener()})
	dir := filepath.Join(t.TempDir(), "killed")
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2 {
		if killAfter(t, 1+rng.IntN(6), "EDGE_HELPER=sweep", "EDGE_SPEC="+path, "EDGE_DIR="+dir) {
			break
		}
	}
	s := newSweep(t, path, Options{Dir: dir, Open: m.opener()})
	before := len(s.records.byKey)
	if before == 24 {
		t.Fatal("the helper finished every sample before it was killed")
	}
	t.Logf("%d samples recorded before the kills, warnings %v", before, s.Warnings())
	final, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if final.Ran != 24-before || final.Done != 24 {
		t.Errorf("resumed: ran %d, done %d; want %d and 24", final.Ran, final.Done, 24-before)
	}
	onceEach(t, dir, 24)
	noScoreErrors(t, dir)
	sameTable(t, "table after kills differs from an uninterrupted run's", final, whole)
}

// A changed spec re-runs exactly what changed, the dry run says so, and the
// table equals a fresh run's of the new spec.
func TestEdgeSpecChangeRerunsWhatChanged(t *testing.T) {
	const spec = "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nscorers: [numeric]\n" +
		"axes:\n  agent_configs.assistant.model_args.max_tokens: [100, 200]\n"
	rows := rowsJSONL(6)
	for _, c := range []struct {
		name       string
		spec, rows string
		ran        int // samples to run again; -1: any, without a model call
	}{
		{"new axis value", strings.Replace(spec, "[100, 200]", "[100, 200, 300]", 1), rows, 12},
		{"added scorer", strings.Replace(spec, "[numeric]", "[numeric, exact]", 1), rows, -1},
		{"changed input", spec, strings.Replace(rows, `"What is 2 + 2?", "expected": 4`, `"What is 5 + 5?", "expected": 10`, 1), 4},
		{"changed expected", spec, strings.Replace(rows, `"What is 4 + 4?", "expected": 8`, `"What is 4 + 4?", "expected": 9`, 1), 4},
		{"removed rows", spec, rowsJSONL(3), 0},
		// The same column, scoring otherwise: 11 for 5 + 5 now passes.
		{"changed scorer params", strings.Replace(spec, "[numeric]", "[{type: numeric, tolerance: 1}]", 1), rows, -1},
		{"fewer repeats", strings.Replace(spec, "repeats: 2", "repeats: 1", 1), rows, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeSweep(t, spec, map[string]string{"rows.jsonl": rows})
			run(t, path, Options{})
			os.WriteFile(path, []byte(c.spec), 0o644)
			os.WriteFile(filepath.Join(filepath.Dir(path), "rows.jsonl"), []byte(c.rows), 0o644)
			fresh := run(t, path, Options{Dir: filepath.Join(t.TempDir(), "fresh")})
			s := newSweep(t, path, Options{})
			if p := s.Plan(); c.ran >= 0 && p.ToRun != c.ran {
				t.Errorf("dry run: %d samples to run, want %d", p.ToRun, c.ran)
			}
			rep, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if c.ran >= 0 && rep.Ran != c.ran {
				t.Errorf("ran %d samples, want %d", rep.Ran, c.ran)
			}
			if c.ran < 0 && rep.Calls != 0 {
				t.Errorf("made %d model calls: the answers did not change", rep.Calls)
			}
			if rep.Done != rep.Samples || rep.Samples != fresh.Samples {
				t.Errorf("done %d of %d samples, want %d of %d", rep.Done, rep.Samples, fresh.Samples, fresh.Samples)
			}
			sameTable(t, "resumed table differs from a fresh run's", rep, fresh)
			// So does the report read from disk (lllm sweep report).
			disk, _, err := LoadReport(s.Dir)
			if err != nil {
				t.Fatal(err)
			}
			sameTable(t, "the report read from disk differs from the run's", disk, rep)
		})
	}
}

// The cache never serves a cell the reply meant for another whose
// provider settings differ (the mock's seed, the endpoint): caching
// changes no answer.
func TestEdgeCacheKeyCoversProviderConfig(t *testing.T) {
	t.Run("mock seed", func(t *testing.T) {
		cfg := "tactic_type: chat\nglobal: {model_name: mock/m, model_args: {temperature: 0}}\n" +
			"agent_configs: [{name: assistant, system_prompt: Add.}]\nmock: {seed: 7}\n"
		spec := "config: config.yaml\ndataset: rows.jsonl\nconcurrency: 1\ncache: CACHE\naxes:\n  mock.seed: [1, 2]\n"
		var got [2]map[string]string
		for i, cache := range []string{"off", "auto"} {
			path := writeSweep(t, strings.Replace(spec, "CACHE", cache, 1), map[string]string{"config.yaml": cfg, "rows.jsonl": rowsJSONL(3)})
			rep := run(t, path, Options{})
			got[i] = answers(t, filepath.Join(filepath.Dir(path), "results"))
			t.Logf("cache %s: calls %d hits %d", cache, rep.Calls, rep.CacheHits)
		}
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Errorf("answers with the cache differ from those without:\n%v\n%v", got[1], got[0])
		}
	})
	t.Run("base_url", func(t *testing.T) {
		a, b := providertest.NewOpenAIServer(t), providertest.NewOpenAIServer(t)
		a.SetDefault(providertest.Reply{Text: "from a"})
		b.SetDefault(providertest.Reply{Text: "from b"})
		cfg := "tactic_type: chat\nglobal: {model_name: openai/gpt-4o-mini, model_args: {temperature: 0}}\n" +
			"agent_configs: [{name: assistant, system_prompt: Add.}]\n"
		spec := fmt.Sprintf("config: config.yaml\ndataset: rows.jsonl\nconcurrency: 1\naxes:\n  global.base_url: [%q, %q]\n", a.BaseURL(), b.BaseURL())
		path := writeSweep(t, spec, map[string]string{"config.yaml": cfg, "rows.jsonl": rowsJSONL(3)})
		run(t, path, Options{})
		if _, err := EachRecord(filepath.Join(filepath.Dir(path), "results"), func(r *Record) error {
			want := "from a"
			if r.Settings[0].Value == b.BaseURL() {
				want = "from b"
			}
			if r.Answer != want {
				t.Errorf("cell %v, row %s: answer %q, want %q", r.Settings[0].Value, r.Row, r.Answer, want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n := len(b.Requests()); n != 3 {
			t.Errorf("endpoint b got %d requests, want 3", n)
		}
	})
}

// The cache serves the same reply for the same request (model, params,
// messages, repeat, position) and never for a different one, concurrent
// identical requests included.
func TestEdgeCacheRequestIdentity(t *testing.T) {
	cache, err := openCache(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	inner := &edgeModel{reply: func(req *provider.Request, n int64) (string, error) {
		time.Sleep(time.Millisecond)
		return fmt.Sprintf("%s #%d", lastText(req), n), nil
	}}
	x := &execution{s: &Sweep{Spec: &Spec{}, limiters: map[string]*limiter{}}, cache: cache, policy: "on", conc: 64, cancel: func() {}}
	open := func(name string) *model { return &model{inner: inner, name: name, provider: "mock", x: x} }
	zero, one, tokens := 0.0, 1.0, 100
	type call struct {
		model, text, system string
		params              provider.Params
		repeat, turn        int
	}
	base := call{model: "mock/a", text: "hi", params: provider.Params{Temperature: &zero}, turn: 1}
	gen := func(c call) string {
		msgs := []*dialog.Message{{Role: dialog.RoleUser, Content: c.text}}
		if c.system != "" {
			msgs = append([]*dialog.Message{{Role: dialog.RoleSystem, Content: c.system}}, msgs...)
		}
		ctx := provider.WithCallInfo(withState(context.Background(), &sampleState{repeat: c.repeat}), provider.CallInfo{Agent: "a", Dialog: "main", Turn: c.turn})
		r, err := open(c.model).Generate(ctx, &provider.Request{Messages: msgs, Params: c.params})
		if err != nil {
			t.Fatal(err)
		}
		return r.Message.Text()
	}
	first := gen(base)
	if again := gen(base); again != first {
		t.Errorf("same request: %q, then %q", first, again)
	}
	variants := map[string]call{}
	v := base
	v.model = "mock/b"
	variants["model"] = v
	v = base
	v.text = "hi!"
	variants["message"] = v
	v = base
	v.system = "Be brief."
	variants["system prompt"] = v
	v = base
	v.params = provider.Params{Temperature: &one}
	variants["temperature"] = v
	v = base
	v.params = provider.Params{Temperature: &zero, MaxTokens: &tokens}
	variants["max_tokens"] = v
	v = base
	v.repeat = 1
	variants["repeat"] = v
	v = base
	v.turn = 2
	variants["position"] = v
	for name, c := range variants {
		if got := gen(c); got == first {
			t.Errorf("a request with another %s got the cached reply %q", name, got)
		}
	}
	// 32 identical requests at once share one reply and one model call;
	// 32 distinct ones each get their own.
	before := inner.n.Load()
	var wg sync.WaitGroup
	same := make([]string, 32)
	own := make([]string, 32)
	for i := range 32 {
		wg.Go(func() {
			c := base
			c.text = "concurrent"
			same[i] = gen(c)
			c.text = fmt.Sprint("distinct ", i)
			own[i] = gen(c)
		})
	}
	wg.Wait()
	for i := range 32 {
		if same[i] != same[0] {
			t.Errorf("identical concurrent requests got different replies: %q and %q", same[0], same[i])
			break
		}
	}
	for i, r := range own {
		if !strings.HasPrefix(r, fmt.Sprintf("distinct %d #", i)) {
			t.Errorf("request %d got the reply %q of another", i, r)
		}
	}
	if n := inner.n.Load() - before; n != 33 {
		t.Errorf("%d model calls for 1 identical and 32 distinct requests, want 33", n)
	}
}

// A cache whose writer is SIGKILLed keeps every reply stored before, opens
// cleanly, and holds each key's own reply.
func TestEdgeCacheSurvivesSIGKILL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	if killAfter(t, 30, "EDGE_HELPER=cache", "EDGE_CACHE="+path) {
		t.Fatal("the cache writer ended on its own")
	}
	c, err := openCache(path)
	if err != nil {
		t.Fatalf("reopening after a kill: %v", err)
	}
	defer c.Close()
	for i := range 40 {
		k := fmt.Sprint("d", i)
		if r, ok := c.Get(k); !ok || r.Message.Text() != "reply to "+k {
			t.Errorf("durable key %s: %v %v", k, r, ok)
		}
	}
	kept := 0
	for i := range 2000 {
		k := fmt.Sprint("k", i)
		r, ok := c.Get(k)
		if !ok {
			continue
		}
		kept++
		if r.Message.Text() != "reply to "+k {
			t.Errorf("key %s holds %q", k, r.Message.Text())
		}
	}
	t.Logf("%d replies written before the kill survived", kept)
}

// Every sample is in exactly one of n shards, and n shards merged equal
// one unsharded run.
func TestEdgeShardsPartitionAndMerge(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nscorers: [numeric]\naxes:\n  agent_configs.assistant.model_args.max_tokens: [100, 200, 300]\n"
	path := writeSweep(t, spec, map[string]string{})
	all := newSweep(t, path, Options{Dir: filepath.Join(t.TempDir(), "x")})
	for n := 1; n <= 7; n++ {
		seen := map[string]int{}
		for i := range n {
			s := newSweep(t, path, Options{Dir: filepath.Join(t.TempDir(), "x"), Shard: Shard{i, n}})
			s.eachSample(func(sm sample, _ bool) bool {
				seen[sampleKey(sm.cell.Hash, sm.row.ID, sm.repeat)]++
				return true
			})
		}
		total := 0
		all.eachSample(func(sm sample, _ bool) bool {
			total++
			if c := seen[sampleKey(sm.cell.Hash, sm.row.ID, sm.repeat)]; c != 1 {
				t.Errorf("%d shards: sample %s/%d is in %d shards", n, sm.row.ID, sm.repeat, c)
			}
			return true
		})
		if len(seen) != total {
			t.Errorf("%d shards hold %d samples, the sweep %d", n, len(seen), total)
		}
	}
	whole := run(t, path, Options{Dir: filepath.Join(t.TempDir(), "whole"), Concurrency: 1})
	var dirs []string
	for i := range 4 {
		d := filepath.Join(t.TempDir(), "node")
		run(t, path, Options{Dir: d, Shard: Shard{i, 4}, Concurrency: 1 + 7*i})
		dirs = append(dirs, d)
	}
	merged, _, err := Merge(filepath.Join(t.TempDir(), "into"), dirs...)
	if err != nil {
		t.Fatal(err)
	}
	sameTable(t, "4 shards merged differ from one run", merged, whole)
}

// A record of another directory whose run_dir leads out of its runs/
// folder is refused: merge copies nothing from or to outside the two
// sweep directories.
func TestEdgeMergeRefusesRunDirOutside(t *testing.T) {
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\nscorers: [numeric]\n", map[string]string{})
	root := t.TempDir()
	src := filepath.Join(root, "b", "node")
	run(t, path, Options{Dir: src})
	if err := os.MkdirAll(filepath.Join(root, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "secret", "events.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var rec Record
	EachRecord(src, func(r *Record) error { rec = *r; return nil })
	rec.RunDir = "../../secret"
	rec.Finished = rec.Finished.Add(time.Hour)
	line, _ := json.Marshal(&rec)
	f, err := os.OpenFile(filepath.Join(src, SamplesFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(line, '\n'))
	f.Close()
	into := filepath.Join(root, "a", "deep", "into")
	if _, _, err := Merge(into, src); err == nil || !strings.Contains(err.Error(), `run_dir "../../secret"`) {
		t.Errorf("merge: %v, want the run_dir refused", err)
	}
	if _, err := os.Stat(filepath.Join(root, "a", "secret")); err == nil {
		t.Errorf("merge copied a folder outside %s", into)
	}
}

// Merging shards of different sweeps (other scorers, dataset or repeats)
// is refused with an error naming the difference.
func TestEdgeMergeRefusesDifferentSpecs(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nscorers: [numeric]\n"
	shard := func(spec, rows string, i int) string {
		path := writeSweep(t, spec, map[string]string{"rows.jsonl": rows})
		d := filepath.Join(t.TempDir(), "node")
		run(t, path, Options{Dir: d, Shard: Shard{i, 2}})
		return d
	}
	a := shard(spec, rowsJSONL(6), 0)
	other := strings.NewReplacer("What is", "Compute", `"expected": 12`, `"expected": 13`).Replace(rowsJSONL(6))
	for _, c := range []struct{ name, b, want string }{
		{"scorers", shard(strings.Replace(spec, "[numeric]", "[exact]", 1), rowsJSONL(6), 1), "scorers"},
		{"dataset", shard(spec, other, 1), "dataset"},
		{"repeats", shard(strings.Replace(spec, "repeats: 2", "repeats: 3", 1), rowsJSONL(6), 1), "repeats"},
	} {
		into := filepath.Join(t.TempDir(), "into")
		_, _, err := Merge(into, a, c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("merging shards with different %s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}

// A budget stops launching as soon as it is reached (concurrency 1: not
// one sample more), says what was spent, and resuming stays within it.
func TestEdgeBudgetStopsAtTheBound(t *testing.T) {
	for _, c := range []struct {
		budget      string
		first, more int
		raised      string
		stopped     string
	}{
		{"{max_cost: 0.0035}", 4, 3, "{max_cost: 0.0065}", "spent $0.0040 of max_cost $0.0035"},
		{"{max_tokens: 30}", 3, 2, "{max_tokens: 50}", "spent 36 tokens of max_tokens 30"},
	} {
		spec := "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nconcurrency: 1\nbudget: " + c.budget + "\n"
		path := writeSweep(t, spec, map[string]string{})
		m := &edgeModel{reply: func(*provider.Request, int64) (string, error) { return "2", nil }}
		rep, err := newSweep(t, path, Options{Open: m.opener()}).Run(context.Background())
		if !errors.Is(err, ErrBudget) || rep == nil {
			t.Fatalf("%s: %v", c.budget, err)
		}
		if rep.Ran != c.first || m.n.Load() != int64(c.first) || !strings.Contains(rep.Stopped, c.stopped) {
			t.Errorf("%s: ran %d samples (%d calls), stopped %q; want %d and %q", c.budget, rep.Ran, m.n.Load(), rep.Stopped, c.first, c.stopped)
		}
		// What the message says was spent is what the records spent.
		usd, tok := 0.0, 0
		EachRecord(filepath.Join(filepath.Dir(path), "results"), func(r *Record) error { usd += r.SpentUSD; tok += r.SpentTokens; return nil })
		if spent := fmt.Sprintf("$%.4f", usd); strings.Contains(c.budget, "cost") && !strings.Contains(rep.Stopped, "spent "+spent) {
			t.Errorf("%s: stopped %q, but the samples spent %s", c.budget, rep.Stopped, spent)
		}
		if spent := fmt.Sprintf("spent %d tokens", tok); strings.Contains(c.budget, "tokens") && !strings.Contains(rep.Stopped, spent) {
			t.Errorf("%s: stopped %q, but the samples %s", c.budget, rep.Stopped, spent)
		}
		if rep, err = newSweep(t, path, Options{Open: m.opener()}).Run(context.Background()); !errors.Is(err, ErrBudget) || rep.Ran != 0 {
			t.Errorf("%s, again: %v, ran %d", c.budget, err, rep.Ran)
		}
		os.WriteFile(path, []byte(strings.Replace(spec, c.budget, c.raised, 1)), 0o644)
		rep, err = newSweep(t, path, Options{Open: m.opener()}).Run(context.Background())
		if !errors.Is(err, ErrBudget) || rep.Ran != c.more {
			t.Errorf("%s raised to %s: %v, ran %d more, want %d", c.budget, c.raised, err, rep.Ran, c.more)
		}
	}
}

// Shards run on a shared directory, then merged: each sample's spending
// counts once, so extending the sweep within the budget runs every new sample.
func TestEdgeBudgetAfterSharedMerge(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nbudget: {max_cost: 0.05}\n" +
		"axes:\n  agent_configs.assistant.model_args.max_tokens: [100, 200]\n"
	path := writeSweep(t, spec, map[string]string{})
	m := &edgeModel{reply: func(*provider.Request, int64) (string, error) { return "2", nil }}
	shared := filepath.Join(t.TempDir(), "shared")
	for i := range 3 {
		if _, err := newSweep(t, path, Options{Dir: shared, Shard: Shard{i, 3}, Open: m.opener()}).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Merge(shared); err != nil {
		t.Fatal(err)
	}
	// $0.024 spent; 12 more samples cost $0.012, within $0.05.
	os.WriteFile(path, []byte(strings.Replace(spec, "[100, 200]", "[100, 200, 300]", 1)), 0o644)
	rep, err := newSweep(t, path, Options{Dir: shared, Open: m.opener()}).Run(context.Background())
	if err != nil || rep.Ran != 12 {
		t.Errorf("extending after a merge: %v, ran %d of 12 (stopped %q)", err, rep.Ran, rep.Stopped)
	}
}

// Concurrency 1 and 64 give the same table and the same answers.
func TestEdgeConcurrencyOneAndSixtyFour(t *testing.T) {
	path := writeSweep(t, strings.Replace(edgeSpec, "repeats: 2", "repeats: 3", 1), map[string]string{"judge.yaml": edgeJudge, "rows.jsonl": rowsJSONL(6)})
	var reps [2]*Report
	var ans [2]map[string]string
	for i, conc := range []int{1, 64} {
		d := filepath.Join(t.TempDir(), "out")
		reps[i] = run(t, path, Options{Dir: d, Concurrency: conc})
		ans[i] = answers(t, d)
	}
	sameTable(t, "concurrency 64 differs from concurrency 1", reps[1], reps[0])
	if !reflect.DeepEqual(ans[0], ans[1]) {
		t.Errorf("answers differ between concurrency 1 and 64")
	}
}

// Datasets with unicode ids, a CSV byte order mark, look-alike ids, CRLF lines
// or a huge row load and run as they should. (A row missing its expected
// answer is refused before anything runs: TestSweepRowsWithoutExpected.)
func TestEdgeDatasetOddities(t *testing.T) {
	dir := t.TempDir()
	load := func(name, body string) ([]Row, error) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return LoadDataset(p, DatasetSpec{})
	}
	if rows, err := load("bom.csv", "\ufeffid,input,expected\nq1,What is 1 + 1?,2\n"); err != nil || len(rows) != 1 || rows[0].ID != "q1" {
		t.Errorf("CSV with a byte order mark (as Excel writes it): %v, %+v", err, rows)
	}
	if rows, err := load("crlf.jsonl", `{"id": "a", "input": "x"}`+"\r\n\r\n  \r\n"+`{"id": "b", "input": "y"}`+"\r\n"); err != nil || len(rows) != 2 {
		t.Errorf("CRLF and blank lines: %v, %d rows", err, len(rows))
	}
	if _, err := load("dup.jsonl", `{"id": 1, "input": "x"}`+"\n"+`{"id": "1", "input": "y"}`+"\n"); err == nil || !strings.Contains(err.Error(), "dup.jsonl:2") {
		t.Errorf("ids 1 and \"1\" are the same sample key, yet: %v", err)
	}
	if rows, err := load("big.jsonl", `{"id": 12345678901234567890, "input": "x"}`+"\n"+`{"id": 12345678901234567891, "input": "y"}`+"\n"); err != nil || len(rows) != 2 || rows[1].ID != "12345678901234567891" {
		t.Errorf("large integer ids: %v, %+v", err, rows)
	}

	// Unicode ids and a 108 kB task, in one sweep.
	huge := "What is 6 + 6? " + strings.Repeat("lorem ipsum dolor sit amet ", 4000)
	body := `{"id": "行-1 🙂", "input": "What is 1 + 1?", "expected": 2}` + "\n" +
		`{"id": "a\"b\\c", "input": "What is 2 + 2?", "expected": 4}` + "\n" +
		fmt.Sprintf(`{"id": "huge", "input": %q, "expected": 12}`, huge) + "\n"
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\nscorers: [numeric]\n", map[string]string{"rows.jsonl": body})
	rep, err := newSweep(t, path, Options{}).Run(context.Background())
	if err != nil || rep.Done != 3 || rep.Cells[0].Errors != 0 {
		t.Fatalf("run: %v, done %d", err, rep.Done)
	}
	got := map[string]*Record{}
	EachRecord(filepath.Join(filepath.Dir(path), "results"), func(r *Record) error { got[r.Row] = r; return nil })
	for _, id := range []string{"行-1 🙂", `a"b\c`, "huge"} {
		if r := got[id]; r == nil || r.Scores["numeric"] != 1 {
			t.Errorf("row %q: %+v", id, r)
		}
	}
	if rep := run(t, path, Options{}); rep.Calls != 0 {
		t.Errorf("second run made %d calls", rep.Calls)
	}
}

var registerEdgeTactic sync.Once

// Model errors and tactic errors (a failure, a panic) in some samples are
// counted per cell and do not stop the others; only model errors retry.
func TestEdgeSampleErrorsCountedPerCell(t *testing.T) {
	registerEdgeTactic.Do(func() {
		tactics.Register("edge_chat", func(map[string]any) (tactics.Tactic, error) { return edgeTactic{}, nil })
	})
	cfg := strings.Replace(chatConfig, "tactic_type: chat", "tactic_type: edge_chat", 1)
	cfg = strings.Replace(cfg, `- {match: "3 + 3", reply: {text: "6"}}`, `- {match: "3 + 3", reply: {error: bad_request}}`, 1)
	spec := "config: config.yaml\ndataset: rows.jsonl\nscorers: [numeric]\naxes:\n  agent_configs.assistant.model_args.max_tokens: [100, 200]\n"
	path := writeSweep(t, spec, map[string]string{"config.yaml": cfg})
	rep, err := newSweep(t, path, Options{}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cells {
		// r3 model error, r4 tactic error, r5 panic; r1, r2, r6 right.
		if c.N != 6 || c.Errors != 3 || math.Abs(c.Scores[0].Mean-0.5) > 1e-9 {
			t.Errorf("cell %v: n %d errors %d numeric %v; want 6, 3, 0.5", c.Settings, c.N, c.Errors, c.Scores[0].Mean)
		}
	}
	EachRecord(filepath.Join(filepath.Dir(path), "results"), func(r *Record) error {
		if want := r.Row == "r3"; r.Status == "failed" && r.Retry != want {
			t.Errorf("row %s: retry %v (%s)", r.Row, r.Retry, r.Error)
		}
		return nil
	})
	if rep = run(t, path, Options{}); rep.Ran != 2 {
		t.Errorf("re-run ran %d samples, want the 2 that failed on the model", rep.Ran)
	}
}

// edgeTactic is chat, except that it fails on "4 + 4" and panics on "5 + 5".
type edgeTactic struct{}

func (edgeTactic) Agents() []string { return []string{"assistant"} }

func (edgeTactic) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	switch {
	case strings.Contains(task, "4 + 4"):
		return nil, errors.New("edge: the tactic gave up")
	case strings.Contains(task, "5 + 5"):
		panic("edge: boom")
	}
	return s.Sub(ctx, "chat", nil, task)
}

// A judge that fails on the provider does not leave a final score of 0:
// the samples run again and score right once the judge answers.
func TestEdgeJudgeProviderFailureRetried(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nscorers:\n  - numeric\n  - {type: judge, config: judge.yaml, name: graded}\n"
	path := writeSweep(t, spec, map[string]string{"judge.yaml": edgeJudge})
	var down atomic.Bool
	down.Store(true)
	m := &edgeModel{reply: func(req *provider.Request, _ int64) (string, error) {
		text := lastText(req)
		if !strings.Contains(text, "Answer to grade") {
			return "42", nil
		}
		if down.Load() {
			return "", &provider.Error{Kind: provider.ErrServer, Provider: "mock", Status: 503, Err: errors.New("judge down")}
		}
		return "<score>1</score>", nil
	}}
	run(t, path, Options{Open: m.opener()})
	s := newSweep(t, path, Options{Open: m.opener()})
	if p := s.Plan(); p.ToRun != 6 {
		t.Errorf("after the judge failed: %d samples to run, want 6", p.ToRun)
	}
	down.Store(false)
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Cells[0]; c.Scores[1].Mean != 1 || c.Errors != 0 {
		t.Errorf("after the judge came back: %+v, errors %d", c.Scores, c.Errors)
	}
}

// mean ± stderr and pass@k of a sweep match a hand computation: rows
// passing 4, 2 and 0 of 4 repeats.
func TestEdgeStatsHandComputed(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nrepeats: 4\npass_k: [1, 2, 3, 4]\nconcurrency: 5\n"
	path := writeSweep(t, spec, map[string]string{"rows.jsonl": rowsJSONL(3)})
	var mu sync.Mutex
	seen := map[string]int{}
	m := &edgeModel{reply: func(req *provider.Request, _ int64) (string, error) {
		task := lastText(req)
		mu.Lock()
		seen[task]++
		k := seen[task]
		mu.Unlock()
		switch {
		case strings.Contains(task, "1 + 1"):
			return "2", nil
		case strings.Contains(task, "2 + 2") && k <= 2:
			return "4", nil
		}
		return "0", nil
	}}
	rep := run(t, path, Options{Open: m.opener()})
	c := rep.Cells[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// 6 of 12 pass: mean 1/2; sd² = 12·(1/4)/11 = 3/11; stderr = √(3/11/12) = √(1/44).
	if c.N != 12 || !near(c.Scores[0].Mean, 0.5) || !near(c.Scores[0].StdErr, math.Sqrt(1.0/44)) {
		t.Errorf("n %d, exact %+v; want 12, 0.5 ± %.6f", c.N, c.Scores[0], math.Sqrt(1.0/44))
	}
	// pass@k per row: 1; 1 − C(2,k)/C(4,k); 0.
	want := map[string]float64{"1": (1 + 0.5 + 0) / 3, "2": (1 + 5.0/6 + 0) / 3, "3": 2.0 / 3, "4": 2.0 / 3}
	for k, w := range want {
		if !near(c.PassAtK[k], w) {
			t.Errorf("pass@%s = %v, want %v", k, c.PassAtK[k], w)
		}
	}
	var b strings.Builder
	rep.Write(&b, "text")
	for _, s := range []string{"0.500 ± 0.151", "0.611", "0.667", "│ 12 "} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
}
