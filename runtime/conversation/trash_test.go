package conversation

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a log a store's sweeper writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// mkdirs makes each folder under dir, with a file in it.
func mkdirs(t *testing.T, dir string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p, "log.jsonl"), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// With a retention, opening a store removes the conversations deleted
// longer ago than that, by the time their folder is named after, and
// logs each removal; it leaves the recent ones, what is not named like a
// deletion, links (to folders outside the trash too) and everything
// outside the trash. A retention of 0 removes nothing.
func TestOpenEmptiesTheTrash(t *testing.T) {
	stamp := func(age time.Duration) string { return time.Now().Add(-age).UTC().Format(trashStamp) }
	old, recent, link := stamp(40*24*time.Hour), stamp(2*24*time.Hour), stamp(50*24*time.Hour)
	dir, outside := t.TempDir(), t.TempDir()
	mkdirs(t, dir,
		".trash/assistant/alice/"+old, ".trash/assistant/alice/"+old+"-2", ".trash/assistant/alice/"+recent,
		".trash/critic/bob/"+old, ".trash/assistant/carol/notes", "assistant/"+old)
	mkdirs(t, outside, "victim")
	if err := os.Symlink(filepath.Join(outside, "victim"), filepath.Join(dir, ".trash/assistant/alice", link)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, ".trash/linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, "x", old), 0o755); err != nil {
		t.Fatal(err)
	}

	// Forever: nothing goes.
	s, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !exists(filepath.Join(dir, ".trash/assistant/alice", old)) {
		t.Fatal("a store without a retention emptied the trash")
	}

	var logged lockedBuffer
	s, err = Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil)), TrashRetention: DefaultTrashRetention})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{".trash/assistant/alice/" + old, ".trash/assistant/alice/" + old + "-2", ".trash/critic"} {
		if exists(filepath.Join(dir, p)) {
			t.Errorf("%s is still there", p)
		}
	}
	for _, p := range []string{".trash/assistant/alice/" + recent, ".trash/assistant/carol/notes", "assistant/" + old,
		".trash/assistant/alice/" + link, ".trash/linked"} {
		if !exists(filepath.Join(dir, p)) {
			t.Errorf("%s was removed", p)
		}
	}
	if !exists(filepath.Join(outside, "victim", "log.jsonl")) || !exists(filepath.Join(outside, "x", old)) {
		t.Error("something outside the trash was removed")
	}
	if n := strings.Count(logged.String(), "removed a deleted conversation from the trash"); n != 3 || !strings.Contains(logged.String(), "trash_retention=720h0m0s") {
		t.Errorf("%d removals logged:\n%s", n, logged.String())
	}
}

// An open store empties the trash periodically: a conversation that
// becomes old enough while it is open goes at the next sweep, and a
// recent deletion stays.
func TestStoreEmptiesTheTrashPeriodically(t *testing.T) {
	dir := t.TempDir()
	var logged lockedBuffer
	s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil)), TrashRetention: time.Hour, trashSweep: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Get("assistant", "alice")
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, user("hello"))
	rel, err := s.Delete("assistant", "alice")
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, TrashDir, "assistant", "bob", time.Now().Add(-2*time.Hour).UTC().Format(trashStamp))
	// Moved in whole, as Delete does, so that no sweep sees it half made.
	made := filepath.Join(t.TempDir(), "made")
	mkdirs(t, made, ".")
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(made, old); err != nil {
		t.Fatal(err)
	}
	// The removal is logged once done.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logged.String(), filepath.Base(old)) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if exists(old) || !strings.Contains(logged.String(), filepath.Base(old)) {
		t.Fatalf("the old conversation is still in the trash (%v), or its removal was not logged:\n%s", exists(old), logged.String())
	}
	if !exists(filepath.Join(dir, rel)) {
		t.Fatalf("the recent deletion %s went", rel)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
