package logs

import (
	"bufio"
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
	"unicode"

	jsonv2 "github.com/go-json-experiment/json"

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
		return nil, nil, fmt.Errorf("logs: creating the log root %s: %w: choose a writable log dir (--log-dir or log_dir)", root, err)
	}
	removeStaleStagingOnce(root)
	var suffix [3]byte
	_, _ = rand.Read(suffix[:])
	id := time.Now().UTC().Format(idTimeLayout) + "-" + hex.EncodeToString(suffix[:])
	tmp := filepath.Join(root, stagingPrefix+id)
	dir := filepath.Join(root, id)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, nil, stagingError(root, err)
	}
	f, err := os.OpenFile(filepath.Join(tmp, EventsFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, nil, stagingError(root, err)
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
	w.at = atomicfile.Abs(w.name)
	w.setOptions(opts)
	return w, &Run{ID: id, Dir: dir, Start: &start}, nil
}

// stagingError is Create's error when it cannot make a run's staging
// folder under root, or its log: the folder's name, which the user never
// sees otherwise, is left out of the message but not out of the chain.
func stagingError(root string, err error) error {
	cause := err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		cause = pe.Err
	}
	return fmt.Errorf("logs: creating a run under the log root %s: %w: choose a writable log dir (--log-dir or log_dir)", root,
		&causeError{err: err, msg: cause.Error()})
}

// causeError is err, whose message is msg.
type causeError struct {
	err error
	msg string
}

func (e *causeError) Error() string { return e.msg }
func (e *causeError) Unwrap() error { return e.err }

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

// ModelCalls returns the run's model_call records in log order, each with
// its ModelCall set, and the reader's warnings (such as a skipped torn
// last line). A record's Dialog is the working copy the request was sent
// from; its ModelCall.Reply, when set, points at the reply. On an error
// (a corrupt line, or ctx done) it returns the calls read before it.
func (r *Run) ModelCalls(ctx context.Context) ([]*Record, []string, error) {
	rd, err := r.Reader()
	if err != nil {
		return nil, nil, err
	}
	defer rd.Close()
	var calls []*Record
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return calls, rd.Warnings(), err
			}
		}
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return calls, rd.Warnings(), nil
		}
		if err != nil {
			return calls, rd.Warnings(), err
		}
		if rec.Kind == KindModelCall {
			calls = append(calls, rec)
		}
	}
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
		if dir := inSweep(root, ref); dir != "" {
			return "", fmt.Errorf("logs: no run %q under %s, but a sweep's run %s is there: pass --log-dir %s, or the run's directory", ref, root, dir, shellQuote(filepath.Dir(dir)))
		}
		return "", fmt.Errorf("logs: no run %q under %s (see `lllm runs --log-dir %s`)", ref, root, shellQuote(root))
	}
	return "", &AmbiguousError{Ref: ref, Root: root, IDs: matches}
}

// inSweep is the directory of the one run that ref names among the run
// logs of the sweeps under root (ROOT/sweeps/NAME/runs, where lllm sweep
// writes them), or "" when none or several does. Only a reference no run
// of root matched looks there.
func inSweep(root, ref string) string {
	sweeps, _ := filepath.Glob(filepath.Join(root, "sweeps", "*", "runs"))
	found := ""
	for _, dir := range sweeps {
		ids, err := runIDs(dir)
		if err != nil {
			continue
		}
		for _, id := range ids {
			if id == ref || strings.HasPrefix(id, ref) || strings.HasSuffix(id, ref) {
				if found != "" {
					return ""
				}
				found = filepath.Join(dir, id)
			}
		}
	}
	return found
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
	runs, _, err := runDirs(root)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.id
	}
	return ids, nil
}

// runDir is a run directory under a log root.
type runDir struct {
	id  string
	log fs.FileInfo // its log's, from os.Lstat
}

// runDirs lists the run directories under root in start order, and the
// staging folders of runs being made (or whose process died first). A run
// directory is one whose log exists, following a symbolic link.
func runDirs(root string) (runs []runDir, staging []string, err error) {
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
			path := filepath.Join(root, e.Name(), EventsFile)
			st, err := os.Lstat(path)
			if err != nil {
				continue
			}
			if !st.Mode().IsRegular() {
				if _, err := os.Stat(path); err != nil {
					continue
				}
			}
			runs = append(runs, runDir{id: e.Name(), log: st})
		}
	}
	slices.SortFunc(runs, func(a, b runDir) int { return strings.Compare(a.id, b.id) })
	return runs, staging, nil
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

