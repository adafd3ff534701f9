package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// Run from inside a log root (cd logs), where ./logs does not exist, the
// commands that read runs say to pass --log-dir . (and do with it); given
// --log-dir, they say nothing of the current directory.
func TestInsideLogRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "logs")
	if r := lllm(t, "run", ctConfig("chat.yaml"), "--task", "Capital of France?", "--log-dir", root); r.code != 0 {
		t.Fatal(r)
	}
	t.Chdir(root)
	const hint = "the current directory holds runs itself: pass --log-dir ."

	if r := lllm(t, "runs"); r.code != 0 || !strings.Contains(r.stderr, "no runs under logs (it does not exist; runs go under --log-dir, ./logs by default; "+hint+")") {
		t.Errorf("runs:\n%v", r)
	}
	for _, args := range [][]string{{"show", "latest"}, {"tree", "latest"}, {"show", "2026"}, {"export", "latest"}} {
		wantError(t, lllm(t, args...), ExitError, "under logs", hint)
	}
	if r := lllm(t, "tree", "latest", "--log-dir", "."); r.code != 0 {
		t.Errorf("tree latest --log-dir .:\n%v", r)
	}
	for _, args := range [][]string{{"runs", "--log-dir", "logs"}, {"show", "latest", "--log-dir", "logs"}} {
		if r := lllm(t, args...); strings.Contains(r.stderr, hint) {
			t.Errorf("%s: the hint with --log-dir given:\n%v", strings.Join(args, " "), r)
		}
	}
}
