package cli

import (
	"strings"
	"testing"
)

func TestReplay(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	r := lllm(t, "run", cfg, "--task", "Capital of France?", "--log-dir", logDir, "-o", "json")
	orig := decodeJSON[map[string]any](t, r.stdout)["run_id"].(string)

	r = lllm(t, "replay", orig, "--log-dir", logDir)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Paris.\nreplay ") || !strings.Contains(r.stdout, "of run "+orig+"  status ok  calls 1/1 from the recording") {
		t.Fatalf("%v", r)
	}

	// -o json has the result and cost, as lllm run -o json does.
	r = lllm(t, "replay", orig, "--log-dir", logDir, "-o", "json")
	same := decodeJSON[map[string]any](t, r.stdout)
	if cost, _ := same["cost"].(map[string]any); r.code != 0 || same["result"] != "Paris." || cost["input_tokens"] == nil || cost["output_tokens"] == nil {
		t.Fatalf("replay -o json: %v", r.stdout)
	}

	r = lllm(t, "replay", orig, "--log-dir", logDir, "-o", "json", "--set", "agent_configs.assistant.system_prompt=You are verbose.")
	if r.code != 1 {
		t.Fatalf("a diverging replay exits %d: %v", r.code, r)
	}
	j := decodeJSON[replayJSON](t, r.stdout)
	d := j.Divergence
	if j.ReplayOf != orig || j.Status != "cancelled" || d == nil || d.Agent != "assistant" || d.Dialog != "main" || d.Call != 1 ||
		!strings.Contains(d.Diff, "-You are concise.\n+You are verbose.\n") {
		t.Fatalf("%+v %+v", j, d)
	}
	if !strings.Contains(r.stderr, "the replay diverged from run "+orig) {
		t.Fatalf("stderr %q", r.stderr)
	}

	wantError(t, lllm(t, "replay", orig, "--log-dir", logDir, "--set", "nokey"), ExitUsage, `--set "nokey"`)
	if r := lllm(t, "replay", orig, "--log-dir", logDir, "--set", "global.modle_name=x"); r.code != ExitUsage || r.stdout != "" ||
		r.stderr != "lllm: --set global.modle_name: unknown key \"modle_name\" in global (did you mean \"model_name\"?)\n" {
		t.Fatalf("%v", r)
	}
	wantError(t, lllm(t, "replay", "nosuchrun", "--log-dir", logDir), ExitError, "nosuchrun")
}
