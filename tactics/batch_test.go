package tactics_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
	_ "github.com/lllm-go/lllm/tactics/builtin"
)

// batchYAML answers "echo N" with "N", after latency; a task containing
// "boom" fails with an auth error.
const batchYAML = `
tactic_type: chat
global:
  model_name: mock/demo
agent_configs:
  - name: assistant
    system_prompt: You echo.
mock:
  latency: %s
  rules:
    - match: boom
      reply: {error: auth}
%s
`

func batchConfig(t *testing.T, latency string, n int) *config.Config {
	t.Helper()
	var rules strings.Builder
	for i := range n {
		fmt.Fprintf(&rules, "    - match: \"echo %d!\"\n      reply: {text: \"%d\"}\n", i, i)
	}
	c, err := config.Parse("batch.yaml", []byte(fmt.Sprintf(batchYAML, latency, rules.String())), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBatchKeepsInputOrder(t *testing.T) {
	const n = 20
	cfg := batchConfig(t, "20ms", n)
	tasks := make([]string, n)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("echo %d!", i)
	}
	dir := t.TempDir()
	var (
		mu    sync.Mutex
		calls []int
	)
	results, err := tactics.Batch(t.Context(), cfg, tasks, tactics.BatchOptions{
		RunOptions:  tactics.RunOptions{LogDir: dir},
		Concurrency: 8,
		Progress: func(done, total int, last *tactics.Result) {
			mu.Lock()
			defer mu.Unlock()
			if total != n || last == nil {
				t.Errorf("progress(%d, %d, %v)", done, total, last)
			}
			calls = append(calls, done)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != n {
		t.Fatalf("%d results for %d tasks", len(results), n)
	}
	ids := map[string]bool{}
	for i, r := range results {
		if r.Status != logs.StatusOK || string(r.Result) != fmt.Sprintf(`"%d"`, i) {
			t.Errorf("result %d = %+v (%s)", i, r, r.Result)
		}
		ids[r.RunID] = true
	}
	if len(ids) != n {
		t.Errorf("%d distinct run ids for %d tasks", len(ids), n)
	}
	runs, _ := logs.List(dir)
	if len(runs) != n {
		t.Errorf("%d runs logged, want %d", len(runs), n)
	}
	for i, d := range calls {
		if d != i+1 {
			t.Fatalf("progress counts = %v", calls)
		}
	}
	if len(calls) != n {
		t.Fatalf("progress called %d times", len(calls))
	}
}

func TestBatchFailFastAndKeepGoing(t *testing.T) {
	const n = 12
	tasks := make([]string, n)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("echo %d!", i)
	}
	tasks[1] = "boom"

	t.Run("keep going", func(t *testing.T) {
		dir := t.TempDir()
		results, err := tactics.Batch(t.Context(), batchConfig(t, "5ms", n), tasks, tactics.BatchOptions{
			RunOptions: tactics.RunOptions{LogDir: dir}, Concurrency: 3, KeepGoing: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range results {
			want := logs.StatusOK
			if i == 1 {
				want = logs.StatusFailed
			}
			if r.Status != want {
				t.Errorf("result %d: status %s, want %s (%s)", i, r.Status, want, r.Error)
			}
		}
		if !strings.Contains(results[1].Error, "auth") && !strings.Contains(results[1].Error, "API key") {
			t.Errorf("failure = %q", results[1].Error)
		}
		if runs, _ := logs.List(dir); len(runs) != n {
			t.Errorf("%d runs logged, want %d", len(runs), n)
		}
	})

	t.Run("fail fast", func(t *testing.T) {
		dir := t.TempDir()
		results, err := tactics.Batch(t.Context(), batchConfig(t, "30ms", n), tasks, tactics.BatchOptions{
			RunOptions: tactics.RunOptions{LogDir: dir}, Concurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		count := map[logs.Status]int{}
		for i, r := range results {
			if r == nil {
				t.Fatalf("result %d is nil", i)
			}
			count[r.Status]++
		}
		if results[1].Status != logs.StatusFailed || count[logs.StatusFailed] != 1 {
			t.Fatalf("statuses %v; result 1 = %+v", count, results[1])
		}
		// The tasks after the failure never ran.
		if count[logs.StatusCancelled] < n-4 || results[n-1].Status != logs.StatusCancelled || results[n-1].Error != tactics.NotStarted {
			t.Fatalf("statuses %v; last = %+v", count, results[n-1])
		}
		// Every run that started has a finished log with its status.
		runs, _ := logs.List(dir)
		started := 0
		for _, r := range results {
			if r.RunID != "" {
				started++
			}
		}
		if len(runs) != started {
			t.Fatalf("%d runs logged, %d started", len(runs), started)
		}
		for _, s := range runs {
			if s.End == nil || s.Status() == logs.StatusRunning {
				t.Errorf("run %s has no run_end", s.ID)
			}
		}
	})
}

func TestBatchConfigErrorRunsNothing(t *testing.T) {
	cfg := batchConfig(t, "0s", 1)
	if err := cfg.Set("tactic_type", "chta"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	results, err := tactics.Batch(t.Context(), cfg, []string{"a", "b"}, tactics.BatchOptions{RunOptions: tactics.RunOptions{LogDir: dir}})
	var ce *tactics.ConfigError
	if !errors.As(err, &ce) || results != nil || !strings.Contains(err.Error(), `did you mean "chat"`) {
		t.Fatalf("results %v, err %v", results, err)
	}
	if runs, _ := logs.List(dir); len(runs) != 0 {
		t.Fatal("a config error started runs")
	}
}

func TestBatchCancelled(t *testing.T) {
	ctx, cancel := contextWithCancel(t)
	cancel()
	dir := t.TempDir()
	results, err := tactics.Batch(ctx, batchConfig(t, "0s", 3), []string{"echo 0!", "echo 1!"}, tactics.BatchOptions{RunOptions: tactics.RunOptions{LogDir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if r.Status != logs.StatusCancelled {
			t.Errorf("result %d = %+v", i, r)
		}
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