// Run is the run s describes, as Open would give it, without reading its
// log again: its Forest, Reader and Summary read the log. Its Start is
// s.Start: nil when Err is set, and trimmed if a ListFunc keep trimmed it.
func (s Summary) Run() *Run { return &Run{ID: s.ID, Dir: s.Dir, Start: s.Start} }

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
func (r *Run) Summary() Summary {
	z := newSummarizer()
	lg, s := z.start(r.ID, r.Dir)
	defer lg.close()
	if s.Err == nil {
		s.complete(z.ending(lg))
	}
	return s
}

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
// It reads only the first and last records of each log, several logs at
// once. A run whose log cannot be read is listed with Err set: among
// others, one whose last line is whole (it ends in a newline) but is not
// a record, as Reader refuses it; a last line without its newline is one
// the run was writing when it stopped, and is skipped.
func List(root string) ([]Summary, error) { return ListWith(root, ListOptions{}) }

// ListFunc is List keeping only the runs for which keep returns true (all
// of them when keep is nil). keep sees each run as the first record of its
// log tells it: ID, Dir, Start and Started, or Err; End, Ended and Writing
// are not set yet, so its Status is not known. It is called on the
// caller's goroutine, in the order of the list. The last record is read
// only for the runs kept, so a filter on the run_start costs nothing more.
// Each summary, its Start included, is the caller's: keep may trim what it
// will not use, so that a listing of many runs holds less. Listing
// removes, with a log line each (slog's default logger), the staging
// folders of runs whose process ended before Create finished, which are
// never listed: see Create.
func ListFunc(root string, keep func(Summary) bool) ([]Summary, error) {
	return ListWith(root, ListOptions{Keep: keep})
}

// ListOptions are the options of ListWith. The zero value lists every run,
// as List does.
type ListOptions struct {
	// Keep, when set, is ListFunc's keep.
	Keep func(Summary) bool
	// Known, when set, is asked about each run before its log is read,
	// with the run's id and directory and its log's FileInfo from
	// os.Lstat (a symbolic link is not followed). When it returns true,
	// the summary it returns is listed as it is, Keep does not see it,
	// and the log is not read: a caller that remembers the summaries of
	// finished runs, which never change, by the size and modification
	// time of their logs lists them for the cost of a stat each. It may
	// be called from several goroutines at once.
	Known func(id, dir string, log fs.FileInfo) (Summary, bool)
}

// ListWith is List with options: see ListOptions.
func ListWith(root string, opts ListOptions) ([]Summary, error) {
	if root == "" {
		root = DefaultRoot
	}
	runs, staging, err := runDirs(root)
	if err != nil {
		return nil, err
	}
	removeStaleStaging(root, staging, time.Now())
	l := &lister{root: root, runs: runs, opts: opts}
	return l.list(), nil
}

// listWorkers is how many logs a listing reads at once: reading them is
// system calls, and waits on a cold cache or a network file system.
func listWorkers() int { return min(max(runtime.GOMAXPROCS(0), 4), 16) }

// A lister fills sums[i] with the summary of runs[i], from several
// goroutines, each with a summarizer of its own: worker k of n reads runs
// k, k+n, k+2n, ... in turn. With a Keep, each worker tells the caller
// when a run's first record is read (on heads[k]) and waits for keep's
// answer (on keeps[k]) before it reads the end of its log, for a run kept
// only; the caller takes run i's from worker i%n, so that it calls keep
// in the order of the list.
type lister struct {
	root string
	runs []runDir
	opts ListOptions
	sums []Summary
	// heads[k] says, for each run of worker k, whether Known answered
	// for it; keeps[k] is keep's answer. Both are nil without a Keep.
	heads, keeps []chan bool
	done         chan struct{} // closed when the caller stops listening
}

