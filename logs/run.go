package logs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/atomicfile"
	"github.com/lllm-go/lllm/internal/flock"
)

// DefaultRoot is the log root used when none is given.
const DefaultRoot = "logs"

// EventsFile is the name of the log file inside a run directory.
const EventsFile = "events.jsonl"

// idTimeLayout names runs so that they sort by start time.
const idTimeLayout = "20060102T150405.000000Z"

// Create starts a new run under root (DefaultRoot if empty): a directory
// named by its start time and a random suffix, holding the log with start
// as its first record. The directory appears whole, with its run_start
// written and fsynced, or not at all: it is made as a staging folder
// ".tmp-ID" and renamed. start.RunID is set to the run's id. The first
// Create of a process under a root removes the root's stale staging
// folders, those of runs whose process died before the rename, once no
// process holds their log and they are 10 minutes old (a day old where the
// OS has no flock), logging each with slog's default logger; so does
// ListFunc.
func Create(root string, start RunStart, opts Options) (*Writer, *Run, error) {
	if root == "" {
		root = DefaultRoot
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, nil, fmt.Errorf("logs: creating log root: %w", err)
	}
	removeStaleStagingOnce(root)
	var suffix [3]byte
	_, _ = rand.Read(suffix[:])
	id := time.Now().UTC().Format(idTimeLayout) + "-" + hex.EncodeToString(suffix[:])
	tmp := filepath.Join(root, stagingPrefix+id)
	dir := filepath.Join(root, id)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, nil, fmt.Errorf("logs: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(tmp, EventsFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("logs: %w", err)
	}
	start.RunID = id
	start.Format, start.Version = FormatName, strconv.Itoa(VersionMajor)+"."+strconv.Itoa(VersionMinor)
	// Readers tell a run being written from one that stopped without
	// finishing its log by this lock (Summary.Status, Run.Writing).
	if err := flock.TryLock(f, true); err != nil {
		_ = f.Close()
		_ = os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("logs: locking the log of run %s: %w", id, err)
	}
	w, err := newWriter(f, start)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		_ = f.Close()
		_ = os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("logs: creating run %s: %w", id, err)
	}
	_ = atomicfile.SyncDir(root) // best effort: the run is complete either way
	// Go on with the caller's sync policy on the same open file.
	w.owned, w.name = true, filepath.Join(dir, EventsFile)
	w.setOptions(opts)
	return w, &Run{ID: id, Dir: dir, Start: &start}, nil
}

// NewRunStart fills in what a run_start records about the environment: the
// versions of lllm, Go and the modules built in, the host, and the git
// commit of the working directory (with "-dirty" when it has changes).
func NewRunStart(ctx context.Context, tactic string, config, task any, seed int64) (RunStart, error) {
	s := RunStart{Tactic: tactic, Seed: seed, Versions: map[string]string{"go": runtime.Version()}}
	var err error
	if s.Config, err = rawJSON(config); err != nil {
		return s, fmt.Errorf("logs: run config: %w", err)
	}
	if s.Task, err = rawJSON(task); err != nil {
		return s, fmt.Errorf("logs: run task: %w", err)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		s.Versions["lllm"] = bi.Main.Version
		for _, d := range bi.Deps {
			if d.Path == "github.com/lllm-go/lllm" {
				s.Versions["lllm"] = d.Version
			}
		}
	}
	s.Host, _ = os.Hostname()
	s.GitCommit = GitCommit()
	return s, nil
}

func rawJSON(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	}
	return json.Marshal(v)
}

// GitCommit is the commit of the git work tree the process runs in, with
// "-dirty" when tracked files have changes, or "" outside a work tree, as
// NewRunStart records it. It asks git once per process (a sweep starts
// thousands of runs), which may take up to two seconds: call it ahead of
// timed work. It never takes git's index lock (--no-optional-locks), so it
// cannot leave a stale one behind when the timeout kills git.
var GitCommit = sync.OnceValue(func() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	git := func(args ...string) ([]byte, error) {
		return exec.CommandContext(ctx, "git", append([]string{"--no-optional-locks"}, args...)...).Output()
	}
	out, err := git("rev-parse", "HEAD")
	if err != nil {
		return ""
	}
	commit := strings.TrimSpace(string(out))
	if st, err := git("status", "--porcelain", "--untracked-files=no"); err == nil && len(bytes.TrimSpace(st)) > 0 {
		commit += "-dirty"
	}
	return commit
})

// Run is one run directory.
type Run struct {
	ID    string
	Dir   string
	Start *RunStart
}

// Path is the run's log file.
func (r *Run) Path() string { return filepath.Join(r.Dir, EventsFile) }

// Reader opens the run's log for streaming. Close it when done.
func (r *Run) Reader() (*Reader, error) { return OpenFile(r.Path()) }

