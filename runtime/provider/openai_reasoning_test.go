package provider

import (
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// Reasoning comes under "reasoning" from vLLM (which dropped
// reasoning_content), OpenRouter and Ollama's /v1, and under both names
// from some servers: it is the reply's reasoning, once, streamed or not.
func TestOpenAIReasoningField(t *testing.T) {
	const thought = "Seventeen is prime: no divisor up to four."
	for _, field := range []string{"reasoning_content", "reasoning", "reasoning_content,reasoning", "reasoning,reasoning_content"} {
		for _, streamed := range []bool{false, true} {
			srv := providertest.NewOpenAIServer(t, providertest.Reply{Text: "Yes.", Thinking: []providertest.Thinking{{Text: thought}}, ReasoningField: field})
			var r recorder
			req := &Request{Messages: []*dialog.Message{userMsg("Is 17 prime?")}}
			if streamed {
				req.Stream = r.stream
			}
			msg := generate(t, openFake(t, "openai/qwen3-32b", srv), req).Message
			if msg.Content != "Yes." || len(msg.Reasoning) != 1 || msg.Reasoning[0] != (dialog.Reasoning{Text: thought}) {
				t.Errorf("%s, streamed %v: reply %q, reasoning %+v", field, streamed, msg.Content, msg.Reasoning)
			}
			if streamed {
				r.check(t, &msg, 2)
			}
		}
	}
}

// A reply without reasoning has none.
func TestOpenAIReplyTapPlain(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{Text: "Hello."})
	msg := generate(t, openFake(t, "openai/gpt-4o-mini", srv), &Request{Messages: []*dialog.Message{userMsg("Hi")}}).Message
	if msg.Content != "Hello." || msg.Reasoning != nil {
		t.Errorf("reply %q, reasoning %+v", msg.Content, msg.Reasoning)
	}
}
