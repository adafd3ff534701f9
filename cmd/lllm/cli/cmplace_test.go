package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// A context manager's bad key is reported at the --set that gave it, or
// at its line in the file, by run and validate alike, with no run.
func TestContextManagerKeyPlaced(t *testing.T) {
	text := strings.Replace(chatConfig, "  model_args: {temperature: 0.2}\n", "  model_args: {temperature: 0.2}\n  context_manager:\n    type: default\n    max_tokens: 64000\n", 1)
	cfg, logDir := writeConfig(t, text)
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"--set", "global.context_manager.buffer=-5"},
			`--set global.context_manager.buffer: agent assistant: context_manager: default: key buffer must be at least 0, not -5`},
		{[]string{"--set", "global.context_manager.max_tokens=lots"},
			`--set global.context_manager.max_tokens: agent assistant: context_manager: default: key max_tokens must be an integer, not "lots"`},
		{[]string{"--set", "global.context_manager.type=window"},
			regexp.QuoteMeta(cfg) + `:7:5: agent assistant: context_manager: window: unknown key "max_tokens" \(accepted: type, n\)`},
	} {
		wantProblems(t, lllm(t, append([]string{"run", cfg, "--task", "x", "--log-dir", logDir}, c.set...)...), `(?m)^lllm: `+c.want+`$`)
		if r := lllm(t, append([]string{"validate", cfg}, c.set...)...); r.code != ExitUsage || !regexp.MustCompile(`(?m)^`+c.want+`$`).MatchString(r.stderr) {
			t.Errorf("validate %v: want a problem matching %s:\n%v", c.set, c.want, r)
		}
	}
	if _, err := os.Stat(logDir); err == nil {
		t.Error("a bad context manager started a run")
	}
}
