//go:build unix

package flock

import (
	"os"
	"path/filepath"
	"testing"
)

// Two open files of one path contend for its lock as two processes would:
// an exclusive lock excludes every other, shared locks share, and closing
// the file releases its lock.
func TestLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b := open(), open()
	if Held(path) {
		t.Fatal("held before any lock")
	}
	if err := TryLock(a, true); err != nil {
		t.Fatal(err)
	}
	if !Held(path) {
		t.Error("not held under an exclusive lock")
	}
	for _, exclusive := range []bool{true, false} {
		if err := TryLock(b, exclusive); err != ErrLocked {
			t.Errorf("TryLock(exclusive %v) beside an exclusive lock: %v, want ErrLocked", exclusive, err)
		}
	}
	if err := TryLock(a, false); err != nil { // converted to shared
		t.Fatal(err)
	}
	if err := TryLock(b, false); err != nil {
		t.Errorf("a shared lock beside a shared lock: %v", err)
	}
	if Held(path) {
		t.Error("held exclusively under shared locks")
	}
	if err := TryLock(b, true); err != ErrLocked {
		t.Errorf("an exclusive lock beside a shared one: %v, want ErrLocked", err)
	}
	a.Close()
	if err := TryLock(b, true); err != nil {
		t.Errorf("after the other file closed: %v", err)
	}
	if Held(filepath.Join(t.TempDir(), "missing")) {
		t.Error("a missing file is held")
	}
}
