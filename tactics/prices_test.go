package tactics_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

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
