package cli

import (
	"bufio"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/conversation"
)

// A retry after an ask_user question starts the reply on the line after
// the question, naming the agent once.
func TestChatShowsRetryAfterAsk(t *testing.T) {
	var b strings.Builder
	c := &chatClient{out: bufio.NewWriter(&b)}
	for _, ev := range []conversation.Event{
		{Type: "start", Agent: "helper"},
		{Type: "tool", Tool: &dialog.FunctionCall{Name: "ask_user", Arguments: []byte(`{}`)}},
		{Type: "ask", Agent: "helper", Text: "Which city?"},
		{Type: "retry", Error: "stream cut short"},
		{Type: "text", Text: "Paris."},
		{Type: "end", Status: "ok"},
	} {
		c.show(ev)
	}
	want := "helper: [tool ask_user {}] \n[helper asks] Which city?\n[retrying: stream cut short]\nhelper: Paris.\n"
	if b.String() != want {
		t.Errorf("printed\n%q\nwant\n%q", b.String(), want)
	}
}
