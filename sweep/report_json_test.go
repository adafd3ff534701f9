package sweep

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// A cell's JSON is in the run log's vocabulary: its spending is the log's
// cost object, summed over its records. A cell with no finished sample
// reports null means, standard errors and latencies, not 0s that read as
// results, and "-" for them in the table.
func TestCellReportJSON(t *testing.T) {
	done, empty := newCellAgg(1), newCellAgg(1)
	for _, r := range []*Record{
		{Row: "a", Status: "ok", Scores: map[string]float64{"s": 1}, TokensIn: 10, TokensOut: 2, Cost: 0.25, LatencyMS: 10},
		{Row: "a", Repeat: 1, Status: "ok", Scores: map[string]float64{"s": 0}, TokensIn: 30, TokensOut: 4, Cost: 0.5, LatencyMS: 30},
	} {
		r.Cell = "done"
		done.add(r, 0, []string{"s"}, 0)
	}
	rep := &Report{Name: "x", Axes: []string{}, Scorers: []string{"s"}, PassK: []int{1}, Cells: []CellReport{
		done.report(ManifestCell{Hash: "done"}, []string{"s"}, []int{1}),
		empty.report(ManifestCell{Hash: "empty"}, []string{"s"}, []int{1}),
	}}
	rep.Cells[1].Expected = 2
	var buf bytes.Buffer
	if err := rep.Write(&buf, "json"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Cells []map[string]json.RawMessage `json:"cells"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil || len(got.Cells) != 2 {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	for _, old := range []string{"tokens_in", "tokens_out", "tokens"} {
		if _, ok := got.Cells[0][old]; ok {
			t.Errorf("a cell has %q:\n%s", old, buf.String())
		}
	}
	var cost dialog.Cost
	if err := json.Unmarshal(got.Cells[0]["cost"], &cost); err != nil ||
		cost != (dialog.Cost{Usage: dialog.Usage{InputTokens: 40, OutputTokens: 6}, USD: 0.75}) {
		t.Errorf("the finished cell's cost %s (%v), want 40 in, 6 out, $0.75", got.Cells[0]["cost"], err)
	}
	wantJSON := func(cell int, key, want string) {
		t.Helper()
		var v any
		if err := json.Unmarshal(got.Cells[cell][key], &v); err != nil {
			t.Fatalf("cell %d %s: %v", cell, key, err)
		}
		if b, _ := json.Marshal(v); string(b) != want {
			t.Errorf("cell %d %s: %s, want %s", cell, key, b, want)
		}
	}
	wantJSON(0, "scores", `[{"mean":0.5,"name":"s","stderr":0.5}]`)
	wantJSON(0, "latency_p50_ms", "20")
	wantJSON(1, "n", "0")
	wantJSON(1, "scores", `[{"mean":null,"name":"s","stderr":null}]`)
	wantJSON(1, "latency_p50_ms", "null")
	wantJSON(1, "latency_p95_ms", "null")
	wantJSON(1, "cost", "{}")

	// The JSON reads back into a CellReport, nulls as zeros.
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if c := back.Cells[0]; c.Cost != rep.Cells[0].Cost || c.Scores[0] != rep.Cells[0].Scores[0] || c.P50MS != 20 {
		t.Errorf("read back %+v, want %+v", c, rep.Cells[0])
	}

	// In the table, the unfinished cell shows "-" where it has no result.
	buf.Reset()
	if err := rep.Write(&buf, "csv"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || lines[0] != "n,s,pass@1,tokens in,tokens out,cost,p50,p95,errors" ||
		lines[1] != "2,0.500 ± 0.500,0.500,40,6,$0.7500,20ms,29ms,0" || lines[2] != "0/2,-,-,0,0,$0.0000,-,-,0" {
		t.Errorf("csv:\n%s", buf.String())
	}
}

// One finished sample has a mean but no spread to estimate: its standard
// error is null in JSON, not a 0 that reads as certainty.
func TestCellReportJSONOneSample(t *testing.T) {
	a := newCellAgg(1)
	a.add(&Record{Cell: "one", Row: "a", Status: "ok", Scores: map[string]float64{"s": 1}, LatencyMS: 5}, 0, []string{"s"}, 0)
	b, err := json.Marshal(a.report(ManifestCell{Hash: "one"}, []string{"s"}, []int{1}))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Scores []map[string]any `json:"scores"`
	}
	if err := json.Unmarshal(b, &got); err != nil || len(got.Scores) != 1 {
		t.Fatalf("%v\n%s", err, b)
	}
	if s := got.Scores[0]; s["mean"] != 1.0 || s["stderr"] != nil {
		t.Errorf("one sample: %v, want mean 1 and a null stderr\n%s", s, b)
	}
}
