package conversation

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lllm-go/lllm/internal/flock"
)

// checkNesting refuses the data dir dir, which this store holds, when a
// running store holds a data dir that dir is inside, or one inside dir
// where Open reads (an agent folder, or a folder of found): each would
// read or move the other's folders as its own conversations.
func checkNesting(dir string, found []key) error {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		if held, by := heldBy(d); held {
			return fmt.Errorf("conversation: data dir %s is inside %s, the data dir of a running server (%s): that server would take this one's folders for its conversations; give each server a data dir apart from the others'", dir, d, by)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	var inner []string
	for _, e := range ents {
		if e.IsDir() {
			inner = append(inner, e.Name())
		}
	}
	for _, k := range found {
		inner = append(inner, filepath.Join(k.agent, k.sender))
	}
	for _, name := range inner {
		if held, by := heldBy(filepath.Join(dir, name)); held {
			return fmt.Errorf("conversation: data dir %s holds %s, the data dir of a running server (%s): this server would take that one's folders for its conversations; give each server a data dir apart from the others'", dir, filepath.Join(dir, name), by)
		}
	}
	return nil
}

// heldBy reports whether a running store holds the data dir dir, and
// which process.
func heldBy(dir string) (bool, string) {
	path := filepath.Join(dir, LockFile)
	if !flock.Held(path) {
		return false, ""
	}
	return true, holder(path)
}

// holder names the process that holds the lock file at path, as the file
// says: "process 1234".
func holder(path string) string {
	if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return "process " + string(bytes.TrimSpace(b))
	}
	return "another process"
}
