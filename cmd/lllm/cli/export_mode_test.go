package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// An export's -O FILE gets the mode any new file gets (os.Create's 0666
// less the umask), not a temporary file's 0600, and a FILE it replaces
// keeps its mode.
func TestExportFileMode(t *testing.T) {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	exportRunID(t, "run", ctConfig("quickstart.yaml"), "--task", "Name a prime number above 10.", "--log-dir", logDir)

	probe, err := os.Create(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	st, err := os.Stat(probe.Name())
	if err != nil {
		t.Fatal(err)
	}
	want := st.Mode().Perm()

	out := filepath.Join(dir, "out", "train.jsonl")
	if r := lllm(t, "export", "latest", "--log-dir", logDir, "-O", out); r.code != 0 {
		t.Fatalf("export:\n%v", r)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != want {
		t.Errorf("a new -O file: %v, %v; want mode %v as os.Create gives", st.Mode().Perm(), err, want)
	}

	if runtime.GOOS == "windows" {
		return // no permission bits beyond read-only
	}
	if err := os.Chmod(out, 0o640); err != nil {
		t.Fatal(err)
	}
	if r := lllm(t, "export", "latest", "--log-dir", logDir, "-O", out); r.code != 0 {
		t.Fatalf("export again:\n%v", r)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("a replaced -O file: %v, %v; want its mode 0640 kept", st.Mode().Perm(), err)
	}
	if entries, err := os.ReadDir(filepath.Dir(out)); err != nil || len(entries) != 1 {
		t.Errorf("beside the export: %v, %v; want it alone", entries, err)
	}
}
