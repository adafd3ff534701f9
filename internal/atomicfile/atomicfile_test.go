package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
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
