package sweep

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lllm-go/lllm/internal/atomicfile"
)

// The files of a sweep directory.
const (
	// ManifestFile describes the sweep's current grid (rewritten whole, by
	// rename, on every run).
	ManifestFile = "sweep.json"
	// SamplesFile holds the finished samples of an unsharded run, one
	// JSON record per line, each appended in one write and fsynced before
	// the sample counts as done (samples finishing together share an
	// fsync).
	// Shards write samples.shard-I-of-N.jsonl; every samples*.jsonl is read.
	SamplesFile = "samples.jsonl"
	// RunsDir holds the run log of every sample.
	RunsDir = "runs"
)

// The labels of a sample's run log (run_start.labels), which lllm runs
// --label filters on: the sweep's name, the cell's hash, the row's id and
// the repeat (from 0).
const (
	LabelSweep  = "sweep"
	LabelCell   = "cell"
	LabelRow    = "row"
	LabelRepeat = "repeat"
)

// Record is one finished sample, as stored.
type Record struct {
	Cell     string `json:"cell"`
	Row      string `json:"row"`
	Repeat   int    `json:"repeat"`
	Settings Point  `json:"settings"`
	// Status is "ok" or "failed".
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Retry marks a failure of the provider (rate limit, server error,
	// timeout): a re-run of the sweep tries the sample again. Other
	// failures are final.
	Retry    bool   `json:"retry,omitempty"`
	Answer   string `json:"answer"`
	Expected string `json:"expected,omitempty"`
	// RowHash is a digest of the row's task and expected answer when the
	// sample ran: a row changed since is run again.
	RowHash     string             `json:"row_hash,omitempty"`
	Scores      map[string]float64 `json:"scores"`
	ScoreErrors map[string]string  `json:"score_errors,omitempty"`
	// ScorerSpecs maps each score to a digest of its scorer's type and
	// params, so that a scorer given other params scores again. Records
	// before it lack it, and their scores stand for the scorers' names.
	ScorerSpecs map[string]string `json:"scorer_specs,omitempty"`
	TokensIn    int               `json:"tokens_in"`
	TokensOut   int               `json:"tokens_out"`
	Cost        float64           `json:"cost"`
	LatencyMS   float64           `json:"latency_ms"`
	// Calls are the model calls the sample made, CacheHits the replies
	// the cache served it, and Spent* what the calls (not the hits) cost.
	Calls       int     `json:"calls"`
	CacheHits   int     `json:"cache_hits"`
	SpentUSD    float64 `json:"spent_usd"`
	SpentTokens int     `json:"spent_tokens"`
	// Rescored counts the times the sample was scored again from its run
	// log instead of being run again, because a scorer was added or its
	// params changed: 0 for a record a run made. A re-scored record is a
	// copy of the record it re-scored, with the new scores, a later
	// Finished, and the scorers' own calls and spending added to Calls,
	// CacheHits and Spent*.
	Rescored int `json:"rescored,omitempty"`
	// CarriedUSD and CarriedTokens are the part of SpentUSD and
	// SpentTokens that a re-scored record copies from the record it
	// re-scored, which counts them already: the budget counts them once.
	CarriedUSD    float64   `json:"carried_usd,omitempty"`
	CarriedTokens int       `json:"carried_tokens,omitempty"`
	RunID         string    `json:"run_id,omitempty"`
	RunDir        string    `json:"run_dir,omitempty"` // relative to the sweep directory
	Shard         string    `json:"shard,omitempty"`
	Finished      time.Time `json:"finished"`

	// RetriedRuns are the run ids of the sample's earlier tries, each of
	// which failed on the provider and was tried again (the spec's
	// retries): their logs stay under runs/, and what they spent is in
	// Spent*.
	RetriedRuns []string `json:"retried_runs,omitempty"`

	raw []byte
}

// Key identifies a sample: its cell, row and repeat.
func (r *Record) Key() string { return sampleKey(r.Cell, r.Row, r.Repeat) }

// LogDir is the folder of r's run log in the sweep directory dir: dir
// joined with r's run_dir, or "" when r names no run log. A run_dir that
// is not a folder of dir's runs/ (a hand-edited or corrupted samples
// file, which could name any folder of the machine) is an error, so that
// nothing outside the sweep directory is read or written through it.
func (r *Record) LogDir(dir string) (string, error) {
	if r.RunDir == "" {
		return "", nil
	}
	if !filepath.IsLocal(r.RunDir) || !strings.HasPrefix(filepath.ToSlash(filepath.Clean(r.RunDir)), RunsDir+"/") {
		return "", fmt.Errorf("sample %s (cell %s, repeat %d): run_dir %q is not a folder of %s/: correct or delete its line in the samples file", r.Row, r.Cell, r.Repeat, r.RunDir, RunsDir)
	}
	return filepath.Join(dir, r.RunDir), nil
}

func sampleKey(cell, row string, repeat int) string {
	return cell + "\x00" + row + "\x00" + strconv.Itoa(repeat)
}

// recordIndex indexes the finished samples of a sweep directory: for each
// sample, which of its records stands for it (see better) and what resume
// and a dry run need to know of that record. It holds no record itself: a
// sample costs about 100 bytes of index (its cell and row interned, its
// repeat, the standing record's status, finish time, hash and calls), and
// reports are aggregated by streaming the samples files past it (see
// EachRecord).
type recordIndex struct {
	mu      sync.Mutex
	cells   interner
	rows    interner
	byKey   map[recKey]recEntry
	spentU  float64
	spentT  int
	counted map[uint64]struct{} // the records counted in spentU and spentT, by hash
	runs    map[uint64]struct{} // the runs whose spending some record counts, by the hash of their id
	scorers interner            // scorer names, numbering the bits of recEntry.scorers
	gen     uint32              // the current pass of takes
}

// recKey is a sample: its interned cell and row, and its repeat.
type recKey struct{ cell, row, repeat int32 }

// recEntry is what recordIndex keeps of the record standing for a sample.
type recEntry struct {
	finished int64  // Finished, in Unix nanoseconds
	sum      uint64 // FNV-1a of the record's bytes: its identity, and the last tie-break
	calls    int32  // Calls + CacheHits
	ok       bool   // Status == "ok"
	retry    bool
	gen      uint32 // the pass of takes that last took it
	row      uint64 // RowHash, or 0
	scorers  uint64 // the scorers the record has a score of, as bits of recordIndex.scorers
	named    bool   // its scores are by name alone (no ScorerSpecs)
}

// done says whether the sample needs no further run.
func (e recEntry) done() bool { return e.ok || !e.retry }

// better says whether a should stand for its sample rather than b: a
// success over a failure, then the later (a sample runs again only when
// its row or scorers changed), then the smaller hash of its bytes, so that
// the choice does not depend on the order the records are read in.
func better(a, b recEntry) bool {
	if a.ok != b.ok {
		return a.ok
	}
	if a.finished != b.finished {
		return a.finished > b.finished
	}
	return a.sum < b.sum
}

// rowSum is a hash of row's task and expected answer, as RowHash holds
// it in hexadecimal.
func rowSum(row *Row) uint64 {
	if row.sum != 0 {
		return row.sum
	}
	h := fnv.New64a()
	h.Write([]byte(row.Task))
	h.Write([]byte{0})
	h.Write([]byte(row.Expected))
	return h.Sum64()
}

// entryOf is the index entry of r, whose raw bytes are set.
func entryOf(r *Record) recEntry {
	h := fnv.New64a()
	h.Write(r.raw)
	e := recEntry{sum: h.Sum64(), calls: int32(r.Calls + r.CacheHits), ok: r.Status == "ok", retry: r.Retry}
	if !r.Finished.IsZero() {
		e.finished = r.Finished.UnixNano()
	}
	e.row, _ = strconv.ParseUint(r.RowHash, 16, 64)
	return e
}

// interner numbers strings in the order it first sees them.
type interner struct {
	ids   map[string]int32
	names []string
}

func (in *interner) id(s string) int32 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	if in.ids == nil {
		in.ids = map[string]int32{}
	}
	id := int32(len(in.names))
	in.ids[s] = id
	in.names = append(in.names, s)
	return id
}

