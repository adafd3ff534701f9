//go:build unix

package flock

import (
	"errors"
	"os"
	"syscall"
)

// Supported is whether the OS has advisory file locks.
const Supported = true

// TryLock takes f's lock, exclusive or shared, without waiting:
// ErrLocked when another open file holds it (exclusively, or at all for
// an exclusive lock). A lock f already holds is converted.
func TryLock(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err := flock(f, how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// Lock takes f's exclusive lock, waiting for it.
func Lock(f *os.File) error { return flock(f, syscall.LOCK_EX) }

// Held reports whether an open file, in this process or another, holds
// the lock of the file at path exclusively. A file it cannot open is not
// held.
func Held(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return TryLock(f, false) == ErrLocked
}

// Unsupported reports whether err is a filesystem's refusal of locks
// (some network filesystems have none).
func Unsupported(err error) bool {
	return errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.ENOSYS) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EINVAL)
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
