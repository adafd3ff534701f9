package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lllm-go/lllm/internal/flock"
)

// lockRun takes the lock of the sweep directory dir for a run of shard
// sh (the whole sweep when sh.Count <= 1), and returns its release. A
// whole-sweep run holds it alone; shards hold it together, if they are
// shards of one count: a shard of another count, or the whole sweep,
// would run some of their samples again. The lock is an flock on
// dir/.lock, which the OS releases however the process ends; the count
// of the shards holding it is written in the file, or, for a whole-sweep
// run, which process holds it (its pid and host). A filesystem without
// flock runs without the lock (the cache file's lock still keeps two
// processes off one shard).
func lockRun(dir string, sh Shard) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the sweep's lock: %w", err)
	}
	release = func() { f.Close() }
	// Taking the lock is a few steps; a second lock (on .lock.gate)
	// keeps two processes from taking it at once.
	gate, err := os.OpenFile(filepath.Join(dir, lockFile+".gate"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening the sweep's lock: %w", err)
	}
	defer gate.Close() // releases the gate
	if err := flock.Lock(gate); err != nil {
		if flock.Unsupported(err) {
			return release, nil
		}
		f.Close()
		return nil, fmt.Errorf("taking the sweep's lock: %w", err)
	}
	err = flock.TryLock(f, true)
	switch {
	case err == nil:
		// No other run: a shard writes its count for the next shards, a
		// whole run who it is, for the error of the next process.
		if sh.Count <= 1 {
			if err := writeLock(f, holder()); err != nil {
				f.Close()
				return nil, err
			}
			break
		}
		if err := writeLock(f, strconv.Itoa(sh.Count)); err != nil {
			f.Close()
			return nil, err
		}
		err = flock.TryLock(f, false) // shared now, with the next shards
	case err != flock.ErrLocked:
		err = fmt.Errorf("taking the sweep's lock: %w", err)
	case flock.TryLock(f, false) != nil:
		err = fmt.Errorf("sweep %s is being run whole by %s: wait for it to end (or stop it) before running it again", dir, readHolder(f))
	default:
		n := readCount(f)
		switch {
		case sh.Count <= 1:
			err = fmt.Errorf("sweep %s is being run by shards of %d in other processes: the whole sweep would run their samples again; wait for them to end (or stop them)", dir, n)
		case n != sh.Count:
			err = fmt.Errorf("sweep %s is being run by shards of %d in other processes: shard %s would run some of their samples again; give --shard I/%d, or wait for them to end", dir, n, sh, n)
		default:
			err = nil
		}
	}
	if err != nil && !flock.Unsupported(err) {
		f.Close()
		return nil, err
	}
	return release, nil
}

// holderPrefix starts the line a whole-sweep run writes in the lock.
const holderPrefix = "process "

// holder names this process for the lock's file: "process PID on HOST".
func holder() string {
	h := holderPrefix + strconv.Itoa(os.Getpid())
	if host, err := os.Hostname(); err == nil && host != "" {
		h += " on " + host
	}
	return h
}

// writeLock makes line the content of the lock's file.
func writeLock(f *os.File, line string) error {
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("writing the sweep's lock: %w", err)
	}
	if _, err := f.WriteAt([]byte(line+"\n"), 0); err != nil {
		return fmt.Errorf("writing the sweep's lock: %w", err)
	}
	return nil
}

// readLock returns the content of the lock's file, without spaces around.
func readLock(f *os.File) string {
	b := make([]byte, 300)
	k, _ := f.ReadAt(b, 0)
	return strings.TrimSpace(string(b[:k]))
}

// readCount returns the count of the shards holding the lock.
func readCount(f *os.File) int {
	n, _ := strconv.Atoi(readLock(f))
	return n
}

// readHolder returns who runs the whole sweep, as holder wrote it, or
// "another process" for a lock written before it was (or by a version
// that does not write it).
func readHolder(f *os.File) string {
	if h := readLock(f); strings.HasPrefix(h, holderPrefix) && !strings.ContainsAny(h, "\n\r") {
		return h
	}
	return "another process"
}
