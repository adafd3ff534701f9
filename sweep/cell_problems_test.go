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
// spec, not at a "--set" nobody gave.
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
		path + ":4: axis params.n, cell params.n=0 global.model_name=mock/a: tactic best_of_n: param n must be at least 1",
		path + ":4: axis params.n, cell params.n=0 global.model_name=nope/b: tactic best_of_n: param n must be at least 1",
		"cell params.n=0 global.model_name=nope/b: ",
		"cell params.n=2 global.model_name=nope/b: ",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("problems:\n%v\nwant %q among them", err, want)
		}
	}
	if strings.Contains(err.Error(), "--set") || strings.Contains(err.Error(), "params.n=2 global.model_name=mock/a") {
		t.Errorf("problems:\n%v\nwant no --set and nothing of the valid cell", err)
	}
}
