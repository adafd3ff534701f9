//go:build unix

package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A whole-sweep run holds the directory alone; shards hold it together
// if they are shards of one count. Each refusal says who holds it.
func TestLockRun(t *testing.T) {
	dir := t.TempDir()
	whole, s02, s12, s03 := Shard{}, Shard{0, 2}, Shard{1, 2}, Shard{0, 3}
	take := func(sh Shard) func() {
		t.Helper()
		release, err := lockRun(dir, sh)
		if err != nil {
			t.Fatalf("lockRun %v: %v", sh, err)
		}
		return release
	}
	refused := func(sh Shard, want string) {
		t.Helper()
		if release, err := lockRun(dir, sh); err == nil || !strings.Contains(err.Error(), want) {
			if release != nil {
				release()
			}
			t.Errorf("lockRun %v: %v, want %q", sh, err, want)
		}
	}

	r := take(whole)
	host, _ := os.Hostname()
	by := fmt.Sprintf("is being run whole by process %d on %s: wait", os.Getpid(), host)
	refused(whole, by)
	refused(s02, by)
	r()

	r0 := take(s02)
	r1 := take(s12)
	refused(whole, "being run by shards of 2")
	refused(s03, "shard 0/3 would run some of their samples again; give --shard I/2")
	r0()
	refused(whole, "being run by shards of 2") // shard 1/2 still runs
	r1()

	r = take(s03) // shards of another count, once the others are done
	refused(s02, "being run by shards of 3")
	r()
	take(whole)()

	// A lock written by a version that did not say who holds it.
	r = take(whole)
	if err := os.WriteFile(filepath.Join(dir, lockFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	refused(whole, "is being run whole by another process: wait")
	r()
}
