package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	cfg, _ := writeConfig(t, chatConfig)
	r := lllm(t, "validate", cfg)
	if r.code != 0 || r.stdout != cfg+": ok (tactic chat, agents assistant)\n" {
		t.Fatalf("%v", r)
	}

	// Several problems at once, each with its place.
	bad, _ := writeConfig(t, `tactic_type: chat
global:
  model_name: nomodel
agent_configs:
  - name: helper
    system_prompt: hi
  - name: helper
`)
	r = lllm(t, "validate", bad)
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if r.code != ExitUsage || r.stdout != "" || len(lines) < 5 {
		t.Fatalf("%v", r)
	}
	for _, want := range []string{"not of the form provider/model", "duplicate agent name", "needs system_prompt", `needs agent "assistant"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("no %q in\n%s", want, r.stderr)
		}
	}
	for _, l := range lines[:len(lines)-1] {
		if !regexp.MustCompile(`^` + regexp.QuoteMeta(bad) + `:\d+:\d+: `).MatchString(l) {
			t.Errorf("problem %q is not file:line:col: msg", l)
		}
	}
	if !strings.HasPrefix(lines[len(lines)-1], "lllm: "+bad+": ") {
		t.Errorf("last line %q", lines[len(lines)-1])
	}

	// Strict keys: every unknown key, with a suggestion.
	typos, _ := writeConfig(t, strings.Replace(strings.Replace(chatConfig, "model_name:", "model_nam:", 1), "system_prompt:", "sytem_prompt:", 1))
	r = lllm(t, "validate", typos)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "model_nam") || !strings.Contains(r.stderr, "sytem_prompt") {
		t.Fatalf("%v", r)
	}

	// An unknown tactic, and --set applied before checking.
	r = lllm(t, "validate", cfg, "--set", "tactic_type=chta")
	if r.code != ExitUsage || !strings.Contains(r.stderr, `did you mean "chat"`) {
		t.Fatalf("%v", r)
	}
	r = lllm(t, "validate", cfg, "--set", "global.model_name=opneai/x")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "opneai") {
		t.Fatalf("%v", r)
	}
}

// Every config in configs/ validates, serve.yaml as lllm serve loads it;
// a serve config's problems are reported like any other config's.
func TestValidateShippedConfigs(t *testing.T) {
	for _, name := range []string{"quickstart", "chat", "best_of_n", "debate", "self_refine", "react", "serve"} {
		r := lllm(t, "validate", "../../../configs/"+name+".yaml")
		if r.code != 0 || !strings.Contains(r.stdout, ": ok (tactic ") {
			t.Errorf("%s: %v", name, r)
		}
	}
	r := lllm(t, "validate", "../../../configs/serve.yaml", "--set", "agent_configs.critic.model_name=nope/x")
	if r.code != ExitUsage || !strings.Contains(r.stderr, `--set agent_configs.critic.model_name: agent critic: model_name: provider: unknown provider "nope"`) {
		t.Fatalf("%v", r)
	}
}

// A sweep spec is checked as lllm sweep checks it before running.
func TestValidateSweepSpec(t *testing.T) {
	r := lllm(t, "validate", "../../../configs/sweep-example.yaml", "--log-dir", t.TempDir())
	if r.code != 0 || r.stdout != "../../../configs/sweep-example.yaml: ok (sweep spec: 4 cells, 80 samples)\n" {
		t.Fatalf("%v", r)
	}
	r = lllm(t, "validate", "../../../configs/sweep-example.yaml", "--log-dir", t.TempDir(), "--set", "global.modl_name=x")
	if r.code != ExitUsage || !strings.Contains(r.stderr, `unknown key "modl_name" in global (did you mean "model_name"?)`) {
		t.Fatalf("%v", r)
	}
	// Every problem of a spec on its own line, counted.
	dir := t.TempDir()
	spec := filepath.Join(dir, "sweep.yaml")
	abs, _ := filepath.Abs("../../../configs/chat.yaml")
	if err := os.WriteFile(spec, []byte("config: "+abs+"\ndataset: rows.jsonl\nscorers: [exakt]\naxes:\n  global.modl_name: [mock/a]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = lllm(t, "validate", spec, "--log-dir", t.TempDir())
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if r.code != ExitUsage || len(lines) != 4 || lines[3] != "lllm: "+spec+": 3 problems" {
		t.Fatalf("%v", r)
	}
	for i, want := range []string{spec + ":2: dataset: open", `did you mean "global.model_name"?`, `unknown scorer "exakt"`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %q, want %q in it", i+1, lines[i], want)
		}
	}
}

// lllm validate reports every problem at once: the tactic's params, each
// model_args key at its place, the context manager; a problem agents share
// (a typo in global) once, naming them all.
func TestValidateEveryProblemAtOnce(t *testing.T) {
	cfg, _ := writeConfig(t, `tactic_type: best_of_n
params: {n: 2, foo: 1}
global:
  model_name: mock/demo
  model_args: {temprature: 0.5, max_tokns: 10}
  context_manager: {type: windw}
agent_configs:
  - {name: solver, system_prompt: You solve.}
  - {name: judge, system_prompt: You judge.}
`)
	r := lllm(t, "validate", cfg)
	if r.code != ExitUsage {
		t.Fatalf("exit %d\n%v", r.code, r)
	}
	for _, want := range []string{
		`chat.yaml:2:16: tactic best_of_n: unknown param "foo" (accepted: n)`,
		`chat.yaml:5:33: agents solver, judge: model_args: unknown key "max_tokns" (did you mean "max_tokens"?)`,
		`chat.yaml:5:16: agents solver, judge: model_args: unknown key "temprature" (did you mean "temperature"?)`,
		`agents solver, judge: context_manager: unknown context manager type "windw" (did you mean "window"?)`,
		"4 problems",
	} {
		if strings.Count(r.stdout+r.stderr, want) != 1 {
			t.Errorf("output does not say once %q:\n%v", want, r)
		}
	}
}

// lllm validate -o json gives each problem's place and message apart, as
// the text gives them on a line, and still exits 2; a valid config is
// valid with no problems.
func TestValidateJSON(t *testing.T) {
	cfg, _ := writeConfig(t, `tactic_type: best_of_n
params: {n: 2, foo: 1}
global:
  model_name: mock/demo
  context_manager: {type: windw}
agent_configs:
  - {name: solver, system_prompt: You solve.}
  - {name: judge, system_prompt: You judge.}
`)
	text := lllm(t, "validate", cfg)
	r := lllm(t, "validate", cfg, "-o", "json")
	if r.code != ExitUsage || text.code != ExitUsage || !strings.HasSuffix(r.stderr, "lllm: "+cfg+": 2 problems\n") {
		t.Fatalf("%v", r)
	}
	got := decodeJSON[validationJSON](t, r.stdout)
	if got.Config != cfg || got.Kind != "tactic" || got.Valid || len(got.Problems) != 2 {
		t.Fatalf("%+v", got)
	}
	wantProblemLines(t, got.Problems, text.stderr)
	if p := got.Problems[0]; p.File != cfg || p.Line != 2 || p.Column != 16 || p.Where != fmt.Sprintf("%s:2:16", cfg) ||
		p.Message != `tactic best_of_n: unknown param "foo" (accepted: n)` {
		t.Errorf("the param problem: %+v", p)
	}
	if p := got.Problems[1]; p.File != cfg || p.Line != 5 || !strings.Contains(p.Message, `unknown context manager type "windw"`) {
		t.Errorf("the context manager problem: %+v", p)
	}

	// An override's problem is at its --set, with the key it sets.
	r = lllm(t, "validate", cfg, "--set", "global.modl_name=x", "-o", "json")
	got = decodeJSON[validationJSON](t, r.stdout)
	if r.code != ExitUsage || len(got.Problems) != 1 {
		t.Fatalf("%v", r)
	}
	if p := got.Problems[0]; p.Where != "--set global.modl_name" || p.Path != "global.modl_name" || p.File != "" || p.Line != 0 ||
		!strings.HasPrefix(p.Message, `unknown key "modl_name" in global`) {
		t.Errorf("the --set problem: %+v", p)
	}

	// Valid: the tactic and agents, and an empty list of problems.
	r = lllm(t, "validate", "../../../configs/quickstart.yaml", "-o", "json")
	ok := decodeJSON[map[string]any](t, r.stdout)
	if r.code != 0 || ok["valid"] != true || ok["tactic"] != "best_of_n" || fmt.Sprint(ok["agents"]) != "[solver judge]" ||
		ok["problems"] == nil || len(ok["problems"].([]any)) != 0 {
		t.Errorf("%v", r)
	}
	// The text stays as it was.
	if r := lllm(t, "validate", "../../../configs/quickstart.yaml"); r.stdout != "../../../configs/quickstart.yaml: ok (tactic best_of_n, agents solver, judge)\n" {
		t.Errorf("%v", r)
	}
}

// lllm validate -o json on a sweep spec gives each problem's place from
// the problem's fields: the spec's line, a dataset's line and column, the
// base config's own place, or a --set and its path; and each problem is
// the text's line, taken apart.
func TestValidateSweepSpecJSON(t *testing.T) {
	dir := t.TempDir()
	ctWrite(t, filepath.Join(dir, "chat.yaml"), "tactic_type: chat\nglobal: {model_name: mock/m}\nagent_configs: [{name: assistant, system_prompt: Hi.}]\n")
	ctWrite(t, filepath.Join(dir, "bad.yaml"), "tactic_type: chat\nglobal: {model_name: mock/m, modl: 3}\nagent_configs: [{name: assistant, system_prompt: Hi.}]\n")
	ctWrite(t, filepath.Join(dir, "rows.csv"), "id,input\na,x\nb,y \"z\" w\n")
	spec := filepath.Join(dir, "sweep.yaml")
	logDir := filepath.Join(dir, "logs")

	check := func(t *testing.T, args []string, want []problemJSON) {
		t.Helper()
		text := lllm(t, append([]string{"validate", spec, "--log-dir", logDir}, args...)...)
		r := lllm(t, append([]string{"validate", spec, "--log-dir", logDir, "-o", "json"}, args...)...)
		if r.code != ExitUsage || text.code != ExitUsage {
			t.Fatalf("text:\n%v\njson:\n%v", text, r)
		}
		got := decodeJSON[validationJSON](t, r.stdout)
		if got.Kind != "sweep" || got.Valid || len(got.Problems) != len(want) {
			t.Fatalf("%d problems, want %d:\n%s", len(got.Problems), len(want), r.stdout)
		}
		wantProblemLines(t, got.Problems, text.stderr)
		for i, p := range got.Problems {
			w := want[i]
			if p.Where != w.Where || p.File != w.File || p.Line != w.Line || p.Column != w.Column || p.Path != w.Path || !strings.HasPrefix(p.Message, w.Message) {
				t.Errorf("problem %d: %+v\nwant %+v (the message starting so)", i+1, p, w)
			}
		}
	}

	t.Run("spec", func(t *testing.T) {
		ctWrite(t, spec, "config: chat.yaml\ndataset: rows.csv\nrepeats: -1\nscorers: [exact, {name: x}]\n")
		check(t, nil, []problemJSON{
			{Where: spec + ":4", File: spec, Line: 4, Message: "a scorer needs a type"},
			{Where: spec + ":3", File: spec, Line: 3, Message: "repeats: -1: want 1 or more"},
		})
	})
	t.Run("files", func(t *testing.T) {
		ctWrite(t, spec, "config: bad.yaml\ndataset: rows.csv\n")
		bad := filepath.Join(dir, "bad.yaml")
		rows := filepath.Join(dir, "rows.csv")
		check(t, nil, []problemJSON{
			{Where: bad + ":2:30", File: bad, Line: 2, Column: 30, Message: `unknown key "modl" in global`},
			{Where: rows + ":3:5", File: rows, Line: 3, Column: 5, Message: `bare " in non-quoted-field`},
		})
	})
	t.Run("axes and scorers", func(t *testing.T) {
		ctWrite(t, filepath.Join(dir, "rows.jsonl"), `{"id": "a", "input": "x"}`+"\n")
		ctWrite(t, spec, "config: chat.yaml\ndataset: rows.jsonl\nscorers: [exakt]\naxes:\n  global.zzzzzzzzqqq: [1]\n")
		check(t, nil, []problemJSON{
			{Where: spec + ":5", File: spec, Line: 5, Message: `axis global.zzzzzzzzqqq: unknown key "zzzzzzzzqqq" in global`},
			{Where: spec + ":3", File: spec, Line: 3, Message: `unknown scorer "exakt"`},
		})
	})
	t.Run("--set", func(t *testing.T) {
		ctWrite(t, spec, "config: chat.yaml\ndataset: rows.jsonl\n")
		check(t, []string{"--set", "global.modl_name=x"}, []problemJSON{
			{Where: "--set global.modl_name", Path: "global.modl_name", Message: `unknown key "modl_name" in global (did you mean "model_name"?)`},
		})
	})
}

