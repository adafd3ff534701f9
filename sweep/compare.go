package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Comparison is one scorer's difference between a cell and the baseline
// cell of a report, paired by dataset row (see [Report.Compare] and
// [PairedDiff]). In JSON, Delta is null without a paired row, and StdErr,
// CILow and CIHigh are null with fewer than two.
type Comparison struct {
	// Delta is the mean over the paired rows of the cell's mean score on
	// the row minus the baseline's.
	Delta float64 `json:"delta"`
	// StdErr is Delta's standard error: the sample standard deviation of
	// the rows' differences over the square root of Rows.
	StdErr float64 `json:"stderr"`
	// CILow and CIHigh bound Delta's 95% confidence interval, from
	// Student's t distribution with Rows-1 degrees of freedom.
	CILow  float64 `json:"ci_low"`
	CIHigh float64 `json:"ci_high"`
	// Rows are the dataset rows both cells have a finished sample of: the
	// pairs compared.
	Rows int `json:"rows"`
	// Significant says the confidence interval excludes 0.
	Significant bool `json:"significant"`
}

// MarshalJSON encodes c with its fields' names, and null for what too few
// rows leave unmeasured rather than 0, which would read as a result.
func (c Comparison) MarshalJSON() ([]byte, error) {
	num := func(v float64, rows int) *float64 {
		if c.Rows < rows {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		Delta       *float64 `json:"delta"`
		StdErr      *float64 `json:"stderr"`
		CILow       *float64 `json:"ci_low"`
		CIHigh      *float64 `json:"ci_high"`
		Rows        int      `json:"rows"`
		Significant bool     `json:"significant"`
	}{num(c.Delta, 1), num(c.StdErr, 2), num(c.CILow, 2), num(c.CIHigh, 2), c.Rows, c.Significant})
}

// String is c as the report's tables show it: "+0.150 ± 0.041", the
// difference and its standard error, with " *" after it when the
// difference is significant, and "n/a" with fewer than two paired rows.
func (c Comparison) String() string {
	if c.Rows < 2 {
		return "n/a"
	}
	s := fmt.Sprintf("%+.3f ± %.3f", c.Delta, c.StdErr)
	if c.Significant {
		s += " *"
	}
	return s
}

// Compare compares every cell of r with the baseline cell that sel names
// (see [Report.FindCell]), paired by dataset row: for each scorer, it
// averages each row's repeats in each cell, keeps the rows both cells have
// a finished sample of, and sets the cell's VsBaseline to the
// [PairedDiff] of their differences (cell minus baseline). It sets
// r.Baseline to the baseline's hash; the baseline's own VsBaseline is nil.
// Its error is one of FindCell's, and leaves r as it was.
//
// Because the cells ran the same rows, the paired difference's standard
// error leaves out how hard each row is, which the cells' own standard
// errors include: a difference can be clear while their error bars
// overlap.
func (r *Report) Compare(sel ...string) error {
	base, err := r.FindCell(sel...)
	if err != nil {
		return err
	}
	r.Baseline = base.Hash
	for i := range r.Cells {
		c := &r.Cells[i]
		c.VsBaseline = nil
		if c.Hash == base.Hash {
			continue
		}
		c.VsBaseline = make(map[string]Comparison, len(r.Scorers))
		for j, name := range r.Scorers {
			var d []float64
			for row, x := range c.rows {
				if b, ok := base.rows[row]; ok && j < len(x.sum) && j < len(b.sum) {
					d = append(d, x.mean(j)-b.mean(j))
				}
			}
			c.VsBaseline[name] = PairedDiff(d)
		}
	}
	return nil
}

// FindCell returns the cell of r that sel names. Each string of sel holds
// one or more comma-separated terms, and the cell must match them all:
//
//   - AXIS=VALUE: the cell's value of the axis is VALUE as the table shows
//     it (a number also matches the same number written otherwise, as 0.70
//     for 0.7; a list or map value is #1, #2, ..., its place in the axis).
//     AXIS is the axis's path, its name in the table header, or the last
//     segment of its path when no other axis ends the same way.
//   - anything else is a prefix of the cell's hash.
//
// So "model_name=mock/careful", "temperature=0,model_name=mock/careful"
// and "3f2a" all name a cell. A selector that names no cell, or several,
// an unknown axis, or an empty selector is an error that lists the
// cells.
func (r *Report) FindCell(sel ...string) (*CellReport, error) {
	cells := make([]ManifestCell, len(r.Cells))
	for i, c := range r.Cells {
		cells[i] = ManifestCell{Hash: c.Hash, Settings: c.settings}
	}
	i, err := findCell(r.Axes, cells, sel)
	if err != nil {
		return nil, err
	}
	return &r.Cells[i], nil
}

// FindCell returns the cell of s's grid that sel names, as
// [Report.FindCell] does: a baseline can be checked before the sweep
// runs.
func (s *Sweep) FindCell(sel ...string) (*Cell, error) {
	var axes []string
	for _, a := range append(append([]Axis{}, s.Spec.Axes...), s.Spec.Zip...) {
		axes = append(axes, a.Path)
	}
	cells := make([]ManifestCell, len(s.Cells))
	for i, c := range s.Cells {
		cells[i] = ManifestCell{Hash: c.Hash, Settings: c.Settings}
	}
	i, err := findCell(axes, cells, sel)
	if err != nil {
		return nil, err
	}
	return s.Cells[i], nil
}

// cellTerm is one term of a cell selector: an axis (its index) and a
// value, or with axis -1 a prefix of a hash.
type cellTerm struct {
	axis  int
	value string
}

