//go:build !unix

package flock

import "os"

// Supported is whether the OS has advisory file locks.
const Supported = false

// TryLock grants every lock where the OS has none.
func TryLock(*os.File, bool) error { return nil }

// Lock grants every lock where the OS has none.
func Lock(*os.File) error { return nil }

// Held cannot tell where the OS has no locks: false.
func Held(string) bool { return false }

// Unsupported reports false: there is no lock to refuse.
func Unsupported(error) bool { return false }
