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
