//go:build !unix

package logs

import "os"

// lockWriting does nothing where flock is missing.
func lockWriting(*os.File) error { return nil }

// beingWritten cannot tell without flock, so a log without a run_end is
// taken to be still running.
func beingWritten(string) bool { return true }

// canTellWriting is whether beingWritten can tell.
const canTellWriting = false
