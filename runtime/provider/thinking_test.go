package provider

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

var thinkingOn = Params{ExtraBody: json.RawMessage(`{"thinking":{"type":"enabled","budget_tokens":1024}}`)}

// toolRound is the request after reply asked for a tool call: the dialog,
// the reply, and the call's result.
func toolRound(t *testing.T, reply dialog.Message, stream func(context.Context, Chunk) error) *Request {
	t.Helper()
	if len(reply.FunctionCalls) != 1 {
		t.Fatalf("reply calls %d tools, want 1: %+v", len(reply.FunctionCalls), reply)
	}
	fc := reply.FunctionCalls[0]
	result := &dialog.Message{Role: dialog.RoleTool, Name: fc.Name, ToolCallID: fc.ID, Content: "sunny"}
	return &Request{Messages: []*dialog.Message{userMsg("Weather in Paris?"), &reply, result}, Params: thinkingOn, Stream: stream}
}

// The fake server refuses what Anthropic refuses: a tool round whose
// assistant turn lost its thinking, and a thinking block whose signature
// does not match its text. Without these checks the tests below would
// prove nothing.
func TestAnthropicFakeChecksThinking(t *testing.T) {
	srv := providertest.NewAnthropicServer(t)
	m := openFake(t, "anthropic/claude-sonnet-4-5", srv)
	call := dialog.FunctionCall{ID: "toolu_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}
	lost := dialog.Message{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{call}, Model: "anthropic/claude-sonnet-4-5"}
	e := generateErr(t, context.Background(), m, toolRound(t, lost, nil))
	if e.Kind != ErrBadRequest || !strings.Contains(e.Error(), "Expected `thinking` or `redacted_thinking`, but found `tool_use`") {
		t.Errorf("a tool round without its thinking: %v, want the API's 400", e)
	}
	forged := lost
	forged.Reasoning = []dialog.Reasoning{{Text: "edited", Signature: providertest.Signature("original")}}
	e = generateErr(t, context.Background(), m, toolRound(t, forged, nil))
	if e.Kind != ErrBadRequest || !strings.Contains(e.Error(), "Invalid `signature`") {
		t.Errorf("a thinking block with another's signature: %v, want the API's 400", e)
	}
}

// A reply's thinking blocks, redacted ones included, come back on the
// message with their signatures, streamed or not, and go back to
// Anthropic at the start of the assistant turn in the next tool round,
// as the API requires.
func TestAnthropicThinkingRoundTrip(t *testing.T) {
	thinking := []providertest.Thinking{
		{Text: "The user wants the weather. "},
		{Redacted: "redacted-EmwKAhgBEgy3va3pzix"},
		{Text: "I will call get_weather."},
	}
	for _, streamed := range []bool{false, true} {
		name := map[bool]string{false: "whole", true: "streamed"}[streamed]
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewAnthropicServer(t,
				providertest.Reply{Thinking: thinking, ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
				providertest.Reply{Thinking: []providertest.Thinking{{Text: "It is sunny."}}, Text: "Sunny in Paris."})
			m := openFake(t, "anthropic/claude-sonnet-4-5", srv)
			var streamedText strings.Builder
			var stream func(context.Context, Chunk) error
			if streamed {
				stream = func(_ context.Context, c Chunk) error { streamedText.WriteString(c.Text); return nil }
			}
			req := &Request{Messages: []*dialog.Message{userMsg("Weather in Paris?")}, Tools: []*dialog.Function{weatherTool(t)}, Params: thinkingOn, Stream: stream}
			first := generate(t, m, req).Message
			want := []dialog.Reasoning{
				{Text: thinking[0].Text, Signature: providertest.Signature(thinking[0].Text)},
				{Redacted: thinking[1].Redacted},
				{Text: thinking[2].Text, Signature: providertest.Signature(thinking[2].Text)},
			}
			if !jsonEqual(t, first.Reasoning, want) {
				t.Errorf("reasoning = %+v\nwant %+v", first.Reasoning, want)
			}
			if first.Content != "" || first.Metadata["reasoning"] != "" {
				t.Errorf("thinking leaked into the text or metadata: %q, %v", first.Content, first.Metadata)
			}
			if got := first.ReasoningText(); got != thinking[0].Text+"\n\n"+thinking[2].Text {
				t.Errorf("ReasoningText = %q", got)
			}

			next := toolRound(t, first, stream)
			next.Tools = req.Tools
			second := generate(t, m, next).Message
			if second.Content != "Sunny in Paris." || second.ReasoningText() != "It is sunny." {
				t.Errorf("second reply = %q, reasoning %q", second.Content, second.ReasoningText())
			}
			if streamed && streamedText.String() != "Sunny in Paris." {
				t.Errorf("Stream got %q: thinking must not reach it", streamedText.String())
			}

			// On the wire: the assistant turn starts with the blocks, in
			// order, as they came.
			msgs, _ := srv.LastRequest().JSON()["messages"].([]any)
			if len(msgs) < 2 {
				t.Fatalf("messages = %v", msgs)
			}
			turn, _ := msgs[1].(map[string]any)
			wantSent := `[{"type":"thinking","thinking":"The user wants the weather. ","signature":"` + providertest.Signature(thinking[0].Text) +
				`"},{"type":"redacted_thinking","data":"redacted-EmwKAhgBEgy3va3pzix"},{"type":"thinking","thinking":"I will call get_weather.","signature":"` +
				providertest.Signature(thinking[2].Text) + `"}]`
			var wantBlocks any
			if err := json.Unmarshal([]byte(wantSent), &wantBlocks); err != nil {
				t.Fatal(err)
			}
			if turn["role"] != "assistant" || !jsonEqual(t, turn["content"], wantBlocks) {
				t.Errorf("messages[1] = %v\nwant the thinking blocks: %s", turn, wantSent)
			}
		})
	}
}

