package tactics_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/tactics"
)

// nilMap panics in its own code, on the runtime's nil-map check.
type nilMap struct{ counts map[string]int }

func (nilMap) Agents() []string { return []string{"assistant"} }
func (t nilMap) Call(context.Context, *tactics.Session, string) (any, error) {
	t.counts["x"]++
	return t.counts, nil
}

func init() {
	tactics.Register("lab:nilmap", func(map[string]any) (tactics.Tactic, error) { return nilMap{}, nil })
}

// The first line of a panicking tactic's error says what panicked and
// where, outside the runtime's frames; the stack follows.
func TestPanicSiteOnFirstLine(t *testing.T) {
	cfg := batchConfig(t, "0s", 1)
	if err := cfg.Set("tactic_type", "lab:nilmap"); err != nil {
		t.Fatal(err)
	}
	res, err := tactics.Run(t.Context(), cfg, "x", tactics.RunOptions{LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	first, stack, _ := strings.Cut(res.Error, "\n")
	if res.Status != logs.StatusFailed ||
		!strings.HasPrefix(first, "tactic lab:nilmap panicked: assignment to entry in nil map (at ") ||
		!strings.Contains(first, "nilMap.Call, ") || !strings.Contains(first, "panicsite_test.go:") ||
		!strings.Contains(stack, "goroutine ") {
		t.Fatalf("status %s, error %q", res.Status, res.Error)
	}
}
