package logs

import (
	"os"
	"path/filepath"
	"testing"
)

// A run under a relative log root is finished whole when the process
// changes its working directory meanwhile (a tool, a program embedding
// lllm): its log is still where it was made.
func TestRelativeRootAfterChdir(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	w, run, err := Create("runs", RunStart{Tactic: "x"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(RunEnd{Status: StatusOK}); err != nil {
		t.Fatalf("Finish of a log still in place: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, run.Dir, EventsFile)); err != nil {
		t.Fatal(err)
	}
}
