//go:build unix

package conversation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNestedDataDirs: a store does not open inside the data dir of an
// open store, nor on a dir holding one where it reads; once the other store
// is closed (its lock file left behind), it opens.
func TestNestedDataDirs(t *testing.T) {
	open := func(dir string) (*Store, error) { return Open(dir, Options{}) }
	for _, tc := range []struct {
		name, held, opened, want string
	}{
		{"inside", "d", "d/assistant", "is inside"},
		{"deep inside", "d", "d/assistant/alice/x", "is inside"},
		{"holding an agent folder", "d/assistant", "d", "holds"},
		{"holding a conversation folder", "d/assistant/alice", "d", "holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			held, opened := filepath.Join(root, tc.held), filepath.Join(root, tc.opened)
			if err := os.MkdirAll(opened, 0o755); err != nil {
				t.Fatal(err)
			}
			s, err := open(held)
			if err != nil {
				t.Fatal(err)
			}
			_, err = open(opened)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), held) || !strings.Contains(err.Error(), "a running server") {
				t.Fatalf("Open(%s) beside %s: %v, want it refused (%q)", tc.opened, tc.held, err, tc.want)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2, err := open(opened)
			if err != nil {
				t.Fatalf("Open(%s) once %s is closed: %v", tc.opened, tc.held, err)
			}
			s2.Close()
		})
	}
}