func (l *lister) list() []Summary {
	n := min(len(l.runs), listWorkers())
	l.sums = make([]Summary, len(l.runs))
	l.done = make(chan struct{})
	defer close(l.done) // stops the workers if keep panics
	if l.opts.Keep != nil {
		l.heads, l.keeps = make([]chan bool, n), make([]chan bool, n)
		for k := range n {
			l.heads[k], l.keeps[k] = make(chan bool, 4), make(chan bool, 1)
		}
	}
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() { l.work(k, n) })
	}
	if l.opts.Keep == nil {
		wg.Wait()
		return l.sums
	}
	dropped := make([]bool, len(l.runs))
	for i := range l.runs {
		k := i % n
		if known := <-l.heads[k]; known {
			continue
		}
		kept := l.opts.Keep(l.sums[i])
		if !kept {
			l.sums[i], dropped[i] = Summary{}, true // not held while the rest is read
		}
		l.keeps[k] <- kept
	}
	wg.Wait()
	out := l.sums[:0]
	for i, s := range l.sums {
		if !dropped[i] {
			out = append(out, s)
		}
	}
	clear(l.sums[len(out):])
	return out
}

// work is worker k of n: see lister.
func (l *lister) work(k, n int) {
	z := newSummarizer()
	for i := k; i < len(l.runs); i += n {
		if !l.read(z, k, i) {
			return
		}
	}
}

// read summarises run i for worker k into l.sums[i]; it returns false
// when the listing is over.
func (l *lister) read(z *summarizer, k, i int) bool {
	r := l.runs[i]
	dir := filepath.Join(l.root, r.id)
	if l.opts.Known != nil {
		if s, ok := l.opts.Known(r.id, dir, r.log); ok {
			l.sums[i] = s
			return l.tell(k, true)
		}
	}
	lg, s := z.start(r.id, dir)
	defer lg.close()
	l.sums[i] = s
	if l.keeps != nil {
		if !l.tell(k, false) {
			return false
		}
		select {
		case kept := <-l.keeps[k]:
			if !kept {
				return true
			}
		case <-l.done:
			return false
		}
	}
	if s.Err == nil {
		l.sums[i].complete(z.ending(lg))
	}
	return true
}

// tell tells the caller, when it calls keep, that worker k's next run is
// read, and whether Known answered for it; it returns false when the
// listing is over.
func (l *lister) tell(k int, known bool) bool {
	if l.heads == nil {
		return true
	}
	select {
	case l.heads[k] <- known:
		return true
	case <-l.done:
		return false
	}
}

// ending is what the end of a log says of its run.
type ending struct {
	end     *RunEnd
	ended   time.Time
	writing bool
	err     error // why the end cannot be read
}

// complete sets what the end of the log says in s, a summary from its
// first record.
func (s *Summary) complete(e ending) {
	switch {
	case s.Err != nil:
	case e.err != nil:
		s.Err = e.err
	default:
		s.End, s.Ended, s.Writing = e.end, e.ended, e.writing
	}
}

// tailWindow is how much of the end of a log is read first for its last
// record: a run_end line is a few hundred bytes, unless its result is
// large.
const tailWindow = 8 << 10

// A summarizer reads the first and last records of logs, keeping its
// buffers from one log to the next.
type summarizer struct {
	br   *bufio.Reader
	file countingReader // what br reads
	tail []byte
}

// maxHead bounds the buffer a summarizer keeps for first lines.
const maxHead = 4 << 20

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func newSummarizer() *summarizer {
	return &summarizer{br: bufio.NewReaderSize(nil, 16<<10)}
}

// openLog is a log a summarizer read the first record of.
type openLog struct {
	f       *os.File
	path    string
	version string // of its format
	minor   int
}

func (lg *openLog) close() {
	if lg != nil {
		lg.f.Close()
	}
}

// start summarises the run id in dir from the first record of its log.
// The log stays open for ending (nil if it could not be read, s.Err says
// why): close it.
func (z *summarizer) start(id, dir string) (*openLog, Summary) {
	s := Summary{ID: id, Dir: dir}
	path := filepath.Join(dir, EventsFile)
	f, err := os.Open(path)
	if err != nil {
		s.Err = fmt.Errorf("logs: %w", err)
		return nil, s
	}
	z.file = countingReader{r: f}
	z.br.Reset(&z.file)
	rd := &Reader{br: z.br, name: path}
	first, err := rd.Next()
	z.br.Reset(nil)
	if err != nil {
		f.Close()
		s.Err = err
		return nil, s
	}
	// A first line longer than the buffer is read in pieces and gathered:
	// runs listed together tend to have alike run_starts, so make room for
	// the next one in one piece.
	if n := z.file.n - int64(z.br.Buffered()); n > int64(z.br.Size()) && n <= maxHead {
		z.br = bufio.NewReaderSize(nil, int(n+n/4))
	}
	s.Start, s.Started = first.RunStart, first.Time
	return &openLog{f: f, path: path, version: rd.start.Version, minor: rd.minor}, s
}

