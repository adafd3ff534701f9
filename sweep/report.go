package sweep

import (
	"bytes"
	"container/heap"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/lllm-go/lllm/dialog"
)

// Report is a sweep's results: one entry per cell, aggregated over its
// finished samples.
type Report struct {
	Name    string   `json:"name"`
	Dir     string   `json:"dir"`
	Axes    []string `json:"axes"`
	Scorers []string `json:"scorers"`
	PassK   []int    `json:"pass_k"`
	// PassScorer is the scorer whose score of 1 makes a sample pass, for
	// pass@k.
	PassScorer string `json:"pass_scorer,omitempty"`
	// Baseline is the hash of the cell the others are compared with, set
	// by [Report.Compare]; each other cell's VsBaseline has the paired
	// differences.
	Baseline string       `json:"baseline,omitempty"`
	Cells    []CellReport `json:"cells"`
	// Calls are the model calls this invocation made (0 for a report read
	// from disk, and for a sweep that had nothing left to run); CacheHits
	// the replies its cache served; Ran the samples it ran and recorded.
	Calls     int `json:"calls"`
	CacheHits int `json:"cache_hits"`
	Ran       int `json:"ran"`
	// Rescored are the samples this invocation scored again from their
	// run logs instead of running them, because a scorer was added or its
	// params changed (their model calls are the scorers' own, such as a
	// judge's). Reran are the samples of Ran that were to be re-scored
	// but whose run log could not give their result (unreadable, or
	// without a run_end). RescoreFailed are the samples whose re-scoring
	// failed on a scorer's model call (RescoreError says the first such
	// error): their earlier records stand, and the next run scores them
	// again.
	Rescored      int    `json:"rescored"`
	Reran         int    `json:"reran,omitempty"`
	RescoreFailed int    `json:"rescore_failed,omitempty"`
	RescoreError  string `json:"rescore_error,omitempty"`
	// Samples is the number of samples of the grid; Done of them are
	// final (as a dry run counts them: a success, or a failure of the
	// sample's own); ToRetry failed on the provider, count in the table as
	// errors, and run again in the next run.
	Samples int `json:"samples"`
	Done    int `json:"done"`
	ToRetry int `json:"to_retry"`
	// Stopped says why a run stopped early, if it did.
	Stopped string `json:"stopped,omitempty"`
}

// CellReport aggregates one cell's samples.
type CellReport struct {
	Hash     string         `json:"hash"`
	Settings map[string]any `json:"settings"`
	settings Point
	// N is the number of finished samples, Expected the cell's rows times
	// repeats, Errors the finished samples that failed (scored 0), and
	// ToRetry those of them that failed on the provider, which the next
	// run runs again.
	N        int `json:"n"`
	Expected int `json:"expected"`
	Errors   int `json:"errors"`
	ToRetry  int `json:"to_retry"`
	// Scores are the mean and standard error of each scorer over the
	// cell's finished samples.
	Scores []ScoreStat `json:"scores"`
	// PassAtK is the unbiased pass@k of the report's PassScorer (a
	// sample passes with a score of 1), averaged over rows with at least k samples;
	// keyed by k. A k no row has enough samples for is left out.
	PassAtK map[string]float64 `json:"pass_at_k"`
	// Cost is what the cell's samples cost, as their run logs count it
	// (cache hits included): their input and output tokens and dollars,
	// in the run log's cost object.
	Cost dialog.Cost `json:"cost"`
	// P50MS and P95MS are the median and 95th percentile of the samples'
	// latencies, in milliseconds.
	P50MS float64 `json:"latency_p50_ms"`
	P95MS float64 `json:"latency_p95_ms"`
	// VsBaseline compares the cell with the report's Baseline, by scorer
	// name (see [Report.Compare]). It is nil for the baseline itself and
	// before Compare.
	VsBaseline map[string]Comparison `json:"vs_baseline,omitempty"`
	// rows are the cell's samples of each dataset row it has finished
	// samples of, by the report's row ids: what Compare pairs.
	rows map[int32]*rowAgg
}