// Forest rebuilds the run's dialog forest from its log, with the reader's
// warnings (such as a skipped torn last line).
func (r *Run) Forest(ctx context.Context) (*dialog.Forest, []string, error) {
	rd, err := r.Reader()
	if err != nil {
		return nil, nil, err
	}
	defer rd.Close()
	f, err := Rebuild(ctx, rd)
	return f, rd.Warnings(), err
}

// Rebuild replays every dialog record of a log into a forest: the same
// dialogs, ids, nodes and messages the run had in memory. It stops with
// ctx's error when ctx is done.
func Rebuild(ctx context.Context, r *Reader) (*dialog.Forest, error) {
	f := new(dialog.Forest)
	names := map[string]string{}
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return nil, err
		}
		if ev, ok := rec.Event(); ok {
			if m := ev.Message; m != nil {
				// Roles, senders and models repeat across a run: keep one copy.
				m.Role, m.Name, m.Agent = intern(names, m.Role), intern(names, m.Name), intern(names, m.Agent)
				m.Model, m.Modality, m.APIType = intern(names, m.Model), intern(names, m.Modality), intern(names, m.APIType)
			}
			if err := f.Apply(ev); err != nil {
				return nil, r.errorf(r.line, "inconsistent dialog record", err)
			}
		}
	}
}

// intern returns the copy of s kept in seen, keeping s if it is new.
// Only short strings are worth it.
func intern[S ~string](seen map[string]string, s S) S {
	if s == "" || len(s) > 64 {
		return s
	}
	if v, ok := seen[string(s)]; ok {
		return S(v)
	}
	seen[string(s)] = string(s)
	return s
}

// Open finds a run under root (DefaultRoot if empty). ref is a run
// directory, a run id, a unique prefix or suffix of one, or "latest".
func Open(root, ref string) (*Run, error) {
	if root == "" {
		root = DefaultRoot
	}
	dir, err := resolve(root, ref)
	if err != nil {
		return nil, err
	}
	run := &Run{ID: filepath.Base(dir), Dir: dir}
	rd, err := run.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if run.Start, err = rd.Start(); err != nil {
		return nil, err
	}
	return run, nil
}

// ErrNoRun is Open's error for an empty run reference.
var ErrNoRun = errors.New("logs: no run given: pass a run id, a run directory or \"latest\"")

func resolve(root, ref string) (string, error) {
	if ref == "" {
		return "", ErrNoRun
	}
	if st, err := os.Stat(filepath.Join(ref, EventsFile)); err == nil && st.Mode().IsRegular() {
		return filepath.Clean(ref), nil
	}
	if st, err := os.Stat(ref); err == nil && st.Mode().IsRegular() && filepath.Base(ref) == EventsFile {
		return filepath.Dir(filepath.Clean(ref)), nil
	}
	ids, err := runIDs(root)
	if err != nil {
		return "", err
	}
	if ref == "latest" {
		if len(ids) == 0 {
			return "", fmt.Errorf("logs: no runs under %s", root)
		}
		return filepath.Join(root, ids[len(ids)-1]), nil
	}
	var matches []string
	for _, id := range ids {
		if id == ref {
			return filepath.Join(root, id), nil
		}
		if strings.HasPrefix(id, ref) || strings.HasSuffix(id, ref) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 1:
		return filepath.Join(root, matches[0]), nil
	case 0:
		if st, err := os.Stat(ref); err == nil && st.IsDir() {
			return "", fmt.Errorf("logs: %s is not a run directory: it has no %s (if it is a log root, pass --log-dir %s)", ref, EventsFile, shellQuote(ref))
		}
		return "", fmt.Errorf("logs: no run %q under %s (see `lllm runs --log-dir %s`)", ref, root, shellQuote(root))
	}
	return "", &AmbiguousError{Ref: ref, Root: root, IDs: matches}
}

// AmbiguousError is Open's error for a prefix or suffix of more than one
// run id.
type AmbiguousError struct {
	Ref  string   // the prefix or suffix given
	Root string   // the log root
	IDs  []string // the run ids it matches, at least two
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("logs: %q matches %d runs under %s (%s, ...): give more of the id", e.Ref, len(e.IDs), e.Root, strings.Join(e.IDs[:2], ", "))
}

// shellQuote quotes s for a command to paste into a shell, if it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runIDs lists the run directories under root in start order.
func runIDs(root string) ([]string, error) {
	ids, _, err := runDirs(root)
	return ids, err
}

// runDirs lists the run directories under root in start order, and the
// staging folders of runs being made (or whose process died first).
func runDirs(root string) (ids, staging []string, err error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("logs: %w", err)
	}
	for _, e := range entries {
		switch {
		case !e.IsDir():
		case strings.HasPrefix(e.Name(), stagingPrefix):
			staging = append(staging, e.Name())
		case !strings.HasPrefix(e.Name(), "."):
			if _, err := os.Stat(filepath.Join(root, e.Name(), EventsFile)); err == nil {
				ids = append(ids, e.Name())
			}
		}
	}
	slices.Sort(ids)
	return ids, staging, nil
}

