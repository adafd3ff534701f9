package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/cmd/lllm/cli"
	"github.com/lllm-go/lllm/logs"
)

// The sweep runs both tactics on the mock and finds what its script
// implies: direct is right on 6 rows of 10, critique on 8.
func TestSweepComparesTheTactics(t *testing.T) {
	logDir := t.TempDir()
	var out, errOut bytes.Buffer
	code := cli.Execute(t.Context(), []string{"sweep", "sweep.yaml", "--baseline", "tactic_type=direct", "--log-dir", logDir, "-o", "json"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var rep struct {
		Cells []struct {
			Hash                string
			Settings            map[string]string
			N, Expected, Errors int
			Scores              []struct{ Mean float64 }
			VsBaseline          map[string]struct {
				Delta float64
				Rows  int
			} `json:"vs_baseline"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	mean := map[string]float64{}
	cell := map[string]string{} // tactic -> cell hash
	for _, c := range rep.Cells {
		tactic := c.Settings["tactic_type"]
		if c.N != 20 || c.Expected != 20 || c.Errors != 0 || len(c.Scores) != 1 {
			t.Errorf("%s: n %d of %d, %d errors, scores %v", tactic, c.N, c.Expected, c.Errors, c.Scores)
		}
		mean[tactic], cell[tactic] = c.Scores[0].Mean, c.Hash
		if d := c.VsBaseline["numeric"]; tactic == "critique" && (d.Rows != 10 || !near(d.Delta, 0.2)) {
			t.Errorf("critique vs direct: %+v, want +0.2 over 10 rows", d)
		}
	}
	if !near(mean["direct"], 0.6) || !near(mean["critique"], 0.8) {
		t.Errorf("scores %v, want direct 0.6 and critique 0.8", mean)
	}

	// Every sample's run log is in the sweep's runs/, labelled with its
	// cell, row and repeat.
	runs, err := logs.List(filepath.Join(logDir, "sweeps", "selfcritique", "runs"))
	if err != nil || len(runs) != 40 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	toolCalls := 0
	for _, r := range runs {
		if r.Status() != logs.StatusOK {
			t.Errorf("run %s: %s", r.ID, r.Status())
		}
		for _, rec := range records(t, r) {
			if tc := rec.ToolCall; tc != nil && tc.Name == "calc" && tc.Error == "" && strings.HasSuffix(tc.Result, "\n253") {
				toolCalls++
			}
		}
	}
	if toolCalls != 4 { // 23 * 11, in both cells, twice
		t.Errorf("%d calls of calc, want 4", toolCalls)
	}

	// One critique, of 13 * 7: in a fork of main, it says "wrong", and
	// the revision on main fixes the answer; the context manager showed
	// the model its first reply cut to its answer, twice.
	var crit logs.Summary
	for _, r := range runs {
		if l := r.Start.Labels; l["cell"] == cell["critique"] && l["row"] == "q03" && l["repeat"] == "0" {
			crit = r
		}
	}
	if crit.Start == nil {
		t.Fatal("no run of critique on q03")
	}
	forest, _, err := (&logs.Run{ID: crit.ID, Dir: crit.Dir}).Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	dialogs := map[string]string{} // alias -> its last message
	parent := map[string]string{}  // alias -> the alias of its parent
	alias := map[string]string{}   // id -> alias
	for _, id := range forest.IDs() {
		d := forest.Dialog(id)
		dialogs[d.Alias()], alias[id] = d.Tail().Text(), d.Alias()
	}
	for _, id := range forest.IDs() {
		n := forest.Dialog(id).Node()
		parent[n.Alias] = alias[n.ParentID]
	}
	if parent["critique"] != "main" || !strings.Contains(dialogs["critique"], "<verdict>wrong</verdict>") || dialogs["main"] != "<answer>91</answer>" {
		t.Errorf("dialogs %q, parents %q", dialogs, parent)
	}
	acted := 0
	for _, rec := range records(t, crit) {
		if c := rec.Context; c != nil && c.Manager == "selfcritique:answersonly" && c.Action == "answers_only" {
			acted++
		}
	}
	if acted != 2 {
		t.Errorf("the context manager cut replies in %d calls, want 2 (the check and the revision)", acted)
	}
}

func near(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }

// records reads every record of a run's log.
func records(t *testing.T, r logs.Summary) []*logs.Record {
	rd, err := logs.OpenFile(filepath.Join(r.Dir, logs.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var recs []*logs.Record
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return recs
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
}
