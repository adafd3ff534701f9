package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// A server that ignores "stream": true and answers with the whole reply,
// as JSON, gives the same Response as one that streams it, and Stream
// gets it as StreamWhole hands a reply that did not stream.
//
// A stream labelled with another Content-Type than text/event-stream, as
// some servers send it (Foundry Local's application/json, a RAG proxy's
// text/plain, a uvicorn StreamingResponse's none), is read as the same
// stream labelled right: the reasoning (under "reasoning" too), the
// parallel tool calls, the usage and the finish reason, and Stream gets
// the same pieces in the same order.
func TestStreamAnsweredWhole(t *testing.T) {
	calls := []providertest.ToolCall{
		{Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{Name: "get_weather", Arguments: `{"city":"Rome"}`},
	}
	for _, tc := range []struct {
		name, model string
		fake        func(testing.TB, ...providertest.Reply) *providertest.Server
		reply       providertest.Reply
		extra       Params
		tools       bool
	}{
		{"openai, text", "openai/gpt-4o-mini", providertest.NewOpenAIServer, providertest.Reply{Text: "Sunny, 18C.",
			Usage: providertest.Usage{Input: 12, Output: 4}}, Params{}, false},
		{"openai, calls", "openai/qwen3", providertest.NewOpenAIServer, providertest.Reply{Text: "Checking both.", ToolCalls: calls,
			Thinking: []providertest.Thinking{{Text: "Two cities, two calls."}}, ReasoningField: "reasoning",
			Usage: providertest.Usage{Input: 20, Output: 9, Reasoning: 5}}, Params{}, true},
		{"openai, reasoning_content", "openai/deepseek-reasoner", providertest.NewOpenAIServer, providertest.Reply{Text: "Paris.",
			Thinking: []providertest.Thinking{{Text: "The capital of France."}}, Usage: providertest.Usage{Input: 8, Output: 6}}, Params{}, false},
		{"anthropic, calls", "anthropic/claude-sonnet-4-5", providertest.NewAnthropicServer, providertest.Reply{Text: "Checking both.", ToolCalls: calls,
			Thinking: []providertest.Thinking{{Text: "Two cities. "}, {Redacted: "redacted-abc"}, {Text: "Two calls."}},
			Usage:    providertest.Usage{Input: 20, Output: 9}}, thinkingOn, true},
		{"anthropic, text", "anthropic/claude-sonnet-4-5", providertest.NewAnthropicServer, providertest.Reply{Text: "Sunny, 18C.",
			Usage: providertest.Usage{Input: 12, Output: 4}}, Params{}, false},
		{"ollama, calls", "ollama/qwen3", providertest.NewOllamaServer, providertest.Reply{Text: "Checking both.", ToolCalls: calls,
			Thinking: []providertest.Thinking{{Text: "Two cities, two calls."}}, Usage: providertest.Usage{Input: 20, Output: 9}}, Params{}, true},
		{"ollama, text", "ollama/llama3.1", providertest.NewOllamaServer, providertest.Reply{Text: "Sunny, 18C.",
			Usage: providertest.Usage{Input: 12, Output: 4}}, Params{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(whole bool, header http.Header) (*Response, []Chunk) {
				t.Helper()
				reply := tc.reply
				reply.IgnoreStream = whole
				reply.Header = header
				srv := tc.fake(t, reply)
				req := &Request{Messages: []*dialog.Message{userMsg("Weather in Paris and Rome?")}, Params: tc.extra}
				if tc.tools {
					req.Tools = []*dialog.Function{weatherTool(t)}
				}
				var r recorder
				req.Stream = r.stream
				resp := generate(t, openFake(t, tc.model, srv), req)
				resp.Latency = 0
				return resp, r.chunks
			}
			want, wantChunks := run(false, nil)
			if len(want.Message.FunctionCalls) != len(tc.reply.ToolCalls) || (want.Message.ReasoningText() == "") != (len(tc.reply.Thinking) == 0) ||
				want.Message.Usage.InputTokens != tc.reply.Usage.Input || want.FinishReason == "" {
				t.Fatalf("streamed, labelled text/event-stream: %+v", want)
			}
			got, chunks := run(true, nil)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("answered whole:\n got %+v\nwant %+v (streamed)", got, want)
			}
			var r recorder
			if err := StreamWhole(context.Background(), r.stream, &want.Message); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(chunks, r.chunks) {
				t.Errorf("answered whole, Stream got %+v\nwant %+v", chunks, r.chunks)
			}
			for _, ct := range []string{"application/json", "application/json; charset=utf-8", "text/plain; charset=utf-8", "application/x-ndjson", ""} {
				header := http.Header{"Content-Type": {ct}}
				if ct == "" {
					header["Content-Type"] = nil // no Content-Type at all
				}
				got, chunks := run(false, header)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("labelled %q:\n got %+v\nwant %+v", ct, got, want)
				}
				if !reflect.DeepEqual(chunks, wantChunks) {
					t.Errorf("labelled %q: Stream got %+v\nwant %+v", ct, chunks, wantChunks)
				}
			}
		})
	}
}