// MarshalJSON encodes c with its fields' names. A cell with no finished
// sample has nothing to average: the mean and standard error of each
// scorer and the latencies are null rather than 0, which would read as
// results.
func (c CellReport) MarshalJSON() ([]byte, error) {
	type plain CellReport // c's fields, without this method
	type scoreJSON struct {
		Name     string   `json:"name"`
		Mean     *float64 `json:"mean"`
		StdErr   *float64 `json:"stderr"`
		Unscored int      `json:"unscored,omitempty"`
		Error    string   `json:"unscored_error,omitempty"`
	}
	out := struct {
		plain
		Scores []scoreJSON `json:"scores"`
		P50MS  *float64    `json:"latency_p50_ms"`
		P95MS  *float64    `json:"latency_p95_ms"`
	}{plain: plain(c)}
	finished := func(v float64) *float64 {
		if c.N == 0 {
			return nil
		}
		return &v
	}
	for _, s := range c.Scores {
		se := finished(s.StdErr)
		if c.N < 2 {
			se = nil // one sample has no spread to estimate
		}
		out.Scores = append(out.Scores, scoreJSON{Name: s.Name, Mean: finished(s.Mean), StdErr: se, Unscored: s.Unscored, Error: s.UnscoredError})
	}
	out.P50MS, out.P95MS = finished(c.P50MS), finished(c.P95MS)
	return json.Marshal(out)
}

// ScoreStat is one scorer's aggregate over a cell. In JSON, Mean and
// StdErr are null for a cell with no finished sample (see
// [CellReport.MarshalJSON]).
type ScoreStat struct {
	Name   string  `json:"name"`
	Mean   float64 `json:"mean"`
	StdErr float64 `json:"stderr"`
	// Unscored counts the cell's samples whose run succeeded but that the
	// scorer could not score (a judge's reply with no verdict, say): each
	// scores 0 on it, and its record's score_errors says why.
	Unscored int `json:"unscored,omitempty"`
	// UnscoredError is why the scorer could not score one of them (its
	// score_errors text), the same whatever order the records are read
	// in; empty when Unscored is 0.
	UnscoredError string `json:"unscored_error,omitempty"`
}

// Report aggregates what the sweep's directory holds for its cells,
// streaming its samples files; an error is one reading them.
func (s *Sweep) Report() (*Report, error) {
	m := &Manifest{Name: s.Spec.name(), Rows: len(s.Rows), Repeats: s.Spec.repeats(), PassK: s.Spec.passK(),
		PassScorer: s.Spec.passScorer()}
	for _, a := range append(append([]Axis{}, s.Spec.Axes...), s.Spec.Zip...) {
		m.Axes = append(m.Axes, a.Path)
	}
	for _, sc := range s.scorers {
		m.Scorers = append(m.Scorers, sc.name)
	}
	for _, c := range s.Cells {
		m.Cells = append(m.Cells, ManifestCell{Hash: c.Hash, Settings: c.Settings})
	}
	// Only the samples of the spec as it is: its rows, as they are, its
	// repeats, scored by its scorers with their params.
	m.RowSums, m.ScorerSpecs = rowSums(s.Rows), s.scorerSpecs()
	return buildReport(s.Dir, m, s.records, false)
}

// LoadReport reads the report of the sweep directory dir from disk: its
// manifest and every samples file. Like [Sweep.Report], it counts only
// the samples of the sweep as its last run left it: of its rows as they
// were then (for directories written since the manifest lists them), its
// repeats and its scorers. The warnings are what reading skipped.
func LoadReport(dir string) (*Report, []string, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	recs, warnings, err := loadRecords(dir)
	if err != nil {
		return nil, warnings, err
	}
	rep, err := buildReport(dir, m, recs, true)
	return rep, warnings, err
}

