package sweep

import (
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
)

// runSum names a run in recordIndex.runs.
func runSum(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// addRuns notes the runs whose spending r counts: its run and its earlier
// tries. Under rs.mu.
func (rs *recordIndex) addRuns(r *Record) {
	id := r.RunID
	if id == "" && r.RunDir != "" {
		id = filepath.Base(r.RunDir)
	}
	if id == "" && len(r.RetriedRuns) == 0 {
		return
	}
	if rs.runs == nil {
		rs.runs = map[uint64]struct{}{}
	}
	if id != "" {
		rs.runs[runSum(id)] = struct{}{}
	}
	for _, id := range r.RetriedRuns {
		rs.runs[runSum(id)] = struct{}{}
	}
}

// unrecordedSpending is what the runs under the sweep's runs/ that no
// record counts spent: the samples a crash (kill -9) or a stop left
// unfinished, and the earlier tries of such a sample. It is the usd and
// the input and output tokens of their model_call records, read from
// their logs; only those logs are read. A cache hit in them counts too (a
// log does not tell it from a fresh call), so the sum errs high, never low.
func (s *Sweep) unrecordedSpending() (usd float64, tokens int) {
	root := filepath.Join(s.Dir, RunsDir)
	d, err := os.Open(root)
	if err != nil {
		return 0, 0
	}
	defer d.Close()
	var lost []string
	for {
		// In batches, unsorted: a sweep of 100k samples has as many runs.
		entries, err := d.ReadDir(4096)
		s.records.mu.Lock()
		for _, e := range entries {
			// A staging folder (".tmp-ID") is a run whose log was never
			// renamed into place: it made no call.
			if _, ok := s.records.runs[runSum(e.Name())]; !ok && e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				lost = append(lost, e.Name())
			}
		}
		s.records.mu.Unlock()
		if err != nil { // io.EOF after the last batch
			break
		}
	}
	for _, id := range lost {
		u, t := loggedSpending(filepath.Join(root, id, logs.EventsFile))
		usd, tokens = usd+u, tokens+t
	}
	return usd, tokens
}

// loggedSpending sums the model calls of the log at path, as far as it
// can be read: a log cut short by a crash counts what it holds. A
// replay's log counts nothing: its calls were served from the recording
// (which holds what they cost when recorded), and lllm replay writes it
// beside the run it replayed, into the sweep's runs/.
func loggedSpending(path string) (usd float64, tokens int) {
	r, err := logs.OpenFile(path)
	if err != nil {
		return 0, 0
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if err != nil { // io.EOF, or a line that does not parse
			return usd, tokens
		}
		if st := rec.RunStart; st != nil && st.Labels[replay.LabelReplayOf] != "" {
			return 0, 0
		}
		if mc := rec.ModelCall; mc != nil {
			usd += mc.USD
			tokens += mc.Usage.InputTokens + mc.Usage.OutputTokens
		}
	}
}