// A context manager's bad key is reported at the --set that gave it, or
// at its line in the file, by run and validate alike, with no run.
func TestContextManagerKeyPlaced(t *testing.T) {
	text := strings.Replace(chatConfig, "  model_args: {temperature: 0.2}\n", "  model_args: {temperature: 0.2}\n  context_manager:\n    type: default\n    max_tokens: 64000\n", 1)
	cfg, logDir := writeConfig(t, text)
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"--set", "global.context_manager.buffer=-5"},
			`--set global.context_manager.buffer: agent assistant: context_manager: default: key buffer must be at least 0, not -5`},
		{[]string{"--set", "global.context_manager.max_tokens=lots"},
			`--set global.context_manager.max_tokens: agent assistant: context_manager: default: key max_tokens must be an integer, not "lots"`},
		{[]string{"--set", "global.context_manager.type=window"},
			regexp.QuoteMeta(cfg) + `:7:5: agent assistant: context_manager: window: unknown key "max_tokens" \(accepted: type, n\)`},
	} {
		wantProblems(t, lllm(t, append([]string{"run", cfg, "--task", "x", "--log-dir", logDir}, c.set...)...), `(?m)^lllm: `+c.want+`$`)
		if r := lllm(t, append([]string{"validate", cfg}, c.set...)...); r.code != ExitUsage || !regexp.MustCompile(`(?m)^`+c.want+`$`).MatchString(r.stderr) {
			t.Errorf("validate %v: want a problem matching %s:\n%v", c.set, c.want, r)
		}
	}
	if _, err := os.Stat(logDir); err == nil {
		t.Error("a bad context manager started a run")
	}
}

