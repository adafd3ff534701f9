package provider

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// reasoners are the fake servers of the providers that show a reply's
// reasoning, with the extra_body that asks for it.
var reasoners = []struct {
	model string
	fake  func(testing.TB, ...providertest.Reply) *providertest.Server
	extra json.RawMessage
}{
	{"anthropic/claude-sonnet-4-5", providertest.NewAnthropicServer, thinkingOn.ExtraBody},
	{"openai/deepseek-reasoner", providertest.NewOpenAIServer, nil},
	{"googleai/gemini-2.5-flash", providertest.NewGeminiServer, json.RawMessage(`{"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`)},
	{"ollama/qwen3", providertest.NewOllamaServer, json.RawMessage(`{"think":true}`)},
}

// recorder keeps the chunks a Stream callback gets, in order.
type recorder struct{ chunks []Chunk }

func (r *recorder) stream(_ context.Context, c Chunk) error {
	r.chunks = append(r.chunks, c)
	return nil
}

// check reports what is wrong with the chunks of a reply whose reasoning
// came before its text: every chunk carries one of the two, all the
// reasoning comes first, and they add up to the reply's (its reasoning
// blocks apart, as ReasoningText joins them).
func (r *recorder) check(t *testing.T, msg *dialog.Message, minReasoning int) {
	t.Helper()
	var reasoning, text strings.Builder
	pieces := 0
	for i, c := range r.chunks {
		switch {
		case (c.Text == "") == (c.Reasoning == ""):
			t.Errorf("chunk %d carries both or neither: %+v", i, c)
		case c.Reasoning != "" && text.Len() > 0:
			t.Errorf("chunk %d is reasoning after text: %+v", i, r.chunks)
		}
		if c.Reasoning != "" {
			pieces++
		}
		reasoning.WriteString(c.Reasoning)
		text.WriteString(c.Text)
	}
	if reasoning.String() != msg.ReasoningText() || text.String() != msg.Content {
		t.Errorf("streamed reasoning %q, text %q; the reply has %q, %q", reasoning.String(), text.String(), msg.ReasoningText(), msg.Content)
	}
	if pieces < minReasoning {
		t.Errorf("reasoning came in %d chunks, want at least %d: %+v", pieces, minReasoning, r.chunks)
	}
}

// Every provider that shows its reasoning streams it to Stream apart
// from the text, in the order it came, and the pieces add up to the
// reply's reasoning; a reply that does not stream hands Stream its
// reasoning, then its text.
func TestStreamReasoning(t *testing.T) {
	thinking := []providertest.Thinking{{Text: "The capital of France "}, {Text: "is Paris, as everyone knows."}}
	for _, tc := range reasoners {
		t.Run(tc.model, func(t *testing.T) {
			srv := tc.fake(t, providertest.Reply{Text: "Paris is the capital.", Thinking: thinking})
			var r recorder
			msg := generate(t, openFake(t, tc.model, srv), &Request{Messages: []*dialog.Message{userMsg("Capital of France?")},
				Params: Params{ExtraBody: tc.extra}, Stream: r.stream}).Message
			if !strings.HasSuffix(msg.ReasoningText(), "is Paris, as everyone knows.") {
				t.Errorf("reasoning %q", msg.ReasoningText())
			}
			r.check(t, &msg, 2)
		})
	}
	t.Run("mock", func(t *testing.T) {
		m := openMockModel(t, MockConfig{Replies: []MockReply{{Text: "42 is the answer.", Reasoning: "six times seven is forty-two"}}})
		var r recorder
		msg := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("?")}, Stream: r.stream}).Message
		r.check(t, &msg, 2)
	})
	t.Run("not streamed", func(t *testing.T) {
		// The mock does not stream a request with tools: Stream gets the
		// reply whole.
		m := openMockModel(t, MockConfig{Replies: []MockReply{{Text: "42.", Reasoning: "six times seven"}}})
		var r recorder
		msg := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("?")}, Tools: []*dialog.Function{weatherTool(t)}, Stream: r.stream}).Message
		r.check(t, &msg, 1)
		if len(r.chunks) != 2 {
			t.Errorf("chunks %+v, want the reasoning then the text", r.chunks)
		}
	})
}

// Ollama's thinking is the reply's reasoning when it does not stream too
// (langchaingo's client drops it).
func TestOllamaThinking(t *testing.T) {
	srv := providertest.NewOllamaServer(t, providertest.Reply{Text: "Paris.", Thinking: []providertest.Thinking{{Text: "France's capital."}}})
	msg := generate(t, openFake(t, "ollama/qwen3", srv), &Request{Messages: []*dialog.Message{userMsg("Capital of France?")}}).Message
	if msg.Content != "Paris." || len(msg.Reasoning) != 1 || msg.Reasoning[0] != (dialog.Reasoning{Text: "France's capital."}) {
		t.Errorf("reply %q, reasoning %+v", msg.Content, msg.Reasoning)
	}
}

// A Stream that fails on a piece of reasoning cancels the call.
func TestStreamReasoningError(t *testing.T) {
	stop := errors.New("enough")
	stream := func(_ context.Context, c Chunk) error {
		if c.Reasoning != "" {
			return stop
		}
		return nil
	}
	for _, tc := range reasoners {
		srv := tc.fake(t, providertest.Reply{Text: "Paris.", Thinking: []providertest.Thinking{{Text: "France's capital, surely."}}})
		e := generateErr(t, context.Background(), openFake(t, tc.model, srv), &Request{Messages: []*dialog.Message{userMsg("?")},
			Params: Params{ExtraBody: tc.extra}, Stream: stream})
		if e.Kind != ErrCancelled || !errors.Is(e, stop) {
			t.Errorf("%s: %v (kind %v), want the stream's error", tc.model, e, e.Kind)
		}
	}
}
