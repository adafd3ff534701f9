// Package atomicfile writes files that readers, and a crash, see whole or
// not at all.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// WriteFile writes data to path through a temporary file in the same
// directory (see CreateBeside), fsynced and renamed over path, then fsyncs
// the directory: after a crash, path holds its old content or all of
// data, never a part. The directory is created if needed. A new file gets
// the mode os.Create gives (0666 less the umask); a replaced one keeps
// its mode.
func WriteFile(path string, data []byte) error {
	return WriteFrom(path, bytes.NewReader(data))
}

// WriteFrom is WriteFile of what r reads to its end: a read error leaves
// path as it was.
func WriteFrom(path string, r io.Reader) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := CreateBeside(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, r)
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

// CreateBeside creates an empty temporary file in path's directory, with
// a name hidden and unique to it, to be renamed over path once written:
// with the mode of the file at path or, when there is none, the mode
// os.Create gives (0666 less the umask). os.CreateTemp's 0600 would leave
// the file readable by its owner alone, however the user's umask is set.
func CreateBeside(path string) (*os.File, error) {
	perm, keep := os.FileMode(0o666), false
	if st, err := os.Stat(path); err == nil {
		perm, keep = st.Mode().Perm(), true
	}
	dir, base := filepath.Split(path)
	for range 100 {
		name := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if keep {
			// The umask applies to a file being created: give it back the
			// replaced file's mode.
			if err := f.Chmod(perm); err != nil {
				_ = f.Close()
				_ = os.Remove(name)
				return nil, err
			}
		}
		return f, nil
	}
	return nil, fmt.Errorf("no free temporary name beside %s", path)
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

// Gone reports whether path no longer names the file f has open: it was
// deleted, moved or replaced, so what was written to f since is lost to
// anyone who reads path. It is false when f or path cannot be asked (a
// folder this process may no longer search, an I/O error): the writes
// themselves succeeded, and nothing says they were lost. A relative path
// is taken from the working directory at the call: pass an absolute one
// (see Abs) for a file opened before a change of directory.
func Gone(f *os.File, path string) bool {
	open, err := f.Stat()
	if err != nil {
		return false
	}
	at, err := os.Stat(path)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
	}
	return !os.SameFile(open, at)
}

// Abs is path made absolute, to check with Gone whatever the working
// directory becomes; path itself when that fails.
func Abs(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
