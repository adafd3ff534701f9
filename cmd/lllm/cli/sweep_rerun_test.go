package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A sample that failed in its tactic (here the judge never gives a
// choice, so best_of_n gives up) is final: running the sweep again leaves
// it, and --rerun-failed runs it again.
func TestSweepRerunFailed(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"config.yaml": `tactic_type: best_of_n
params: {n: 1}
global:
  model_name: mock/m
  model_args: {temperature: 0}
  max_exception_retry: 0
agent_configs:
  - name: solver
    system_prompt: You solve.
  - name: judge
    system_prompt: You judge.
mock:
  rules:
    - {system: judge, match: "2 + 2", reply: {text: "I cannot choose."}}
    - {system: judge, reply: {text: "<choice>1</choice>"}}
    - {system: solve, regex: "1 \\+ 1", reply: {text: "2"}}
    - {system: solve, reply: {text: "4"}}
`,
		"rows.jsonl": "{\"id\": \"a\", \"input\": \"What is 1 + 1?\", \"expected\": \"2\"}\n{\"id\": \"b\", \"input\": \"What is 2 + 2?\", \"expected\": \"4\"}\n",
		"spec.yaml":  "name: rerun\nconfig: config.yaml\ndataset: rows.jsonl\ncache: off\nscorers: [numeric]\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec, logDir := filepath.Join(dir, "spec.yaml"), filepath.Join(dir, "logs")
	r := lllm(t, "sweep", spec, "--log-dir", logDir, "-o", "json")
	first := decodeJSON[rerunJSON](t, r.stdout)
	if r.code != 0 || first.Ran != 2 || len(first.Cells) != 1 || first.Cells[0].Errors != 1 || first.Cells[0].Scores[0].Mean != 0.5 {
		t.Fatalf("first run: want 2 samples run, one failed in its tactic\n%v", r)
	}

	r = lllm(t, "sweep", spec, "--log-dir", logDir, "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "2 done, 0 to run") {
		t.Errorf("dry run: the failed sample should be final\n%v", r)
	}
	r = lllm(t, "sweep", spec, "--log-dir", logDir, "--dry-run", "--rerun-failed")
	if r.code != 0 || !strings.Contains(r.stdout, "1 done, 1 to run") {
		t.Errorf("dry run with --rerun-failed: want the failed sample to run\n%v", r)
	}
	r = lllm(t, "sweep", spec, "--log-dir", logDir, "--rerun-failed", "-o", "json")
	again := decodeJSON[rerunJSON](t, r.stdout)
	if r.code != 0 || again.Ran != 1 || again.Calls != 2 || again.Cells[0].N != 2 || again.Cells[0].Errors != 1 {
		t.Errorf("--rerun-failed: want the one failed sample run again (2 calls), and failing again\n%v", r)
	}
}

// rerunJSON is a sweep's -o json with the samples it ran.
type rerunJSON struct {
	sweepJSON
	Ran int `json:"ran"`
}
