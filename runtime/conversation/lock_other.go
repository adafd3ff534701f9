//go:build !unix

package conversation

import "os"

// lockDir does nothing where flock is missing.
func lockDir(*os.File) error { return nil }

// lockHeld reports false where flock is missing.
func lockHeld(string) bool { return false }