// buildReport makes the report of the cells of m from the records recs
// says stand and m counts (Manifest.Counts), streaming the samples files
// of dir past them; with extra, cells that have records but are not in m
// are added after them. What it keeps per cell is bounded (see cellAgg):
// the memory a report takes does not grow with the number of samples.
func buildReport(dir string, m *Manifest, recs *recordIndex, extra bool) (*Report, error) {
	rep := &Report{Name: m.Name, Dir: dir, Axes: m.Axes, Scorers: m.Scorers, PassK: m.PassK}
	pass := 0 // the index of the pass@k scorer in m.Scorers
	if i := slices.Index(m.Scorers, m.PassScorer); i >= 0 {
		pass = i
	}
	if len(m.Scorers) > 0 {
		rep.PassScorer = m.Scorers[pass]
	}
	aggs := map[string]*cellAgg{}
	inManifest := map[string]bool{}
	for _, c := range m.Cells {
		inManifest[c.Hash] = true
	}
	var more []string
	err := recs.each([]string{dir}, func(r *Record, row int32) error {
		if !m.Counts(r) {
			return nil
		}
		a := aggs[r.Cell]
		if a == nil {
			if !inManifest[r.Cell] && !extra {
				return nil
			}
			a = newCellAgg(len(m.Scorers))
			aggs[r.Cell] = a
			if !inManifest[r.Cell] {
				a.settings = r.Settings
				more = append(more, r.Cell)
			}
		}
		a.add(r, row, m.Scorers, pass)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the samples of %s: %w", dir, err)
	}
	sort.Strings(more)
	cells := append([]ManifestCell(nil), m.Cells...)
	for _, h := range more {
		cells = append(cells, ManifestCell{Hash: h, Settings: aggs[h].settings})
	}
	for _, c := range cells {
		a := aggs[c.Hash]
		if a == nil {
			a = newCellAgg(len(m.Scorers))
		}
		cr := a.report(c, m.Scorers, m.PassK)
		if inManifest[c.Hash] {
			cr.Expected = m.Rows * max(m.Repeats, 1)
		}
		rep.Cells = append(rep.Cells, cr)
		rep.Samples += cr.Expected
		rep.Done += cr.N - cr.ToRetry
		rep.ToRetry += cr.ToRetry
	}
	return rep, nil
}

// LatencySample is the most sample latencies a cell keeps for its p50 and
// p95. Up to this many samples the percentiles are exact; beyond, they are
// those of a uniform sample of this size, chosen by a hash of each
// sample's key (cell, row, repeat): the same whatever order the records
// are read in, so that a report, a merge and a single run agree.
const LatencySample = 2048

// cellAgg aggregates a cell's records in bounded memory: counts and sums,
// each scorer's sum and sum of squares (compensated, so the order of the
// records does not change the result in practice), a LatencySample-sized
// sample of latencies, and per row (rows are the dataset's, not the
// samples) a count of samples and passes, for pass@k, and each scorer's
// sum, for paired comparisons (Report.Compare).
type cellAgg struct {
	settings         Point
	n, errors, retry int
	tokensIn, tokOut int
	cost             ksum
	sum, sumSq       []ksum
	unscored         []int       // per scorer: samples that ran but it could not score
	unscoredErr      []keyedText // per scorer: the score_errors text of one of them
	lat              latencySample
	perRow           map[int32]*rowAgg
}

// keyedText is a text of the sample whose key hashes to h (sampleHash):
// of several samples', the one of the lowest hash is kept, whatever the
// order records are read in.
type keyedText struct {
	h    uint64
	text string
}

// rowAgg is what a cell keeps of one dataset row: its samples n, of which
// c pass, and each scorer's sum of scores.
type rowAgg struct {
	n, c int
	sum  []ksum
}

// mean is the row's mean score of scorer i.
func (x *rowAgg) mean(i int) float64 { return x.sum[i].value() / float64(x.n) }

func newCellAgg(scorers int) *cellAgg {
	return &cellAgg{sum: make([]ksum, scorers), sumSq: make([]ksum, scorers), unscored: make([]int, scorers), unscoredErr: make([]keyedText, scorers), perRow: map[int32]*rowAgg{}}
}

// add counts r, a sample of the dataset row row; scorers[pass] is the
// scorer of pass@k.
func (a *cellAgg) add(r *Record, row int32, scorers []string, pass int) {
	a.n++
	if r.Status != "ok" {
		a.errors++
		if r.Retry {
			a.retry++
		}
	}
	a.tokensIn += r.TokensIn
	a.tokOut += r.TokensOut
	a.cost.add(r.Cost)
	h := sampleHash(r.Cell, r.Row, r.Repeat)
	a.lat.add(h, r.LatencyMS)
	for i, name := range scorers {
		v := r.Scores[name]
		a.sum[i].add(v)
		a.sumSq[i].add(v * v)
		if text, failed := r.ScoreErrors[name]; failed && r.Status == "ok" {
			if a.unscored[i] == 0 || h < a.unscoredErr[i].h {
				a.unscoredErr[i] = keyedText{h, text}
			}
			a.unscored[i]++
		}
	}
	if len(scorers) > 0 {
		ra := a.perRow[row]
		if ra == nil {
			ra = &rowAgg{sum: make([]ksum, len(scorers))}
			a.perRow[row] = ra
		}
		ra.n++
		if r.Scores[scorers[pass]] >= 1 {
			ra.c++
		}
		for i, name := range scorers {
			ra.sum[i].add(r.Scores[name])
		}
	}
}

func (a *cellAgg) report(c ManifestCell, scorers []string, passK []int) CellReport {
	cr := CellReport{Hash: c.Hash, settings: c.Settings, Settings: map[string]any{}, N: a.n, Errors: a.errors, ToRetry: a.retry,
		Cost:    dialog.Cost{Usage: dialog.Usage{InputTokens: a.tokensIn, OutputTokens: a.tokOut}, USD: a.cost.value()},
		PassAtK: map[string]float64{}}
	for _, s := range c.Settings {
		cr.Settings[s.Path] = s.Value
	}
	for i, name := range scorers {
		st := ScoreStat{Name: name, Unscored: a.unscored[i], UnscoredError: a.unscoredErr[i].text}
		if a.n > 0 {
			st.Mean = a.sum[i].value() / float64(a.n)
		}
		if a.n > 1 {
			n := float64(a.n)
			v := (a.sumSq[i].value() - a.sum[i].value()*a.sum[i].value()/n) / (n - 1)
			st.StdErr = math.Sqrt(max(v, 0)) / math.Sqrt(n)
		}
		cr.Scores = append(cr.Scores, st)
	}
	cr.P50MS, cr.P95MS = a.lat.percentile(50), a.lat.percentile(95)
	cr.rows = a.perRow
	for _, k := range passK {
		var vals []float64
		for _, x := range a.perRow {
			if x.n >= k {
				vals = append(vals, passAtK(x.n, x.c, k))
			}
		}
		if len(vals) > 0 {
			sort.Float64s(vals) // the same sum whatever the order of the rows
			cr.PassAtK[strconv.Itoa(k)] = mean(vals)
		}
	}
	return cr
}

// ksum is a Neumaier (compensated) sum.
type ksum struct{ s, c float64 }

func (k *ksum) add(x float64) {
	t := k.s + x
	if math.Abs(k.s) >= math.Abs(x) {
		k.c += (k.s - t) + x
	} else {
		k.c += (x - t) + k.s
	}
	k.s = t
}

func (k ksum) value() float64 { return k.s + k.c }

// latencySample keeps the LatencySample latencies of smallest hash: a
// max-heap on the hash.
type latencySample struct{ h hashHeap }

type hashed struct {
	hash uint64
	v    float64
}

type hashHeap []hashed

func (h hashHeap) Len() int           { return len(h) }
func (h hashHeap) Less(i, j int) bool { return h[i].hash > h[j].hash }
func (h hashHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *hashHeap) Push(x any)        { *h = append(*h, x.(hashed)) }
func (h *hashHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (l *latencySample) add(hash uint64, v float64) {
	switch {
	case len(l.h) < LatencySample:
		heap.Push(&l.h, hashed{hash, v})
	case hash < l.h[0].hash:
		l.h[0] = hashed{hash, v}
		heap.Fix(&l.h, 0)
	}
}

func (l *latencySample) percentile(p float64) float64 {
	xs := make([]float64, len(l.h))
	for i, x := range l.h {
		xs[i] = x.v
	}
	return percentile(xs, p)
}

// sampleHash is a hash of a sample's key.
func sampleHash(cell, row string, repeat int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(sampleKey(cell, row, repeat)))
	return h.Sum64()
}

// Formats are the output formats of Report.Write.
var Formats = []string{"text", "markdown", "csv", "json"}

// Write writes the report as format: "text" (an aligned table), "markdown",
// "csv" or "json". After [Report.Compare], the tables have a column
// "Δ SCORER" after each scorer's and a column "Δ rows" (see
// [Comparison.String]), and text and markdown a line under the table
// naming the baseline and saying what the columns mean; CSV stays one
// header and one record per cell.
func (r *Report) Write(w io.Writer, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	}
	header, rows := r.table()
	var err error
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		if err := cw.Write(header); err != nil {
			return err
		}
		if err := cw.WriteAll(rows); err != nil {
			return err
		}
		cw.Flush()
		return cw.Error()
	case "markdown":
		for i := range rows {
			for j := range rows[i] {
				rows[i][j] = strings.ReplaceAll(rows[i][j], "|", `\|`)
			}
		}
		if err = render(w, header, rows, renderer.NewMarkdown()); err == nil && r.Baseline != "" {
			_, err = fmt.Fprintf(w, "\n%s\n", r.baselineNote())
		}
		return err
	case "text", "":
		if err = render(w, header, rows, renderer.NewBlueprint()); err == nil && r.Baseline != "" {
			_, err = fmt.Fprintln(w, r.baselineNote())
		}
		return err
	}
	return fmt.Errorf("unknown format %q: want %s", format, strings.Join(Formats, ", "))
}

