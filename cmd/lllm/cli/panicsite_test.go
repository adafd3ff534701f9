package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/tactics"
)

type panicSiteTactic struct{}

func (panicSiteTactic) Agents() []string { return []string{"assistant"} }
func (panicSiteTactic) Call(context.Context, *tactics.Session, string) (any, error) {
	panic("the tactic has a bug")
}

func init() {
	tactics.Register("cli_test_panics", func(map[string]any) (tactics.Tactic, error) { return panicSiteTactic{}, nil })
}

// lllm run of a tactic that panics says what panicked and where on its
// one line, and leaves the stack to the log instead of joining it in.
func TestRunPanicOneLine(t *testing.T) {
	cfg, logDir := writeConfig(t, strings.Replace(chatConfig, "tactic_type: chat", "tactic_type: cli_test_panics", 1))
	r := lllm(t, "run", cfg, "--task", "x", "--log-dir", logDir)
	if r.code != ExitError || strings.Count(r.stderr, "\n") != 1 ||
		!strings.Contains(r.stderr, "panicked: the tactic has a bug (at ") ||
		!strings.Contains(r.stderr, "panicsite_test.go:") ||
		!strings.Contains(r.stderr, "(its stack is run_end.error in the log)") ||
		strings.Contains(r.stderr, "goroutine ") {
		t.Fatalf("%v", r)
	}
}
