package sweep

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/config"
)

// place is where a problem is and the start of its message, as its
// *config.Error says.
type place struct {
	file      string // the base name
	line, col int
	msgPrefix string
}

// specProblems loads the spec at path and prepares it (when it parses),
// and returns its problems one by one.
func specProblems(t *testing.T, path string) []error {
	t.Helper()
	spec, err := LoadSpec(path)
	if err == nil {
		_, err = New(context.Background(), spec, Options{Dir: filepath.Join(filepath.Dir(path), "out")})
	}
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("%v: want a *SpecError", err)
	}
	var out []error
	var split func(error)
	split = func(e error) {
		var inner *SpecError
		if errors.As(e, &inner) && inner.Error() == e.Error() {
			e = inner.Err
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				split(x)
			}
			return
		}
		out = append(out, e)
	}
	split(se.Err)
	return out
}

// checkPlaces checks that each problem is a *config.Error, as a whole, at
// its place, and that its text is the config.Error's: FILE:LINE:COL:
// MESSAGE.
func checkPlaces(t *testing.T, errs []error, want []place) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(errs), len(want), errors.Join(errs...))
	}
	for i, e := range errs {
		var pe *config.Error
		if !errors.As(e, &pe) || pe.Error() != e.Error() {
			t.Errorf("problem %d %q is not a *config.Error", i+1, e)
			continue
		}
		w := want[i]
		msg := (&config.Error{Msg: pe.Msg, Err: pe.Err}).Error()
		if filepath.Base(pe.File) != w.file || pe.Line != w.line || pe.Column != w.col || !strings.HasPrefix(msg, w.msgPrefix) {
			t.Errorf("problem %d: %s, line %d, column %d, %q; want %s, %d, %d, %q...", i+1, pe.File, pe.Line, pe.Column, msg, w.file, w.line, w.col, w.msgPrefix)
		}
	}
}

// The problems of a spec alone are *config.Errors at their line of the
// spec; a scorer without a type no longer hides the others.
func TestSpecProblemsArePlaced(t *testing.T) {
	path := writeSweep(t, `config: config.yaml
dataset: rows.jsonl
scorers: [exact, {name: x}]
repets: 2
repeats: -1
cache: maybe
budget: {max_cots: 1}
axes:
  a: []
  b: 3
zip:
  global.model_name: [mock/a, mock/b]
  global.api_key_env: [A]
`, map[string]string{})
	errs := specProblems(t, path)
	checkPlaces(t, errs, []place{
		{file: "sweep.yaml", line: 9, msgPrefix: "axes.a: want a non-empty list"},
		{file: "sweep.yaml", line: 10, msgPrefix: "axes.b: want a non-empty list"},
		{file: "sweep.yaml", line: 3, msgPrefix: "a scorer needs a type"},
		{file: "sweep.yaml", line: 4, msgPrefix: `unknown key "repets" (did you mean "repeats"?)`},
		{file: "sweep.yaml", line: 7, msgPrefix: `unknown key "max_cots" in budget (did you mean "max_cost"?)`},
		{file: "sweep.yaml", line: 5, msgPrefix: "repeats: -1: want 1 or more"},
		{file: "sweep.yaml", line: 6, msgPrefix: `cache: "maybe": want auto, on or off`},
		{file: "sweep.yaml", line: 13, msgPrefix: "zip: global.api_key_env has 1 values"},
	})
	// The text is as it was: FILE:LINE: MESSAGE.
	if got, want := errs[2].Error(), path+":3: a scorer needs a type, such as {type: exact}"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}

