package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/logs"
)

// lllm runs lists a run whose log ends in a whole line that is not a
// record as unreadable, at that line, as lllm tree refuses it; a last
// line without its newline, one the run stopped while writing, is skipped.
func TestRunsDamagedLastLine(t *testing.T) {
	root := t.TempDir()
	started := time.Date(2026, 11, 20, 10, 0, 0, 0, time.Local)
	garbage := writeStartedRun(t, root, started, "aaaaaa", logs.RunStart{Tactic: "chat"}, &logs.RunEnd{Status: logs.StatusOK})
	torn := writeStartedRun(t, root, started.Add(time.Minute), "bbbbbb", logs.RunStart{Tactic: "chat"}, &logs.RunEnd{Status: logs.StatusOK})
	appendRaw := func(id, data string) {
		f, err := os.OpenFile(filepath.Join(root, id, logs.EventsFile), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(data); err != nil {
			t.Fatal(err)
		}
	}
	appendRaw(garbage, "garbage\n")
	appendRaw(torn, `{"seq":3,"ts":"2026-11-`)
	path := filepath.Join(root, garbage, logs.EventsFile)
	wantErr := path + `:3: corrupt record: jsontext: invalid character 'g' at start of value`

	r := lllm(t, "runs", "--log-dir", root, "-o", "json")
	var runs []logs.RunInfo
	if err := json.Unmarshal([]byte(r.stdout), &runs); r.code != 0 || err != nil || len(runs) != 2 {
		t.Fatalf("%v", r)
	}
	if runs[0].RunID != garbage || runs[0].Status != logs.StatusUnreadable || runs[0].Error != wantErr {
		t.Errorf("run with a garbage last line: %+v, want unreadable: %s", runs[0], wantErr)
	}
	if runs[1].RunID != torn || runs[1].Status != logs.StatusOK || runs[1].Error != "" {
		t.Errorf("run with a torn last line: %+v, want ok", runs[1])
	}

	r = lllm(t, "runs", "--log-dir", root)
	if r.code != 0 || !strings.Contains(r.stderr, "lllm: warning: run "+garbage+" is unreadable: "+wantErr) {
		t.Errorf("table: %v", r)
	}
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(rows) != 3 || !strings.Contains(rows[1], " unreadable ") || !strings.Contains(rows[2], " ok ") {
		t.Errorf("table rows:\n%s", r.stdout)
	}
	// lllm tree refuses the log at the same line.
	if r := lllm(t, "tree", garbage, "--log-dir", root); r.code == 0 || !strings.Contains(r.stderr, wantErr) {
		t.Errorf("tree: %v", r)
	}
	if r := lllm(t, "runs", "--log-dir", root, "--status", "unreadable", "-o", "json"); !strings.Contains(r.stdout, garbage) || strings.Contains(r.stdout, torn) {
		t.Errorf("--status unreadable: %v", r)
	}
}

// lllm run under a log root it cannot write names the root and the fix.
func TestRunReadOnlyLogDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: directory modes are not enforced")
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	r := lllm(t, "run", "../../../configs/quickstart.yaml", "--task", "hi", "--log-dir", ro)
	want := "lllm: creating a run under the log root " + ro + ": permission denied: choose a writable log dir (--log-dir or log_dir)"
	if r.code == 0 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, ".tmp-") {
		t.Errorf("%v\nwant %s", r, want)
	}
}
