//go:build !unix

package cli

import (
	"errors"
	"os"
	"time"
)

// waitReadable cannot tell here: a line typed while a reply streams is
// read at the next prompt.
func waitReadable(*os.File, time.Duration) (bool, error) {
	return false, errors.New("not supported")
}
