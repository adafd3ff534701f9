package logs

import (
	"path/filepath"
	"strings"
	"testing"
)

// lllm sweep writes its samples' run logs under ROOT/sweeps/NAME/runs: a
// run named under ROOT that is one of them is not found there, and the
// error says where it is and how to name it.
func TestOpenPointsIntoSweeps(t *testing.T) {
	root := t.TempDir()
	sweepRuns := filepath.Join(root, "sweeps", "selfcrit", "runs")
	mk := func(dir string) *Run {
		t.Helper()
		w, run, err := Create(dir, RunStart{Tactic: "direct"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Finish(RunEnd{Status: StatusOK}); err != nil {
			t.Fatal(err)
		}
		return run
	}
	mk(root)
	sample := mk(sweepRuns)
	suffix := sample.ID[len(sample.ID)-6:]

	_, err := Open(root, suffix)
	want := "a sweep's run " + filepath.Join(sweepRuns, sample.ID) + " is there: pass --log-dir " + sweepRuns
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open(%s) = %v; want it to say %q", suffix, err, want)
	}
	// The way the error says works.
	for _, ref := range []string{suffix, filepath.Join(sweepRuns, sample.ID)} {
		dir := sweepRuns
		if strings.Contains(ref, string(filepath.Separator)) {
			dir = root
		}
		if r, err := Open(dir, ref); err != nil || r.ID != sample.ID {
			t.Errorf("Open(%s, %s) = %v, %v", dir, ref, r, err)
		}
	}
	// A name no run has anywhere is only "no run".
	if _, err := Open(root, "nosuch"); err == nil || strings.Contains(err.Error(), "sweep") {
		t.Errorf("Open(nosuch) = %v", err)
	}
	// A name of runs in two sweeps points at neither.
	root2 := t.TempDir()
	a := mk(filepath.Join(root2, "sweeps", "a", "runs"))
	mk(filepath.Join(root2, "sweeps", "b", "runs"))
	if _, err := Open(root2, a.ID[:4]); err == nil || strings.Contains(err.Error(), "sweep") {
		t.Errorf("Open(%s), a prefix of runs in two sweeps, = %v; want only no run", a.ID[:4], err)
	}
	if _, err := Open(root2, a.ID); err == nil || !strings.Contains(err.Error(), "sweeps/a/runs") {
		t.Errorf("Open(%s) = %v; want it to point into sweeps/a/runs", a.ID, err)
	}
}