// The problems found once the spec parses are placed too: a dataset row at
// its line of the dataset (a CSV quote at its column), a missing dataset or
// base config at its key in the spec, the base config's own problems where
// the base config has them, a scorer at its line, and an axis at its line,
// without the "--set" it is applied as.
func TestSweepProblemsArePlaced(t *testing.T) {
	const spec = "config: %s\ndataset: %s\nscorers: [exakt]\naxes:\n  global.zzzzzzzzqqq: [1]\n"
	for _, c := range []struct {
		name, config, dataset string
		files                 map[string]string
		want                  []place
	}{
		{"a bad row and a bad axis", "config.yaml", "rows.jsonl",
			map[string]string{"rows.jsonl": `{"id": "a", "input": "x"}` + "\n" + `{"input": "no id"}` + "\n"},
			[]place{
				{file: "rows.jsonl", line: 2, msgPrefix: `no "id"`},
				{file: "sweep.yaml", line: 5, msgPrefix: `axis global.zzzzzzzzqqq: unknown key "zzzzzzzzqqq" in global`},
				{file: "sweep.yaml", line: 3, msgPrefix: `unknown scorer "exakt" (did you mean "exact"?)`},
			}},
		{"a CSV quote", "config.yaml", "rows.csv",
			map[string]string{"rows.csv": "id,input\na,x\nb,y \"z\" w\n"},
			[]place{
				{file: "rows.csv", line: 3, col: 5, msgPrefix: `bare " in non-quoted-field`},
				{file: "sweep.yaml", line: 5, msgPrefix: "axis global.zzzzzzzzqqq"},
				{file: "sweep.yaml", line: 3, msgPrefix: `unknown scorer "exakt"`},
			}},
		{"missing files", "missing.yaml", "missing.jsonl", map[string]string{},
			[]place{
				{file: "sweep.yaml", line: 1, msgPrefix: "config: load config: open "},
				{file: "sweep.yaml", line: 2, msgPrefix: "dataset: open "},
			}},
		{"the base config's problems", "bad.yaml", "rows.jsonl",
			map[string]string{"bad.yaml": "tactic_type: chat\nglobal: {model_name: mock/m, modl: 3}\nagent_configs: [{name: assistant, system_prompt: Hi., foo: 1}]\n"},
			[]place{
				{file: "bad.yaml", line: 2, col: 30, msgPrefix: `unknown key "modl" in global`},
				{file: "bad.yaml", line: 3, col: 55, msgPrefix: `unknown key "foo" in agent_configs[0]`},
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeSweep(t, fmt.Sprintf(spec, c.config, c.dataset), c.files)
			checkPlaces(t, specProblems(t, path), c.want)
		})
	}

	// An empty dataset is a problem of the file, at the spec's dataset.
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\n", map[string]string{"rows.jsonl": "\n"})
	checkPlaces(t, specProblems(t, path), []place{{file: "sweep.yaml", line: 2, msgPrefix: "dataset "}})
}

// A row without the expected answer, when a scorer compares answers with
// it, is a problem at its line: its samples scored 0 on exact and 1 on a
// regex scorer whatever the answer, and a misspelt dataset.expected did so
// to every row. A scorer that does not read it needs none.
func TestSweepRowsWithoutExpected(t *testing.T) {
	rows := `{"id": "a", "input": "x", "answer": "1"}` + "\n" + `{"id": "b", "input": "y"}` + "\n"
	for _, c := range []struct {
		dataset, scorers string
		want             []place
	}{
		{"rows.jsonl", "[{type: regex, pattern: x}, exact]", []place{
			{file: "rows.jsonl", line: 1, msgPrefix: `no row has "expected", the expected answer, which scorer exact compares the answer with: set dataset.expected`},
		}},
		{"{path: rows.jsonl, expected: answer}", "[numeric]", []place{
			{file: "rows.jsonl", line: 2, msgPrefix: `no "answer", the expected answer, which scorer numeric compares the answer with: give the row one (1 of the 2 rows have none)`},
		}},
		{"{path: rows.jsonl, expected: answer}", "[{type: regex, pattern: x}, {type: json_field, field: f, value: 1}]", nil},
	} {
		path := writeSweep(t, "config: config.yaml\ndataset: "+c.dataset+"\nscorers: "+c.scorers+"\n", map[string]string{"rows.jsonl": rows})
		if c.want == nil {
			newSweep(t, path, Options{})
			continue
		}
		checkPlaces(t, specProblems(t, path), c.want)
	}
}

