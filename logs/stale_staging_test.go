//go:build unix

package logs

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/internal/flock"
)

// captureLog sends slog's default logger to a buffer for the test.
func captureLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

// staging makes the staging folder of a run started age ago, with a log
// unless noLog, and returns its path.
func staging(t *testing.T, root string, age time.Duration, suffix string, noLog bool) string {
	t.Helper()
	id := time.Now().Add(-age).UTC().Format(idTimeLayout) + "-" + suffix
	dir := filepath.Join(root, ".tmp-"+id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if !noLog {
		if err := os.WriteFile(filepath.Join(dir, EventsFile), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestStaleStagingRemoved: listing a log root removes the staging folders
// of runs whose process died before the rename (no one holds their log,
// and they are older than the grace), logging each; it keeps a recent one,
// one whose log is locked, and folders it did not name.
func TestStaleStagingRemoved(t *testing.T) {
	logged := captureLog(t)
	root := t.TempDir()
	w, run, err := Create(root, RunStart{Tactic: "t"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dead := staging(t, root, 2*time.Hour, "aaaaaa", false)
	empty := staging(t, root, 3*time.Hour, "bbbbbb", true)
	recent := staging(t, root, time.Second, "cccccc", false)
	live := staging(t, root, 2*time.Hour, "dddddd", false)
	f, err := os.OpenFile(filepath.Join(live, EventsFile), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := flock.TryLock(f, true); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, ".tmp-notarun")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	sums, err := List(root)
	if err != nil || len(sums) != 1 || sums[0].ID != run.ID {
		t.Fatalf("List: %v %v, want the one run", sums, err)
	}
	for _, dir := range []string{dead, empty} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", filepath.Base(dir), err)
		}
		if !strings.Contains(logged.String(), filepath.Base(dir)) {
			t.Errorf("the removal of %s is not logged:\n%s", filepath.Base(dir), logged)
		}
	}
	for _, dir := range []string{recent, live, other, run.Dir} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(dir), err)
		}
	}
}

// TestStaleStagingRemovedByCreate: the first run a process creates under a
// root removes the root's stale staging folders.
func TestStaleStagingRemovedByCreate(t *testing.T) {
	captureLog(t)
	root := t.TempDir()
	dead := staging(t, root, 2*time.Hour, "eeeeee", false)
	w, _, err := Create(root, RunStart{Tactic: "t"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s is still there after Create (%v)", filepath.Base(dead), err)
	}
}
