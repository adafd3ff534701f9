package cli

import (
	"os"
	"path/filepath"
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
