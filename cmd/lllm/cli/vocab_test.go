package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/internal/vocab"
)

// The CLI's -o json outputs share one vocabulary, the run log's: a run is
// run_id, spending is the log's cost object, durations are *_ms and times
// RFC 3339. These tests run every command that prints JSON about runs and
// walk what it prints, so that an output added later that names things
// otherwise is caught.

// vocabConfig is a chat config on the mock provider, priced so that its
// runs spend dollars as well as tokens.
const vocabConfig = `tactic_type: chat
global:
  model_name: mock/demo
agent_configs:
  - name: assistant
    system_prompt: You are concise.
prices:
  demo: {input: 1.5, output: 6}
mock:
  replies:
    - text: "Paris."
`

// vocabJSON runs lllm with args and -o json, checks it exits with code,
// and returns the decoded output once it passes the vocabulary.
func vocabJSON(t *testing.T, code int, args ...string) any {
	t.Helper()
	r := lllm(t, append(args, "-o", "json")...)
	if r.code != code {
		t.Fatalf("lllm %s: exit %d, want %d\n%v", strings.Join(args, " "), r.code, code, r)
	}
	var v any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("lllm %s -o json: not JSON: %v\n%s", strings.Join(args, " "), err, r.stdout)
	}
	for _, p := range vocab.Problems(v, true) {
		t.Errorf("lllm %s -o json: %s", args[0], p)
	}
	return v
}

// vocabRunIDOf is the run_id of a decoded run object, which must have one.
func vocabRunIDOf(t *testing.T, what string, v any) string {
	t.Helper()
	m, _ := v.(map[string]any)
	id, _ := m["run_id"].(string)
	if !vocab.RunID.MatchString(id) {
		t.Fatalf("%s: run_id %v is not a run id: %v", what, m["run_id"], v)
	}
	if _, ok := m["id"]; ok {
		t.Errorf("%s: has an id besides its run_id: %v", what, v)
	}
	return id
}

// vocabUSD is cost.usd of a decoded object, 0 when it has none.
func vocabUSD(v any) float64 {
	m, _ := v.(map[string]any)
	c, _ := m["cost"].(map[string]any)
	usd, _ := c["usd"].(float64)
	return usd
}

