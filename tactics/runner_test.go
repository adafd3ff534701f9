package tactics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// A Runner prepared once runs many tasks at once; each run has its own
// log, holding its own task, its own dialog and its own result, and fresh
// agents (no run sees another's messages).
func TestRunnerRunsConcurrently(t *testing.T) {
	const n = 40
	cfg := batchConfig(t, "5ms", n)
	dir := t.TempDir()
	r, err := tactics.Prepare(t.Context(), cfg, tactics.RunOptions{LogDir: dir, Labels: map[string]string{"who": "runner"}})
	if err != nil {
		t.Fatal(err)
	}
	// What one run of its own, with everything prepared afresh, records.
	ref, err := tactics.Run(t.Context(), cfg, "echo 0!", tactics.RunOptions{LogDir: t.TempDir()})
	if err != nil || ref.Status != logs.StatusOK {
		t.Fatalf("Run: %v %+v", err, ref)
	}
	results := make([]*tactics.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := r.Run(t.Context(), fmt.Sprintf("echo %d!", i))
			if err != nil {
				t.Errorf("task %d: %v", i, err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ids := map[string]bool{}
	for i, res := range results {
		if res.Status != logs.StatusOK || string(res.Result) != fmt.Sprintf("%q", fmt.Sprint(i)) {
			t.Errorf("task %d: status %s result %s error %q", i, res.Status, res.Result, res.Error)
		}
		if ids[res.RunID] || filepath.Dir(res.Dir) != dir {
			t.Errorf("task %d: run %s in %s: not a run of its own under %s", i, res.RunID, res.Dir, dir)
		}
		ids[res.RunID] = true
		// Every task has the same length, so with fresh agents every run
		// does what the reference run did, no more.
		got, want := res.Totals, ref.Totals
		if got.ModelCalls != want.ModelCalls || got.Messages != want.Messages || got.Dialogs != want.Dialogs || got.Cost.InputTokens != want.Cost.InputTokens {
			t.Errorf("task %d: totals %+v, want those of a run of its own, %+v", i, got, want)
		}
		checkRunLog(t, res, fmt.Sprintf("echo %d!", i), want.Messages)
	}
}

// checkRunLog reads a run's log: it starts with the run's task and labels,
// has the messages and the one model call of the run, and ends with its
// result.
func checkRunLog(t *testing.T, res *tactics.Result, task string, wantMessages int) {
	t.Helper()
	rd, err := logs.OpenFile(filepath.Join(res.Dir, logs.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	start, err := rd.Start()
	if err != nil {
		t.Fatal(err)
	}
	var gotTask string
	if err := json.Unmarshal(start.Task, &gotTask); err != nil || gotTask != task || start.RunID != res.RunID || start.Labels["who"] != "runner" {
		t.Errorf("%s: run_start task %s, id %s, labels %v; want %q, %s", res.RunID, start.Task, start.RunID, start.Labels, task, res.RunID)
	}
	var messages, calls int
	var end *logs.RunEnd
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch rec.Kind {
		case logs.KindMessage:
			messages++
		case logs.KindModelCall:
			calls++
		case logs.KindRunEnd:
			end = rec.RunEnd
		}
	}
	if messages != wantMessages || calls != 1 || end == nil || string(end.Result) != string(res.Result) {
		t.Errorf("%s: %d messages, %d model calls, end %+v; want %d, 1 and result %s", res.RunID, messages, calls, end, wantMessages, res.Result)
	}
}

// Prepare reports a config problem as Run does, before any run.
func TestPrepareConfigError(t *testing.T) {
	cfg, err := config.Parse("bad.yaml", []byte("tactic_type: chat\nglobal: {model_name: mock/m, model_args: {temprature: 1}}\nagent_configs: [{name: assistant, system_prompt: x}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r, err := tactics.Prepare(t.Context(), cfg, tactics.RunOptions{LogDir: dir})
	var ce *tactics.ConfigError
	if r != nil || !errors.As(err, &ce) {
		t.Fatalf("Prepare: %v, %v; want a *ConfigError", r, err)
	}
	if _, rerr := tactics.Run(t.Context(), cfg, "x", tactics.RunOptions{LogDir: dir}); rerr == nil || rerr.Error() != err.Error() {
		t.Errorf("Run: %v; want Prepare's error %v", rerr, err)
	}
}

// A negative max_tokens, which every provider refuses on the first call,
// is a config problem at its place, found before any run.
func TestPrepareNegativeMaxTokens(t *testing.T) {
	cfg, err := config.Parse("neg.yaml", []byte("tactic_type: chat\nglobal: {model_name: mock/m, model_args: {max_tokens: -1}}\nagent_configs: [{name: assistant, system_prompt: x}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tactics.Prepare(t.Context(), cfg, tactics.RunOptions{LogDir: t.TempDir()})
	var ce *tactics.ConfigError
	if r != nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), "neg.yaml:2:") || !strings.Contains(err.Error(), "max_tokens must be 0 or more, not -1") {
		t.Fatalf("Prepare: %v, %v; want a *ConfigError placed at max_tokens", r, err)
	}
}

// A model that cannot be opened is a problem at the line that named it.
func TestPrepareModelNamePlaced(t *testing.T) {
	cfg, err := config.Parse("prov.yaml", []byte("tactic_type: chat\nglobal:\n  model_name: mock/m\nagent_configs:\n  - name: assistant\n    system_prompt: x\n    model_name: nope/x\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tactics.Prepare(t.Context(), cfg, tactics.RunOptions{LogDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `prov.yaml:7:5: agent assistant: model_name: provider: unknown provider "nope"`) {
		t.Fatalf("Prepare: %v; want the problem at the agent's model_name", err)
	}
}

// RunOptions.Retrying is told of every call an agent makes again.
func TestRunReportsRetries(t *testing.T) {
	cfg, err := config.Parse("retry.yaml", []byte(`
tactic_type: chat
global: {model_name: mock/demo}
agent_configs:
  - {name: assistant, system_prompt: You answer.}
mock:
  replies: [{error: network}, {error: rate_limit, retry_after: 3s}, {text: fine}]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var (
		notices []tactics.Retry
		waits   []time.Duration
	)
	res, err := tactics.Run(t.Context(), cfg, "hi", tactics.RunOptions{
		LogDir:   t.TempDir(),
		Sleep:    func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
		Retrying: func(r tactics.Retry) { notices = append(notices, r) },
	})
	if err != nil || res.Status != logs.StatusOK || string(res.Result) != `"fine"` {
		t.Fatalf("run: %v %+v", err, res)
	}
	if len(notices) != 2 || notices[0].Agent != "assistant" ||
		notices[0].Err.Kind != provider.ErrNetwork || notices[1].Err.Kind != provider.ErrRateLimit ||
		notices[1].Wait < 3*time.Second || !slices.Equal(waits, []time.Duration{notices[0].Wait, notices[1].Wait}) {
		t.Fatalf("notices %+v, waits %v", notices, waits)
	}
}

// Agents that fail alike (a missing API key for their shared model) make
// one problem naming them all.
func TestAgentsFailingAlikeOneProblem(t *testing.T) {
	for _, v := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"} {
		t.Setenv(v, "")
	}
	cfg, err := config.Parse("two.yaml", []byte(`
tactic_type: best_of_n
global: {model_name: openai/gpt-4o-mini}
agent_configs:
  - {name: solver, system_prompt: You solve.}
  - {name: judge, system_prompt: You judge.}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tactics.Prepare(t.Context(), cfg, tactics.RunOptions{LogDir: t.TempDir()})
	var ce *tactics.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "agents solver, judge: ") || strings.Count(err.Error(), "no API key") != 1 {
		t.Fatalf("err = %v, want one problem naming both agents", err)
	}
}

type failingManager struct{}

func (failingManager) Fit(context.Context, contextmgr.Input) (contextmgr.Result, error) {
	return contextmgr.Result{}, errors.New("out of room")
}

func init() {
	contextmgr.Register("lab:refuses", func(map[string]any) (contextmgr.Manager, error) { return nil, errors.New("keep must be positive") })
	contextmgr.Register("lab:fails", func(map[string]any) (contextmgr.Manager, error) { return failingManager{}, nil })
}

// A custom context manager's error says once that it is the context
// manager's, and names it once: whether its factory refuses the config
// or its Fit fails in a run.
func TestCustomContextManagerErrors(t *testing.T) {
	run := func(typ string) (*tactics.Result, error) {
		cfg, err := config.Parse("cm.yaml", []byte(`
tactic_type: chat
global: {model_name: mock/demo, context_manager: {type: `+typ+`}}
agent_configs:
  - {name: assistant, system_prompt: You answer.}
mock:
  replies: [{text: fine}]
`), nil)
		if err != nil {
			t.Fatal(err)
		}
		return tactics.Run(t.Context(), cfg, "hi", tactics.RunOptions{LogDir: t.TempDir()})
	}
	_, err := run("lab:refuses")
	if err == nil || !strings.HasSuffix(err.Error(), "agent assistant: context_manager: lab:refuses: keep must be positive") || strings.Contains(err.Error(), "contextmgr") {
		t.Errorf("a factory's error: %v", err)
	}
	res, err := run("lab:fails")
	if err != nil || res.Error != "agent assistant: context manager lab:fails: out of room" {
		t.Errorf("a Fit error: %v, %+v", err, res)
	}
}

// A config's prices section prices its models, which the built-in table
// does not know (mock/demo would cost nothing).
func TestRunPricesFromConfig(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"run.yaml": `
tactic_type: chat
global:
  model_name: mock/demo
agent_configs:
  - name: assistant
    system_prompt: You answer.
prices:
  demo: {input: 1.5, cached_input: 0.5, cache_write: 2, output: 4}
`})
	cfg, err := config.Load(filepath.Join(dir, "run.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := tactics.Run(t.Context(), cfg, "What is 2+2?", tactics.RunOptions{LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Totals.Cost
	if c.InputTokens == 0 || c.OutputTokens == 0 {
		t.Fatalf("no usage counted: %+v", c)
	}
	if want := (float64(c.InputTokens)*1.5 + float64(c.OutputTokens)*4) / 1e6; math.Abs(c.USD-want) > 1e-12 {
		t.Errorf("run cost %v USD for %+v, want %v", c.USD, c.Usage, want)
	}
}
