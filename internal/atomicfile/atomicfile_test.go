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

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "manifest.json")
	for _, data := range []string{"first\n", "second, longer\n"} {
		if err := WriteFile(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v %v", entries, err)
	}
	if err := WriteFile(filepath.Join(path, "under-a-file"), nil); err == nil {
		t.Fatal("writing under a file succeeded")
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("syncing a missing directory succeeded")
	}
}

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

// Gone tells a file still at its path from one deleted, moved or replaced.
func TestGone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(path string) error
		gone   bool
	}{
		{"kept", func(string) error { return nil }, false},
		{"deleted", os.Remove, true},
		{"moved", func(p string) error { return os.Rename(p, p+".moved") }, true},
		{"another file beside it", func(p string) error { return os.WriteFile(p+".new", nil, 0o644) }, false},
		{"replaced by a rename", func(p string) error {
			if err := os.WriteFile(p+".new", nil, 0o644); err != nil {
				return err
			}
			return os.Rename(p+".new", p)
		}, true},
		// A folder of the path replaced by a file takes the file away.
		{"its folder replaced by a file", func(p string) error {
			dir := filepath.Dir(p)
			if err := os.Rename(dir, dir+".old"); err != nil {
				return err
			}
			return os.WriteFile(dir, nil, 0o644)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			if err := tc.damage(path); err != nil {
				t.Fatal(err)
			}
			if got := Gone(f, path); got != tc.gone {
				t.Errorf("Gone = %v, want %v", got, tc.gone)
			}
		})
	}
}

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
