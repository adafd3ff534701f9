package inspect_test

import (
	"strings"
	"testing"

	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
)

// resultRun is a run with no dialog that ended with result (JSON).
func resultRun(t *testing.T, result string) *inspect.Tree {
	t.Helper()
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "test", Task: []byte(`"q"`)}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK, Result: []byte(result)}); err != nil {
		t.Fatal(err)
	}
	return load(t, run, inspect.Options{Messages: true})
}

// Two structured results differ value by value, by path, as configs do:
// the text names each path, and a scalar result stays one line.
func TestDiffResultChanges(t *testing.T) {
	a := resultRun(t, `{"verdict": "con", "rounds": [{"pro": "p1", "con": "c1"}], "score": 1}`)
	b := resultRun(t, `{"verdict": "pro", "rounds": [{"pro": "p1", "con": "c1"}, {"pro": "p2"}], "score": 1}`)
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []inspect.Change{
		{Path: "rounds.1.pro", B: `"p2"`},
		{Path: "verdict", A: `"con"`, B: `"pro"`},
	}
	if d.Result == nil || len(d.ResultChanges) != len(want) {
		t.Fatalf("result %+v, changes %+v; want %+v", d.Result, d.ResultChanges, want)
	}
	for i, c := range want {
		if d.ResultChanges[i] != c {
			t.Errorf("change %d: %+v, want %+v", i, d.ResultChanges[i], c)
		}
	}
	text := compareText(t, d, inspect.TextOptions{})
	if !strings.Contains(text, "result:\n  rounds.1.pro: (none) → \"p2\"\n  verdict: \"con\" → \"pro\"\n") {
		t.Errorf("text:\n%s", text)
	}

	// Scalar results: no changes by path, one line.
	d, err = inspect.Compare(resultRun(t, `"four"`), resultRun(t, `"five"`))
	if err != nil {
		t.Fatal(err)
	}
	if d.ResultChanges != nil || !strings.Contains(compareText(t, d, inspect.TextOptions{}), "result: \"four\" → \"five\"\n") {
		t.Errorf("scalar results: changes %+v, text:\n%s", d.ResultChanges, compareText(t, d, inspect.TextOptions{}))
	}
}

// Many changed values: the text shows the first ten and counts the rest.
func TestDiffResultChangesCapped(t *testing.T) {
	var a, b strings.Builder
	a.WriteString("[")
	b.WriteString("[")
	for i := range 25 {
		if i > 0 {
			a.WriteString(",")
			b.WriteString(",")
		}
		a.WriteString("1")
		b.WriteString("2")
	}
	a.WriteString("]")
	b.WriteString("]")
	d, err := inspect.Compare(resultRun(t, a.String()), resultRun(t, b.String()))
	if err != nil {
		t.Fatal(err)
	}
	text := compareText(t, d, inspect.TextOptions{})
	if len(d.ResultChanges) != 25 || strings.Count(text, ": 1 → 2\n") != 10 || !strings.Contains(text, "  … and 15 more (-o json has them all)\n") {
		t.Errorf("%d changes; text:\n%s", len(d.ResultChanges), text)
	}
}

// A run that never ended (killed) has no result to compare by path.
func TestDiffResultOfAnUnfinishedRun(t *testing.T) {
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "test", Task: []byte(`"q"`)}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	unfinished := load(t, run, inspect.Options{Messages: true})
	d, err := inspect.Compare(unfinished, resultRun(t, `{"a": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Result == nil || d.Result.A != "" || d.ResultChanges != nil {
		t.Errorf("result %+v, changes %+v; want only B's result", d.Result, d.ResultChanges)
	}
}
