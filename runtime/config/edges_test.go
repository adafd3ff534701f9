package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// edgeFS is an in-memory readFile that records every file it hands out.
func edgeFS(files map[string]string) (func(string) ([]byte, error), map[string][]byte) {
	served := map[string][]byte{}
	return func(name string) ([]byte, error) {
		s, ok := files[filepath.Clean(name)]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		b := []byte(s)
		served[filepath.Clean(name)] = b
		return b, nil
	}, served
}

// edgeWrite writes files under dir, creating folders.
func edgeWrite(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// edgeLines splits a joined error into its lines ("" for nil).
func edgeLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// edgeParse parses src as t.yaml with no base files.
func edgeParse(t *testing.T, src string) *Config {
	t.Helper()
	c, err := Parse("t.yaml", []byte(src), nil)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return c
}

// TestEdgeBaseChainThreeDeepAcrossDirs resolves a 3-deep chain whose relative bases live in different folders.
func TestEdgeBaseChainThreeDeepAcrossDirs(t *testing.T) {
	fsys, _ := edgeFS(map[string]string{
		"a/p/parent.yaml": "base: ../q/gp.yml\nparams: {b: 2, c: 2}\n",
		"a/q/gp.yml":      "tactic_type: chat\nlog_dir: gp\nparams: {a: 1, b: 1}\n",
	})
	c, err := Parse("a/b/c/child.yaml", []byte("base: ../../p/parent\nparams: {c: 3, d: 3}\n"), fsys)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"a": 1, "b": 2, "c": 3, "d": 3}; !reflect.DeepEqual(c.Params, want) {
		t.Errorf("Params = %v, want %v", c.Params, want)
	}
	wantFiles := []string{"a/b/c/child.yaml", filepath.Join("a", "p", "parent.yaml"), filepath.Join("a", "q", "gp.yml")}
	if !reflect.DeepEqual(c.Files, wantFiles) || c.Base != "../../p/parent" {
		t.Errorf("Files = %q, Base = %q", c.Files, c.Base)
	}
	if p := c.pos.lookup("log_dir"); p.file != wantFiles[2] || p.line != 2 {
		t.Errorf("log_dir written at %+v, want %s:2", p, wantFiles[2])
	}
}

// TestEdgeBaseAbsolutePath follows a base written as an absolute path, with and without its extension.
func TestEdgeBaseAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	edgeWrite(t, dir, map[string]string{"shared/base.yaml": "tactic_type: chat\nparams: {k: base}\n"})
	abs := filepath.Join(dir, "shared", "base")
	for _, base := range []string{abs, abs + ".yaml"} {
		edgeWrite(t, dir, map[string]string{"elsewhere/x.yaml": fmt.Sprintf("base: %q\nparams: {j: child}\n", base)})
		c, err := Load(filepath.Join(dir, "elsewhere", "x.yaml"))
		if err != nil {
			t.Fatalf("base %s: %v", base, err)
		}
		if c.TacticType != "chat" || !reflect.DeepEqual(c.Params, map[string]any{"k": "base", "j": "child"}) || c.Files[1] != abs+".yaml" {
			t.Errorf("base %s: %+v", base, c)
		}
	}
}

// TestEdgeBaseMissingNamesChain reports a missing base deep in a chain at its place and names the files that led to it.
func TestEdgeBaseMissingNamesChain(t *testing.T) {
	fsys, _ := edgeFS(map[string]string{
		"a/p/parent.yaml": "base: ../q/gp.yml\n",
		"a/q/gp.yml":      "params: {a: 1}\nbase: nope\n",
	})
	_, err := Parse("a/b/c/child.yaml", []byte("base: ../../p/parent\n"), fsys)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
	gp := filepath.Join("a", "q", "gp.yml")
	if !strings.HasPrefix(err.Error(), gp+`:2:1: base "nope"`) || !strings.Contains(err.Error(), filepath.Join("a", "q", "nope.yaml")) {
		t.Errorf("err = %v, want it at %s:2:1 naming what was tried", err, gp)
	}
	for _, f := range []string{"a/b/c/child.yaml", filepath.Join("a", "p", "parent.yaml")} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("err = %v\ndoes not name %s, which led to the missing base", err, f)
		}
	}
}

