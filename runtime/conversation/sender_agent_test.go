package conversation

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/provider"
)

// TestSenderNamedLikeAnAgent: a sender may not take the name of an agent
// of the service (it would be listed twice in participants, and a guest of
// that name would be framed as joining its own conversation): the run is
// refused as a bad name, naming the sender, and stores nothing.
func TestSenderNamedLikeAnAgent(t *testing.T) {
	a := mockModel(t, provider.MockConfig{})
	dir := t.TempDir()
	svc := twoAgents(t, dir, a, a, ServiceOptions{})
	for _, req := range []RunRequest{
		{Agent: "assistant", Sender: "critic", Content: "hi"},
		{Agent: "assistant", Sender: "critic", Content: "hi", Guest: "critic"},
		{Agent: "assistant", Sender: "assistant", Content: "hi"},
	} {
		for name, call := range map[string]func() error{
			"Check": func() error { return svc.Check(req) },
			"Run":   func() error { _, err := svc.Run(context.Background(), req, nil); return err },
		} {
			err := call()
			if !errors.Is(err, ErrBadName) || !strings.Contains(err.Error(), `sender "`+req.Sender+`" is the name of an agent`) {
				t.Errorf("%s %+v: %v, want a bad name naming the sender", name, req, err)
			}
		}
	}
	if ents := stored(dir); len(ents) != 0 {
		t.Fatalf("a refused sender stored %v", ents)
	}
	// Other senders are as they were.
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "hi"})
	conv, _ := svc.Store().Lookup("assistant", "alice")
	if p := conv.Summary().Participants; len(p) != 2 || p[0] != "alice" || p[1] != "assistant" {
		t.Fatalf("participants %v", p)
	}
}
