package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/sweep"
)

// lllm export --sweep reads no run log outside the sweep's runs/: a
// samples file whose run_dir climbs out (hand-edited or hostile) is an
// error naming the run_dir, not an export of whatever it points to.
func TestExportSweepRefusesRunDirOutside(t *testing.T) {
	f := newExportFixture(t)
	var fr *sweep.Record
	if _, err := sweep.EachRecord(f.sweepDir, func(r *sweep.Record) error {
		if r.Row == "fr" {
			fr = r
		}
		return nil
	}); err != nil || fr == nil {
		t.Fatalf("no record of row fr (%v)", err)
	}
	// The run log, copied outside the sweep directory, and the record
	// pointed there.
	outside := filepath.Join(f.dir, "elsewhere")
	if err := os.CopyFS(outside, os.DirFS(filepath.Join(f.sweepDir, fr.RunDir))); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(f.sweepDir, outside)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.sweepDir, sweep.SamplesFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := `"run_dir":"` + fr.RunDir + `"`
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %s", path, old)
	}
	bad := filepath.ToSlash(rel)
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, `"run_dir":"`+bad+`"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	r := lllm(t, "export", "--sweep", f.sweepDir, "-O", out)
	wantError(t, r, ExitError, `run_dir "`+bad+`"`, "sample fr", "runs/")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an export that failed wrote %s", out)
	}
}
