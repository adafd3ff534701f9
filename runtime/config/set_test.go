package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestSet(t *testing.T) {
	c := mustLoad(t, "testdata/merge.yaml")
	before := c.Resolved()
	sets := []struct{ path, value string }{
		{"global.model_args.temperature", "0.7"},
		{"params.rounds", "3"},
		{"params.verbose", "true"},
		{"params.tags", "[a, b]"},
		{"params.nested.deep.key", "null"},
		{"global.model_name", "openai/gpt-4o"},
		{"agent_configs.solver.model_args.max_tokens", "2000"},
		{"agent_configs.1.max_interrupt_steps", "0"},
		{"agent_configs.judge.model_args.stop.1", "z"},
		{"context_manager", "{type: window, size: 4}"},
		{"log_dir", ""},
		{"tactic_type", "debate"},
	}
	for _, s := range sets {
		if err := c.Set(s.path, s.value); err != nil {
			t.Fatalf("Set(%s, %s): %v", s.path, s.value, err)
		}
	}
	if c.Global.ModelArgs["temperature"] != 0.7 || c.Global.ModelName != "openai/gpt-4o" {
		t.Errorf("global = %+v", c.Global)
	}
	wantParams := map[string]any{"n": 4, "rounds": 3, "verbose": true, "tags": []any{"a", "b"}, "nested": map[string]any{"deep": map[string]any{"key": nil}}}
	if !reflect.DeepEqual(c.Params, wantParams) {
		t.Errorf("Params = %#v\nwant %#v", c.Params, wantParams)
	}
	solver, _ := c.Agent("solver")
	if solver.ModelArgs["max_tokens"] != 2000 || solver.ModelArgs["temperature"] != 0.7 || solver.ModelName != "openai/gpt-4o" {
		t.Errorf("solver = %+v", solver)
	}
	judge, _ := c.Agent("judge")
	if judge.MaxInterruptSteps == nil || *judge.MaxInterruptSteps != 0 {
		t.Errorf("judge.MaxInterruptSteps = %v", judge.MaxInterruptSteps)
	}
	if !reflect.DeepEqual(judge.ModelArgs["stop"], []any{"a", "z"}) || judge.ModelArgs["temperature"] != 0.9 || judge.ModelName != "anthropic/claude-3-5-haiku" {
		t.Errorf("judge = %+v", judge)
	}
	if _, ok := judge.ModelArgs["max_tokens"]; ok {
		t.Error("solver's override leaked into judge")
	}
	if !reflect.DeepEqual(c.ContextManager, map[string]any{"type": "window", "size": 4}) || c.LogDir != "" || c.TacticType != "debate" {
		t.Errorf("top level = %v %q %q", c.ContextManager, c.LogDir, c.TacticType)
	}
	if r := c.Resolved(); r["log_dir"] != "" {
		t.Errorf("resolved log_dir = %#v", r["log_dir"])
	}
	// Earlier Resolved results are copies, unchanged by Set.
	if before["global"].(map[string]any)["model_args"].(map[string]any)["temperature"] != 0.1 {
		t.Error("Set changed an earlier Resolved copy")
	}
	// Validate names the override as the source of a bad value.
	if err := c.Set("agent_configs.solver.model_name", "gpt4"); err != nil {
		t.Fatal(err)
	}
	errs := Validate(c, nil)
	if len(errs) != 1 || errs[0].Error() != `--set agent_configs.solver.model_name: agent "solver": model_name "gpt4" is not of the form provider/model (such as openai/gpt-4o-mini)` {
		t.Errorf("Validate = %q", errs)
	}
}