// Summary describes a run from the first and last records of its log.
type Summary struct {
	ID      string
	Dir     string
	Start   *RunStart
	Started time.Time
	End     *RunEnd   // nil while running, or after a crash
	Ended   time.Time // zero when End is nil
	// Writing is whether a process still writes the log; false once it
	// ends, however it ends.
	Writing bool
	Err     error // why the log could not be read, if it could not
}

// Status is the run's final status; without a run_end, StatusRunning while
// a process still writes the log and StatusInterrupted once none does;
// StatusUnreadable when the log could not be read.
func (s Summary) Status() Status {
	switch {
	case s.Err != nil:
		return StatusUnreadable
	case s.End != nil:
		return s.End.Status
	case s.Writing:
		return StatusRunning
	}
	return StatusInterrupted
}

// Summary describes the run from the first and last records of its log,
// as List does.
func (r *Run) Summary() Summary { return summarize(r.ID, r.Dir) }

// Writing reports whether a process still writes the run's log: a Writer
// from Create holds a lock on it until it is closed or its process ends.
// Where the OS has no flock, it reports true for every log without a
// run_end.
func (r *Run) Writing() bool { return beingWritten(r.Path()) }

// beingWritten reports whether a Writer, in this process or another, holds
// the log at path open. Without file locks it cannot tell, and a log
// without a run_end is taken to be still running.
func beingWritten(path string) bool { return !flock.Supported || flock.Held(path) }

// List summarises every run under root (DefaultRoot if empty), oldest first.
// It reads only the first and last records of each log. A run whose log
// cannot be read is listed with Err set.
func List(root string) ([]Summary, error) { return ListFunc(root, nil) }

// ListFunc is List keeping only the runs for which keep returns true (all
// of them when keep is nil). keep sees each run as the first record of its
// log tells it: ID, Dir, Start and Started, or Err; End, Ended and Writing
// are not set yet, so its Status is not known. The last record is read
// only for the runs kept, so a filter on the run_start costs nothing more.
// Listing removes, with a log line each (slog's default logger), the
// staging folders of runs whose process ended before Create finished,
// which are never listed: see Create.
func ListFunc(root string, keep func(Summary) bool) ([]Summary, error) {
	if root == "" {
		root = DefaultRoot
	}
	ids, staging, err := runDirs(root)
	if err != nil {
		return nil, err
	}
	removeStaleStaging(root, staging, time.Now())
	out := make([]Summary, 0, len(ids))
	for _, id := range ids {
		s := summarizeStart(id, filepath.Join(root, id))
		if keep != nil && !keep(s) {
			continue
		}
		if s.Err == nil {
			s.summarizeEnd()
		}
		out = append(out, s)
	}
	return out, nil
}

func summarize(id, dir string) Summary {
	s := summarizeStart(id, dir)
	if s.Err == nil {
		s.summarizeEnd()
	}
	return s
}

// summarizeStart is the summary of a run from the first record of its log.
func summarizeStart(id, dir string) Summary {
	s := Summary{ID: id, Dir: dir}
	rd, err := OpenFile(filepath.Join(dir, EventsFile))
	if err != nil {
		s.Err = err
		return s
	}
	defer rd.Close()
	first, err := rd.Next()
	if err != nil {
		s.Err = err
		return s
	}
	s.Start, s.Started = first.RunStart, first.Time
	return s
}

// summarizeEnd completes a summary from summarizeStart with the last
// record of the log: its run_end, or whether a process still writes it.
func (s *Summary) summarizeEnd() {
	path := filepath.Join(s.Dir, EventsFile)
	if last, err := lastRecord(path); err == nil && last.Kind == KindRunEnd && last.RunEnd != nil {
		s.End, s.Ended = last.RunEnd, last.Time
	} else {
		s.Writing = beingWritten(path)
	}
}

// lastRecord decodes the last whole line of the file at path.
func lastRecord(path string) (*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// Read a growing window from the end until it holds a whole last line.
	size := st.Size()
	for window := int64(64 << 10); ; window *= 4 {
		off := max(size-window, 0)
		buf := make([]byte, size-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		buf = bytes.TrimRight(buf, "\n")
		i := bytes.LastIndexByte(buf, '\n')
		if i < 0 && off > 0 {
			continue
		}
		rec, err := decodeRecord(buf[i+1:])
		if err == nil || i < 0 {
			return rec, err
		}
		// A last line cut off by a crash: the record before it is the last.
		j := bytes.LastIndexByte(buf[:i], '\n')
		if j < 0 && off > 0 {
			continue
		}
		return decodeRecord(buf[j+1 : i])
	}
}

func decodeRecord(line []byte) (*Record, error) {
	rec := new(Record)
	if err := json.Unmarshal(line, rec); err != nil {
		return nil, err
	}
	return rec, nil
}
