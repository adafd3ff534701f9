package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
)

// TestMockInputTokensRemembered checks that the mock's input usage is the
// same whether a request's texts were counted before or not, and that a
// conversation's earlier messages are not tokenized again.
func TestMockInputTokensRemembered(t *testing.T) {
	m, err := Open(context.Background(), "mock/gpt-4o", Config{Mock: &MockConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	tok := contextmgr.NewTokenizer()
	msgs := []*dialog.Message{systemMsg("You count carefully.")}
	for i := range 30 {
		msgs = append(msgs, userMsg(fmt.Sprintf("turn %d: %s", i, strings.Repeat("word ", i))))
		want := 0
		for _, msg := range msgs {
			want += tok.CountMessage("mock/gpt-4o", msg)
		}
		before := mockTokenizer.Stats().Texts
		resp := generate(t, m, &Request{Messages: msgs})
		if got := resp.Message.Usage.InputTokens; got != want {
			t.Fatalf("turn %d: input tokens %d, want %d", i, got, want)
		}
		// The new user message, the previous reply (new as input) and
		// the new reply's text: nothing earlier.
		if n := mockTokenizer.Stats().Texts - before; n > 3 {
			t.Errorf("turn %d: %d texts tokenized for one new message", i, n)
		}
		msgs = append(msgs, &resp.Message)
	}
}
