package replay_test

import (
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
)

// A replay whose request differs from the recorded one only in a number
// past float64's precision (a large integer of extra_body) diverges with
// a diff that shows the two numbers, as they were written.
func TestReplayDiffBigNumber(t *testing.T) {
	cfg := edgeConfig(t, `tactic_type: chat
global: {model_name: mock/demo}
agent_configs:
  - name: assistant
    system_prompt: You answer.
    model_args: {extra_body: {budget: 12345678901234567890}}
mock: {replies: [{text: ok}]}
`)
	_, run := recordRun(t, cfg, "Go.", logs.StatusOK)
	rep := replayRun(t, run, replay.Options{Set: []string{"agent_configs.assistant.model_args.extra_body.budget=12345678901234567891"}})
	if rep.Divergence == nil {
		t.Fatal("the replay did not diverge")
	}
	d := rep.Divergence.Diff
	if !strings.Contains(d, "-params: {\"extra_body\":{\"budget\":12345678901234567890}}") ||
		!strings.Contains(d, "+params: {\"extra_body\":{\"budget\":12345678901234567891}}") {
		t.Errorf("the diff does not show the two numbers:\n%s", d)
	}
}