func render(w io.Writer, header []string, rows [][]string, rend tw.Renderer) error {
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(rend),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
	)
	hs := make([]any, len(header))
	for i, h := range header {
		hs[i] = h
	}
	t.Header(hs...)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// table is the report as text cells: one row per cell.
func (r *Report) table() ([]string, [][]string) {
	names := shortNames(r.Axes)
	header := append([]string{}, names...)
	header = append(header, "n")
	for _, name := range r.Scorers {
		header = append(header, name)
		if r.Baseline != "" {
			header = append(header, "Δ "+name)
		}
	}
	if r.Baseline != "" {
		header = append(header, "Δ rows")
	}
	for _, k := range r.PassK {
		header = append(header, fmt.Sprintf("pass@%d", k))
	}
	header = append(header, "tokens in", "tokens out", "cost", "p50", "p95", "errors")
	var rows [][]string
	for _, c := range r.Cells {
		var row []string
		for _, a := range r.Axes {
			cell := "-"
			for _, s := range c.settings {
				if s.Path == a {
					cell = s.Text()
				}
			}
			row = append(row, cell)
		}
		n := strconv.Itoa(c.N)
		if c.Expected > 0 && c.N != c.Expected {
			n += "/" + strconv.Itoa(c.Expected)
		}
		row = append(row, n)
		for i, s := range c.Scores {
			if c.N == 0 {
				row = append(row, "-")
			} else {
				row = append(row, fmt.Sprintf("%.3f ± %.3f", s.Mean, s.StdErr))
			}
			if r.Baseline != "" && i < len(r.Scorers) {
				row = append(row, c.deltaText(r.Scorers[i]))
			}
		}
		if r.Baseline != "" {
			row = append(row, c.pairedRowsText())
		}
		for _, k := range r.PassK {
			if v, ok := c.PassAtK[strconv.Itoa(k)]; ok && !math.IsNaN(v) {
				row = append(row, fmt.Sprintf("%.3f", v))
			} else {
				row = append(row, "-")
			}
		}
		row = append(row, strconv.Itoa(c.Cost.InputTokens), strconv.Itoa(c.Cost.OutputTokens), usd(c.Cost.USD),
			ms(c.P50MS), ms(c.P95MS), strconv.Itoa(c.Errors))
		rows = append(rows, row)
	}
	return header, rows
}

