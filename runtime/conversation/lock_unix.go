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
