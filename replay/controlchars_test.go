package replay_test

import (
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
)

// A config whose text holds characters YAML refuses raw (DEL, the C1
// controls) or reads as a line break (NEL), which a run takes and its log
// records as they are, replays exactly: it is not refused as invalid
// YAML, and NEL is not read as a space.
func TestReplayConfigControlChars(t *testing.T) {
	for name, char := range map[string]string{"DEL": `\x7f`, "NEL": `\u0085`, "CSI": `\u009b`, "C1 first": `\x80`} {
		t.Run(name, func(t *testing.T) {
			cfg := edgeConfig(t, `tactic_type: chat
global: {model_name: mock/demo}
agent_configs:
  - name: assistant
    system_prompt: "before `+char+` after"
    model_args: {extra_body: {note: "x`+char+`y"}}
mock: {replies: [{text: "ok `+char+`"}]}
`)
			if p := cfg.Agents[0].SystemPrompt; !strings.Contains(p, "before ") || len(p) <= len("before  after") {
				t.Fatalf("the config's prompt is %q", p)
			}
			res, run := recordRun(t, cfg, "Go.", logs.StatusOK)
			assertExact(t, run, res)
		})
	}
}
