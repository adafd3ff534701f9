//go:build unix

package logs

import (
	"errors"
	"os"
	"syscall"
)

// lockWriting marks f as being written: an exclusive advisory lock that
// the OS releases when f is closed, however the process ends.
func lockWriting(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// beingWritten reports whether a Writer, in this process or another, holds
// the log at path open.
func beingWritten(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// canTellWriting is whether beingWritten can tell.
const canTellWriting = true
