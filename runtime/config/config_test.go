package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T, path string) *Config {
	t.Helper()
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return c
}

// mapFS is an in-memory readFile: edgeFS without its record of the files served.
func mapFS(files map[string]string) func(string) ([]byte, error) {
	readFile, _ := edgeFS(files)
	return readFile
}

func intp(n int) *int { return &n }

func TestReferenceMerge(t *testing.T) {
	c := mustLoad(t, "testdata/merge.yaml")
	if c.TacticType != "best_of_n" || c.LogDir != "runs" {
		t.Errorf("TacticType, LogDir = %q, %q", c.TacticType, c.LogDir)
	}
	if !reflect.DeepEqual(c.Params, map[string]any{"n": 4}) {
		t.Errorf("Params = %v", c.Params)
	}
	solver, err := c.Agent("solver")
	if err != nil {
		t.Fatal(err)
	}
	want := Agent{
		Name:              "solver",
		ModelName:         "openai/gpt-4o-mini",
		SystemPrompt:      "You are a solver.",
		ModelArgs:         map[string]any{"temperature": 0.1, "max_tokens": 1000, "extra": map[string]any{"a": 1, "b": 2}},
		MaxExceptionRetry: intp(3),
		ContextManager:    map[string]any{"type": "default", "max_tokens": 128000},
	}
	if !reflect.DeepEqual(solver, want) {
		t.Errorf("solver =\n%#v\nwant\n%#v", solver, want)
	}
	judge, err := c.Agent("judge")
	if err != nil {
		t.Fatal(err)
	}
	want = Agent{
		Name:              "judge",
		ModelName:         "anthropic/claude-3-5-haiku",
		SystemPromptPath:  "research/judge",
		ModelArgs:         map[string]any{"temperature": 0.9, "stop": []any{"a", "b"}, "extra": map[string]any{"a": 1, "b": 1}},
		MaxExceptionRetry: intp(0), // set to 0, not unset
		ContextManager:    map[string]any{"type": "none", "max_tokens": 128000},
	}
	if !reflect.DeepEqual(judge, want) {
		t.Errorf("judge =\n%#v\nwant\n%#v", judge, want)
	}
	if judge.MaxInterruptSteps != nil || judge.MaxLLMRecall != nil {
		t.Error("unset limits must stay nil")
	}
	// Global is untouched by resolving the agents.
	wantGlobal := map[string]any{"temperature": 0.1, "extra": map[string]any{"a": 1, "b": 1}}
	if !reflect.DeepEqual(c.Global.ModelArgs, wantGlobal) {
		t.Errorf("Global.ModelArgs = %v, want %v", c.Global.ModelArgs, wantGlobal)
	}
	if got := c.Resolved()["global"].(map[string]any)["model_args"]; !reflect.DeepEqual(got, wantGlobal) {
		t.Errorf("resolved global.model_args = %v, want %v", got, wantGlobal)
	}
	if errs := Validate(c, []string{"solver", "judge"}); errs != nil {
		t.Errorf("Validate: %v", errs)
	}
}

func TestDeepMergeNeverMutatesInputs(t *testing.T) {
	global := map[string]any{"model_args": map[string]any{"temperature": 0.1, "nested": map[string]any{"a": 1}}, "list": []any{1, 2}}
	a := map[string]any{"model_args": map[string]any{"nested": map[string]any{"b": 2}}}
	b := map[string]any{"model_args": map[string]any{"nested": map[string]any{"a": 9}, "temperature": 0.7}}
	snapshot := deepCopy(global)
	ra := deepMerge(global, a)
	rb := deepMerge(global, b)
	if !reflect.DeepEqual(global, snapshot) {
		t.Fatalf("global mutated: %v", global)
	}
	if want := map[string]any{"a": 1, "b": 2}; !reflect.DeepEqual(ra["model_args"].(map[string]any)["nested"], want) {
		t.Errorf("a's nested = %v, want %v", ra["model_args"].(map[string]any)["nested"], want)
	}
	if want := map[string]any{"a": 9}; !reflect.DeepEqual(rb["model_args"].(map[string]any)["nested"], want) {
		t.Errorf("b's nested = %v (a leaked into b?)", rb["model_args"].(map[string]any)["nested"])
	}
	// The results share nothing with the inputs or each other.
	ra["model_args"].(map[string]any)["nested"].(map[string]any)["a"] = 100
	ra["list"].([]any)[0] = 100
	if !reflect.DeepEqual(global, snapshot) || rb["model_args"].(map[string]any)["nested"].(map[string]any)["a"] != 9 {
		t.Error("merge results alias their inputs")
	}
}

