package sweep

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lllm-go/lllm/logs"
)

// Every sample's run log is labelled with its sweep, cell, row and repeat,
// so lllm runs --label finds the runs of a row, a cell or one sample.
func TestSampleRunsLabelled(t *testing.T) {
	path := writeSweep(t, "name: labelled\nconfig: config.yaml\ndataset: rows.jsonl\nrepeats: 2\naxes:\n  global.model_args.temperature: [0, 0.5]\n", map[string]string{})
	run(t, path, Options{})
	dir := resultsDir(path)
	recs := standing(t, dir)
	if len(recs) != 24 {
		t.Fatalf("%d samples, want 24", len(recs))
	}
	for _, r := range recs {
		lr, err := logs.Open(filepath.Join(dir, RunsDir), r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{LabelSweep: "labelled", LabelCell: r.Cell, LabelRow: r.Row, LabelRepeat: strconv.Itoa(r.Repeat)}
		for k, v := range want {
			if got := lr.Start.Labels[k]; got != v {
				t.Errorf("run %s (cell %s, row %s, repeat %d): label %s = %q, want %q", r.RunID, r.Cell, r.Row, r.Repeat, k, got, v)
			}
		}
	}
	// One sample's run, by its labels, as lllm runs --label finds it.
	sums, err := logs.List(filepath.Join(dir, RunsDir))
	if err != nil {
		t.Fatal(err)
	}
	var one *Record
	for _, r := range recs {
		if r.Row == "r3" && r.Repeat == 1 {
			one = r
			break
		}
	}
	var found []string
	for _, s := range sums {
		if l := s.Start.Labels; l[LabelRow] == "r3" && l[LabelRepeat] == "1" && l[LabelCell] == one.Cell {
			found = append(found, s.ID)
		}
	}
	if len(found) != 1 || found[0] != one.RunID {
		t.Errorf("runs labelled row=r3 repeat=1 cell=%s: %v; want %s", one.Cell, found, one.RunID)
	}
}
