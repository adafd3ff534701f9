package logs_test

import (
	"testing"
	"time"

	"github.com/lllm-go/lllm/logs"
)

// After Finish, Totals is what run_end recorded, so that a caller
// reporting a run (lllm run -o json) gives the log's duration, not one
// measured later.
func TestTotalsAfterFinishAreRunEnds(t *testing.T) {
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "t"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	s := run.Summary()
	if s.End == nil {
		t.Fatalf("no run_end: %+v", s)
	}
	if got, want := w.Totals(), s.End.Totals; got != want {
		t.Errorf("Totals() after Finish = %+v, want run_end's %+v", got, want)
	}
}