// ending reads the last record of lg and, when it is not a run_end,
// whether a process still writes the log.
func (z *summarizer) ending(lg *openLog) ending {
	last, err := z.lastRecord(lg)
	switch {
	case err != nil:
		return ending{err: err}
	case last != nil && last.Kind == KindRunEnd:
		return ending{end: last.RunEnd, ended: last.Time}
	case beingWritten(lg.path):
		return ending{writing: true}
	}
	// The run may have ended, and let go of its log, since its last
	// record was read.
	if last, err := z.lastRecord(lg); err == nil && last != nil && last.Kind == KindRunEnd {
		return ending{end: last.RunEnd, ended: last.Time}
	}
	return ending{}
}

// lastRecord decodes the last record of lg, reading only as much of its
// end as its last line needs: tailWindow bytes first, four times more
// each time the line starts before them. It returns nil for a log of
// blank lines, or whose last record is of a kind from a newer minor
// version, which Reader skips too.
func (z *summarizer) lastRecord(lg *openLog) (*Record, error) {
	st, err := lg.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	size := st.Size()
	for window := int64(tailWindow); ; window *= 4 {
		off := max(size-window, 0)
		if n := int(size - off); cap(z.tail) < n {
			z.tail = make([]byte, n)
		}
		n, err := lg.f.ReadAt(z.tail[:size-off], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, &FormatError{Name: lg.path, Msg: "reading its end", Err: err}
		}
		if rec, whole, err := z.lastIn(lg, z.tail[:n], off); whole {
			return rec, err
		}
	}
}

// lastIn decodes the last record of buf, the end of lg from byte off,
// checking it as Reader does: a last line without its newline that is
// not a record is one the run stopped while writing, and the record
// before it is the last; a whole line that is not one is a *FormatError
// at its line. whole is false when the line starts before buf.
func (z *summarizer) lastIn(lg *openLog, buf []byte, off int64) (rec *Record, whole bool, err error) {
	end := len(buf)
	for torn := false; ; torn = true {
		// The last line before end that is not blank, and whether its
		// newline ends it.
		end = len(bytes.TrimRightFunc(buf[:end], unicode.IsSpace))
		ended := bytes.IndexByte(buf[end:], '\n') >= 0
		i := bytes.LastIndexByte(buf[:end], '\n')
		switch {
		case i < 0 && off > 0:
			return nil, false, nil
		case end == 0:
			return nil, true, nil // nothing but blank lines
		}
		rec, msg, err := checkLast(buf[i+1:end], lg.version, lg.minor)
		switch {
		case msg == "":
			return rec, true, nil
		case torn || ended || i < 0:
			return nil, true, &FormatError{Name: lg.path, Line: z.lineAt(lg.f, buf, off, i+1), Msg: msg, Err: err}
		}
		end = i // a torn last line: the record before it is the last
	}
}

// checkLast decodes line, a record of a log of the given format version,
// and checks it as Reader does; msg says what is wrong, if anything.
func checkLast(line []byte, version string, minor int) (rec *Record, msg string, err error) {
	rec = new(Record)
	if err := jsonv2.Unmarshal(line, rec, readOptions); err != nil {
		return nil, "corrupt record", err
	}
	switch {
	case !rec.Kind.known() && minor > VersionMinor:
		return nil, "", nil
	case !rec.Kind.known():
		return nil, fmt.Sprintf("unknown record kind %q in a version %s log", rec.Kind, version), nil
	case !rec.hasPayload():
		return nil, fmt.Sprintf("%s record without its %q payload", rec.Kind, rec.Kind), nil
	}
	return rec, "", nil
}

// lineAt returns the 1-based line of the log f that starts at byte at of
// buf, which holds the file from byte off: the newlines before it, and 1.
// It reads the file up to off, which only an error about a line needs.
func (z *summarizer) lineAt(f *os.File, buf []byte, off int64, at int) int {
	lines := 1 + bytes.Count(buf[:at], []byte{'\n'})
	chunk := make([]byte, min(off, 256<<10))
	for pos := int64(0); pos < off; {
		n, err := f.ReadAt(chunk[:min(int64(len(chunk)), off-pos)], pos)
		lines += bytes.Count(chunk[:n], []byte{'\n'})
		pos += int64(n)
		if err != nil {
			break
		}
	}
	return lines
}
