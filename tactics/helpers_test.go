package tactics

import (
	"context"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
)

// parseConfig parses a config from text, failing the test on a problem.
func parseConfig(t testing.TB, name, text string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(name, []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// limitsOf returns the Limits of the agents a and b of a chat config on
// mock/demo whose global section adds global ("key: value") and whose
// agent b adds b.
func limitsOf(t *testing.T, global, b string) (Limits, Limits) {
	t.Helper()
	cfg := parseConfig(t, "t.yaml", "tactic_type: chat\nglobal: {model_name: mock/demo, "+global+"}\nagent_configs: [{name: a, system_prompt: x}, {name: b, system_prompt: x, "+b+"}]\n")
	makers, err := Agents(t.Context(), cfg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return makers["a"]().Limits, makers["b"]().Limits
}

// addTool is the tool "add", which adds its arguments a and b.
func addTool(t testing.TB) *dialog.Function {
	t.Helper()
	f, err := dialog.NewFunction("add", "adds", func(_ context.Context, in struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (int, error) {
		return in.A + in.B, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// areaTool is the tool "area", which multiplies its arguments w and h.
func areaTool(t testing.TB) *dialog.Function {
	t.Helper()
	f, err := dialog.NewFunction("area", "Area of a rectangle.", func(_ context.Context, in struct {
		W int `json:"w"`
		H int `json:"h"`
	}) (int, error) {
		return in.W * in.H, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// runRecords returns the records of run's finished log, checked by
// readLog.
func runRecords(t *testing.T, run *logs.Run) []*logs.Record {
	t.Helper()
	rd, err := run.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	return readLog(t, rd)
}
