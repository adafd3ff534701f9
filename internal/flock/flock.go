// Package flock takes the advisory file locks of the OS (flock(2)), which
// the OS releases when the file is closed, however the process ends.
// Where the OS has none ([Supported] is false), every lock is granted and
// [Held] cannot tell.
package flock

import "errors"

// ErrLocked is TryLock's error when another open file holds the lock.
var ErrLocked = errors.New("locked by another open file")