// TestEdgeBaseCycleOfThree names all three files of a cycle, in order.
func TestEdgeBaseCycleOfThree(t *testing.T) {
	fsys, _ := edgeFS(map[string]string{"c2.yaml": "base: c3\n", "c3.yaml": "\nbase: c1.yaml\n", "c1.yaml": "base: c2\n"})
	_, err := Parse("c1.yaml", []byte("base: c2\n"), fsys)
	if want := "c3.yaml:2:1: base cycle: c1.yaml -> c2.yaml -> c3.yaml -> c1.yaml"; err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// TestEdgeBaseCycleThroughAbsolutePath detects a cycle when a file is named once relatively and once absolutely.
func TestEdgeBaseCycleThroughAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	edgeWrite(t, dir, map[string]string{"a.yaml": "base: b\n", "b.yaml": fmt.Sprintf("base: %q\n", a)})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, a)
	if err != nil {
		t.Skip("no relative path to the temp dir")
	}
	_, err = Load(rel)
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(e.Msg, "base cycle") {
		t.Fatalf("err = %v, want a base cycle", err)
	}
	// b names a, which is already in the chain: the cycle is a -> b -> a.
	if f, _ := filepath.Abs(e.File); f != b || strings.Count(e.Msg, "b.yaml") != 1 || strings.Count(e.Msg, "a.yaml") != 2 {
		t.Errorf("err = %v\nwant the cycle reported at %s as a -> b -> a", err, b)
	}
}

// TestEdgeBaseIsDirectory reports a base that is a directory at its place, plainly.
func TestEdgeBaseIsDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Parse(filepath.Join(dir, "x.yaml"), []byte("tactic_type: chat\nbase: shared\n"), nil)
	var e *Error
	if !errors.As(err, &e) || e.File != filepath.Join(dir, "x.yaml") || e.Line != 2 || !strings.Contains(err.Error(), `base "shared"`) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("err = %v, want x.yaml:2 naming the base and saying it is a directory", err)
	}
}

// TestEdgeMergeListsReplace replaces lists (agent_configs included) through the base chain and global, as REFERENCE says.
func TestEdgeMergeListsReplace(t *testing.T) {
	fsys, _ := edgeFS(map[string]string{"base.yaml": `
params: {l: [1, 2, 3], keep: [x]}
global: {model_name: mock/m, model_args: {stop: [a, b], t: 1}}
agent_configs:
  - {name: solver, system_prompt: s, model_args: {x: 1}}
  - {name: judge, system_prompt: j}
`})
	c, err := Parse("child.yaml", []byte("base: base\nparams: {l: [4]}\nagent_configs: [{name: judge, system_prompt: J, model_args: {stop: [c]}}]\n"), fsys)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"l": []any{4}, "keep": []any{"x"}}; !reflect.DeepEqual(c.Params, want) {
		t.Errorf("Params = %v, want %v", c.Params, want)
	}
	if len(c.Agents) != 1 || c.Agents[0].Name != "judge" || c.Agents[0].SystemPrompt != "J" {
		t.Fatalf("Agents = %+v, want the child's list only", c.Agents)
	}
	if want := map[string]any{"stop": []any{"c"}, "t": 1}; !reflect.DeepEqual(c.Agents[0].ModelArgs, want) {
		t.Errorf("judge model_args = %v, want %v", c.Agents[0].ModelArgs, want)
	}
}

