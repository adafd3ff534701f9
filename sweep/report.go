package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Report is a sweep's results: one entry per cell, aggregated over its
// finished samples.
type Report struct {
	Name    string       `json:"name"`
	Dir     string       `json:"dir"`
	Axes    []string     `json:"axes"`
	Scorers []string     `json:"scorers"`
	PassK   []int        `json:"pass_k"`
	Cells   []CellReport `json:"cells"`
	// Calls are the model calls this invocation made (0 for a report read
	// from disk, and for a sweep that had nothing left to run); CacheHits
	// the replies its cache served; Ran the samples it finished.
	Calls     int `json:"calls"`
	CacheHits int `json:"cache_hits"`
	Ran       int `json:"ran"`
	// Samples is the number of samples of the grid; Done of them finished.
	Samples int `json:"samples"`
	Done    int `json:"done"`
	// Stopped says why a run stopped early, if it did.
	Stopped string `json:"stopped,omitempty"`
}

// CellReport aggregates one cell's samples.
type CellReport struct {
	Hash     string         `json:"hash"`
	Settings map[string]any `json:"settings"`
	settings Point
	// N is the number of finished samples, Expected the cell's rows times
	// repeats, Errors the finished samples that failed (scored 0).
	N        int `json:"n"`
	Expected int `json:"expected"`
	Errors   int `json:"errors"`
	// Scores are the mean and standard error of each scorer over the
	// cell's finished samples.
	Scores []ScoreStat `json:"scores"`
	// PassAtK is the unbiased pass@k of the first scorer (a sample passes
	// with a score of 1), averaged over rows with at least k samples;
	// keyed by k. A k no row has enough samples for is left out.
	PassAtK   map[string]float64 `json:"pass_at_k"`
	TokensIn  int                `json:"tokens_in"`
	TokensOut int                `json:"tokens_out"`
	Cost      float64            `json:"cost"`
	P50MS     float64            `json:"latency_p50_ms"`
	P95MS     float64            `json:"latency_p95_ms"`
}

// ScoreStat is one scorer's aggregate over a cell.
type ScoreStat struct {
	Name   string  `json:"name"`
	Mean   float64 `json:"mean"`
	StdErr float64 `json:"stderr"`
}

// Report aggregates what the sweep's directory holds for its cells.
func (s *Sweep) Report() *Report {
	m := &Manifest{Name: s.Spec.name(), Rows: len(s.Rows), Repeats: s.Spec.repeats(), PassK: s.Spec.passK()}
	for _, a := range append(append([]Axis{}, s.Spec.Axes...), s.Spec.Zip...) {
		m.Axes = append(m.Axes, a.Path)
	}
	for _, sc := range s.scorers {
		m.Scorers = append(m.Scorers, sc.name)
	}
	for _, c := range s.Cells {
		m.Cells = append(m.Cells, ManifestCell{Hash: c.Hash, Settings: c.Settings})
	}
	return buildReport(s.Dir, m, s.records, false)
}

// LoadReport reads the report of the sweep directory dir from disk: its
// manifest and every samples file. The warnings are what reading skipped.
func LoadReport(dir string) (*Report, []string, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	recs, warnings, err := LoadRecords(dir)
	if err != nil {
		return nil, warnings, err
	}
	return buildReport(dir, m, recs, true), warnings, nil
}