// Reasoning goes back only to the provider that sealed it: a reply of
// another provider, or reasoning without a signature, is not sent as a
// thinking block.
func TestThinkingNotSentElsewhere(t *testing.T) {
	call := dialog.FunctionCall{ID: "toolu_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}
	for _, reply := range []dialog.Message{
		{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{call}, Model: "openai/gpt-5",
			Reasoning: []dialog.Reasoning{{Text: "t", Signature: providertest.Signature("t")}}},
		{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{call}, Model: "anthropic/claude-sonnet-4-5",
			Reasoning: []dialog.Reasoning{{Text: "unsealed"}}},
	} {
		srv := providertest.NewAnthropicServer(t)
		m := openFake(t, "anthropic/claude-sonnet-4-5", srv)
		req := toolRound(t, reply, nil)
		req.Params = Params{}
		generate(t, m, req)
		if body := string(srv.LastRequest().Body); strings.Contains(body, `"thinking"`) {
			t.Errorf("reasoning of %s with signature %q sent back: %s", reply.Model, reply.Reasoning[0].Signature, body)
		}
	}
}

// An OpenAI-compatible server's reasoning_content (DeepSeek, vLLM) is the
// reply's reasoning, unsealed, and never goes back.
func TestReasoningContent(t *testing.T) {
	s := newRawServer(t, 200, `{"id":"c1","object":"chat.completion","model":"deepseek-reasoner",
		"choices":[{"index":0,"message":{"role":"assistant","content":"4","reasoning_content":"2+2 is 4."},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`)
	resp, err := generateSafely(t, openRaw(t, "openai/deepseek-reasoner", s), &Request{Messages: []*dialog.Message{userMsg("2+2?")}})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if got := resp.Message.Reasoning; !jsonEqual(t, got, []dialog.Reasoning{{Text: "2+2 is 4."}}) || resp.Message.Content != "4" {
		t.Errorf("reply %q, reasoning %+v", resp.Message.Content, got)
	}
}

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