// TestEdgeMergeNullReplaces keeps a key set to null (a scalar, so it replaces) rather than inheriting the base value.
func TestEdgeMergeNullReplaces(t *testing.T) {
	fsys, _ := edgeFS(map[string]string{"base.yaml": "params: {a: 1, b: 1}\nglobal: {model_name: mock/m, model_args: {seed: 7, t: 1}}\n"})
	c, err := Parse("child.yaml", []byte("base: base\nparams: {a: null}\nagent_configs: [{name: x, system_prompt: s, model_args: {seed: ~}}]\n"), fsys)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"a": nil, "b": 1}; !reflect.DeepEqual(c.Params, want) {
		t.Errorf("Params = %#v, want %#v", c.Params, want)
	}
	if want := map[string]any{"seed": nil, "t": 1}; !reflect.DeepEqual(c.Agents[0].ModelArgs, want) {
		t.Errorf("model_args = %#v, want %#v", c.Agents[0].ModelArgs, want)
	}
	if c.Global.ModelArgs["seed"] != 7 {
		t.Errorf("global changed: %v", c.Global.ModelArgs)
	}
}

// TestEdgeAnchorsAliasesMergeKeys expands aliases as copies and applies << with YAML's precedence.
func TestEdgeAnchorsAliasesMergeKeys(t *testing.T) {
	c := edgeParse(t, `
params:
  x: &x {k: 1, deep: {d: 1}}
  y: *x
  hi: &hi {a: hi, b: hi}
  lo: &lo {a: lo, c: lo}
  m: {<<: [*hi, *lo], b: own}
`)
	if want := map[string]any{"a": "hi", "b": "own", "c": "lo"}; !reflect.DeepEqual(c.Params["m"], want) {
		t.Errorf("m = %v, want %v", c.Params["m"], want)
	}
	r := c.Resolved()
	r["params"].(map[string]any)["x"].(map[string]any)["deep"].(map[string]any)["d"] = 2
	if c.Params["y"].(map[string]any)["deep"].(map[string]any)["d"] != 1 || c.Resolved()["params"].(map[string]any)["y"].(map[string]any)["deep"].(map[string]any)["d"] != 1 {
		t.Error("an alias shares state with its anchor")
	}
	// A typo merged in from an anchor is reported where it is written.
	_, err := Parse("t.yaml", []byte("defaults: &d {modle_name: x}\nagent_configs:\n  - {<<: *d, name: a}\n"), nil)
	if got := edgeLines(err); len(got) != 2 || !strings.HasPrefix(got[0], `t.yaml:1:1: unknown key "defaults"`) || !strings.HasPrefix(got[1], `t.yaml:1:15: unknown key "modle_name" in agent_configs[0] (did you mean "model_name"?)`) {
		t.Errorf("err = %v", err)
	}
}

// TestEdgeMultiDocument accepts one explicit document and rejects a second at its line.
func TestEdgeMultiDocument(t *testing.T) {
	if c := edgeParse(t, "---\ntactic_type: chat\n...\n"); c.TacticType != "chat" {
		t.Errorf("TacticType = %q", c.TacticType)
	}
	for _, src := range []string{"tactic_type: chat\n---\ntactic_type: x\n", "tactic_type: chat\n---\n# nothing\n"} {
		_, err := Parse("t.yaml", []byte(src), nil)
		if err == nil || !strings.HasPrefix(err.Error(), "t.yaml:2:1: more than one YAML document") {
			t.Errorf("Parse(%q) = %v", src, err)
		}
	}
}

// TestEdgeTabsBOMCRLF handles tabs, a byte order mark and CRLF line ends with exact positions.
func TestEdgeTabsBOMCRLF(t *testing.T) {
	if c := edgeParse(t, "tactic_type:\tchat\nparams: {a:\t1}\n"); c.TacticType != "chat" || c.Params["a"] != 1 {
		t.Errorf("tab separators: %+v", c)
	}
	if _, err := Parse("t.yaml", []byte("global:\n\tmodel_name: x\n"), nil); err == nil || !strings.HasPrefix(err.Error(), "t.yaml:2") || !strings.Contains(err.Error(), "tab") {
		t.Errorf("tab indent: %v", err)
	}
	for _, src := range []string{"\ufefftactic_type: chat\nzzz: 1\n", "tactic_type: chat\r\nzzz: 1\r\n", "\ufefftactic_type: chat\r\nzzz: 1\r\n"} {
		_, err := Parse("t.yaml", []byte(src), nil)
		if err == nil || !strings.HasPrefix(err.Error(), `t.yaml:2:1: unknown key "zzz" at top level`) {
			t.Errorf("Parse(%q) = %v", src, err)
		}
	}
	c := edgeParse(t, "\ufeffglobal:\r\n  system_prompt: |\r\n    one\r\n    two\r\n  model_name: mock/m\r\n")
	if c.Global.SystemPrompt != "one\ntwo\n" || c.pos.lookup("global", "model_name").line != 5 {
		t.Errorf("CRLF block scalar %q, model_name at %+v", c.Global.SystemPrompt, c.pos.lookup("global", "model_name"))
	}
}