func newRecordIndex() *recordIndex { return &recordIndex{byKey: map[recKey]recEntry{}} }

// key interns the sample of r.
func (rs *recordIndex) key(cell, row string, repeat int) recKey {
	return recKey{rs.cells.id(cell), rs.rows.id(row), int32(repeat)}
}

// lookup returns the key of a sample, without interning: ok is false when
// the sample has no record.
func (rs *recordIndex) lookup(cell, row string, repeat int) (recKey, bool) {
	c, ok1 := rs.cells.ids[cell]
	r, ok2 := rs.rows.ids[row]
	return recKey{c, r, int32(repeat)}, ok1 && ok2
}

// add indexes r, whose raw bytes are set: it stands for its sample if it
// does so better than what is there.
func (rs *recordIndex) add(r *Record) {
	e := entryOf(r)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	// A record copied into two files (a merge into a shared directory)
	// spent once.
	if _, dup := rs.counted[e.sum]; !dup {
		if rs.counted == nil {
			rs.counted = map[uint64]struct{}{}
		}
		rs.counted[e.sum] = struct{}{}
		// A re-scored record carries its predecessor's spending, which
		// that record counts.
		rs.spentU += r.SpentUSD - r.CarriedUSD
		rs.spentT += r.SpentTokens - r.CarriedTokens
		rs.addRuns(r)
	}
	k := rs.key(r.Cell, r.Row, r.Repeat)
	if old, ok := rs.byKey[k]; ok && !better(e, old) {
		return
	}
	e.named = r.ScorerSpecs == nil
	for name := range r.Scores {
		if id := rs.scorers.id(scorerKey(name, r.ScorerSpecs[name])); id < 64 {
			e.scorers |= 1 << id
		}
	}
	rs.byKey[k] = e
}