// findCell returns the index of the one cell of cells that sel names (see
// Report.FindCell); axes are the grid's axis paths.
func findCell(axes []string, cells []ManifestCell, sel []string) (int, error) {
	names := shortNames(axes)
	var terms []cellTerm
	var said []string
	for _, s := range sel {
		for _, p := range strings.Split(s, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				terms = append(terms, cellTerm{axis: -1, value: p})
				said = append(said, p)
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			i, err := findAxis(axes, names, k)
			if err != nil {
				return 0, err
			}
			terms = append(terms, cellTerm{axis: i, value: v})
			said = append(said, names[i]+"="+v)
		}
	}
	if len(terms) == 0 {
		return 0, fmt.Errorf("no cell named: name one by its axis settings (AXIS=VALUE, comma-separated) or by a prefix of its hash; the cells are %s",
			cellList(axes, names, cells, nil))
	}
	var found []int
	for i, c := range cells {
		if cellMatches(axes, c, terms) {
			found = append(found, i)
		}
	}
	what := strings.Join(said, ",")
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("no cell has %s; the cells are %s", what, cellList(axes, names, cells, nil))
	case 1:
		return found[0], nil
	}
	return 0, fmt.Errorf("%d cells have %s: %s; add an axis setting or give a prefix of one's hash",
		len(found), what, cellList(axes, names, cells, found))
}

// findAxis returns the index of the axis that key names: its path, its
// table header name, or the last segment of its path.
func findAxis(axes, names []string, key string) (int, error) {
	if key == "" {
		return 0, errors.New(`a cell's axis setting needs the axis before "=" (AXIS=VALUE)`)
	}
	for i := range axes {
		if axes[i] == key || names[i] == key {
			return i, nil
		}
	}
	var last []int
	for i, a := range axes {
		if a[strings.LastIndex(a, ".")+1:] == key {
			last = append(last, i)
		}
	}
	switch len(last) {
	case 1:
		return last[0], nil
	case 0:
		if len(axes) == 0 {
			return 0, fmt.Errorf("no axis %q: the sweep has no axes, so its one cell is its base config", key)
		}
		return 0, fmt.Errorf("no axis %q: the axes are %s", key, axisList(axes, names))
	}
	var which []string
	for _, i := range last {
		which = append(which, names[i])
	}
	return 0, fmt.Errorf("axis %q is ambiguous: name one of %s", key, strings.Join(which, ", "))
}

// axisList names the axes as the table header does, with their paths
// where they differ.
func axisList(axes, names []string) string {
	parts := make([]string, len(axes))
	for i := range axes {
		parts[i] = names[i]
		if names[i] != axes[i] {
			parts[i] += " (" + axes[i] + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// cellMatches says whether c matches every term.
func cellMatches(axes []string, c ManifestCell, terms []cellTerm) bool {
	for _, t := range terms {
		if t.axis < 0 {
			if !strings.HasPrefix(c.Hash, t.value) {
				return false
			}
			continue
		}
		matched := false
		for _, s := range c.Settings {
			if s.Path == axes[t.axis] && valueMatches(s, t.value) {
				matched = true
				break
			}
		}
		if !matched {
			return false
		}
	}
	return true
}

// valueMatches says whether v names the value of s: as the table shows
// it, as its full text, or as the same number.
func valueMatches(s Setting, v string) bool {
	text := s.Text()
	if text == v || valueText(s.Value) == v {
		return true
	}
	a, err1 := strconv.ParseFloat(text, 64)
	b, err2 := strconv.ParseFloat(v, 64)
	return err1 == nil && err2 == nil && a == b
}

// cellList names the cells (only those of which, when it is not nil) by
// hash and settings, as the table shows them, for an error's one line.
func cellList(axes, names []string, cells []ManifestCell, which []int) string {
	if which == nil {
		which = make([]int, len(cells))
		for i := range which {
			which[i] = i
		}
	}
	if len(which) == 0 {
		return "none (the report has no cell)"
	}
	parts := make([]string, len(which))
	for j, i := range which {
		parts[j] = cells[i].Hash + " (" + settingsText(axes, names, cells[i].Settings) + ")"
	}
	return strings.Join(parts, "; ")
}

// settingsText is a cell's settings as NAME=VALUE, by the table's names.
func settingsText(axes, names []string, p Point) string {
	var parts []string
	for i, a := range axes {
		for _, s := range p {
			if s.Path == a {
				parts = append(parts, names[i]+"="+s.Text())
			}
		}
	}
	if len(parts) == 0 {
		return "base config"
	}
	return strings.Join(parts, " ")
}

// deltaText is the table's text for c's comparison of scorer: "-" for the
// baseline itself.
func (c *CellReport) deltaText(scorer string) string {
	if c.VsBaseline == nil {
		return "-"
	}
	return c.VsBaseline[scorer].String()
}

// pairedRowsText is the table's "Δ rows" of c: the rows compared, "-" for
// the baseline itself.
func (c *CellReport) pairedRowsText() string {
	for _, cmp := range c.VsBaseline {
		return strconv.Itoa(cmp.Rows) // every scorer pairs the same rows
	}
	return "-"
}

// baselineNote is the line under a compared table that says what its Δ
// columns are.
func (r *Report) baselineNote() string {
	label := r.Baseline
	for _, c := range r.Cells {
		if c.Hash == r.Baseline {
			label += " (" + settingsText(r.Axes, shortNames(r.Axes), c.settings) + ")"
		}
	}
	return "Δ: paired difference from the baseline cell " + label + ": over the rows both cells finished (Δ rows), " +
		"the mean of the cell's mean score on a row minus the baseline's, ± its standard error; " +
		"* when its 95% confidence interval (Student's t) excludes 0; n/a with fewer than 2 rows."
}
