package sweep

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/runtime/provider"
)

// slowOpen opens models as provider.Open does, taking delay for each: a
// cell whose runner is slow to prepare (a tokenizer's tables to load, a
// client to set up).
func slowOpen(delay time.Duration) func(context.Context, string, provider.Config) (provider.Model, error) {
	return func(ctx context.Context, name string, cfg provider.Config) (provider.Model, error) {
		time.Sleep(delay)
		return provider.Open(ctx, name, cfg)
	}
}

// Preparing a cell's runner, which its first samples wait for, is neither
// their latency (it would inflate the cell's p95) nor part of their
// timeout (it would time them out before their tactic ran).
func TestPrepareIsNotSampleTime(t *testing.T) {
	const prepare = 600 * time.Millisecond
	spec := "config: config.yaml\ndataset: rows.jsonl\nconcurrency: 3\ntimeout: 0.4\ncache: off\nscorers: [numeric]\n"
	// No context manager: its tokenizer's tables, built once per process
	// on first use, would land in the first samples' time too.
	cfg := strings.Replace(chatConfig, "  model_args: {temperature: 0}\n", "  model_args: {temperature: 0}\n  context_manager: {type: none}\n", 1)
	path := writeSweep(t, spec, map[string]string{"config.yaml": cfg, "rows.jsonl": rowsJSONL(3)})
	// Outside a git work tree, so that the run logs' git commit, asked of
	// git once per process, costs nothing; and with the mock's tokenizer
	// built, once per process too: what is left is the cell's preparation.
	t.Chdir(filepath.Dir(path))
	contextmgr.NewTokenizer().Count("mock/m", "warm")
	s := newSweep(t, path, Options{})
	s.opts.Open = slowOpen(prepare) // after New, which opens the models to check them
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Done != 3 || rep.Cells[0].Errors != 0 {
		t.Fatalf("%d of 3 samples done, %d errors; want every sample done without error within its 0.4s timeout", rep.Done, rep.Cells[0].Errors)
	}
	if _, err := EachRecord(resultsDir(path), func(r *Record) error {
		if r.LatencyMS >= float64(prepare.Milliseconds()) {
			t.Errorf("sample %s: latency %.0fms includes the cell's preparation (%v)", r.Row, r.LatencyMS, prepare)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
