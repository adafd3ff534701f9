package cli

import (
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
)

// An empty RUN is a usage mistake: every command taking one exits with
// ExitUsage, says that no run was given, and writes nothing on stdout.
func TestEmptyRunIsUsageError(t *testing.T) {
	logDir, _ := runConfig(t, retryConfig, "What is 3+4?")
	msg := strings.TrimPrefix(logs.ErrNoRun.Error(), "logs: ")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"tree", ""}, msg},
		{[]string{"tree", "", "-o", "json"}, msg},
		{[]string{"show", ""}, msg},
		{[]string{"show", "", "abc"}, msg},
		{[]string{"replay", ""}, msg},
		{[]string{"diff", "", "latest"}, "run A: " + msg},
		{[]string{"diff", "latest", ""}, "run B: " + msg},
		{[]string{"export", ""}, msg},
		{[]string{"export", "latest", ""}, msg},
		{[]string{"show", "latest", ""}, "the DIALOG_ID given is empty: give one, or leave it out"},
		{[]string{"show", "latest", " "}, "the DIALOG_ID given is empty: give one, or leave it out"},
	} {
		r := lllm(t, append(tt.args, "--log-dir", logDir)...)
		first, _, _ := strings.Cut(r.stderr, "\n")
		if r.code != ExitUsage || r.stdout != "" || first != "lllm: "+tt.want {
			t.Errorf("lllm %q: %v\nwant exit %d and %q", tt.args, r, ExitUsage, "lllm: "+tt.want)
		}
	}
}
