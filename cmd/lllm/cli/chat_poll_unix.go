//go:build unix

package cli

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// waitReadable waits up to timeout for f to have something to read: at a
// terminal in its usual mode, a whole line or the end of input.
func waitReadable(f *os.File, timeout time.Duration) (bool, error) {
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(timeout/time.Millisecond))
	if errors.Is(err, unix.EINTR) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0, nil
}
