package sweep

import (
	"os"
	"path/filepath"
	"testing"
)

// A file whose copy fails is not left half-written in the merged
// directory: copyDir leaves alone the files dst already has, so a partial
// copy would stand for the file in every later merge.
func TestCopyDirLeavesNoPartialFile(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "events.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link to a directory opens, but reading it fails: the copy fails
	// after it began.
	if err := os.Symlink(t.TempDir(), filepath.Join(src, "broken")); err != nil {
		t.Fatal(err)
	}
	if err := copyDir(src, dst); err == nil {
		t.Fatal("copyDir: no error copying a link to a directory")
	}
	if _, err := os.Lstat(filepath.Join(dst, "broken")); !os.IsNotExist(err) {
		t.Errorf("the failed copy left its target behind (Lstat: %v)", err)
	}
	if left, _ := os.ReadDir(dst); len(left) > 0 {
		t.Errorf("the failed copy left %s in the merged folder", left[0].Name())
	}
}
