package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"
)

// The files of a sweep directory.
const (
	// ManifestFile describes the sweep's current grid (rewritten whole, by
	// rename, on every run).
	ManifestFile = "sweep.json"
	// SamplesFile holds the finished samples of an unsharded run, one
	// JSON record per line, appended and fsynced one record at a time.
	// Shards write samples.shard-I-of-N.jsonl; every samples*.jsonl is read.
	SamplesFile = "samples.jsonl"
	// RunsDir holds the run log of every sample.
	RunsDir = "runs"
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
	Retry       bool               `json:"retry,omitempty"`
	Answer      string             `json:"answer"`
	Expected    string             `json:"expected,omitempty"`
	Scores      map[string]float64 `json:"scores"`
	ScoreErrors map[string]string  `json:"score_errors,omitempty"`
	TokensIn    int                `json:"tokens_in"`
	TokensOut   int                `json:"tokens_out"`
	Cost        float64            `json:"cost"`
	LatencyMS   float64            `json:"latency_ms"`
	// Calls are the model calls the sample made, CacheHits the replies
	// the cache served it, and Spent* what the calls (not the hits) cost.
	Calls       int       `json:"calls"`
	CacheHits   int       `json:"cache_hits"`
	SpentUSD    float64   `json:"spent_usd"`
	SpentTokens int       `json:"spent_tokens"`
	RunID       string    `json:"run_id,omitempty"`
	RunDir      string    `json:"run_dir,omitempty"` // relative to the sweep directory
	Shard       string    `json:"shard,omitempty"`
	Finished    time.Time `json:"finished"`

	raw []byte
}

// Key identifies a sample: its cell, row and repeat.
func (r *Record) Key() string { return sampleKey(r.Cell, r.Row, r.Repeat) }

func sampleKey(cell, row string, repeat int) string {
	return cell + "\x00" + row + "\x00" + strconv.Itoa(repeat)
}

// done says whether the sample needs no further run.
func (r *Record) done() bool { return r.Status == "ok" || !r.Retry }

// better says whether a should stand for its sample rather than b: a
// success over a failure, then the earlier, then by bytes, so that the
// choice does not depend on the order the records are read in.
func better(a, b *Record) bool {
	if (a.Status == "ok") != (b.Status == "ok") {
		return a.Status == "ok"
	}
	if !a.Finished.Equal(b.Finished) {
		return a.Finished.Before(b.Finished)
	}
	return bytes.Compare(a.raw, b.raw) < 0
}

// Records is the set of finished samples of a sweep directory: for each
// sample, the record that stands for it.
type Records struct {
	mu     sync.Mutex
	byKey  map[string]*Record
	spentU float64
	spentT int
}

func newRecords() *Records { return &Records{byKey: map[string]*Record{}} }

// add keeps r if it stands for its sample better than what is there.
func (rs *Records) add(r *Record) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.spentU += r.SpentUSD
	rs.spentT += r.SpentTokens
	if old, ok := rs.byKey[r.Key()]; ok && !better(r, old) {
		return
	}
	rs.byKey[r.Key()] = r
}

// Get returns the record standing for a sample.
func (rs *Records) Get(cell, row string, repeat int) (*Record, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.byKey[sampleKey(cell, row, repeat)]
	return r, ok
}

// All returns every standing record, sorted by cell, row and repeat.
func (rs *Records) All() []*Record {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]*Record, 0, len(rs.byKey))
	for _, r := range rs.byKey {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Len is the number of samples with a record.
func (rs *Records) Len() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.byKey)
}

// spent is what every record read or added spent.
func (rs *Records) spent() (float64, int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.spentU, rs.spentT
}

// LoadRecords reads every samples*.jsonl file of dir. Lines that do not
// parse, such as a torn last line left by a crash, are skipped and
// reported as warnings.
func LoadRecords(dir string) (*Records, []string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "samples*.jsonl"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(files)
	rs := newRecords()
	var warnings []string
	for _, f := range files {
		w, err := readRecords(f, rs.add)
		warnings = append(warnings, w...)
		if err != nil {
			return nil, warnings, err
		}
	}
	return rs, warnings, nil
}

func readRecords(path string, add func(*Record)) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var warnings []string
	br := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
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
				add(&r)
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

// store appends records to a samples file, each whole in one write and
// fsynced before append returns.
type store struct {
	mu sync.Mutex
	f  *os.File
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
	return &store{f: f}, nil
}

func (s *store) append(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	r.raw = b
	b = append(b, '\n')
	s.mu.Lock()
	_, err = s.f.Write(b)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("recording a sample: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("recording a sample: %w", err)
	}
	return nil
}

func (s *store) close() error { return s.f.Close() }

// Manifest describes a sweep's grid, for reports read from disk.
type Manifest struct {
	Name    string         `json:"name"`
	Spec    string         `json:"spec,omitempty"`
	Tactic  string         `json:"tactic,omitempty"`
	Axes    []string       `json:"axes"`
	Cells   []ManifestCell `json:"cells"`
	Scorers []string       `json:"scorers"`
	PassK   []int          `json:"pass_k"`
	Rows    int            `json:"rows"`
	Repeats int            `json:"repeats"`
}

// ManifestCell is one cell of a Manifest.
type ManifestCell struct {
	Hash     string `json:"hash"`
	Settings Point  `json:"settings"`
}

// writeFileAtomic writes data to path through a temporary file and a
// rename, so that readers see the old content or the new, never a part.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
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
		os.Remove(tmp.Name())
	}
	return err
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
	if err := writeFileAtomic(filepath.Join(dir, ManifestFile), append(b, '\n')); err != nil {
		return fmt.Errorf("writing the sweep manifest: %w", err)
	}
	return nil
}