func TestSetWholeAgentList(t *testing.T) {
	c := mustLoad(t, "testdata/merge.yaml")
	if err := c.Set("agent_configs", "[{name: x, system_prompt: hi}]"); err != nil {
		t.Fatal(err)
	}
	if len(c.Agents) != 1 || c.Agents[0].Name != "x" || c.Agents[0].ModelName != "openai/gpt-4o-mini" {
		t.Errorf("Agents = %+v", c.Agents)
	}
	if err := c.Set("global", "{model_name: mock/m}"); err != nil {
		t.Fatal(err)
	}
	if c.Global.ModelArgs != nil || c.Agents[0].ModelName != "mock/m" || c.Agents[0].MaxExceptionRetry != nil {
		t.Errorf("after replacing global: %+v %+v", c.Global, c.Agents[0])
	}
	// Set on an empty config creates what it needs.
	e, err := Parse("e.yaml", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range [][2]string{{"tactic_type", "chat"}, {"global.model_args.seed", "7"}, {"mock.replies", "[{text: hi}]"}} {
		if err := e.Set(s[0], s[1]); err != nil {
			t.Fatalf("Set(%s): %v", s[0], err)
		}
	}
	want := map[string]any{"tactic_type": "chat", "global": map[string]any{"model_args": map[string]any{"seed": 7}}, "mock": map[string]any{"replies": []any{map[string]any{"text": "hi"}}}}
	if !reflect.DeepEqual(e.Resolved(), want) {
		t.Errorf("Resolved = %v", e.Resolved())
	}
}

func TestSetErrors(t *testing.T) {
	tests := []struct{ path, value, want string }{
		{"temprature", "1", `--set temprature: unknown key "temprature" at top level`},
		{"tactic_typ", "x", `--set tactic_typ: unknown key "tactic_typ" at top level (did you mean "tactic_type"?)`},
		{"global.modle_name", "x", `--set global.modle_name: unknown key "modle_name" in global (did you mean "model_name"?)`},
		{"global.name", "x", `--set global.name: name is not allowed in global`},
		{"agent_configs.solver.modle_name", "x", `--set agent_configs.solver.modle_name: unknown key "modle_name" in agent_configs[0] (did you mean "model_name"?)`},
		{"agent_configs.sovler.model_name", "x", `--set agent_configs.sovler.model_name: no agent named "sovler" in agent_configs (did you mean "solver"?)`},
		{"agent_configs.5.model_name", "x", `--set agent_configs.5.model_name: agent_configs has no entry 5 (it has 2)`},
		{"agent_configs.-1", "x", `--set agent_configs.-1: agent_configs has no entry -1`},
		{"global.model_name.x", "1", `--set global.model_name.x: global.model_name is a plain value, not a mapping`},
		{"global.max_exception_retry", "abc", `--set global.max_exception_retry: global.max_exception_retry must be a non-negative integer, not the string "abc"`},
		{"global.max_exception_retry", "1.5", `--set global.max_exception_retry: global.max_exception_retry must be a non-negative integer, not the number 1.5`},
		{"global.model_args", "[1]", `--set global.model_args: global.model_args must be a mapping, not a list`},
		{"global", "{bogus: 1}", `--set global: unknown key "bogus" in global`},
		{"agent_configs.0", "{name: a, modelname: x}", `--set agent_configs.0: unknown key "modelname" in agent_configs[0] (did you mean "model_name"?)`},
		{"params.n.x", "1", `--set params.n.x: params.n is the integer 4, not a mapping`},
		{"agent_configs.judge.model_args.stop.5", "1", `--set agent_configs.judge.model_args.stop.5: agent_configs[1].model_args.stop has no item "5" (it is a list of 2)`},
		{"global..model_name", "x", `--set global..model_name: empty key in path`},
		{"", "x", `--set : empty key in path`},
		{"base", "x", `--set base: base cannot be overridden`},
		{"params.x", "[1, 2", `--set params.x: value "[1, 2": invalid YAML`},
		{"params.x", "a: 1\nb: 2\n---\nc", `--set params.x: value`},
		{"tactic_type", "[a]", `--set tactic_type: tactic_type must be a string, not a list`},
	}
	for _, tt := range tests {
		c := mustLoad(t, "testdata/merge.yaml")
		before := c.Resolved()
		beforeAgents := c.Agents
		err := c.Set(tt.path, tt.value)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Set(%q, %q) = %v\nwant %s", tt.path, tt.value, err, tt.want)
		}
		if !reflect.DeepEqual(c.Resolved(), before) || !reflect.DeepEqual(c.Agents, beforeAgents) {
			t.Errorf("failed Set(%q, %q) changed the config", tt.path, tt.value)
		}
	}
	var nilc *Config
	if err := nilc.Set("a", "b"); err == nil {
		t.Error("Set on nil config succeeded")
	}
}

// An override value with a key written twice is refused at the repeat.
func TestSetDuplicateKey(t *testing.T) {
	_, err := parseValue("{a: 1, a: 2}")
	if err == nil || !strings.Contains(err.Error(), `duplicate key "a" (first at line 1)`) {
		t.Fatalf("parseValue: %v", err)
	}
}

// A problem with a top-level setting every agent inherits is placed where
// it was written: at the --set that wrote it, whose map it created.
func TestAgentErrorAtTopLevelSet(t *testing.T) {
	c, err := Parse("c.yaml", []byte("tactic_type: chat\nglobal: {model_name: mock/m}\nagent_configs:\n  - name: a\n    system_prompt: x\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set("context_manager.n", "abc"); err != nil {
		t.Fatal(err)
	}
	got := c.AgentErrorf(0, []string{"context_manager"}, "bad").Error()
	if !strings.HasPrefix(got, "--set context_manager.n: ") {
		t.Errorf("error %q, want it at --set context_manager.n", got)
	}
	// Written in the file, it is placed at its line.
	c, err = Parse("c.yaml", []byte("tactic_type: chat\nglobal: {model_name: mock/m}\ncontext_manager: {n: abc}\nagent_configs:\n  - name: a\n    system_prompt: x\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.AgentErrorf(0, []string{"context_manager"}, "bad").Error(); !strings.HasPrefix(got, "c.yaml:3:") {
		t.Errorf("error %q, want it at c.yaml:3", got)
	}
}