func TestAgentsDoNotLeak(t *testing.T) {
	c := mustLoad(t, "testdata/merge.yaml")
	s, _ := c.Agent("solver")
	s.ModelArgs["extra"].(map[string]any)["a"] = "mutated"
	s.ModelArgs["new"] = true
	*s.MaxExceptionRetry = 42
	j, _ := c.Agent("judge")
	if _, ok := j.ModelArgs["max_tokens"]; ok {
		t.Error("solver's max_tokens leaked into judge")
	}
	if j.ModelArgs["extra"].(map[string]any)["a"] != 1 || j.ModelArgs["new"] != nil {
		t.Errorf("mutating solver's copy changed judge: %v", j.ModelArgs)
	}
	s2, _ := c.Agent("solver")
	if s2.ModelArgs["extra"].(map[string]any)["a"] != 1 || *s2.MaxExceptionRetry != 3 {
		t.Errorf("Agent returned shared state: %v", s2.ModelArgs)
	}
	if c.Global.ModelArgs["extra"].(map[string]any)["a"] != 1 {
		t.Error("global changed")
	}
	if _, err := c.Agent("sovler"); err == nil || !strings.Contains(err.Error(), `did you mean "solver"?`) {
		t.Errorf("Agent(sovler) error = %v", err)
	}
}

