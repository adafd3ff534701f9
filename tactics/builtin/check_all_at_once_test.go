package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

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
