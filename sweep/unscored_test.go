package sweep

import (
	"encoding/json"
	"strings"
	"testing"
)

// A scorer that cannot score a sample whose run succeeded (a judge whose
// reply has no verdict) gives it 0, and the report counts such samples per
// scorer and cell (unscored), so that the 0s can be told from wrong
// answers, and keeps why one of them was not scored, the same one
// whatever order the samples finished in; a report read back from disk
// counts the same.
func TestReportCountsUnscoredSamples(t *testing.T) {
	judgeCfg := `tactic_type: chat
global: {model_name: mock/judge, model_args: {temperature: 0}}
agent_configs:
  - {name: judge, system_prompt: You grade answers.}
mock:
  rules:
    - {regex: "Answer to grade:\\s*(2|4)\\s", reply: {text: "<score>1</score>"}}
    - {regex: "Answer to grade:\\s*6\\s", reply: {text: "Six, maybe."}}
    - {match: "Answer to grade", reply: {text: "I cannot tell."}}
`
	spec := "config: config.yaml\ndataset: rows.jsonl\nscorers:\n  - numeric\n  - {type: judge, config: judge.yaml, name: graded}\n"
	path := writeSweep(t, spec, map[string]string{"judge.yaml": judgeCfg})
	rep := run(t, path, Options{})
	check := func(what string, rep *Report) string {
		t.Helper()
		sc := rep.Cells[0].Scores
		if sc[0].Name != "numeric" || sc[0].Unscored != 0 || sc[1].Name != "graded" || sc[1].Unscored != 4 {
			t.Errorf("%s: scores %+v, want graded unscored 4 (rows 3, 4, 5, 6) and numeric 0", what, sc)
		}
		why := sc[1].UnscoredError
		if sc[0].UnscoredError != "" || !strings.HasPrefix(why, "judge: no <score>X</score> and no yes/no in the reply ") {
			t.Errorf("%s: unscored errors %q, %q: want graded's only", what, sc[0].UnscoredError, why)
		}
		b, err := json.Marshal(rep.Cells[0])
		if err != nil {
			t.Fatal(err)
		}
		var cell struct {
			Scores []map[string]any `json:"scores"`
		}
		if err := json.Unmarshal(b, &cell); err != nil {
			t.Fatal(err)
		}
		if _, ok := cell.Scores[0]["unscored"]; ok || cell.Scores[1]["unscored"] != 4.0 {
			t.Errorf("%s: JSON scores %v, want unscored 4 on graded only", what, cell.Scores)
		}
		if _, ok := cell.Scores[0]["unscored_error"]; ok || cell.Scores[1]["unscored_error"] != why {
			t.Errorf("%s: JSON scores %v, want unscored_error %q on graded only", what, cell.Scores, why)
		}
		return why
	}
	why := check("run", rep)
	back, _, err := LoadReport(rep.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if again := check("report", back); again != why {
		t.Errorf("the report says %q, the run said %q: want one sample's, whatever the order", again, why)
	}
}
