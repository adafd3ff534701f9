package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// A scripted reply may come with reasoning: it is the message's one
// unsigned reasoning block, counted in the output and reasoning tokens,
// and never streamed as text; with an error, the reply is refused.
func TestMockReasoning(t *testing.T) {
	m := openMockModel(t, MockConfig{Replies: []MockReply{{Text: "42", Reasoning: "six times seven"}}})
	var streamed strings.Builder
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("6*7?")},
		Stream: func(_ context.Context, c Chunk) error { streamed.WriteString(c.Text); return nil }})
	msg := resp.Message
	if msg.Content != "42" || len(msg.Reasoning) != 1 || msg.Reasoning[0] != (dialog.Reasoning{Text: "six times seven"}) {
		t.Fatalf("reply %q, reasoning %+v", msg.Content, msg.Reasoning)
	}
	want := mockTokens("six times seven")
	if msg.Usage.ReasoningTokens != want || msg.Usage.OutputTokens != mockTokens("42")+want {
		t.Errorf("usage %+v, want %d reasoning tokens among the output", msg.Usage, want)
	}
	if streamed.String() != "42" {
		t.Errorf("streamed %q, want the text alone", streamed.String())
	}
	if err := loadMockYAML(`replies: [{error: server, reasoning: hmm}]`); err == nil || !strings.Contains(err.Error(), "error") {
		t.Errorf("an error reply with reasoning: %v, want refused", err)
	}
	if err := loadMockYAML(`replies: [{text: "42", reasoning: "six times seven"}]`); err != nil {
		t.Errorf("a reply with reasoning from YAML: %v", err)
	}
}
