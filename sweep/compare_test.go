package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
)

// Student's t quantiles against the closed forms for 1 and 2 degrees of
// freedom and against printed tables for others.
func TestTQuantile(t *testing.T) {
	near := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want)) }
	for _, p := range []float64{0.025, 0.3, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9995} {
		// df 1 is the Cauchy distribution; df 2 has a closed form too.
		if got, want := tQuantile(p, 1), math.Tan(math.Pi*(p-0.5)); !near(got, want, 1e-9) {
			t.Errorf("tQuantile(%v, 1) = %v, want tan(π(p-½)) = %v", p, got, want)
		}
		if got, want := tQuantile(p, 2), (2*p-1)/math.Sqrt(2*p*(1-p)); !near(got, want, 1e-9) {
			t.Errorf("tQuantile(%v, 2) = %v, want (2p-1)/√(2p(1-p)) = %v", p, got, want)
		}
	}
	// Two-sided 95% (p 0.975), 90% (0.95) and 99% (0.995) values, as
	// statistics tables print them (to 3 decimals).
	for _, c := range []struct {
		p, df, want float64
	}{
		{0.975, 1, 12.706}, {0.975, 2, 4.303}, {0.975, 3, 3.182}, {0.975, 4, 2.776}, {0.975, 5, 2.571},
		{0.975, 7, 2.365}, {0.975, 9, 2.262}, {0.975, 10, 2.228}, {0.975, 20, 2.086}, {0.975, 30, 2.042},
		{0.975, 60, 2.000}, {0.975, 120, 1.980}, {0.975, 1e7, 1.960},
		{0.95, 1, 6.314}, {0.95, 5, 2.015}, {0.95, 10, 1.812},
		{0.995, 4, 4.604}, {0.995, 10, 3.169}, {0.995, 30, 2.750},
	} {
		if got := tQuantile(c.p, c.df); math.Abs(got-c.want) > 0.0005 {
			t.Errorf("tQuantile(%v, %v) = %.4f, want %.3f", c.p, c.df, got, c.want)
		}
	}
	// The lower tail is the upper one's mirror; the median is 0.
	if lo, hi := tQuantile(0.025, 5), tQuantile(0.975, 5); lo != -hi {
		t.Errorf("tQuantile(0.025, 5) = %v, want -tQuantile(0.975, 5) = %v", lo, -hi)
	}
	if got := tQuantile(0.5, 3); got != 0 {
		t.Errorf("tQuantile(0.5, 3) = %v, want 0", got)
	}
	if !math.IsInf(tQuantile(1, 3), 1) || !math.IsInf(tQuantile(0, 3), -1) {
		t.Errorf("tQuantile(1, 3), tQuantile(0, 3) = %v, %v, want +Inf, -Inf", tQuantile(1, 3), tQuantile(0, 3))
	}
	for _, c := range [][2]float64{{-0.1, 3}, {1.1, 3}, {0.9, 0}, {0.9, -1}, {math.NaN(), 3}} {
		if got := tQuantile(c[0], c[1]); !math.IsNaN(got) {
			t.Errorf("tQuantile(%v, %v) = %v, want NaN", c[0], c[1], got)
		}
	}
}

// PairedDiff against values worked out by hand.
func TestPairedDiff(t *testing.T) {
	check := func(name string, got Comparison, delta, stderr, half float64, rows int, sig bool) {
		t.Helper()
		wantCmp(t, name, got, delta, stderr, half, rows, sig)
	}
	// 8 rows: sum 4.5, mean 0.5625; squared deviations 3·0.5625² +
	// 0.0625² + 4·0.4375² = 1.71875; sd √(1.71875/7); t(0.975, 7) = 2.3646.
	d := []float64{0, 0.5, 1, 0, 1, 0, 1, 1}
	se := math.Sqrt(1.71875/7) / math.Sqrt(8)
	check("better", PairedDiff(d), 0.5625, se, 2.364624251592785*se, 8, true)
	if math.Abs(se-0.17519) > 1e-5 {
		t.Fatalf("the hand value is off: %v", se)
	}
	// The same rows in another order: the same bits.
	if a, b := PairedDiff(d), PairedDiff([]float64{1, 1, 0, 1, 0.5, 0, 1, 0}); a != b {
		t.Errorf("the order of the rows changed the result: %+v, %+v", plainCmp(a), plainCmp(b))
	}
	// One row of 8 worse by 1: mean -1/8, squared deviations 0.875^2 +
	// 7·0.125² = 0.875, sd √0.125, stderr 0.125; the interval ±0.296
	// holds 0.
	check("one worse row", PairedDiff([]float64{0, 0, -1, 0, 0, 0, 0, 0}), -0.125, 0.125, 2.364624251592785*0.125, 8, false)
	// Two rows, +1 and -1: mean 0, sd √2, stderr 1, t(0.975, 1) = 12.706.
	check("two rows", PairedDiff([]float64{1, -1}), 0, 1, 12.706204736174694, 2, false)
	// No spread: every row +0.5 is significant, every row 0 is not.
	check("constant", PairedDiff([]float64{0.5, 0.5, 0.5}), 0.5, 0, 0, 3, true)
	check("equal", PairedDiff([]float64{0, 0, 0}), 0, 0, 0, 3, false)
	// One row: a difference, no interval.
	if got := PairedDiff([]float64{1}); got != (Comparison{Delta: 1, Rows: 1}) {
		t.Errorf("one row: %+v, want delta 1 and nothing else", plainCmp(got))
	}
	if got := PairedDiff(nil); got != (Comparison{}) {
		t.Errorf("no row: %+v, want nothing", plainCmp(got))
	}
}