// scorerKey names a scorer in recordIndex.scorers: by its column name and,
// when the record has it, the digest of its spec.
func scorerKey(name, spec string) string {
	if spec == "" {
		return name
	}
	return name + "\x00" + spec
}

// fresh says whether e, standing for a sample of row, was made for the row
// as it is (its RowHash matches, when it has one) and has a score of each
// of scorers (column name to spec digest), made with that spec when the
// record says: if not, the sample runs again.
func (rs *recordIndex) fresh(e recEntry, row *Row, scorers map[string]string) bool {
	if e.row != 0 && e.row != rowSum(row) {
		return false
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for name, spec := range scorers {
		if e.named {
			spec = ""
		}
		if id := rs.scorers.id(scorerKey(name, spec)); id < 64 && e.scorers&(1<<id) == 0 {
			return false
		}
	}
	return true
}

// keyOf is lookup, locked.
func (rs *recordIndex) keyOf(cell, row string, repeat int) (recKey, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.lookup(cell, row, repeat)
}

// get returns the entry of the record standing for a sample.
func (rs *recordIndex) get(cell, row string, repeat int) (recEntry, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	k, ok := rs.lookup(cell, row, repeat)
	if !ok {
		return recEntry{}, false
	}
	e, ok := rs.byKey[k]
	return e, ok
}

// spent is what every record read or added spent.
func (rs *recordIndex) spent() (float64, int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.spentU, rs.spentT
}

// newPass starts a pass of takes.
func (rs *recordIndex) newPass() {
	rs.mu.Lock()
	rs.gen++
	rs.mu.Unlock()
}

// takes says whether r, read from a samples file, is the record standing
// for its sample and was not taken before in this pass (a record copied
// into two files is taken once). The row's interned id comes with it.
func (rs *recordIndex) takes(r *Record) (row int32, ok bool) {
	e := entryOf(r)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	k, found := rs.lookup(r.Cell, r.Row, r.Repeat)
	if !found {
		return 0, false
	}
	cur, found := rs.byKey[k]
	if !found || cur.sum != e.sum || cur.finished != e.finished || cur.gen == rs.gen {
		return 0, false
	}
	cur.gen = rs.gen
	rs.byKey[k] = cur
	return k.row, true
}

// samplesFiles are the samples files of dir, sorted.
func samplesFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "samples*.jsonl"))
	sort.Strings(files)
	return files, err
}

// loadRecords indexes every samples*.jsonl file of dir. Lines that do not
// parse, such as a torn last line left by a crash, are skipped and
// reported as warnings.
func loadRecords(dir string) (*recordIndex, []string, error) {
	rs := newRecordIndex()
	warnings, err := rs.load(dir)
	if err != nil {
		return nil, warnings, err
	}
	return rs, warnings, nil
}

// load indexes the samples files of dir into rs.
func (rs *recordIndex) load(dir string) ([]string, error) {
	files, err := samplesFiles(dir)
	if err != nil {
		return nil, err
	}
	var warnings []string
	for _, f := range files {
		w, err := readRecords(f, rs.add)
		warnings = append(warnings, w...)
		if err != nil {
			return warnings, err
		}
	}
	return warnings, nil
}