// buildReport makes the report of the cells of m from recs; with extra,
// cells that have records but are not in m are added after them.
func buildReport(dir string, m *Manifest, recs *Records, extra bool) *Report {
	rep := &Report{Name: m.Name, Dir: dir, Axes: m.Axes, Scorers: m.Scorers, PassK: m.PassK}
	byCell := map[string][]*Record{}
	for _, r := range recs.All() {
		byCell[r.Cell] = append(byCell[r.Cell], r)
	}
	cells := append([]ManifestCell(nil), m.Cells...)
	inManifest := map[string]bool{}
	for _, c := range cells {
		inManifest[c.Hash] = true
	}
	if extra {
		var more []string
		for h := range byCell {
			if !inManifest[h] {
				more = append(more, h)
			}
		}
		sort.Strings(more)
		for _, h := range more {
			cells = append(cells, ManifestCell{Hash: h, Settings: byCell[h][0].Settings})
		}
	}
	for _, c := range cells {
		cr := aggregate(c, byCell[c.Hash], m.Scorers, m.PassK)
		if inManifest[c.Hash] {
			cr.Expected = m.Rows * max(m.Repeats, 1)
		}
		rep.Cells = append(rep.Cells, cr)
		rep.Samples += cr.Expected
		rep.Done += cr.N
	}
	return rep
}

func aggregate(c ManifestCell, recs []*Record, scorers []string, passK []int) CellReport {
	cr := CellReport{Hash: c.Hash, settings: c.Settings, Settings: map[string]any{}, N: len(recs), PassAtK: map[string]float64{}}
	for _, s := range c.Settings {
		cr.Settings[s.Path] = s.Value
	}
	var lat []float64
	scores := make([][]float64, len(scorers))
	for _, r := range recs {
		if r.Status != "ok" {
			cr.Errors++
		}
		cr.TokensIn += r.TokensIn
		cr.TokensOut += r.TokensOut
		cr.Cost += r.Cost
		lat = append(lat, r.LatencyMS)
		for i, name := range scorers {
			scores[i] = append(scores[i], r.Scores[name])
		}
	}
	for i, name := range scorers {
		cr.Scores = append(cr.Scores, ScoreStat{Name: name, Mean: Mean(scores[i]), StdErr: StdErr(scores[i])})
	}
	cr.P50MS, cr.P95MS = Percentile(lat, 50), Percentile(lat, 95)
	if len(scorers) > 0 {
		type nc struct{ n, c int }
		perRow := map[string]*nc{}
		for _, r := range recs {
			x := perRow[r.Row]
			if x == nil {
				x = &nc{}
				perRow[r.Row] = x
			}
			x.n++
			if r.Scores[scorers[0]] >= 1 {
				x.c++
			}
		}
		for _, k := range passK {
			var vals []float64
			for _, x := range perRow {
				if x.n >= k {
					vals = append(vals, PassAtK(x.n, x.c, k))
				}
			}
			if len(vals) > 0 {
				cr.PassAtK[strconv.Itoa(k)] = Mean(vals)
			}
		}
	}
	return cr
}

// Formats are the output formats of Report.Write.
var Formats = []string{"text", "markdown", "csv", "json"}

// Write writes the report as format: "text" (an aligned table), "markdown",
// "csv" or "json".
func (r *Report) Write(w io.Writer, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	}
	header, rows := r.table()
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
		return render(w, header, rows, renderer.NewMarkdown())
	case "text", "":
		return render(w, header, rows, renderer.NewBlueprint())
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
	for _, s := range r.Scorers {
		header = append(header, s)
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
		for _, s := range c.Scores {
			if c.N == 0 {
				row = append(row, "-")
				continue
			}
			row = append(row, fmt.Sprintf("%.3f ± %.3f", s.Mean, s.StdErr))
		}
		for _, k := range r.PassK {
			if v, ok := c.PassAtK[strconv.Itoa(k)]; ok && !math.IsNaN(v) {
				row = append(row, fmt.Sprintf("%.3f", v))
			} else {
				row = append(row, "-")
			}
		}
		row = append(row, strconv.Itoa(c.TokensIn), strconv.Itoa(c.TokensOut), usd(c.Cost),
			ms(c.P50MS), ms(c.P95MS), strconv.Itoa(c.Errors))
		rows = append(rows, row)
	}
	return header, rows
}

// shortNames are the shortest dotted suffixes that tell the axes apart.
func shortNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		parts := strings.Split(p, ".")
		for n := 1; n <= len(parts); n++ {
			cand := strings.Join(parts[len(parts)-n:], ".")
			unique := true
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
