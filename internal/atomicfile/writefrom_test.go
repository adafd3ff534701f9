package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// A read error part-way leaves the file as it was, and no temporary file
// beside it.
func TestWriteFromReadErrorKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteFile(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("new, part"), iotest.ErrReader(boom))
	if err := WriteFrom(path, r); !errors.Is(err, boom) {
		t.Fatalf("WriteFrom: %v, want the read error", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("the file holds %q, want the old content", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the folder, want the file alone", len(ents))
	}
}
