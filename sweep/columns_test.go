package sweep

import (
	"slices"
	"testing"
)

// An axis whose last segment is the header of one of the table's own
// columns (params.n and the sample count n) is named by a longer suffix,
// so that no two columns of the table, or of its CSV, share a header.
func TestAxisNamesAvoidTableColumns(t *testing.T) {
	axes := []string{"params.n", "global.model_args.temperature", "params.errors"}
	if got, want := shortNames(axes), []string{"params.n", "temperature", "params.errors"}; !slices.Equal(got, want) {
		t.Errorf("shortNames(%q) = %q, want %q", axes, got, want)
	}
	r := &Report{Axes: axes, Scorers: []string{"exact"}, PassK: []int{1}}
	header, _ := r.table()
	seen := map[string]bool{}
	for _, h := range header {
		if seen[h] {
			t.Errorf("the table has two columns %q: %q", h, header)
		}
		seen[h] = true
	}
	// The short name still picks the axis, as --baseline takes it.
	if i, err := findAxis(axes, shortNames(axes), "n"); err != nil || i != 0 {
		t.Errorf(`findAxis("n") = %d, %v; want 0, nil`, i, err)
	}
}
