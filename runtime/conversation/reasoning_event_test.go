package conversation

import (
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/provider"
)

// A reply's reasoning streams as reasoning events, before its text, and
// is kept on the stored reply, not in its text.
func TestRunStreamsReasoning(t *testing.T) {
	a := mockModel(t, provider.MockConfig{Replies: []provider.MockReply{{Text: "Paris.", Reasoning: "The capital of France is Paris."}}})
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{})
	e, ev := run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "Capital of France?"})
	var reasoning, text strings.Builder
	for _, x := range ev.evs {
		switch x.Type {
		case "reasoning":
			if text.Len() > 0 {
				t.Errorf("reasoning after text: %v", ev.types())
			}
			reasoning.WriteString(x.Text)
		case "text":
			text.WriteString(x.Text)
		}
	}
	if reasoning.String() != "The capital of France is Paris." || text.String() != "Paris." {
		t.Errorf("streamed reasoning %q, text %q (events %v)", reasoning.String(), text.String(), ev.types())
	}
	if e.Message.Content != "Paris." || e.Message.ReasoningText() != "The capital of France is Paris." {
		t.Errorf("stored %q with reasoning %q", e.Message.Content, e.Message.ReasoningText())
	}
}
