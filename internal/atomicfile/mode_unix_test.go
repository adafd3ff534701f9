//go:build unix

package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A file WriteFile creates gets the mode os.Create gives, 0666 less the
// umask, not os.CreateTemp's 0600; a file it replaces keeps its mode,
// even one the umask would not give.
func TestWriteFileMode(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	for _, umask := range []int{0o022, 0o027} {
		syscall.Umask(umask)
		dir := t.TempDir()
		path := filepath.Join(dir, "manifest.json")
		if err := WriteFile(path, []byte("new\n")); err != nil {
			t.Fatal(err)
		}
		if got, want := mode(t, path), fs.FileMode(0o666&^umask); got != want {
			t.Errorf("umask %#o: a new file has mode %v, want %v", umask, got, want)
		}
		for _, keep := range []fs.FileMode{0o600, 0o664} {
			if err := os.Chmod(path, keep); err != nil {
				t.Fatal(err)
			}
			if err := WriteFile(path, []byte("replaced\n")); err != nil {
				t.Fatal(err)
			}
			if got := mode(t, path); got != keep {
				t.Errorf("umask %#o: a replaced file of mode %v has mode %v", umask, keep, got)
			}
		}
	}
}

// CreateBeside's file is hidden, in path's directory, named after path,
// and new each time.
func TestCreateBeside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "train.jsonl")
	a, err := CreateBeside(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := CreateBeside(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, f := range []*os.File{a, b} {
		if filepath.Dir(f.Name()) != filepath.Dir(path) || !strings.HasPrefix(filepath.Base(f.Name()), ".train.jsonl.tmp-") {
			t.Errorf("temporary file %s, want a hidden one beside %s", f.Name(), path)
		}
	}
	if a.Name() == b.Name() {
		t.Errorf("two temporary files named %s", a.Name())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s exists (%v): CreateBeside made it", path, err)
	}
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}