// TestClone checks that a clone equals its config and that changing the
// clone, by Set or through its fields, leaves the config as it was.
func TestClone(t *testing.T) {
	c, err := Parse("c.yaml", []byte(`tactic_type: chat
global: {model_name: mock/m, model_args: {temperature: 0}, context_manager: {type: default}}
agent_configs: [{name: a, max_retries: 2, model_args: {max_tokens: 10}}]
params: {n: 1}
mock: {rules: [{match: x, reply: {text: y}}]}
prices: {m: {input: 1, output: 2}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	text := func(c *Config) string {
		b, err := json.Marshal([]any{c.Resolved(), c.Global, c.Agents, c.Params, c.Mock, c.Prices, c.Files})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := text(c)
	d := c.Clone()
	if got := text(d); got != want {
		t.Fatalf("clone\n got %s\nwant %s", got, want)
	}
	d.Global.ModelArgs["temperature"] = 1
	d.Global.ContextManager["type"] = "none"
	d.Agents[0].ModelArgs["max_tokens"] = 20
	*d.Agents[0].MaxRetries = 5
	d.Params["n"] = 2
	d.Mock["rules"] = nil
	d.Prices["m"] = Price{Input: 9}
	d.Files[0] = "other.yaml"
	if err := d.Set("agent_configs.a.model_args.max_tokens", "30"); err != nil {
		t.Fatal(err)
	}
	if got := text(c); got != want {
		t.Errorf("the config changed with its clone\n got %s\nwant %s", got, want)
	}
	if (*Config)(nil).Clone() != nil {
		t.Error("a nil config's clone is not nil")
	}
}

func TestBaseChain(t *testing.T) {
	c := mustLoad(t, "testdata/chain/child.yaml")
	want := map[string]any{
		"a": 1, "b": 2, "c": 3, "d": 3,
		"nested": map[string]any{"x": 1, "y": 2},
		"list":   []any{3}, // lists replace
	}
	if !reflect.DeepEqual(c.Params, want) {
		t.Errorf("Params = %v, want %v", c.Params, want)
	}
	if c.TacticType != "chat" || c.LogDir != "gp-logs" {
		t.Errorf("inherited scalars: %q %q", c.TacticType, c.LogDir)
	}
	if c.Base != "../shared/parent" {
		t.Errorf("Base = %q", c.Base)
	}
	wantFiles := []string{"testdata/chain/child.yaml", filepath.Join("testdata", "shared", "parent.yaml"), filepath.Join("testdata", "shared", "grandparent.yaml")}
	if !reflect.DeepEqual(c.Files, wantFiles) {
		t.Errorf("Files = %q, want %q", c.Files, wantFiles)
	}
	if _, ok := c.Resolved()["base"]; ok {
		t.Error("Resolved still has base")
	}
	// Positions follow the file each value came from.
	if p := c.pos.lookup("log_dir"); p.file != filepath.Join("testdata", "shared", "grandparent.yaml") || p.line != 3 {
		t.Errorf("log_dir position = %+v", p)
	}
}

func TestBaseChainInMemory(t *testing.T) {
	fsys := mapFS(map[string]string{
		"cfg/base/gp.yaml":  "params: {a: 1, b: 1}\n",
		"cfg/base/p.yml":    "base: gp\nparams: {b: 2, c: 2}\n",
		"cfg/child.yaml":    "base: base/p\nparams: {c: 3, d: 3}\n",
		"cfg/missing.yaml":  "base: nope\n",
		"cfg/selfcycle.yml": "base: selfcycle.yml\n",
	})
	c, err := Parse("cfg/child.yaml", []byte("base: base/p\nparams: {c: 3, d: 3}\n"), fsys)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"a": 1, "b": 2, "c": 3, "d": 3}; !reflect.DeepEqual(c.Params, want) {
		t.Errorf("Params = %v, want %v", c.Params, want)
	}
	_, err = Parse("cfg/missing.yaml", []byte("\nbase: nope\n"), fsys)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "cfg/missing.yaml:2:1: base \"nope\": file does not exist: tried cfg/nope.yaml, cfg/nope.yml, cfg/nope") {
		t.Errorf("missing base: %v", err)
	}
	_, err = Parse("cfg/selfcycle.yml", []byte("base: selfcycle.yml\n"), fsys)
	if err == nil || !strings.Contains(err.Error(), "base cycle: cfg/selfcycle.yml -> cfg/selfcycle.yml") {
		t.Errorf("self cycle: %v", err)
	}
	_, err = Parse("x.yaml", []byte("base: [a, b]\n"), fsys)
	if err == nil || !strings.Contains(err.Error(), "x.yaml:1:1: base must be a file path, not a list") {
		t.Errorf("list base: %v", err)
	}
}

func TestBaseCycle(t *testing.T) {
	_, err := Load("testdata/cycle_a.yaml")
	want := "testdata/cycle_b.yaml:1:1: base cycle: testdata/cycle_a.yaml -> testdata/cycle_b.yaml -> testdata/cycle_a.yaml"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func TestUnknownKeys(t *testing.T) {
	tests := []struct{ file, want string }{
		{"testdata/unknown_top.yaml", `testdata/unknown_top.yaml:4:1: unknown key "temprature" at top level`},
		{"testdata/unknown_global.yaml", `testdata/unknown_global.yaml:5:3: unknown key "max_exeption_retry" in global (did you mean "max_exception_retry"?)`},
		{"testdata/unknown_agent.yaml", `testdata/unknown_agent.yaml:7:5: unknown key "modle_name" in agent_configs[0] (did you mean "model_name"?)`},
	}
	for _, tt := range tests {
		_, err := Load(tt.file)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Load(%s) = %v\nwant %s", tt.file, err, tt.want)
		}
		var e *Error
		if !errors.As(err, &e) || e.File != tt.file || e.Line == 0 || e.Column == 0 {
			t.Errorf("Load(%s): error %#v is not an *Error with a position", tt.file, e)
		}
	}
	// A top-level typo never lands in model_args (the reference bug).
	_, err := Parse("t.yaml", []byte("tactic_type: chat\ntactic_typ: x\n"), nil)
	if err == nil || err.Error() != `t.yaml:2:1: unknown key "tactic_typ" at top level (did you mean "tactic_type"?)` {
		t.Errorf("err = %v", err)
	}
	// Every unknown key is reported, in file order.
	_, err = Parse("t.yaml", []byte("zzz: 1\nglobal: {name: x, modelname: y}\nagent_configs: [{name: a, foo: 1}]\n"), nil)
	got := strings.Split(err.Error(), "\n")
	want := []string{
		`t.yaml:1:1: unknown key "zzz" at top level`,
		`t.yaml:2:10: name is not allowed in global`,
		`t.yaml:2:19: unknown key "modelname" in global (did you mean "model_name"?)`,
		`t.yaml:3:27: unknown key "foo" in agent_configs[0]`,
	}
	if len(got) != len(want) {
		t.Fatalf("errors:\n%s", err)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %s\nwant %s", i, got[i], want[i])
		}
	}
}

func TestPrices(t *testing.T) {
	c, err := Parse("t.yaml", []byte("prices:\n  mine: {input: 1.5, cached_input: 0.5, cache_write: 2, output: 4}\n  free: {}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Price{"mine": {Input: 1.5, CachedInput: 0.5, CacheWrite: 2, Output: 4}, "free": {}}
	if !reflect.DeepEqual(c.Prices, want) {
		t.Errorf("Prices = %+v, want %+v", c.Prices, want)
	}
	for _, tc := range []struct{ prices, want string }{
		{"demo: {inptu: 1}", `t.yaml:2:10: unknown key "inptu" in prices.demo (did you mean "input"?)`},
		{"demo: {input: -1, output: .nan}", "t.yaml:2:10: prices.demo.input must be a non-negative number (USD per million tokens), not the integer -1\n" +
			"t.yaml:2:21: prices.demo.output must be a non-negative number (USD per million tokens), not the number NaN"},
		{"demo: cheap", `t.yaml:2:3: prices.demo must be a mapping of input, cached_input, cache_write, output (USD per million tokens), not the string "cheap"`},
	} {
		_, err := Parse("t.yaml", []byte("prices:\n  "+tc.prices+"\n"), nil)
		if err == nil || err.Error() != tc.want {
			t.Errorf("prices %s: error %v\nwant %s", tc.prices, err, tc.want)
		}
	}
	if _, err := Parse("t.yaml", []byte("prices: [1]\n"), nil); err == nil || !strings.Contains(err.Error(), "prices must be a mapping from model name to prices") {
		t.Errorf("prices as a list: error %v", err)
	}
}

func TestModelArgsOnlyWhatIsWritten(t *testing.T) {
	c, err := Parse("t.yaml", []byte(`
tactic_type: chat
global:
  model_name: openai/gpt-4o
  model_args: {temperature: 0.2}
agent_configs:
  - name: a
    system_prompt: hi
    base_url: http://localhost:8080/v1
    api_key_env: MY_KEY
    max_llm_recall: 2
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Agent("a")
	if !reflect.DeepEqual(a.ModelArgs, map[string]any{"temperature": 0.2}) {
		t.Errorf("ModelArgs = %v", a.ModelArgs)
	}
	if a.BaseURL != "http://localhost:8080/v1" || a.APIKeyEnv != "MY_KEY" || a.MaxLLMRecall == nil || *a.MaxLLMRecall != 2 {
		t.Errorf("agent = %+v", a)
	}
	c, err = Parse("t.yaml", []byte("global: {model_name: openai/gpt-4o}\nagent_configs: [{name: a, system_prompt: hi}]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := c.Agent("a"); a.ModelArgs != nil {
		t.Errorf("ModelArgs = %v, want nil", a.ModelArgs)
	}
}

func TestFreeFormMaps(t *testing.T) {
	c := mustLoad(t, "testdata/freeform.yaml")
	if got := c.ContextManager["bogus_but_free"]; got != "x" {
		t.Errorf("context_manager = %v", c.ContextManager)
	}
	if got := c.Params["1"]; got != "one" {
		t.Errorf("params = %v", c.Params)
	}
	a, _ := c.Agent("a")
	wantArgs := map[string]any{
		"anything": 1, "with.dot": map[string]any{"deep": []any{1, map[string]any{"x": "y"}}}, "seed": nil,
		"response_format": map[string]any{"type": "json_object"},
	}
	if !reflect.DeepEqual(a.ModelArgs, wantArgs) {
		t.Errorf("ModelArgs = %v\nwant %v", a.ModelArgs, wantArgs)
	}
	if a.ContextManager["whatever_key"] != true {
		t.Errorf("agent context_manager = %v", a.ContextManager)
	}
	replies, _ := c.Mock["replies"].([]any)
	if len(replies) != 1 || !reflect.DeepEqual(replies[0], map[string]any{"text": "hello"}) {
		t.Errorf("mock = %v", c.Mock)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	c := mustLoad(t, "testdata/anchors.yaml")
	a, _ := c.Agent("a")
	b, _ := c.Agent("b")
	if a.ModelName != "mock/m" || a.ModelArgs["temperature"] != 0.5 || b.ModelArgs["temperature"] != 0.5 {
		t.Errorf("a = %+v, b = %+v", a, b)
	}
	// Expanded aliases are copies.
	a.ModelArgs["temperature"] = 1.0
	if b2, _ := c.Agent("b"); b2.ModelArgs["temperature"] != 0.5 {
		t.Error("aliases share state")
	}
	_, err := Parse("t.yaml", []byte("a: &x [1]\nparams:\n  <<: *x\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "merge key") {
		t.Errorf("merge of a list: %v", err)
	}
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
	_, err = Parse("bomb.yaml", []byte("params:\n  "+strings.ReplaceAll(bomb, "\n", "\n  ")), nil)
	if err == nil || !strings.Contains(err.Error(), "alias bomb") {
		t.Errorf("alias bomb: %v", err)
	}
}

// A key written twice in an anchored map is one problem, however many
// aliases name the map; and the problems come in file order, a repeat in
// a nested map before a later repeat of the map's own key.
func TestDuplicateKeyInAnchoredMapReportedOnce(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml string
		want []string
	}{
		"aliased twice": {
			yaml: "tactic_type: x\nx: &a {k: 1, k: 2}\ny: *a\nz: *a\n",
			want: []string{`t.yaml:2:14: duplicate key "k" (first at line 2)`},
		},
		"merged": {
			yaml: "tactic_type: x\nx: &a\n  k: 1\n  k: 2\ny:\n  <<: *a\n",
			want: []string{`t.yaml:4:3: duplicate key "k" (first at line 3)`},
		},
		"nested then outer": {
			yaml: "tactic_type: x\nglobal:\n  m: 1\n  m: 2\nglobal: {}\n",
			want: []string{
				`t.yaml:4:3: duplicate key "m" (first at line 3)`,
				`t.yaml:5:1: duplicate key "global" (first at line 2)`,
			},
		},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml), nil)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\ngot  %q\nwant %q", name, got, tc.want)
		}
	}
}

func TestMalformedYAML(t *testing.T) {
	_, err := Load("testdata/malformed.yaml")
	var e *Error
	if !errors.As(err, &e) || e.File != "testdata/malformed.yaml" || e.Line == 0 {
		t.Fatalf("err = %v", err)
	}
	if !strings.HasPrefix(err.Error(), "testdata/malformed.yaml:4: invalid YAML: did not find expected ',' or '}'") {
		t.Errorf("err = %v", err)
	}
	tests := []struct{ src, want string }{
		{"tactic_type: chat\n  bad: indent\n", "t.yaml:2: invalid YAML"},
		{"a: 1\na: 2\n", `t.yaml:2:1: duplicate key "a" (first at line 1)`},
		{"- a\n- b\n", "t.yaml:1:1: a config must be a YAML mapping, not a list"},
		{"tactic_type: chat\n---\ntactic_type: x\n", "t.yaml:2:1: more than one YAML document"},
		{"tactic_type: [chat]\nglobal: 3\nagent_configs: {a: 1}\n", "t.yaml:1:1: tactic_type must be a string, not a list\nt.yaml:2:1: global must be a mapping, not the integer 3\nt.yaml:3:1: agent_configs must be a list of agents, not a mapping"},
		{"agent_configs: [3, {max_llm_recall: -1}, {max_interrupt_steps: 1.5}]\n", "t.yaml:1:17: agent_configs[0] must be a mapping, not the integer 3\nt.yaml:1:21: agent_configs[1].max_llm_recall must be a non-negative integer, not the integer -1\nt.yaml:1:43: agent_configs[2].max_interrupt_steps must be a non-negative integer, not the number 1.5"},
		{"params: [1]\n", "t.yaml:1:1: params must be a mapping, not a list"},
		{"? [a]\n: b\n", "t.yaml:1:3: mapping keys must be plain strings"},
		{"params:\n  a: [1, 2\n  b: 3\n", "t.yaml:2: invalid YAML: did not find expected ',' or ']'"},
		{"params:\n  a: 1\n b: 2\n", "t.yaml:3: invalid YAML: did not find expected key"},
		{"global:\n  model_name: x\n\tbad: tab\n", "t.yaml:2: invalid YAML: found a tab character that violates indentation"},
	}
	for _, tt := range tests {
		_, err := Parse("t.yaml", []byte(tt.src), nil)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v\nwant %s", tt.src, err, tt.want)
		}
	}
}

