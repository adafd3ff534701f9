package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQAChangedAnswerFieldIsNotIgnored: the spec's answer: says which
// field of the tactic's result the scorers read. Changing it after a run
// leaves every sample "done" (its record's scorer digests still match), so
// the next run runs nothing, re-scores nothing and reports the answers
// and scores of the old field, while a fresh sweep of the same spec, on
// the same run results, scores the new field. The answer is part of what
// a sample's scores depend on: changing answer: should re-score from the
// run logs (whose run_end.result holds every field), as changing a
// scorer's params does, or the table is silently stale.
func TestQAChangedAnswerFieldIsNotIgnored(t *testing.T) {
	// best_of_n's result is {"answer", "choice", "candidates"}; the judge
	// always picks 1, and every row expects 1.
	cfg := `tactic_type: best_of_n
params: {n: 2}
global: {model_name: mock/m, model_args: {temperature: 0}}
agent_configs:
  - {name: solver, system_prompt: Solve.}
  - {name: judge, system_prompt: Judge.}
mock:
  rules:
    - {match: Candidate answers, reply: {text: "<choice>1</choice>"}}
    - {match: "What is", reply: {text: "seven"}}
`
	rows := `{"id": "r1", "input": "What is 3 + 4?", "expected": "1"}` + "\n" +
		`{"id": "r2", "input": "What is 2 + 5?", "expected": "1"}` + "\n"
	spec := "config: config.yaml\ndataset: rows.jsonl\nscorers: [exact]\n"
	path := writeSweep(t, spec, map[string]string{"config.yaml": cfg, "rows.jsonl": rows})
	rep := run(t, path, Options{})
	if rep.Ran != 2 || rep.Cells[0].Scores[0].Mean != 0 {
		t.Fatalf("first run: ran %d, exact %v; want 2 and 0 (the answer field is \"seven\")", rep.Ran, rep.Cells[0].Scores[0].Mean)
	}

	// Score the judge's choice instead.
	if err := os.WriteFile(path, []byte(spec+"answer: choice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep = run(t, path, Options{})
	if got := rep.Cells[0].Scores[0].Mean; got != 1 {
		t.Errorf("after answer: choice, exact = %v (ran %d, re-scored %d): the answers of the old answer field stand; want 1, as a fresh sweep gives",
			got, rep.Ran, rep.Rescored)
	}
	dir := filepath.Join(filepath.Dir(path), "results")
	for id, a := range answers(t, dir) {
		if strings.Contains(a, "seven") {
			t.Errorf("sample %s still has the answer %q of the old answer field", id, a)
		}
	}
}