// The same, for whole replies the fakes do not send: indented, with a
// refusal, an error with status 200, and text too long for one event.
func TestStreamAnsweredWholeRaw(t *testing.T) {
	long := strings.Repeat("Paris é <b>\u0001</b> ", 9000) // over 64 KiB escaped, split on runes
	longJSON, _ := json.Marshal(long)
	for _, tc := range []struct {
		name, model, body string
		check             func(*Response, *recorder) string
		wantErr           string
	}{
		{name: "openai, refusal, indented", model: "openai/gpt-4o", body: "\n  " + `{
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "refusal": "I'm sorry, I cannot help with that."
      },
      "finish_reason": "stop"
    }
  ],
  "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
}`, check: func(resp *Response, _ *recorder) string {
			if resp.FinishReason != "refusal" || resp.Message.Metadata["refusal"] != "I'm sorry, I cannot help with that." || resp.Message.Usage.InputTokens != 10 {
				return fmt.Sprintf("finish %q, metadata %v, usage %+v; want the refusal", resp.FinishReason, resp.Message.Metadata, resp.Message.Usage)
			}
			return ""
		}},
		{name: "openai, long", model: "openai/gpt-4o", body: `{"choices":[{"index":0,"message":{"role":"assistant","content":` + string(longJSON) + `},"finish_reason":"stop"}]}`,
			check: func(resp *Response, r *recorder) string {
				var text strings.Builder
				for _, c := range r.chunks {
					text.WriteString(c.Text)
				}
				if resp.Message.Content != long || text.String() != long {
					return fmt.Sprintf("got %d bytes of text, %d streamed; want %d", len(resp.Message.Content), text.Len(), len(long))
				}
				return ""
			}},
		{name: "openai, error", model: "openai/gpt-4o", body: `{"error":{"message":"The model is overloaded.","type":"server_error"}}`,
			wantErr: "error event in the stream: server_error: The model is overloaded."},
		{name: "anthropic, error", model: "anthropic/claude-sonnet-4-5", body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			wantErr: "Overloaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r recorder
			req := &Request{Messages: []*dialog.Message{userMsg("Hi")}, Stream: r.stream}
			m := openRaw(t, tc.model, newRawServer(t, 200, tc.body))
			if tc.wantErr != "" {
				if err := generateErr(t, context.Background(), m, req); !strings.Contains(err.Error(), tc.wantErr) || err.Kind == ErrNetwork {
					t.Errorf("got %v (%v), want %q, not a network error", err, err.Kind, tc.wantErr)
				}
				return
			}
			if msg := tc.check(generate(t, m, req), &r); msg != "" {
				t.Error(msg)
			}
		})
	}
}