// TestEdgeDuplicateKeysAllReported reports every duplicate key, each naming both places, in file order.
func TestEdgeDuplicateKeysAllReported(t *testing.T) {
	_, err := Parse("t.yaml", []byte("params:\n  a: 1\n  a: 2\nglobal:\n  model_name: x\n  model_name: y\n"), nil)
	want := []string{`t.yaml:3:3: duplicate key "a" (first at line 2)`, `t.yaml:6:3: duplicate key "model_name" (first at line 5)`}
	if got := edgeLines(err); !reflect.DeepEqual(got, want) {
		t.Errorf("errors =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEdgeEveryLoadProblemAtOnce reports unknown keys with type errors, and problems of every file of the chain, at once.
func TestEdgeEveryLoadProblemAtOnce(t *testing.T) {
	_, err := Parse("t.yaml", []byte("tactic_type: [chat]\nzzz: 1\nglobal: {max_llm_recall: -1}\n"), nil)
	want := []string{
		"t.yaml:1:1: tactic_type must be a string, not a list",
		`t.yaml:2:1: unknown key "zzz" at top level`,
		"t.yaml:3:10: global.max_llm_recall must be a non-negative integer, not the integer -1",
	}
	if got := edgeLines(err); len(got) != len(want) {
		t.Errorf("errors =\n%s\nwant %d, starting\n%s", strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	} else {
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Errorf("error %d = %s\nwant %s", i, got[i], want[i])
			}
		}
	}
	fsys, _ := edgeFS(map[string]string{"base.yaml": "tactic_type: chat\ntemprature: 1\n"})
	_, err = Parse("child.yaml", []byte("base: base\nlog_dri: x\n"), fsys)
	want = []string{`child.yaml:2:1: unknown key "log_dri" at top level (did you mean "log_dir"?)`, `base.yaml:2:1: unknown key "temprature" at top level`}
	if got := edgeLines(err); len(got) != len(want) || !strings.HasPrefix(got[0], want[0]) || !strings.HasPrefix(got[1], want[1]) {
		t.Errorf("errors =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEdgeDeepNestingAndBombsFailFast rejects deep nesting and alias bombs (also via merge keys and --set) quickly.
func TestEdgeDeepNestingAndBombsFailFast(t *testing.T) {
	bomb := "  a: &a [x, x, x, x, x, x, x, x, x]\n"
	mbomb := "  m0: &m0 {k: 1}\n"
	for i := 1; i < 9; i++ {
		p := string(rune('a' + i - 1))
		n := string(rune('a' + i))
		bomb += fmt.Sprintf("  %s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", n, n, p, p, p, p, p, p, p, p, p)
	}
	for i := 1; i < 40; i++ {
		mbomb += fmt.Sprintf("  m%d: &m%d {<<: [*m%d], x: *m%d, y: *m%d}\n", i, i, i-1, i-1, i-1)
	}
	deep := strings.Repeat("[", 50000) + strings.Repeat("]", 50000)
	deepMap := strings.Repeat("{a: ", 2000) + "1" + strings.Repeat("}", 2000)
	for name, src := range map[string]string{
		"list bomb": "params:\n" + bomb, "merge bomb": "params:\n" + mbomb,
		"deep list": "params: {x: " + deep + "}\n", "deep map": "params: " + deepMap + "\n",
	} {
		start := time.Now()
		_, err := Parse("t.yaml", []byte(src), nil)
		if err == nil || !strings.HasPrefix(err.Error(), "t.yaml") {
			t.Errorf("%s: err = %.200v", name, err)
		}
		// Unguarded, the list bomb is 9^9 nodes: minutes and gigabytes.
		// Guarded it takes well under a second, but up to 5 s under -race
		// on a loaded 2-core machine, so the bound is generous.
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%s took %v", name, d)
		}
	}
	c := edgeParse(t, "tactic_type: chat\n")
	if err := c.Set("params.x", deepMap); err == nil || !strings.HasPrefix(err.Error(), "--set params.x") {
		t.Errorf("deep --set value: %.200v", err)
	}
	if err := c.Set("params.x", "{a: &a [x, x, x, x, x, x, x, x, x, x], b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a], c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b], d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c], e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d], f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]}"); err == nil || !strings.Contains(err.Error(), "alias bomb") {
		t.Errorf("bomb --set value: %.200v", err)
	}
}

// TestEdgeSetScalarTyping types --set values as YAML 1.2 scalars: numbers, null, plain words, dates as text, = and unicode kept.
func TestEdgeSetScalarTyping(t *testing.T) {
	c := edgeParse(t, "global: {model_name: mock/m}\nagent_configs: [{name: ソルバー, system_prompt: s}]\n")
	for _, tc := range []struct {
		value string
		want  any
	}{
		{"1e3", 1000.0}, {"yes", "yes"}, {"no", "no"}, {"~", nil}, {"null", nil}, {"0x10", 16}, {"2024-01-01", "2024-01-01"},
		{"a=b=c", "a=b=c"}, {"héllo wörld ✓", "héllo wörld ✓"}, {"'007'", "007"}, {"", ""},
	} {
		if err := c.Set("params.v", tc.value); err != nil {
			t.Errorf("Set(params.v, %q): %v", tc.value, err)
			continue
		}
		if got := c.Params["v"]; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Set(params.v, %q) = %#v, want %#v", tc.value, got, tc.want)
		}
	}
	// A date-like value is text, so it is a valid string field.
	if err := c.Set("agent_configs.ソルバー.system_prompt", "2024-01-01"); err != nil || c.Agents[0].SystemPrompt != "2024-01-01" {
		t.Errorf("date as system_prompt: %v, %q", err, c.Agents[0].SystemPrompt)
	}
	if err := c.Set("params.名前", "値"); err != nil || c.Params["名前"] != "値" {
		t.Errorf("unicode key: %v, %v", err, c.Params)
	}
}

// TestEdgeSetValueNotSilentlyDropped refuses or keeps literally a value YAML would read as a comment, wholly or in part.
func TestEdgeSetValueNotSilentlyDropped(t *testing.T) {
	for _, v := range []string{"#1 rule", "use C# #tags", "0.7 # warmer"} {
		c := edgeParse(t, "params: {note: old}\n")
		err := c.Set("params.note", v)
		if got := c.Params["note"]; err == nil && got != v {
			t.Errorf("Set(params.note, %q) silently stored %#v", v, got)
		}
	}
}

// TestEdgeSetErrorsLeaveConfig reports bad list indexes and unknown agents (with did-you-mean) and leaves the config as it was.
func TestEdgeSetErrorsLeaveConfig(t *testing.T) {
	src := "global: {model_name: mock/m}\nparams: {l: [a, b]}\nagent_configs: [{name: solver, system_prompt: s, model_args: {stop: [x]}}, {name: judge, system_prompt: j}]\n"
	for _, tc := range []struct{ path, want string }{
		{"params.l.2", `--set params.l.2: params.l has no item "2" (it is a list of 2)`},
		{"params.l.-1", `--set params.l.-1: params.l has no item "-1" (it is a list of 2)`},
		{"agent_configs.solver.model_args.stop.1", `--set agent_configs.solver.model_args.stop.1: agent_configs[0].model_args.stop has no item "1" (it is a list of 1)`},
		{"agent_configs.judeg.model_name", `--set agent_configs.judeg.model_name: no agent named "judeg" in agent_configs (did you mean "judge"?)`},
		{"agent_configs.critic.model_name", `--set agent_configs.critic.model_name: no agent named "critic" in agent_configs (one of: judge, solver)`},
		{"agent_configs.2.model_name", `--set agent_configs.2.model_name: agent_configs has no entry 2 (it has 2)`},
	} {
		c := edgeParse(t, src)
		before, agents := c.Resolved(), c.Agents
		err := c.Set(tc.path, "1")
		if err == nil || err.Error() != tc.want {
			t.Errorf("Set(%s) = %v\nwant %s", tc.path, err, tc.want)
		}
		if !reflect.DeepEqual(c.Resolved(), before) || !reflect.DeepEqual(c.Agents, agents) {
			t.Errorf("failed Set(%s) changed the config", tc.path)
		}
	}
}

// TestEdgeSetAgentNameWithDot addresses an agent whose name contains a dot by that name.
func TestEdgeSetAgentNameWithDot(t *testing.T) {
	c := edgeParse(t, "global: {model_name: mock/m}\nagent_configs: [{name: judge-4.1, system_prompt: j}, {name: judge, system_prompt: k}]\n")
	if err := c.Set("agent_configs.judge-4.1.model_args.temperature", "0"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if a, _ := c.Agent("judge-4.1"); a.ModelArgs["temperature"] != 0 {
		t.Errorf("judge-4.1 model_args = %v", a.ModelArgs)
	}
	if a, _ := c.Agent("judge"); a.ModelArgs != nil {
		t.Errorf("judge changed: %v", a.ModelArgs)
	}
}

// TestEdgeResolvedStable gives the same bytes for the same config, whatever the key order or number of calls.
func TestEdgeResolvedStable(t *testing.T) {
	a := edgeParse(t, "tactic_type: chat\nparams: {z: 1, a: {y: 2, b: [3, {q: 1, p: 2}]}}\nglobal: {model_name: mock/m, model_args: {t: 1, s: 2}}\n")
	b := edgeParse(t, "global: {model_args: {s: 2, t: 1}, model_name: mock/m}\nparams: {a: {b: [3, {p: 2, q: 1}], y: 2}, z: 1}\ntactic_type: chat\n")
	var outs [][]byte
	for i := 0; i < 5; i++ {
		for _, c := range []*Config{a, b} {
			y, err := yaml.Marshal(c.Resolved())
			if err != nil {
				t.Fatal(err)
			}
			j, err := json.Marshal(c.Resolved())
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, append(y, j...))
		}
	}
	for _, o := range outs[1:] {
		if !bytes.Equal(o, outs[0]) {
			t.Fatalf("Resolved bytes differ:\n%s\n---\n%s", outs[0], o)
		}
	}
}

// TestEdgeResolvedNoEnvSecrets records the name of a key's variable, never its value, and expands nothing.
func TestEdgeResolvedNoEnvSecrets(t *testing.T) {
	t.Setenv("LLLM_EDGE_SECRET", "sk-edge-secret-value")
	c := edgeParse(t, "global: {model_name: mock/m, api_key_env: LLLM_EDGE_SECRET, base_url: \"${LLLM_EDGE_SECRET}\"}\nparams: {k: $LLLM_EDGE_SECRET}\n")
	if err := c.Set("params.j", "${LLLM_EDGE_SECRET}"); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c.Resolved())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "sk-edge-secret-value") || c.Global.BaseURL != "${LLLM_EDGE_SECRET}" || c.Global.APIKeyEnv != "LLLM_EDGE_SECRET" {
		t.Errorf("resolved = %s, global = %+v", b, c.Global)
	}
}

// TestEdgeResolvedRecordable makes every accepted config recordable as JSON (the run log) and parse back to the same config.
func TestEdgeResolvedRecordable(t *testing.T) {
	for _, src := range []string{
		"params: {day: 2024-01-01, at: 2001-12-14t21:59:43.10-05:00}\n",
		"params: {x: .nan}\n",
		"global: {model_args: {top_k: .inf}}\n",
		"mock: {latency: -.Inf}\n",
		"params: {n: 1e3, big: 123456789012345678901234567890, s: '1'}\n",
	} {
		c, err := Parse("t.yaml", []byte(src), nil)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Line == 0 {
				t.Errorf("Parse(%q) = %v, want an error at its place", src, err)
			}
			continue
		}
		b, err := json.Marshal(c.Resolved())
		if err != nil {
			t.Errorf("Parse(%q) accepted a config the run log cannot record: %v", src, err)
			continue
		}
		c2, err := Parse("log.json", b, nil)
		if err != nil {
			t.Errorf("recorded %s does not parse: %v", b, err)
			continue
		}
		if b2, _ := json.Marshal(c2.Resolved()); !bytes.Equal(b, b2) || !edgeSameNumbers(c.Resolved(), c2.Resolved()) {
			t.Errorf("Parse(%q): recorded config parses back as %#v, want %#v", src, c2.Resolved(), c.Resolved())
		}
	}
}