// EachRecord calls fn with the record standing for each sample of the
// sweep directory dir, streaming its samples files: one record at a time
// is in memory, besides the index (loadRecords). The records come in the
// order of the files, not sorted. An error of fn stops it and is returned.
// The warnings are what reading skipped.
func EachRecord(dir string, fn func(*Record) error) ([]string, error) {
	rs, warnings, err := loadRecords(dir)
	if err != nil {
		return warnings, err
	}
	return warnings, rs.each([]string{dir}, func(r *Record, _ int32) error { return fn(r) })
}

// each streams the samples files of dirs and calls fn with each record
// standing for its sample (see takes), once.
func (rs *recordIndex) each(dirs []string, fn func(r *Record, row int32) error) error {
	rs.newPass()
	for _, d := range dirs {
		files, err := samplesFiles(d)
		if err != nil {
			return err
		}
		for _, f := range files {
			var ferr error
			_, err := readRecords(f, func(r *Record) {
				if ferr != nil {
					return
				}
				if row, ok := rs.takes(r); ok {
					ferr = fn(r, row)
				}
			})
			if err == nil {
				err = ferr
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func readRecords(path string, add func(*Record)) ([]string, error) {
	return readRecordsAt(path, func(r *Record, _ int64, _ int) { add(r) })
}

// readRecordsAt reads the records of the samples file at path, giving add
// each with the offset and length of its line in the file (see
// readRecordAt).
func readRecordsAt(path string, add func(r *Record, off int64, n int)) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var warnings []string
	br := bufio.NewReaderSize(f, 1<<20)
	var off int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		at := off
		off += int64(len(line))
		if len(bytes.TrimSpace(line)) > 0 {
			var r Record
			if jerr := json.Unmarshal(line, &r); jerr != nil || r.Cell == "" || r.Row == "" {
				if err == io.EOF {
					warnings = append(warnings, fmt.Sprintf("%s:%d: skipped a torn last line (a crash while it was written)", path, n))
				} else {
					warnings = append(warnings, fmt.Sprintf("%s:%d: skipped an unreadable record", path, n))
				}
			} else {
				r.raw = bytes.TrimSpace(line)
				add(&r, at, len(line))
			}
		}
		if err == io.EOF {
			return warnings, nil
		}
		if err != nil {
			return warnings, fmt.Errorf("reading %s: %w", path, err)
		}
	}
}

// store appends records to a samples file, each whole in one write, and
// returns from append only once the record is fsynced. Appends that arrive
// while an fsync is under way share the next one (a group commit): with
// many samples finishing at once, one fsync covers them all, and still no
// append returns before its record is on disk.
type store struct {
	f    *os.File
	path string
	at   string // path made absolute, as check checks it

	mu      sync.Mutex
	cond    sync.Cond // signalled when an fsync ends
	written int64     // records written to the file
	synced  int64     // records covered by a finished fsync
	syncing bool      // an fsync is under way
	syncs   int       // fsyncs done
	err     error     // the first failed write or fsync: every later append fails
}

func openStore(path string) (*store, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the samples file: %w", err)
	}
	// End a torn last line so that the next record starts on a line of
	// its own; the torn one is skipped on read.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		b := make([]byte, 1)
		if _, err := f.ReadAt(b, st.Size()-1); err == nil && b[0] != '\n' {
			if _, err := f.Write([]byte("\n")); err != nil {
				f.Close()
				return nil, fmt.Errorf("samples file: %w", err)
			}
		}
	}
	s := &store{f: f, path: path, at: atomicfile.Abs(path)}
	s.cond.L = &s.mu
	return s, nil
}

// append writes r and waits for an fsync that covers it: the one the
// first waiter starts for everyone written by then.
func (s *store) append(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	r.raw = b
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if _, err := s.f.Write(b); err != nil {
		s.err = fmt.Errorf("recording a sample: %w", err)
		return s.err
	}
	s.written++
	mine := s.written
	for s.synced < mine && s.err == nil {
		if s.syncing {
			s.cond.Wait()
			continue
		}
		// Lead an fsync for every record written so far.
		s.syncing = true
		upto := s.written
		s.mu.Unlock()
		err := s.f.Sync()
		s.mu.Lock()
		s.syncing = false
		s.syncs++
		if err != nil {
			s.err = fmt.Errorf("recording a sample: %w", err)
		} else {
			s.synced = upto
		}
		s.cond.Broadcast()
	}
	if s.synced >= mine {
		return nil
	}
	return s.err
}