// tableColumns are the headers of the table's own columns, which an axis's
// name must not take: an axis params.n is "params.n", not a second "n".
var tableColumns = map[string]bool{"n": true, "tokens in": true, "tokens out": true, "cost": true,
	"p50": true, "p95": true, "errors": true, "Δ rows": true}

// shortNames are the shortest dotted suffixes that tell the axes apart
// and are not the header of one of the table's own columns.
func shortNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		parts := strings.Split(p, ".")
		for n := 1; n <= len(parts); n++ {
			cand := strings.Join(parts[len(parts)-n:], ".")
			unique := !tableColumns[cand] && !strings.HasPrefix(cand, "pass@")
			for j, q := range paths {
				if j != i && (q == cand || strings.HasSuffix(q, "."+cand)) {
					unique = false
					break
				}
			}
			if unique || n == len(parts) {
				out[i] = cand
				break
			}
		}
	}
	return out
}

func usd(v float64) string {
	if v != 0 && math.Abs(v) < 0.0001 {
		return fmt.Sprintf("$%.*f", 1-int(math.Floor(math.Log10(math.Abs(v)))), v)
	}
	return fmt.Sprintf("$%.4f", v)
}

func ms(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 10:
		return fmt.Sprintf("%.1fms", v)
	case v < 10000:
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.1fs", v/1000)
}
