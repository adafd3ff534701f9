//go:build unix

package conversation

import (
	"errors"
	"os"
	"syscall"
)

// lockDir takes the exclusive advisory lock of f, the data directory's
// lock file, which the OS releases when f is closed, however the process
// ends; errInUse when another process holds it.
func lockDir(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errInUse
	}
	return err
}

// lockHeld reports whether a process, this one included, holds the lock
// of the lock file at path. It takes a shared lock to find out and lets it
// go at once; a file it cannot open is not held.
func lockHeld(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK)
}