// edgeSameNumbers compares generic values, taking integral numbers as equal whatever their Go type.
func edgeSameNumbers(a, b any) bool {
	num := func(v any) (float64, bool) {
		switch v := v.(type) {
		case int:
			return float64(v), true
		case uint64:
			return float64(v), true
		case float64:
			return v, true
		}
		return 0, false
	}
	if x, ok := num(a); ok {
		y, ok := num(b)
		return ok && x == y
	}
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if w, ok := bm[k]; !ok || !edgeSameNumbers(v, w) {
				return false
			}
		}
		return true
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !edgeSameNumbers(a[i], bl[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// TestEdgeInputsNeverMutated leaves the bytes read, the config and earlier copies untouched by Load, Agent, Resolved and Set.
func TestEdgeInputsNeverMutated(t *testing.T) {
	base := "global: &g {model_name: mock/m, model_args: {t: 1, nested: {a: [1, 2]}}, context_manager: {type: default}}\nparams: {l: [1, {x: 1}]}\n"
	child := "base: base\nagent_configs: [{name: a, system_prompt: s, model_args: {nested: {b: 2}}}, {name: b, system_prompt: s}]\nmock: {replies: [{text: hi}]}\n"
	fsys, served := edgeFS(map[string]string{"base.yaml": base})
	data := []byte(child)
	c, err := Parse("child.yaml", data, fsys)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != child || string(served["base.yaml"]) != base {
		t.Error("Parse changed the bytes it read")
	}
	snapshot := c.Resolved()
	// Mutate everything a caller can reach.
	c.Params["l"].([]any)[1].(map[string]any)["x"] = 99
	c.Global.ModelArgs["nested"].(map[string]any)["a"].([]any)[0] = 99
	c.Global.ContextManager["type"] = "none"
	c.Agents[0].ModelArgs["nested"].(map[string]any)["a"].([]any)[1] = 99
	c.Agents[1].ModelArgs["t"] = 99
	c.Mock["replies"].([]any)[0].(map[string]any)["text"] = "bye"
	got, _ := c.Agent("a")
	got.ModelArgs["nested"].(map[string]any)["b"] = 99
	snapshot2 := c.Resolved()
	snapshot2["global"].(map[string]any)["model_args"].(map[string]any)["t"] = 99
	if !reflect.DeepEqual(c.Resolved(), snapshot) {
		t.Errorf("Resolved changed by mutating the config's fields or copies:\n%v\nwant\n%v", c.Resolved(), snapshot)
	}
	if b, _ := c.Agent("b"); b.ModelArgs["nested"].(map[string]any)["a"].([]any)[1] != 2 {
		t.Error("agent b shares model_args with agent a")
	}
	// Set works on a copy: a failed Set and an earlier Resolved are untouched.
	if err := c.Set("agent_configs.a.model_args.nested.a.0", "7"); err != nil {
		t.Fatal(err)
	}
	if snapshot["global"].(map[string]any)["model_args"].(map[string]any)["nested"].(map[string]any)["a"].([]any)[0] != 1 {
		t.Error("Set changed an earlier Resolved copy")
	}
	if n := c.Resolved()["global"].(map[string]any)["model_args"].(map[string]any)["nested"].(map[string]any)["a"]; !reflect.DeepEqual(n, []any{1, 2}) {
		t.Errorf("Set on agent a changed global: %v", n)
	}
}