func TestVocabularyOfJSONOutputs(t *testing.T) {
	cfg, logDir := writeConfig(t, vocabConfig)
	dir := filepath.Dir(cfg)
	ld := []string{"--log-dir", logDir}

	// lllm run: one task, then a tasks file, whose ids are task_id.
	one := vocabJSON(t, 0, append([]string{"run", cfg, "--task", "Capital of France?"}, ld...)...)
	runID := vocabRunIDOf(t, "run", one)
	if vocabUSD(one) <= 0 {
		t.Errorf("run: a priced run has cost %v, want its usd", one.(map[string]any)["cost"])
	}
	if d, _ := one.(map[string]any)["dir"].(string); d != filepath.Join(logDir, runID) {
		t.Errorf("run: dir %q, want %q", d, filepath.Join(logDir, runID))
	}
	tasks := filepath.Join(dir, "tasks.jsonl")
	if err := os.WriteFile(tasks, []byte(`{"id": "a", "task": "Capital of France?"}`+"\n"+`{"task": "Hello?"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	many, _ := vocabJSON(t, 0, append([]string{"run", cfg, "--tasks", tasks}, ld...)...).([]any)
	if len(many) != 2 {
		t.Fatalf("run --tasks: %d results, want 2", len(many))
	}
	for i, r := range many {
		vocabRunIDOf(t, fmt.Sprintf("run --tasks [%d]", i), r)
	}
	if id := many[0].(map[string]any)["task_id"]; id != "a" {
		t.Errorf("run --tasks: the first task's task_id is %v, want a", id)
	}

	// lllm replay: its run, and the run it replays.
	rep := vocabJSON(t, 0, append([]string{"replay", runID}, ld...)...)
	if vocabRunIDOf(t, "replay", rep) == runID || rep.(map[string]any)["replay_of"] != runID {
		t.Errorf("replay: want a run of its own replaying %s: %v", runID, rep)
	}
	if vocabUSD(rep) != vocabUSD(one) {
		t.Errorf("replay: cost %v, want the recorded %v", rep.(map[string]any)["cost"], one.(map[string]any)["cost"])
	}

	// lllm runs: every run above, by run_id.
	list, _ := vocabJSON(t, 0, append([]string{"runs"}, ld...)...).([]any)
	if len(list) != 4 {
		t.Fatalf("runs: %d runs, want 4", len(list))
	}
	var listed []string
	for i, r := range list {
		listed = append(listed, vocabRunIDOf(t, fmt.Sprintf("runs[%d]", i), r))
	}
	if !slices.Contains(listed, runID) {
		t.Errorf("runs: %v does not list %s", listed, runID)
	}

	// lllm tree and show of the first run.
	tree := vocabJSON(t, 0, append([]string{"tree", runID}, ld...)...)
	if vocabRunIDOf(t, "tree", tree) != runID {
		t.Errorf("tree: run_id is not %s", runID)
	}
	if shown, _ := vocabJSON(t, 0, append([]string{"show", runID}, ld...)...).([]any); len(shown) == 0 {
		t.Errorf("show: no dialogs")
	}

	// lllm sweep, stopped by its budget after one sample so that a cell
	// has none finished, then lllm sweep report of what it left.
	if err := os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte(`{"id": 1, "input": "Capital of France?", "expected": "Paris."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(spec, []byte("name: vocab\nconfig: chat.yaml\ndataset: rows.jsonl\nscorers: [exact]\nconcurrency: 1\n"+
		"budget: {max_tokens: 1}\naxes:\n  global.model_args.temperature: [0, 1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	swept := vocabJSON(t, ExitError, append([]string{"sweep", spec}, ld...)...)
	sweepDir := filepath.Join(logDir, "sweeps", "vocab")
	reported := vocabJSON(t, 0, "sweep", "report", sweepDir)
	for name, v := range map[string]any{"sweep": swept, "sweep report": reported} {
		cells, _ := v.(map[string]any)["cells"].([]any)
		var ns []float64
		for _, c := range cells {
			c := c.(map[string]any)
			ns = append(ns, c["n"].(float64))
			if c["n"].(float64) > 0 {
				s := c["scores"].([]any)[0].(map[string]any)
				if s["mean"] != 1.0 || vocabUSD(c) <= 0 || c["latency_p50_ms"] == nil {
					t.Errorf("%s: a finished cell has %v", name, c)
				}
			}
		}
		if !slices.Equal(ns, []float64{1, 0}) {
			t.Errorf("%s: cells with n %v, want 1 and 0 (the budget stops after one sample)", name, ns)
		}
	}
	// In text, the unfinished cell's score and latencies are "-".
	r := lllm(t, "sweep", "report", sweepDir)
	var row []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if fs := strings.Fields(strings.ReplaceAll(l, "│", " ")); len(fs) > 2 && fs[0] == "1" && strings.HasPrefix(fs[1], "0/") {
			row = fs
		}
	}
	// temperature, n, exact, pass@1, tokens in, tokens out, cost, p50, p95, errors
	if len(row) != 10 || row[2] != "-" || row[7] != "-" || row[8] != "-" {
		t.Errorf("the unfinished cell's row is %q, want - for its score and latencies:\n%v", row, r)
	}

	// lllm validate and lllm version.
	vocabJSON(t, 0, "validate", cfg)
	vocabJSON(t, 0, "validate", spec, "--log-dir", logDir)
	vocabJSON(t, ExitUsage, "validate", cfg, "--set", "global.modl_name=x")
	vocabJSON(t, 0, "version")
}

// lllm version -o json has what the text shows, as fields.
func TestVersionJSON(t *testing.T) {
	text := lllm(t, "version")
	r := lllm(t, "version", "-o", "json")
	v := decodeJSON[versionJSON](t, r.stdout)
	if r.code != 0 || v.Version == "" || v.Module != modulePath || v.GoVersion == "" || v.OS == "" || v.Arch == "" {
		t.Fatalf("%v", r)
	}
	want := "lllm " + v.Version
	if v.Commit != "" {
		want += " (" + v.Commit[:min(len(v.Commit), 12)]
		if v.Modified {
			want += "-dirty"
		}
		want += ")"
	}
	want += "\n" + v.GoVersion + " " + v.OS + "/" + v.Arch + "\n"
	if text.stdout != want {
		t.Errorf("text %q, want %q from the JSON %s", text.stdout, want, r.stdout)
	}
}
