package cli

import (
	"strings"
	"testing"
)

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
	if r.code != ExitUsage || !strings.Contains(r.stderr, `agent critic: provider: unknown provider "nope"`) {
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
}