func TestComparisonTextAndJSON(t *testing.T) {
	for _, c := range []struct {
		cmp  Comparison
		text string
		json string
	}{
		{Comparison{Delta: 0.15, StdErr: 0.041, CILow: 0.06, CIHigh: 0.24, Rows: 10, Significant: true}, "+0.150 ± 0.041 *",
			`{"delta":0.15,"stderr":0.041,"ci_low":0.06,"ci_high":0.24,"rows":10,"significant":true}`},
		{Comparison{Delta: -0.125, StdErr: 0.125, CILow: -0.42, CIHigh: 0.17, Rows: 8}, "-0.125 ± 0.125",
			`{"delta":-0.125,"stderr":0.125,"ci_low":-0.42,"ci_high":0.17,"rows":8,"significant":false}`},
		{Comparison{Delta: 1, Rows: 1}, "n/a",
			`{"delta":1,"stderr":null,"ci_low":null,"ci_high":null,"rows":1,"significant":false}`},
		{Comparison{}, "n/a",
			`{"delta":null,"stderr":null,"ci_low":null,"ci_high":null,"rows":0,"significant":false}`},
	} {
		if got := c.cmp.String(); got != c.text {
			t.Errorf("%+v: text %q, want %q", c.cmp, got, c.text)
		}
		b, err := json.Marshal(c.cmp)
		if err != nil || string(b) != c.json {
			t.Errorf("%+v: JSON %s (%v), want %s", c.cmp, b, err, c.json)
		}
	}
}