func (s *store) close() error { return s.f.Close() }

// check reports a samples file deleted, or replaced, since it was opened:
// the records appended since went to a file no reader will find, and a
// sweep that finished must not say its samples are recorded. It costs one
// stat, once a run is over.
func (s *store) check() error {
	if !atomicfile.Gone(s.f, s.at) {
		return nil
	}
	s.mu.Lock()
	n := s.written
	s.mu.Unlock()
	return fmt.Errorf("the samples file %s was deleted or moved while the sweep ran: the %d samples it recorded are not in it (their run logs are in %s); run the sweep again to run them again", s.path, n, filepath.Join(filepath.Dir(s.path), RunsDir))
}

// Manifest describes a sweep's grid, for reports read from disk.
type Manifest struct {
	Name string `json:"name"`
	// Spec is the absolute path of the spec file last run on the
	// directory (as it was given, maybe relative, in manifests before
	// it was made absolute).
	Spec    string         `json:"spec,omitempty"`
	Tactic  string         `json:"tactic,omitempty"`
	Axes    []string       `json:"axes"`
	Cells   []ManifestCell `json:"cells"`
	Scorers []string       `json:"scorers"`
	PassK   []int          `json:"pass_k"`
	// PassScorer is the scorer of pass@k; empty (manifests before it)
	// means the first.
	PassScorer string `json:"pass_scorer,omitempty"`
	Rows       int    `json:"rows"`
	// Dataset is a digest of the rows (ids, tasks, expected answers).
	Dataset string `json:"dataset,omitempty"`
	Repeats int    `json:"repeats"`
	// RowSums maps each row's id to the hash of its task and expected
	// answer, as samples have it in row_hash, so that a report read from
	// disk counts the samples of the rows as they are now, not of rows
	// since removed or changed. Manifests before it lack it.
	RowSums map[string]string `json:"row_sums,omitempty"`
	// ScorerSpecs maps each scorer's column to the digest of its type and
	// params (as samples have them in scorer_specs). Manifests before it
	// lack it.
	ScorerSpecs map[string]string `json:"scorer_specs,omitempty"`
}

// rowSums is the Manifest's RowSums of rows.
func rowSums(rows []Row) map[string]string {
	sums := make(map[string]string, len(rows))
	for i := range rows {
		sums[rows[i].ID] = strconv.FormatUint(rowSum(&rows[i]), 16)
	}
	return sums
}

// Counts reports whether a report of the sweep m describes counts r (see
// LoadReport): whether r is a sample of the sweep as its last run left it,
// of one of its rows as the row is now (when m lists them), within its
// repeats, and scored by every one of its scorers, with their params (when
// both say). Records of rows since changed or removed, of repeats past the
// spec's, or lacking a current scorer's score do not count. It says
// nothing of r's cell: LoadReport shows every cell the directory has
// records of, those that have left the grid included.
func (m *Manifest) Counts(r *Record) bool {
	if m.RowSums != nil {
		sum, ok := m.RowSums[r.Row]
		if !ok || r.RowHash != "" && r.RowHash != sum {
			return false
		}
	}
	if m.Repeats > 0 && r.Repeat >= m.Repeats {
		return false
	}
	for _, name := range m.Scorers {
		if _, ok := r.Scores[name]; !ok {
			return false
		}
		if spec, ok := r.ScorerSpecs[name]; ok && m.ScorerSpecs != nil && spec != m.ScorerSpecs[name] {
			return false // scored with other params
		}
	}
	return true
}

// datasetDigest is the Manifest's Dataset of rows.
func datasetDigest(rows []Row) string {
	h := sha256.New()
	for _, r := range rows {
		fmt.Fprintf(h, "%q %q %q\n", r.ID, r.Task, r.Expected)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// ManifestCell is one cell of a Manifest.
type ManifestCell struct {
	Hash     string `json:"hash"`
	Settings Point  `json:"settings"`
}

// ReadManifest reads the manifest of the sweep directory dir.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s is not a sweep directory: it has no %s (run 'lllm sweep SPEC.yaml' first)", dir, ManifestFile)
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}

func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n')); err != nil {
		return fmt.Errorf("writing the sweep manifest: %w", err)
	}
	return nil
}
