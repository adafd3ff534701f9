package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lllm sweep, sweep report and sweep merge warn on stderr when a scorer
// could not score samples that ran (a judge with no verdict), and why:
// they score 0, which the table alone cannot tell from wrong answers.
func TestSweepWarnsOfUnscoredSamples(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"config.yaml": "tactic_type: chat\nglobal: {model_name: mock/m, model_args: {temperature: 0}}\nagent_configs:\n  - {name: assistant, system_prompt: You add.}\nmock:\n  rules:\n    - {match: \"1 + 1\", reply: {text: \"2\"}}\n    - {match: \"2 + 2\", reply: {text: \"4\"}}\n",
		"judge.yaml":  "tactic_type: chat\nglobal: {model_name: mock/j}\nagent_configs:\n  - {name: judge, system_prompt: You grade.}\nmock:\n  rules:\n    - {regex: \"Answer to grade:\\\\s*2\\\\s\", reply: {text: yes}}\n    - {match: \"Answer to grade\", reply: {text: \"Hard to say.\"}}\n",
		"rows.jsonl":  "{\"id\": \"a\", \"input\": \"What is 1 + 1?\", \"expected\": 2}\n{\"id\": \"b\", \"input\": \"What is 2 + 2?\", \"expected\": 4}\n",
		"sweep.yaml":  "config: config.yaml\ndataset: rows.jsonl\nscorers: [numeric, {type: judge, config: judge.yaml}]\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logDir := filepath.Join(dir, "logs")
	// The count is of the table's samples, which a run that resumes or a
	// report did not run, and the warning says why one was not scored.
	want := `lllm: warning: scorer judge could not score 1 of the 2 samples in the table whose run succeeded, which score 0 on it (judge: no <score>X</score> and no yes/no in the reply "Hard to say.", for one;`
	for _, args := range [][]string{
		{"sweep", filepath.Join(dir, "sweep.yaml"), "--log-dir", logDir},
		{"sweep", filepath.Join(dir, "sweep.yaml"), "--log-dir", logDir},
		{"sweep", "report", filepath.Join(logDir, "sweeps", "sweep")},
		{"sweep", "report", filepath.Join(logDir, "sweeps", "sweep"), "-o", "json"},
	} {
		r := ctExec(t, 0, "", args...)
		if r.code != 0 || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "warning") {
			t.Errorf("%v:\n%v", args, r)
		}
	}
}
