package replay_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
)

// A run records the text of its prompt files, and its replay renders
// those, not the files as they are now: an edited or removed prompts
// folder changes nothing, and --set prompts_dir reads a folder on purpose.
func TestReplayRecordedPromptFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "prompts", "lab", "solver.md")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	original := "---\nxml_tags: [answer]\n---\nYou answer in <answer> tags.\n"
	if err := os.WriteFile(file, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	run, res := recordYAML(t, filepath.Join(dir, "lab.yaml"), `tactic_type: chat
global: {model_name: mock/lab}
agent_configs: [{name: assistant, system_prompt_path: lab/solver}]
mock: {replies: [{text: "<answer>4</answer>"}]}
`, "2+2?")
	rec := mustLoad(t, run)
	if got := rec.Start.Prompts["lab/solver"]; got != original || len(rec.Start.Prompts) != 1 {
		t.Fatalf("run_start.prompts = %q", rec.Start.Prompts)
	}

	if err := os.WriteFile(file, []byte("You answer at length.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := replayRun(t, run, replay.Options{LogDir: t.TempDir()})
	if rep.Divergence != nil || rep.Run.Status != logs.StatusOK || string(rep.Run.Result) != string(res.Result) {
		t.Fatalf("after the file changed: divergence %v, %s %s, result %s", rep.Divergence, rep.Run.Status, rep.Run.Error, rep.Run.Result)
	}
	// The replay's own log records the prompts it rendered.
	if got := rep.Log.Start.Prompts["lab/solver"]; got != original {
		t.Fatalf("the replay recorded %q", got)
	}
	rep = replayRun(t, run, replay.Options{LogDir: t.TempDir(), Set: []string{"prompts_dir=" + filepath.Join(dir, "prompts")}})
	if d := rep.Divergence; d == nil || !strings.Contains(d.Diff, "+You answer at length.") {
		t.Fatalf("with --set prompts_dir: divergence %v", d)
	}
	if err := os.RemoveAll(filepath.Join(dir, "prompts")); err != nil {
		t.Fatal(err)
	}
	rep = replayRun(t, run, replay.Options{LogDir: t.TempDir()})
	if rep.Divergence != nil || rep.Run.Status != logs.StatusOK {
		t.Fatalf("without the folder: divergence %v, %s %s", rep.Divergence, rep.Run.Status, rep.Run.Error)
	}
	// A --set naming a prompt the run did not record says where it looked.
	_, err := replay.Run(t.Context(), rec, replay.Options{LogDir: t.TempDir(), Set: []string{"agent_configs.assistant.system_prompt_path=lab/critic"}})
	if err == nil || !strings.Contains(err.Error(), "in the prompt files the run recorded") {
		t.Fatalf("unrecorded prompt: %v", err)
	}
}
