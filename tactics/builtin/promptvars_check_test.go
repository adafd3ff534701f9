package builtin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

// A {variable} in the system prompt of a built-in tactic's agent, which
// the tactic never fills, is refused before anything runs, at the
// prompt's line, naming the variables; one in an agent the tactic does
// not use, or a literal {{brace}}, is not.
func TestBuiltinPromptVariablesChecked(t *testing.T) {
	for tactic, agents := range map[string][]string{
		"chat":        {"assistant"},
		"best_of_n":   {"solver", "judge"},
		"debate":      {"pro", "con", "judge"},
		"self_refine": {"solver", "critic"},
		"react":       {"agent"},
	} {
		var b strings.Builder
		fmt.Fprintf(&b, "tactic_type: %s\nglobal: {model_name: mock/m}\nagent_configs:\n", tactic)
		for _, a := range agents {
			fmt.Fprintf(&b, "  - name: %s\n    system_prompt: \"You are {{%s}}.\"\n", a, a)
		}
		ok := b.String() + "  - name: spare\n    system_prompt: You help {user}.\n"
		cfg, err := config.Parse("ok.yaml", []byte(ok), nil)
		if err != nil {
			t.Fatalf("%s: %v", tactic, err)
		}
		if err := tactics.Check(context.Background(), cfg, tactics.RunOptions{}); err != nil {
			t.Errorf("%s: literal braces and an unused agent's variable: %v", tactic, err)
		}

		// The last of the tactic's agents uses two variables.
		bad := strings.Replace(b.String(), "\"You are {{"+agents[len(agents)-1]+"}}.\"", "You help {user} with {topic}.", 1)
		line := 4 + 2*(len(agents)-1) + 1
		cfg, err = config.Parse("bad.yaml", []byte(bad), nil)
		if err != nil {
			t.Fatalf("%s: %v", tactic, err)
		}
		err = tactics.Check(context.Background(), cfg, tactics.RunOptions{})
		want := fmt.Sprintf("bad.yaml:%d:5: agent %s: system_prompt uses {user}, {topic}, but tactic %s fills no variable in it, so every run would fail opening the agent: remove them, or write {{ and }} for a literal brace",
			line, agents[len(agents)-1], tactic)
		var pe *config.Error
		if err == nil || err.Error() != want || !errors.As(err, &pe) || pe.Line != line {
			t.Errorf("%s: %v\nwant %s", tactic, err, want)
		}
	}
}

// A variable given in global's system_prompt is placed there; the one
// variable is "it".
func TestBuiltinPromptVariablesInGlobal(t *testing.T) {
	cfg, err := config.Parse("g.yaml", []byte("tactic_type: chat\nglobal:\n  model_name: mock/m\n  system_prompt: Hi {name}.\nagent_configs:\n  - name: assistant\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = tactics.Check(context.Background(), cfg, tactics.RunOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), "g.yaml:4:3: agent assistant: system_prompt uses {name}") || !strings.Contains(err.Error(), ": remove it, or write") {
		t.Errorf("%v", err)
	}
}

// A system prompt's unfilled {variable} is reported with the agents'
// other problems (a model_args typo, an unknown provider), in one Check,
// whether it is in the agent with the problem or in another: lllm
// validate reports every problem at once, not in rounds.
func TestCheckReportsUnfilledVariablesWithAgentProblems(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml string
		want []string
	}{
		"other agent": {
			yaml: "tactic_type: best_of_n\nglobal: {model_name: mock/m}\nagent_configs:\n" +
				"  - name: solver\n    system_prompt: You solve.\n    model_args: {temprature: 0}\n" +
				"  - name: judge\n    system_prompt: You judge {user}.\n",
			want: []string{
				`c.yaml:6:18: agent solver: model_args: unknown key "temprature"`,
				"c.yaml:8:5: agent judge: system_prompt uses {user}",
			},
		},
		"same agent": {
			yaml: "tactic_type: chat\nagent_configs:\n" +
				"  - name: assistant\n    model_name: nope/m\n    system_prompt: You help {user}.\n",
			want: []string{
				`c.yaml:4:5: agent assistant: model_name: provider: unknown provider "nope"`,
				"c.yaml:5:5: agent assistant: system_prompt uses {user}",
			},
		},
	} {
		cfg, err := config.Parse("c.yaml", []byte(tc.yaml), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		err = tactics.Check(context.Background(), cfg, tactics.RunOptions{})
		if err == nil {
			t.Fatalf("%s: no problem", name)
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != len(tc.want) {
			t.Errorf("%s: %d problems, want %d:\n%v", name, len(lines), len(tc.want), err)
			continue
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("%s: problem %d is %q, want it to start %q", name, i+1, lines[i], w)
			}
		}
	}
}

// A config without tactic_type is one problem, said once: not also an
// unknown tactic "".
func TestCheckMissingTacticTypeOnce(t *testing.T) {
	cfg, err := config.Parse("base.yaml", []byte("global: {model_name: mock/m}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = tactics.Check(context.Background(), cfg, tactics.RunOptions{})
	if err == nil || err.Error() != "base.yaml: missing tactic_type (the registered tactic to run)" {
		t.Errorf("%v", err)
	}
}
