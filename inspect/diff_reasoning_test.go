package inspect_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// mockRun logs one turn of an agent on the mock provider whose reply is
// "4" with the given reasoning.
func mockRun(t *testing.T, reasoning string) *inspect.Tree {
	t.Helper()
	m, err := provider.Open(context.Background(), "mock/m", provider.Config{Mock: &provider.MockConfig{
		Replies: []provider.MockReply{{Text: "4", Reasoning: reasoning}}}})
	if err != nil {
		t.Fatal(err)
	}
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "test", Task: []byte(`"q"`)}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &tactics.Agent{Name: "coder", System: dialog.MustPrompt("sys", "You add."), Model: m, ModelName: "mock/m", Limits: tactics.DefaultLimits(), Log: w}
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Receive("2+2?"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Respond(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	return load(t, run, inspect.Options{Messages: true})
}

// Two runs whose replies differ only in their reasoning differ, and the
// diff shows the reasoning; runs with the same reasoning do not.
func TestCompareSeesReasoning(t *testing.T) {
	a, b := mockRun(t, "two and two"), mockRun(t, "two plus two")
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if d.Identical || len(d.Divergences) == 0 {
		t.Fatalf("runs whose reasoning differs compared identical: %+v", d)
	}
	if diff := d.Divergences[0].Diff; !strings.Contains(diff, "- reasoning: two and two") || !strings.Contains(diff, "+ reasoning: two plus two") {
		t.Errorf("the diff does not show the reasoning:\n%s", diff)
	}
	if d, err := inspect.Compare(a, mockRun(t, "two and two")); err != nil || !d.Identical {
		t.Errorf("runs with the same reasoning: %v, identical %v", err, d.Identical)
	}
}
