package provider

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// A reply of several thinking blocks is the same streamed or not: the
// same blocks, signatures and redacted data, and Stream gets reasoning
// that adds up to the reply's ReasoningText, its blocks apart, as a reply
// that did not stream hands it over (StreamWhole).
func TestThinkingBlocksStreamedOrNot(t *testing.T) {
	thinking := []providertest.Thinking{{Text: "First, the city."}, {Redacted: "redacted-abc"}, {Text: "Then the weather."}, {Text: "Paris it is."}}
	for _, tc := range []struct {
		model string
		fake  func(testing.TB, ...providertest.Reply) *providertest.Server
		open  func(*testing.T, *providertest.Server) Model
	}{
		{"anthropic", providertest.NewAnthropicServer, func(t *testing.T, srv *providertest.Server) Model {
			return openFake(t, "anthropic/claude-sonnet-4-5", srv)
		}},
		{"bedrock", providertest.NewBedrockServer, openBedrockThinking},
	} {
		var (
			msgs   [2]dialog.Message
			chunks [2]recorder
		)
		for i, streamed := range []bool{false, true} {
			srv := tc.fake(t, providertest.Reply{Thinking: thinking, Text: "Sunny in Paris."})
			req := &Request{Messages: []*dialog.Message{userMsg("Weather?")}, Params: thinkingOn}
			if streamed {
				req.Stream = chunks[i].stream
			}
			msgs[i] = generate(t, tc.open(t, srv), req).Message
			if !streamed {
				if err := StreamWhole(context.Background(), chunks[i].stream, &msgs[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
		if want := sealed(thinking...); !reflect.DeepEqual(msgs[0].Reasoning, want) || !reflect.DeepEqual(msgs[1].Reasoning, want) {
			t.Errorf("%s: reasoning\nwhole    %+v\nstreamed %+v\nwant     %+v", tc.model, msgs[0].Reasoning, msgs[1].Reasoning, want)
		}
		const text = "First, the city.\n\nThen the weather.\n\nParis it is."
		for i, name := range []string{"whole", "streamed"} {
			var got strings.Builder
			for _, c := range chunks[i].chunks {
				got.WriteString(c.Reasoning)
			}
			if got.String() != text || msgs[i].ReasoningText() != text {
				t.Errorf("%s, %s: Stream got reasoning %q, ReasoningText %q; want %q", tc.model, name, got.String(), msgs[i].ReasoningText(), text)
			}
		}
	}
}