// A config that is not UTF-8 is an error at the byte that is not: yaml.v3
// alone says "invalid leading UTF-8 octet", with no line.
func TestParseNotUTF8(t *testing.T) {
	data := []byte("tactic_type: chat\nagent_configs:\n  - name: assistant\n    system_prompt: caf\xe9\n")
	_, err := Parse("c.yaml", data, nil)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Parse = %v, want a *config.Error", err)
	}
	if ce.Line != 4 || ce.Column != 23 || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("error %q at line %d column %d, want line 4 column 23 saying not UTF-8", err, ce.Line, ce.Column)
	}
}

func TestEmptyFile(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n", "~\n"} {
		c, err := Parse("empty.yaml", []byte(src), nil)
		if err != nil {
			t.Fatalf("Parse(%q): %v", src, err)
		}
		if len(c.Resolved()) != 0 || c.Agents != nil {
			t.Errorf("Parse(%q) = %+v", src, c)
		}
		errs := Validate(c, []string{"solver"})
		if len(errs) != 2 || errs[0].Error() != "empty.yaml: missing tactic_type (the registered tactic to run)" ||
			errs[1].Error() != `empty.yaml: the tactic needs agent "solver", which agent_configs lacks` {
			t.Errorf("Validate = %q", errs)
		}
	}
	if _, err := Load("testdata/empty.yaml"); err != nil {
		t.Errorf("Load(empty): %v", err)
	}
	if _, err := Load("testdata/does-not-exist.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestValidateReportsEverything(t *testing.T) {
	c := mustLoad(t, "testdata/invalid.yaml")
	errs := Validate(c, []string{"solver", "judge", "solvers"})
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	f := "testdata/invalid.yaml"
	want := []string{
		f + ": missing tactic_type (the registered tactic to run)",
		f + `:2:3: agent "solver": model_name "gpt-4o" is not of the form provider/model (such as openai/gpt-4o-mini)`,
		f + `:4:5: agent "solver": has both system_prompt and system_prompt_path (keep one; global may set the other; with --set, set the other to null)`,
		f + `:7:5: duplicate agent name "solver" (first at ` + f + `:4:5)`,
		f + `:10:5: agent_configs[2]: missing name`,
		f + `:2:3: agent_configs[2]: model_name "gpt-4o" is not of the form provider/model (such as openai/gpt-4o-mini)`,
		f + `:3:1: the tactic needs agent "judge", which agent_configs lacks (one of: solver)`,
		f + `:3:1: the tactic needs agent "solvers", which agent_configs lacks (did you mean "solver"?)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Validate =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	c = &Config{Path: "x.yaml", Agents: []Agent{{Name: "a", SystemPrompt: "s"}}}
	errs = Validate(c, nil)
	if len(errs) != 2 || !strings.Contains(errs[1].Error(), `agent "a": missing model_name`) {
		t.Errorf("Validate = %q", errs)
	}
	if errs := Validate(nil, nil); len(errs) != 1 {
		t.Errorf("Validate(nil) = %v", errs)
	}
}

func TestLoadRealDirectory(t *testing.T) {
	// Base paths are relative to the including file, not the working
	// directory.
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "common.yaml"), []byte("tactic_type: chat\nparams: {k: base}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "x.yaml"), []byte("base: ../common\nparams: {j: child}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := mustLoad(t, filepath.Join(sub, "x.yaml"))
	if c.TacticType != "chat" || !reflect.DeepEqual(c.Params, map[string]any{"k": "base", "j": "child"}) {
		t.Errorf("config = %+v", c)
	}
}

func TestPromptsDir(t *testing.T) {
	fsys := mapFS(map[string]string{
		"cfg/base/b.yaml": "prompts_dir: shared_prompts\n",
	})
	// Relative to the file that sets it, here the base.
	c, err := Parse("cfg/child.yaml", []byte("base: base/b\ntactic_type: chat\n"), fsys)
	if err != nil {
		t.Fatal(err)
	}
	if c.PromptsDir != "shared_prompts" || c.PromptsPath() != filepath.Join("cfg", "base", "shared_prompts") {
		t.Errorf("PromptsDir %q, PromptsPath %q", c.PromptsDir, c.PromptsPath())
	}
	// The child overrides it, relative to itself; --set is relative to the
	// loaded config.
	c, err = Parse("cfg/child.yaml", []byte("base: base/b\nprompts_dir: ../p\n"), fsys)
	if err != nil {
		t.Fatal(err)
	}
	if c.PromptsPath() != "p" {
		t.Errorf("child PromptsPath %q", c.PromptsPath())
	}
	if err := c.Set("prompts_dir", "q"); err != nil {
		t.Fatal(err)
	}
	if c.PromptsPath() != filepath.Join("cfg", "q") || c.Resolved()["prompts_dir"] != "q" {
		t.Errorf("--set PromptsPath %q", c.PromptsPath())
	}
	abs := filepath.Join(t.TempDir(), "abs")
	if err := c.Set("prompts_dir", abs); err != nil || c.PromptsPath() != abs {
		t.Errorf("absolute PromptsPath %q, %v", c.PromptsPath(), err)
	}

	// Default: prompts/ beside the config, only if it exists.
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "x.yaml")
	c, err = Parse(cfgPath, []byte("tactic_type: chat\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.PromptsPath() != "" {
		t.Errorf("no prompts dir: PromptsPath %q", c.PromptsPath())
	}
	if err := os.Mkdir(filepath.Join(dir, "prompts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if c.PromptsPath() != filepath.Join(dir, "prompts") {
		t.Errorf("default PromptsPath %q", c.PromptsPath())
	}

	// Type and spelling are checked.
	_, err = Parse("y.yaml", []byte("prompts_dir: [a]\n"), fsys)
	if err == nil || !strings.Contains(err.Error(), "y.yaml:1:1: prompts_dir must be a string") {
		t.Errorf("list prompts_dir: %v", err)
	}
	_, err = Parse("y.yaml", []byte("prompt_dir: a\n"), fsys)
	if err == nil || !strings.Contains(err.Error(), `y.yaml:1:1: unknown key "prompt_dir" at top level (did you mean "prompts_dir"?)`) {
		t.Errorf("misspelt prompts_dir: %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		v    any
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"0", 0},
		{30, 30 * time.Second},
		{int64(2), 2 * time.Second},
		{uint64(3), 3 * time.Second},
		{0.25, 250 * time.Millisecond},
	} {
		if d, err := ParseDuration(c.v); err != nil || d != c.want {
			t.Errorf("ParseDuration(%#v) = %v, %v; want %v", c.v, d, err, c.want)
		}
	}
	for _, v := range []any{"soon", "-1s", -1, -0.5, 1e300, -1e300, true, nil, []any{1}, map[string]any{}} {
		d, err := ParseDuration(v)
		if err == nil || !strings.HasPrefix(err.Error(), "must be a duration such as 90s or 10m (0 for none), not ") {
			t.Errorf("ParseDuration(%#v) = %v, %v; want an error", v, d, err)
		}
	}
}
