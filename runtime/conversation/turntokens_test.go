package conversation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
)

// fixedModel answers at once with the same reply, and counts nothing.
type fixedModel struct{}

func (fixedModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Modality: dialog.ModalityText,
		Content: strings.Repeat("The answer is a short sentence. ", 10)}}, nil
}

// TestTurnTokenizesOnlyNewText checks that a turn of a long conversation
// with a context manager tokenizes its new messages, not the whole
// history again: every turn rebuilds the history's messages, and their
// texts were counted on the turns before.
func TestTurnTokenizesOnlyNewText(t *testing.T) {
	cm, err := contextmgr.New(map[string]any{"type": "default", "max_tokens": 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	tok := contextmgr.NewTokenizer()
	svc, err := NewService(quietStore(t, t.TempDir()), []*AgentSpec{
		{Name: "assistant", System: prompt(t, "assistant", "You help {sender}."), Model: fixedModel{}, ModelName: "mock/a",
			Context: cm, ContextName: "default"},
	}, ServiceOptions{Tokens: tok})
	if err != nil {
		t.Fatal(err)
	}
	question := func(i int) string { return fmt.Sprintf("Question %d: %s", i, strings.Repeat("what about this? ", 5)) }
	turn := func(i int) {
		if _, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: question(i)},
			func(Event) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 60 {
		turn(i)
	}
	// What a turn adds: its question, and the framing message built for
	// it (the reply's text is the same every turn).
	fresh := contextmgr.NewTokenizer()
	before := tok.Stats().Tokenized
	for i := 60; i < 65; i++ {
		turn(i)
		fresh.Count("mock/a", question(i))
	}
	got, added := tok.Stats().Tokenized-before, fresh.Stats().Tokenized
	// The framing is a few dozen tokens a turn; the history is over 5,000.
	if got > 2*added+5*100 {
		t.Errorf("5 turns over a history of 120 messages tokenized %d tokens; their questions are %d", got, added)
	}
}
