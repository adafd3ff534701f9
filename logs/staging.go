package logs

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lllm-go/lllm/internal/flock"
)

// stagingPrefix names a run directory while Create makes it: the folder
// is renamed to the run id once its run_start is fsynced.
const stagingPrefix = ".tmp-"

// A staging folder is stale, its process gone before the rename, when no
// process holds its log and its run started more than stagingGrace ago
// (Create holds it for well under a second), or, where the OS cannot tell
// whether a process holds a log, more than stagingLimit ago.
const (
	stagingGrace = 10 * time.Minute
	stagingLimit = 24 * time.Hour
)

// swept holds the roots whose stale staging folders this process has
// removed at its first Create there.
var swept sync.Map

// removeStaleStaging removes the stale staging folders among names, the
// entries of root, logging each; a folder it cannot tell the age of, by
// the run id in its name, is left alone.
func removeStaleStaging(root string, names []string, now time.Time) {
	for _, name := range names {
		id, ok := strings.CutPrefix(name, stagingPrefix)
		if !ok {
			continue
		}
		stamp, _, _ := strings.Cut(id, "-")
		started, err := time.Parse(idTimeLayout, stamp)
		if err != nil {
			continue
		}
		dir := filepath.Join(root, name)
		age := now.Sub(started)
		if !(flock.Supported && age > stagingGrace && !beingWritten(filepath.Join(dir, EventsFile)) || age > stagingLimit) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			slog.Warn("logs: cannot remove the staging folder of a run whose process ended before it started", "dir", dir, "err", err)
			continue
		}
		slog.Info("logs: removed the staging folder of a run whose process ended before it started", "dir", dir, "started", started)
	}
}

// removeStaleStagingOnce removes root's stale staging folders the first
// time this process creates a run there.
func removeStaleStagingOnce(root string) {
	if _, done := swept.LoadOrStore(filepath.Clean(root), true); done {
		return
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), stagingPrefix) {
			names = append(names, e.Name())
		}
	}
	removeStaleStaging(root, names, time.Now())
}