// findCell names a cell by its axis settings, as the table shows them, or
// by a prefix of its hash; anything else is one error listing the cells.
func TestFindCell(t *testing.T) {
	axes := []string{"global.model_args.temperature", "agent_configs.judge.model_args.temperature", "global.model_name", "mock.rules"}
	rules := []any{map[string]any{"match": "x"}}
	cell := func(hash string, temp, judge float64, model string, rule int) ManifestCell {
		return ManifestCell{Hash: hash, Settings: Point{
			{Path: axes[0], Value: temp}, {Path: axes[1], Value: judge},
			{Path: axes[2], Value: model}, {Path: axes[3], Value: rules, Index: rule},
		}}
	}
	cells := []ManifestCell{
		cell("aa11", 0, 0, "mock/careful", 0),
		cell("aa22", 0.7, 0, "mock/careful", 0),
		cell("bb33", 0, 0.5, "mock/sloppy", 1),
		cell("cc44", 0.7, 0.5, "mock/sloppy", 1),
	}
	for _, c := range []struct {
		sel  []string
		want string
	}{
		{[]string{"global.model_args.temperature=0.7,model_name=mock/careful"}, "aa22"},            // path, last segment
		{[]string{"global.model_args.temperature=0.70", "global.model_name=mock/careful"}, "aa22"}, // repeated, a number written otherwise
		{[]string{"judge.model_args.temperature=0.5, global.model_args.temperature=0"}, "bb33"},    // header names, spaces
		{[]string{"rules=#2,global.model_args.temperature=0.7"}, "cc44"},                           // a list value by its place
		{[]string{"bb"}, "bb33"}, // a hash prefix
		{[]string{"aa", "model_name=mock/careful", "global.model_args.temperature=0"}, "aa11"},
	} {
		i, err := findCell(axes, cells, c.sel)
		if err != nil {
			t.Errorf("%q: %v", c.sel, err)
		} else if cells[i].Hash != c.want {
			t.Errorf("%q: cell %s, want %s", c.sel, cells[i].Hash, c.want)
		}
	}
	everyCell := []string{"aa11 (", "aa22 (", "bb33 (", "cc44 ("}
	for _, c := range []struct {
		sel  []string
		want []string
	}{
		{[]string{"model_name=mock/nope"}, append([]string{"no cell has model_name=mock/nope",
			"aa22 (global.model_args.temperature=0.7 judge.model_args.temperature=0 model_name=mock/careful rules=#1)"}, everyCell...)},
		{[]string{"model_name=mock/careful"}, []string{"2 cells have model_name=mock/careful", "aa11 (", "aa22 (", "prefix"}},
		{[]string{"a"}, []string{"2 cells have a:", "aa11 (", "aa22 ("}},
		{[]string{"temperature=0"}, []string{`axis "temperature" is ambiguous`, "global.model_args.temperature", "judge.model_args.temperature"}},
		{[]string{"model=mock/careful"}, []string{`no axis "model"`, "model_name (global.model_name)", "rules (mock.rules)"}},
		{[]string{"=mock/careful"}, []string{"AXIS=VALUE"}},
		{[]string{" , ", ""}, append([]string{"no cell named", "AXIS=VALUE"}, everyCell...)},
		{nil, []string{"no cell named"}},
	} {
		_, err := findCell(axes, cells, c.sel)
		if err == nil {
			t.Errorf("%q: no error", c.sel)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: the error is not one line: %v", c.sel, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not say %q", c.sel, err, w)
			}
		}
	}
	if _, err := findCell(nil, []ManifestCell{{Hash: "h"}}, []string{"x=1"}); err == nil || !strings.Contains(err.Error(), "no axes") {
		t.Errorf("an axis of a sweep without axes: %v", err)
	}
	if i, err := findCell(nil, []ManifestCell{{Hash: "h"}}, []string{"h"}); err != nil || i != 0 {
		t.Errorf("the one cell of a sweep without axes by its hash: %d, %v", i, err)
	}
}

// pairModel answers "What is N + N?" for model a, b or c (the axis
// global.model_name: mock/a, mock/b, mock/c), right (2N) or wrong per
// model and row; model a and c answer row 2 right on its odd calls only,
// so that its two repeats average 0.5.
type pairModel struct {
	mu    sync.Mutex
	calls map[string]int // by model and row
}

// pairWrong are the rows each model answers wrong.
var pairWrong = map[string][]int{"a": {3, 5, 7, 8}, "b": nil, "c": {1, 3, 5, 7, 8}}

func (m *pairModel) open(_ context.Context, name string, _ provider.Config) (provider.Model, error) {
	model := strings.TrimPrefix(name, "mock/")
	if _, ok := pairWrong[model]; !ok {
		return nil, fmt.Errorf("unknown model %q", name)
	}
	return pairAnswerer{m, model}, nil
}

// pairAnswerer is the model of one cell of a pairModel.
type pairAnswerer struct {
	m     *pairModel
	model string
}

func (p pairAnswerer) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	var n int
	fmt.Sscanf(lastText(req), "What is %d", &n)
	key := fmt.Sprint(p.model, n)
	p.m.mu.Lock()
	p.m.calls[key]++
	call := p.m.calls[key]
	p.m.mu.Unlock()
	right := !slices.Contains(pairWrong[p.model], n)
	if n == 2 && p.model != "b" && call%2 == 0 {
		right = false
	}
	reply := strconv.Itoa(2 * n)
	if !right {
		reply = strconv.Itoa(2*n + 1)
	}
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: reply,
		Usage: dialog.Usage{InputTokens: 10, OutputTokens: 2}}}, nil
}

// pairSpec is 3 cells (models a, b, c) x 8 rows x 2 repeats, scored by
// numeric, uncached so that every repeat calls its model.
const pairSpec = "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nconcurrency: 4\ncache: off\n" +
	"scorers: [numeric]\naxes:\n  global.model_name: [mock/a, mock/b, mock/c]\n"

