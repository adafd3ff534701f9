package cli

import (
	"bufio"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/conversation"
)

// A retry event starts the reply again on a line of its own, under the
// answering agent's name, after saying why: what the failed attempt
// streamed is not read as part of the reply.
func TestChatShowsRetry(t *testing.T) {
	var b strings.Builder
	c := &chatClient{out: bufio.NewWriter(&b), reasoning: true}
	for _, ev := range []conversation.Event{
		{Type: "start", Agent: "helper", Guest: true},
		{Type: "reasoning", Text: "Thinking 1."},
		{Type: "text", Text: "Par"},
		{Type: "retry", Error: "stream cut short"},
		{Type: "reasoning", Text: "Thinking 2."},
		{Type: "text", Text: "Paris."},
		{Type: "end", Status: "ok"},
	} {
		c.show(ev)
	}
	want := "helper (guest): [thinking] Thinking 1.\nPar\n[retrying: stream cut short]\nhelper (guest): [thinking] Thinking 2.\nParis.\n"
	if b.String() != want {
		t.Errorf("printed\n%q\nwant\n%q", b.String(), want)
	}
}

// A reply without text says so instead of ending on a blank line, and
// points to --reasoning when the reply was all reasoning.
func TestChatShowsReplyWithoutText(t *testing.T) {
	for _, tc := range []struct {
		reasoning bool
		msg       *dialog.Message
		want      string
	}{
		{false, &dialog.Message{Role: dialog.RoleAssistant, Reasoning: []dialog.Reasoning{{Text: "Hmm."}}}, "a: [no text: the reply is all reasoning, which --reasoning shows]\n"},
		{true, &dialog.Message{Role: dialog.RoleAssistant, Reasoning: []dialog.Reasoning{{Text: "Hmm."}}}, "a: [thinking] Hmm.\n[no text]\n"},
		{false, &dialog.Message{Role: dialog.RoleAssistant}, "a: [no text]\n"},
		{false, &dialog.Message{Role: dialog.RoleAssistant, Content: "Yes."}, "a: Yes.\n"},
	} {
		var b strings.Builder
		c := &chatClient{out: bufio.NewWriter(&b), reasoning: tc.reasoning}
		c.show(conversation.Event{Type: "start", Agent: "a"})
		if r := tc.msg.ReasoningText(); r != "" {
			c.show(conversation.Event{Type: "reasoning", Text: r})
		}
		if tc.msg.Content != "" {
			c.show(conversation.Event{Type: "text", Text: tc.msg.Content})
		}
		c.show(conversation.Event{Type: "end", Status: "ok", Message: &conversation.Entry{Message: tc.msg}})
		if b.String() != tc.want {
			t.Errorf("printed %q, want %q", b.String(), tc.want)
		}
	}
}
