package tactics_test

import (
	"path/filepath"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
	_ "github.com/lllm-go/lllm/tactics/builtin"
)

// Check, and so Batch, read the system prompt files from
// RunOptions.Prompts as Run does: a config whose prompts folder is gone
// (a replay's, run from elsewhere) passes when the files are given.
func TestCheckUsesGivenPrompts(t *testing.T) {
	dir := t.TempDir() // no prompts/ in it
	cfg, err := config.Parse(filepath.Join(dir, "c.yaml"), []byte(`
tactic_type: chat
global: {model_name: mock/demo}
agent_configs: [{name: assistant, system_prompt_path: sys}]
mock: {replies: [{text: "hi"}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := tactics.RunOptions{LogDir: t.TempDir(), Prompts: map[string]string{"sys": "You greet."}}
	res, err := tactics.Run(t.Context(), cfg, "hello", opts)
	if err != nil || res.Status != logs.StatusOK {
		t.Fatalf("Run with the prompt files given: %v %+v", err, res)
	}
	if err := tactics.Check(t.Context(), cfg, opts); err != nil {
		t.Errorf("Check with the prompt files given: %v, want nil as Run ran", err)
	}
	results, err := tactics.Batch(t.Context(), cfg, []string{"hello"}, tactics.BatchOptions{RunOptions: opts})
	if err != nil || len(results) != 1 || results[0].Status != logs.StatusOK {
		t.Errorf("Batch with the prompt files given: %v %+v", err, results)
	}
}
