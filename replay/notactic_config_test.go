package replay_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
)

// A run whose log records settings that are not a tactic config (no
// tactic_type), as a program of its own such as examples/agent writes, is
// one clear error saying it cannot be replayed, not a config problem at
// line 1 of its log ("unknown key "model" at top level").
func TestReplayConfigWithoutTacticType(t *testing.T) {
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "examples/agent", Config: []byte(`{"model":"mock/demo"}`), Task: []byte(`"17*23"`)}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	rec, err := replay.Load(t.Context(), run)
	if err == nil {
		_, err = replay.Run(t.Context(), rec, replay.Options{})
	}
	want := `records a config without tactic_type, so it was not written by lllm run or tactics.Run and cannot be replayed`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"examples/agent"`) {
		t.Errorf("error %v, want %q", err, want)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 || entries[0].Name() != filepath.Base(run.Dir) {
		t.Errorf("the failed replay wrote something: %v", entries)
	}
}
