package logs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run whose log is deleted while it runs must not finish as if it were
// recorded: its records went to a file no reader will find.
func TestFinishReportsDeletedLog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, run *Run)
	}{
		{"kept", func(*testing.T, *Run) {}},
		{"run dir removed", func(t *testing.T, run *Run) {
			if err := os.RemoveAll(run.Dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"log replaced", func(t *testing.T, run *Run) {
			other := filepath.Join(t.TempDir(), EventsFile)
			if err := os.WriteFile(other, []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, run.Path()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, run, err := Create(t.TempDir(), RunStart{Tactic: "chat"}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			msg := &Record{Kind: KindTacticStart, TacticStart: &TacticStart{Session: "s", Tactic: "chat"}}
			if err := w.Write(msg); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, run)
			err = w.Finish(RunEnd{Status: StatusOK})
			if tc.name == "kept" {
				if err != nil {
					t.Fatalf("Finish of an intact log: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Finish succeeded although the log was gone")
			}
			for _, want := range []string{run.Path(), "deleted or moved", "3 records"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