// kindOf tells a sweep spec, a serve config and a tactic config apart by
// their top-level keys even when one of them is written twice, so that
// lllm validate checks a sweep spec as one (not as a tactic config, which
// reports its keys config, dataset and axes wrongly) and lllm run names
// the command a spec or a serve config is for.
func TestKindOfWithDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	for file, tc := range map[string]struct{ yaml, want string }{
		"sweep.yaml":  {"config: c.yaml\ndataset: d.jsonl\nrepeats: 2\nrepeats: 3\n", "sweep"},
		"serve.yaml":  {"tactic_type: serve\nglobal: {model_name: mock/m}\nglobal: {model_name: mock/n}\n", "serve"},
		"tactic.yaml": {"tactic_type: chat\nparams: {}\nparams: {}\n", "tactic"},
		"alias.yaml":  {"x: &t serve\ntactic_type: *t\n", "serve"},
		"list.yaml":   {"- a\n- b\n", ""},
	} {
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := kindOf(path); got != tc.want {
			t.Errorf("%s: kind %q, want %q", file, got, tc.want)
		}
	}
}

// wantProblemLines checks that each problem of lllm validate -o json is
// the line of the text output (stderr) at its place, taken apart.
func wantProblemLines(t *testing.T, problems []problemJSON, stderr string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	for i, p := range problems {
		line := p.Message
		if p.Where != "" {
			line = p.Where + ": " + p.Message
		}
		if i >= len(lines) || line != lines[i] {
			t.Errorf("problem %d: %+v; the text's lines are %q", i+1, p, lines)
		}
	}
}
