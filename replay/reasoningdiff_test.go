package replay

import (
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
)

// A request that differs from the recorded one only in a message's
// reasoning (its text, its redacted data, its signature) shows that in
// its diff, as it shows a difference in the text.
func TestRequestDiffReasoning(t *testing.T) {
	reply := func(r ...dialog.Reasoning) []*dialog.Message {
		return []*dialog.Message{
			{Role: dialog.RoleUser, Name: "user", Content: "Weather in Paris?"},
			{Role: dialog.RoleAssistant, Name: "assistant", Content: "Sunny.", Reasoning: r},
		}
	}
	recorded := reply(dialog.Reasoning{Text: "Look it up.", Signature: "sig-a"}, dialog.Reasoning{Redacted: "redacted-a"})
	for _, tc := range []struct {
		name     string
		replayed []*dialog.Message
		want     []string
	}{
		{"text", reply(dialog.Reasoning{Text: "Guess.", Signature: "sig-a"}, dialog.Reasoning{Redacted: "redacted-a"}),
			[]string{"-reasoning: Look it up. <signature " + shortHash("sig-a") + ">", "+reasoning: Guess. <signature " + shortHash("sig-a") + ">"}},
		{"signature", reply(dialog.Reasoning{Text: "Look it up.", Signature: "sig-b"}, dialog.Reasoning{Redacted: "redacted-a"}),
			[]string{"+reasoning: Look it up. <signature " + shortHash("sig-b") + ">"}},
		{"redacted", reply(dialog.Reasoning{Text: "Look it up.", Signature: "sig-a"}, dialog.Reasoning{Redacted: "redacted-b"}),
			[]string{"-reasoning: <redacted, " + shortHash("redacted-a") + ">", "+reasoning: <redacted, " + shortHash("redacted-b") + ">"}},
		{"dropped", reply(),
			[]string{"-reasoning: Look it up.", "-reasoning: <redacted"}},
		{"a call's", reply(dialog.Reasoning{Text: "Look it up.", Signature: "sig-a"}, dialog.Reasoning{Redacted: "redacted-a"}, dialog.Reasoning{Signature: "sig-c", Call: "call_1"}),
			[]string{"+reasoning (call call_1): <signature " + shortHash("sig-c") + ">"}},
	} {
		c := &Call{Request: recorded, Record: &logs.ModelCall{Model: "mock/demo"}}
		d := requestDiff(c, &provider.Request{Model: "mock/demo", Messages: tc.replayed}, nil)
		for _, w := range tc.want {
			if !strings.Contains(d, "\n"+w) {
				t.Errorf("%s: the diff has no line %q:\n%s", tc.name, w, d)
			}
		}
	}
	if d := requestDiff(&Call{Request: recorded, Record: &logs.ModelCall{Model: "mock/demo"}}, &provider.Request{Model: "mock/demo", Messages: reply(recorded[1].Reasoning...)}, nil); strings.Contains(d, "reasoning") {
		t.Errorf("the same reasoning shows in the diff:\n%s", d)
	}
}
