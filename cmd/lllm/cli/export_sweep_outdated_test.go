package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestExportSweepOnlyWhatReportCounts: lllm export --sweep exports the
// samples lllm sweep report counts, and no others. After a row is removed,
// another is changed (and its new run fails on the provider, so its old
// record still stands) and the repeats are cut from 2 to 1, the samples of
// the old rows and of the dropped repeat are outdated: the report leaves
// them out, and so does the export, which counts them in its summary.
func TestExportSweepOnlyWhatReportCounts(t *testing.T) {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	ctWrite(t, filepath.Join(dir, "chat.yaml"), `tactic_type: chat
global: {model_name: mock/demo}
agent_configs:
  - name: assistant
    system_prompt: You answer in one word.
mock:
  rules:
    - match: Boom
      reply: {error: bad_request}
`)
	rows := filepath.Join(dir, "rows.jsonl")
	ctWrite(t, rows, `{"id": "a", "input": "Say a.", "expected": "a"}
{"id": "b", "input": "Say b.", "expected": "b"}
{"id": "c", "input": "Say c.", "expected": "c"}
`)
	spec := filepath.Join(dir, "spec.yaml")
	ctWrite(t, spec, "name: outdated\nconfig: chat.yaml\ndataset: rows.jsonl\nrepeats: 2\nscorers: [{type: contains, name: mentions}]\n")
	if r := lllm(t, "sweep", spec, "--log-dir", logDir); r.code != 0 {
		t.Fatalf("first run:\n%v", r)
	}
	sweepDir := filepath.Join(logDir, "sweeps", "outdated")
	_, lines, _ := exportLines(t, "--sweep", sweepDir)
	if len(lines) != 6 {
		t.Fatalf("before the change: %d lines, want the 6 samples", len(lines))
	}

	// Row c removed, row b changed into one the provider refuses, one
	// repeat. The run of b fails (it is left to retry); its old record
	// succeeded, so it stands for the sample, but for the row as it was.
	ctWrite(t, rows, `{"id": "a", "input": "Say a.", "expected": "a"}
{"id": "b", "input": "Boom b.", "expected": "b"}
`)
	ctWrite(t, spec, "name: outdated\nconfig: chat.yaml\ndataset: rows.jsonl\nrepeats: 1\nscorers: [{type: contains, name: mentions}]\n")
	r := lllm(t, "sweep", spec, "--log-dir", logDir, "-o", "json")
	var second struct {
		Ran int `json:"ran"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &second); err != nil || r.code == ExitUsage || second.Ran != 1 {
		t.Fatalf("second run: want it to run sample b again (and fail): %v\n%v", err, r)
	}

	r = lllm(t, "sweep", "report", sweepDir, "-o", "json")
	if r.code != 0 {
		t.Fatalf("report:\n%v", r)
	}
	rep := decodeJSON[sweepJSON](t, r.stdout)
	counted := 0
	for _, c := range rep.Cells {
		counted += c.N
	}
	if counted != 1 {
		t.Fatalf("the report counts %d samples, want 1 (row a, repeat 0): %+v", counted, rep)
	}

	vals, _, stderr := exportLines(t, "--sweep", sweepDir, "--metadata")
	var got []string
	for _, v := range vals {
		md := v["metadata"].(map[string]any)
		got = append(got, fmt.Sprintf("%v/%v", md["row"], md["repeat"]))
	}
	slices.Sort(got)
	if want := []string{"a/0"}; !slices.Equal(got, want) {
		t.Errorf("exported samples %v, want %v: those the report counts", got, want)
	}
	const want = "exported 1 dialog from 1 run; 1 of 1 sample selected; skipped 5 outdated samples (made before their row, the repeats or the scorers changed; lllm sweep report does not count them)"
	if s := exportSummary(t, stderr); s != want {
		t.Errorf("summary %q\nwant %q", s, want)
	}
}
