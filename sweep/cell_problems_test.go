package sweep

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/tactics"
)

// Each cell whose config its tactic or agents refuse is a problem of its
// own, naming the cell; a value an axis set is placed at the axis in the
// spec, not at a "--set" nobody gave, once however many cells have it
// (naming the value, unless every value of the axis has it).
func TestCellProblemsNameTheCellAndTheAxis(t *testing.T) {
	const bon = `tactic_type: best_of_n
global: {model_name: mock/m}
params: {n: 2}
agent_configs:
  - {name: solver, system_prompt: You solve.}
  - {name: judge, system_prompt: You judge.}
`
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\naxes:\n  params.n: [0, 2]\n  global.model_name: [mock/a, nope/b]\n",
		map[string]string{"config.yaml": bon})
	spec, err := LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), spec, Options{Dir: filepath.Join(filepath.Dir(path), "out")})
	if !errors.As(err, new(*tactics.ConfigError)) {
		t.Fatalf("New: %v, want a *tactics.ConfigError", err)
	}
	for _, want := range []string{
		path + ":4: axis params.n, value 0: tactic best_of_n: param n must be at least 1",
		path + `:5: axis global.model_name, value nope/b: agents solver, judge: model_name: provider: unknown provider "nope"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems:\n%v\nwant %q among them", err, want)
		}
	}
	if strings.Contains(err.Error(), "--set") || strings.Contains(err.Error(), "params.n=2 global.model_name=mock/a") {
		t.Errorf("problems:\n%v\nwant no --set and nothing of the valid cell", err)
	}
	if n := strings.Count(err.Error(), "\n"); n != 1 {
		t.Errorf("problems:\n%v\nwant each axis's problem once: 2 lines, not %d", err, n+1)
	}
}

// An axis whose every value the agents refuse (an unknown model_args key,
// which only the check of a cell's agents finds) is one problem at its
// line, not one per cell: it was eight lines for a 2x2x2 grid.
func TestCellProblemsOncePerAxis(t *testing.T) {
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\naxes:\n  global.model_args.temp: [0, 0.7]\n  global.model_args.max_tokens: [64, 128]\n  global.model_name: [mock/a, mock/b]\n", map[string]string{})
	spec, err := LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), spec, Options{Dir: filepath.Join(filepath.Dir(path), "out")})
	want := path + `:4: axis global.model_args.temp: agent assistant: model_args: unknown key "temp"`
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("problems:\n%v\nwant one, %q...", err, want)
	}
}