// A misspelt dataset field is an error at its line, not a silent default.
func TestSweepDatasetUnknownKey(t *testing.T) {
	path := writeSweep(t, "config: config.yaml\ndataset:\n  path: rows.jsonl\n  idd: qid\nscorers: [exact]\n", map[string]string{})
	checkPlaces(t, specProblems(t, path), []place{
		{file: "sweep.yaml", line: 4, msgPrefix: `unknown key "idd" in dataset (did you mean "id"?)`},
	})
}

// Every bad axis is a problem at its line, once however many cells it is
// in; the good axes around them are no problem.
func TestSweepEveryBadAxis(t *testing.T) {
	path := writeSweep(t, `config: config.yaml
dataset: rows.jsonl
scorers: [exact]
axes:
  global.zzzzzzzzqqq: [1]
  global.model_args.temperature: [0, 0.5]
  global.model_argz.temperature: [0]
  agent_configs.assistant.system_prompt: [A., B.]
zip:
  global.yyyyyyyyqqq: [1, 2]
`, map[string]string{})
	checkPlaces(t, specProblems(t, path), []place{
		{file: "sweep.yaml", line: 5, msgPrefix: `axis global.zzzzzzzzqqq: unknown key "zzzzzzzzqqq" in global`},
		{file: "sweep.yaml", line: 7, msgPrefix: `axis global.model_argz.temperature is not in the config (did you mean "global.model_args.temperature"?)`},
		{file: "sweep.yaml", line: 10, msgPrefix: `axis global.yyyyyyyyqqq: unknown key "yyyyyyyyqqq" in global`},
	})
}

// An axis may add a key the base config does not set (model_args.top_p,
// seed, a context manager's setting): only a segment close to a key
// beside it is a typo.
func TestSweepAxisAddsKeys(t *testing.T) {
	path := writeSweep(t, `config: config.yaml
dataset: rows.jsonl
scorers: [exact]
axes:
  global.model_args.top_p: [0.5, 0.9]
  global.model_args.seed: [1, 2]
  agent_configs.assistant.model_args.top_p: [0.2, 0.3]
`, map[string]string{})
	spec, err := LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), spec, Options{Dir: filepath.Join(filepath.Dir(path), "out")})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Plan().Cells); n != 8 {
		t.Errorf("%d cells, want 8", n)
	}
	path = writeSweep(t, `config: config.yaml
dataset: rows.jsonl
scorers: [exact]
axes:
  global.model_args.tempreature: [0.5]
  agent_configs.asistant.model_args.temperature: [0.5]
`, map[string]string{})
	checkPlaces(t, specProblems(t, path), []place{
		{file: "sweep.yaml", line: 5, msgPrefix: `axis global.model_args.tempreature is not in the config (did you mean "global.model_args.temperature"?)`},
		{file: "sweep.yaml", line: 6, msgPrefix: `axis agent_configs.asistant.model_args.temperature is not in the config (did you mean "agent_configs.assistant.model_args.temperature"?)`},
	})
}

// A fraction where a whole number goes is a problem at its line, not cut
// down: repeats: 2.7 ran 2 repeats, concurrency: 0.5 the default 8.
// A whole number written 1.0 is 1.
func TestSweepFractionsRefused(t *testing.T) {
	path := writeSweep(t, `config: config.yaml
dataset: rows.jsonl
scorers: [exact]
repeats: 2.7
pass_k: [1, 1.5]
concurrency: 0.5
provider_concurrency: {mock: 2.5}
retries: 1.0
max_consecutive_errors: 3
`, map[string]string{})
	checkPlaces(t, specProblems(t, path), []place{
		{file: "sweep.yaml", line: 4, msgPrefix: `repeats: 2.7: want a whole number`},
		{file: "sweep.yaml", line: 5, msgPrefix: `pass_k: 1.5: want a whole number`},
		{file: "sweep.yaml", line: 6, msgPrefix: `concurrency: 0.5: want a whole number`},
		{file: "sweep.yaml", line: 7, msgPrefix: `provider_concurrency: 2.5: want a whole number`},
	})
}
