package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Gone of an absolute path (Abs) does not depend on the working
// directory: a file opened under a relative path is not gone because the
// process moved elsewhere.
func TestGoneAfterChdir(t *testing.T) {
	t.Chdir(t.TempDir())
	f, err := os.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	at := Abs("f")
	if !filepath.IsAbs(at) {
		t.Fatalf("Abs = %q", at)
	}
	if err := os.Chdir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if Gone(f, at) {
		t.Error("a file still at its path is gone after a change of directory")
	}
	if err := os.Remove(at); err != nil {
		t.Fatal(err)
	}
	if !Gone(f, at) {
		t.Error("a deleted file is not gone")
	}
}

// A folder of the path replaced by a file takes the file away: gone.
func TestGoneFolderReplaced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !Gone(f, path) {
		t.Error("a file whose folder is now a file is not gone")
	}
}

// A file whose folder this process can no longer search is still there:
// not gone. (Root searches any folder, so this needs another user.)
func TestGoneFolderNotSearchable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root searches any folder")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Chmod(dir, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if _, err := os.Stat(path); err == nil {
		t.Fatal("the folder is still searchable")
	}
	if Gone(f, path) {
		t.Error("a file in a folder that cannot be searched is gone")
	}
}
