package conversation

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultTrashRetention is how long lllm serve keeps a deleted
// conversation in the trash unless told otherwise: 30 days.
const DefaultTrashRetention = 30 * 24 * time.Hour

// trashSweepInterval is how often an open store empties its trash of the
// conversations deleted longer than Options.TrashRetention ago.
const trashSweepInterval = time.Hour

// sweepTrash empties the trash every interval until stop is closed, then
// closes swept.
func (s *Store) sweepTrash(interval time.Duration, stop <-chan struct{}, swept chan<- struct{}) {
	defer close(swept)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.emptyTrash(now)
		}
	}
}

// emptyTrash removes from the trash the folders of the conversations
// deleted at least Options.TrashRetention before now, as their names say
// (TrashDir/AGENT/SENDER/STAMP, see Store.Delete), logging each. It
// removes nothing outside TrashDir and follows no symbolic link: a link,
// a file and a folder whose name is no deletion's time are left alone.
// A problem is logged; the trash is tried again at the next sweep.
func (s *Store) emptyTrash(now time.Time) {
	keep := s.opts.TrashRetention
	trash := filepath.Join(s.dir, TrashDir)
	log := s.opts.Logger
	if fi, err := os.Lstat(trash); errors.Is(err, fs.ErrNotExist) {
		return
	} else if err != nil || !fi.IsDir() {
		log.Warn("the trash is not a folder (a symbolic link?): nothing is removed from it", "trash", trash, "err", err)
		return
	}
	// Every path below is resolved inside the trash: a folder swapped for
	// a link after it was listed cannot lead out of it.
	root, err := os.OpenRoot(trash)
	if err != nil {
		log.Warn("opening the trash", "trash", trash, "err", err)
		return
	}
	defer root.Close()
	for _, agent := range subfolders(root, ".", log) {
		for _, sender := range subfolders(root, agent, log) {
			removed := false
			for _, stamp := range subfolders(root, filepath.Join(agent, sender), log) {
				at, ok := deletedAt(stamp)
				if !ok || now.Sub(at) < keep {
					continue
				}
				rel := filepath.Join(agent, sender, stamp)
				if err := root.RemoveAll(rel); err != nil {
					log.Warn("removing a deleted conversation from the trash", "folder", filepath.Join(trash, rel), "err", err)
					continue
				}
				removed = true
				log.Info("removed a deleted conversation from the trash", "folder", filepath.Join(trash, rel),
					"deleted", at.Format(time.RFC3339), "trash_retention", keep.String())
			}
			if removed {
				// Under the lock, as Delete makes these folders and
				// moves a conversation into them; an error means the
				// folder still holds something.
				s.mu.Lock()
				if root.Remove(filepath.Join(agent, sender)) == nil {
					_ = root.Remove(agent)
				}
				s.mu.Unlock()
			}
		}
	}
}

// subfolders lists the folders in dir of root, not the links or files.
func subfolders(root *os.Root, dir string, log *slog.Logger) []string {
	f, err := root.Open(dir)
	if err != nil {
		log.Warn("reading the trash", "folder", filepath.Join(root.Name(), dir), "err", err)
		return nil
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		log.Warn("reading the trash", "folder", filepath.Join(root.Name(), dir), "err", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() { // a link to a folder is not one
			out = append(out, e.Name())
		}
	}
	return out
}

// deletedAt is the time of the deletion that a folder of the trash is
// named after: its STAMP, with the "-N" of a second deletion in the same
// nanosecond.
func deletedAt(name string) (time.Time, bool) {
	stamp, _, _ := strings.Cut(name, "-")
	t, err := time.Parse(trashStamp, stamp)
	return t, err == nil
}
