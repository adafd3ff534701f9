package replay

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

type echoModel struct{}

func (echoModel) Generate(_ context.Context, req *provider.Request) (*provider.Response, error) {
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: "ok " + req.Messages[len(req.Messages)-1].Text()}}, nil
}

// A run cancelled while two branches of a tactic were under way: b0 had
// made one call, b1 two. A replay in which b0 goes on past its recorded
// call before b1 has made its second has matched every call of b0's
// dialog: it reached the end of the recording there, it did not diverge
// (the scheduler decides which branch gets there first).
func TestCutShortWhileOtherBranchesUnderWay(t *testing.T) {
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "fan"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &tactics.Agent{Name: "solver", Model: echoModel{}, ModelName: "mock/test", Log: w}
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	a.Receive("task")
	for _, b := range []string{"b0", "b1"} {
		if err := a.Fork("main", b, 0, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, alias := range []string{"b0", "b1", "b1"} {
		if _, _, err := a.RespondTo(t.Context(), alias); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusCancelled, Error: "context canceled"}); err != nil {
		t.Fatal(err)
	}
	rec, err := Load(t.Context(), run)
	if err != nil {
		t.Fatal(err)
	}
	m := NewModel(rec, nil)
	b0 := Position{Agent: "solver", Dialog: "b0", Turn: 1, Attempt: 1}
	if _, ok := rec.take(b0); !ok {
		t.Fatal("no call b0/1 recorded")
	}
	b0.Turn = 2
	d := m.beyond(t.Context(), b0, &provider.Request{Model: "mock/test"})
	if !d.CutShort || !strings.Contains(d.Error(), "reached the end of the recording") || d.Diff != "" {
		t.Errorf("b0 past its recorded call with b1 under way: %v", d)
	}
	// A call past the end of b1's dialog while b1's own recorded calls
	// are not all made is another way.
	b1 := Position{Agent: "solver", Dialog: "b1", Turn: 3, Attempt: 1}
	if d := m.beyond(t.Context(), b1, &provider.Request{Model: "mock/test"}); d.CutShort {
		t.Errorf("b1 past the end with its own calls unserved: %v", d)
	}
}
