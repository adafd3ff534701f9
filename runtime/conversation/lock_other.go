//go:build !unix

package conversation

import "os"

// lockDir does nothing where flock is missing.
func lockDir(*os.File) error { return nil }