// A sweep of three cells on a scripted model, compared with cell a: b
// is better on known rows (significantly), c worse on one (not
// significantly); then, with records taken out, rows missing in one cell
// are left out and a row's remaining repeat stands for it.
func TestCompareSweep(t *testing.T) {
	path := writeSweep(t, pairSpec, map[string]string{"rows.jsonl": rowsJSONL(8)})
	m := &pairModel{calls: map[string]int{}}
	s := newSweep(t, path, Options{Open: m.open})
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cellOf := func(model string) *CellReport {
		t.Helper()
		for i, c := range rep.Cells {
			if c.Settings["global.model_name"] == "mock/"+model {
				return &rep.Cells[i]
			}
		}
		t.Fatalf("no cell of model %s", model)
		return nil
	}
	a, b, c := cellOf("a"), cellOf("b"), cellOf("c")
	// Cell means: a 3.5/8, b 1, c 2.5/8: what the script says.
	if a.Scores[0].Mean != 3.5/8 || b.Scores[0].Mean != 1 || c.Scores[0].Mean != 2.5/8 {
		t.Fatalf("cell means a %v b %v c %v, want 0.4375, 1, 0.3125: the scripted model is off", a.Scores[0].Mean, b.Scores[0].Mean, c.Scores[0].Mean)
	}
	base, err := s.FindCell("model_name=mock/a")
	if err != nil || base.Hash != a.Hash {
		t.Fatalf("Sweep.FindCell: %v, %v; want cell a %s", base, err, a.Hash)
	}

	if err := rep.Compare("model_name=mock/a"); err != nil {
		t.Fatal(err)
	}
	if rep.Baseline != a.Hash || a.VsBaseline != nil {
		t.Errorf("baseline %q (want %q), the baseline's own comparison %+v (want none)", rep.Baseline, a.Hash, a.VsBaseline)
	}
	// b − a per row: 0, 1−0.5, 1, 0, 1, 0, 1, 1 (see TestPairedDiff).
	se := math.Sqrt(1.71875/7) / math.Sqrt(8)
	wantCmp(t, "b vs a", b.VsBaseline["numeric"], 0.5625, se, 2.364624251592785*se, 8, true)
	// c − a: -1 on row 1, 0 elsewhere.
	wantCmp(t, "c vs a", c.VsBaseline["numeric"], -0.125, 0.125, 2.364624251592785*0.125, 8, false)

	// The tables: a column Δ numeric, "-" for the baseline, and the note.
	var text bytes.Buffer
	if err := rep.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Δ numeric", "+0.562 ± 0.175 *", "-0.125 ± 0.125 ", "Δ rows",
		"Δ: paired difference from the baseline cell " + a.Hash + " (model_name=mock/a)", "95% confidence interval"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text table has no %q:\n%s", want, text.String())
		}
	}
	var md bytes.Buffer
	if err := rep.Write(&md, "markdown"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| Δ numeric") || !strings.Contains(md.String(), "\n\nΔ: paired difference from the baseline cell "+a.Hash) {
		t.Errorf("the markdown table has no Δ column or note:\n%s", md.String())
	}
	var cs bytes.Buffer
	if err := rep.Write(&cs, "csv"); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&cs).ReadAll() // one header, one record per cell, nothing else
	if err != nil || len(records) != 4 {
		t.Fatalf("csv: %d records, %v:\n%s", len(records), err, cs.String())
	}
	col := map[string]int{}
	for i, h := range records[0] {
		col[h] = i
	}
	byModel := map[string][]string{}
	for _, r := range records[1:] {
		byModel[r[col["model_name"]]] = r
	}
	if got := byModel["mock/a"][col["Δ numeric"]] + " " + byModel["mock/a"][col["Δ rows"]]; got != "- -" {
		t.Errorf("csv: the baseline's Δ numeric and Δ rows are %q, want \"- -\"", got)
	}
	if got := byModel["mock/b"][col["Δ numeric"]] + " / " + byModel["mock/b"][col["Δ rows"]]; got != "+0.562 ± 0.175 * / 8" {
		t.Errorf("csv: b's Δ numeric / Δ rows are %q", got)
	}

	// JSON: the report's baseline, each other cell's vs_baseline.
	var js bytes.Buffer
	if err := rep.Write(&js, "json"); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Baseline string `json:"baseline"`
		Cells    []struct {
			Hash       string                    `json:"hash"`
			VsBaseline map[string]map[string]any `json:"vs_baseline"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.Baseline != a.Hash {
		t.Errorf("JSON baseline %q, want %q", decoded.Baseline, a.Hash)
	}
	for _, cell := range decoded.Cells {
		v, ok := cell.VsBaseline["numeric"]
		switch {
		case cell.Hash == a.Hash && cell.VsBaseline != nil:
			t.Errorf("JSON: the baseline has vs_baseline %v", cell.VsBaseline)
		case cell.Hash == b.Hash && (!ok || v["delta"] != 0.5625 || v["rows"] != 8.0 || v["significant"] != true || v["ci_low"] == nil):
			t.Errorf("JSON: b's vs_baseline.numeric is %v", v)
		}
	}

	// Records taken out: b has no sample of row 3, a none of row 6, and
	// of a's two samples of row 2 only the wrong one is left.
	dir := resultsDir(path)
	dropRecords(t, dir, func(r *Record) bool {
		return r.Cell == b.Hash && r.Row == "r3" || r.Cell == a.Hash && r.Row == "r6" ||
			r.Cell == a.Hash && r.Row == "r2" && r.Scores["numeric"] == 1
	})
	disk, _, err := LoadReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := disk.Compare(a.Hash[:6]); err != nil {
		t.Fatal(err)
	}
	var db, dc *CellReport
	for i := range disk.Cells {
		switch disk.Cells[i].Hash {
		case b.Hash:
			db = &disk.Cells[i]
		case c.Hash:
			dc = &disk.Cells[i]
		}
	}
	// b − a over rows 1, 2, 4, 5, 7, 8: 0, 1−0, 0, 1, 1, 1: mean 4/6,
	// squared deviations 2·(2/3)² + 4·(1/3)² = 4/3, sd √(4/15),
	// t(0.975, 5) = 2.5706.
	se = math.Sqrt(4.0/3/5) / math.Sqrt(6)
	wantCmp(t, "b vs a, rows missing", db.VsBaseline["numeric"], 4.0/6, se, 2.570581835636315*se, 6, true)
	// c − a over every row but 6: -1 on row 1, +0.5 on row 2 (c's two
	// repeats average 0.5, a's one left is 0), 0 elsewhere.
	if got := dc.VsBaseline["numeric"]; got.Rows != 7 || math.Abs(got.Delta-(-0.5/7)) > 1e-12 {
		t.Errorf("c vs a, rows missing: %+v, want 7 rows, delta -0.5/7", plainCmp(got))
	}
}

func wantCmp(t *testing.T, name string, got Comparison, delta, stderr, half float64, rows int, sig bool) {
	t.Helper()
	if got.Rows != rows || got.Significant != sig || math.Abs(got.Delta-delta) > 1e-12 || math.Abs(got.StdErr-stderr) > 1e-12 ||
		math.Abs(got.CILow-(delta-half)) > 1e-9 || math.Abs(got.CIHigh-(delta+half)) > 1e-9 {
		t.Errorf("%s: %+v, want delta %v stderr %v CI [%v, %v] rows %d significant %v", name, plainCmp(got), delta, stderr, delta-half, delta+half, rows, sig)
	}
}

// plainCmp is a Comparison that prints its fields with %+v.
type plainCmp Comparison

// dropRecords rewrites the samples files of dir without the records drop
// says to drop.
func dropRecords(t *testing.T, dir string, drop func(r *Record) bool) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "samples*.jsonl"))
	dropped := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		for _, line := range strings.SplitAfter(string(b), "\n") {
			var r Record
			if line == "" || json.Unmarshal([]byte(line), &r) == nil && drop(&r) {
				dropped += min(len(line), 1)
				continue
			}
			out = append(out, line...)
		}
		if err := os.WriteFile(f, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if dropped == 0 {
		t.Fatal("dropRecords dropped nothing")
	}
}

// A report's Compare with a selector that names no cell is an error and
// leaves the report as it was.
func TestCompareErrorKeepsTheReport(t *testing.T) {
	path := writeSweep(t, pairSpec, map[string]string{"rows.jsonl": rowsJSONL(3)})
	rep := run(t, path, Options{Open: (&pairModel{calls: map[string]int{}}).open})
	if err := rep.Compare("model_name=mock/z"); err == nil || !strings.Contains(err.Error(), "no cell has model_name=mock/z") {
		t.Fatalf("Compare(model_name=mock/z): %v", err)
	}
	if rep.Baseline != "" {
		t.Errorf("a failed Compare set the baseline %q", rep.Baseline)
	}
	for _, c := range rep.Cells {
		if c.VsBaseline != nil {
			t.Errorf("a failed Compare set cell %s's comparison", c.Hash)
		}
	}
	var text bytes.Buffer
	if err := rep.Write(&text, "text"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "Δ") {
		t.Errorf("a table without a baseline has Δ:\n%s", text.String())
	}
}
