// Package atomicfile writes files that readers, and a crash, see whole or
// not at all.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteFile writes data to path through a temporary file in the same
// directory, fsynced and renamed over path, then fsyncs the directory: after
// a crash, path holds its old content or all of data, never a part. The
// directory is created if needed.
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory, so that the names created or renamed in it
// survive a crash. File systems that cannot sync a directory are not an
// error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
