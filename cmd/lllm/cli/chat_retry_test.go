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
// streamed is not read as part of the reply. After an ask_user question
// it starts on the line after the question, naming the agent once.
func TestChatShowsRetry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []conversation.Event
		want   string
	}{
		{"mid-stream", []conversation.Event{
			{Type: "start", Agent: "helper", Guest: true},
			{Type: "reasoning", Text: "Thinking 1."},
			{Type: "text", Text: "Par"},
			{Type: "retry", Error: "stream cut short"},
			{Type: "reasoning", Text: "Thinking 2."},
			{Type: "text", Text: "Paris."},
			{Type: "end", Status: "ok"},
		}, "helper (guest): [thinking] Thinking 1.\nPar\n[retrying: stream cut short]\nhelper (guest): [thinking] Thinking 2.\nParis.\n"},
		{"after a question", []conversation.Event{
			{Type: "start", Agent: "helper"},
			{Type: "tool", Tool: &dialog.FunctionCall{Name: "ask_user", Arguments: []byte(`{}`)}},
			{Type: "ask", Agent: "helper", Text: "Which city?"},
			{Type: "retry", Error: "stream cut short"},
			{Type: "text", Text: "Paris."},
			{Type: "end", Status: "ok"},
		}, "helper: [tool ask_user {}] \n[helper asks] Which city?\n[retrying: stream cut short]\nhelper: Paris.\n"},
	} {
		var b strings.Builder
		c := &chatClient{out: bufio.NewWriter(&b), reasoning: true}
		for _, ev := range tc.events {
			c.show(ev)
		}
		if b.String() != tc.want {
			t.Errorf("%s: printed\n%q\nwant\n%q", tc.name, b.String(), tc.want)
		}
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
