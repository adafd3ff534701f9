package sweep

import (
	"errors"
	"strings"
	"testing"
)

// pass@k counts the passes of the scorer pass_scorer names, the first
// scorer by default; the manifest and the report say which.
func TestPassScorer(t *testing.T) {
	// The mock answers r5 ("5 + 5") with 11: exact fails it, and a
	// regex that takes any number passes every row.
	scorers := "scorers: [exact, {type: regex, name: number, pattern: '^[0-9]+$'}]\n"
	for _, tc := range []struct {
		pass     string
		want     string // the report's PassScorer
		wantPass float64
	}{
		{"", "exact", 5.0 / 6},
		{"pass_scorer: number\n", "number", 1},
		{"pass_scorer: exact\n", "exact", 5.0 / 6},
	} {
		path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\n"+scorers+tc.pass, map[string]string{})
		rep := run(t, path, Options{})
		if rep.PassScorer != tc.want {
			t.Errorf("%q: report's pass scorer %q, want %q", tc.pass, rep.PassScorer, tc.want)
		}
		if got := rep.Cells[0].PassAtK["1"]; got != tc.wantPass {
			t.Errorf("%q: pass@1 = %v, want %v", tc.pass, got, tc.wantPass)
		}
		// Read back from disk, as lllm sweep report does.
		back, _, err := LoadReport(rep.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if back.PassScorer != tc.want || back.Cells[0].PassAtK["1"] != tc.wantPass {
			t.Errorf("%q: report from disk: pass scorer %q, pass@1 %v; want %q, %v",
				tc.pass, back.PassScorer, back.Cells[0].PassAtK["1"], tc.want, tc.wantPass)
		}
	}
}

// A pass_scorer that is not a scorer of the spec is an error at its line,
// naming the scorers and the closest one.
func TestPassScorerUnknown(t *testing.T) {
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\nscorers: [exact, {type: regex, name: number, pattern: '.'}]\npass_scorer: numbr\n", map[string]string{})
	_, err := LoadSpec(path)
	if err == nil {
		t.Fatal("an unknown pass_scorer was accepted")
	}
	var se *SpecError
	for _, want := range []string{"sweep.yaml:4", "pass_scorer", `"numbr"`, `did you mean "number"`, "exact, number"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if !errors.As(err, &se) {
		t.Errorf("error is %T, want a *SpecError", err)
	}
}

// A pass_scorer that names a scorer's type, not its name, says so.
func TestPassScorerByType(t *testing.T) {
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\nscorers: [exact, {type: contains, name: mentions}]\npass_scorer: contains\n", map[string]string{})
	_, err := LoadSpec(path)
	if err == nil || !strings.Contains(err.Error(), `the scorer of type contains is named "mentions"`) {
		t.Fatalf("pass_scorer naming a type: %v", err)
	}
}
