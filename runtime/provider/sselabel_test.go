package provider

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// A stream labelled with another Content-Type than text/event-stream, as
// some servers send it (Foundry Local's application/json, a RAG proxy's
// text/plain, a uvicorn StreamingResponse's none), is read as the same
// stream labelled right: the reasoning under "reasoning", the parallel
// tool calls, the usage and the finish reason, and Stream gets the same
// pieces in the same order.
func TestStreamContentType(t *testing.T) {
	calls := []providertest.ToolCall{
		{Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{Name: "get_weather", Arguments: `{"city":"Rome"}`},
	}
	for _, tc := range []struct {
		model string
		fake  func(testing.TB, ...providertest.Reply) *providertest.Server
		reply providertest.Reply
		extra Params
	}{
		{"openai/qwen3", providertest.NewOpenAIServer, providertest.Reply{Text: "Checking both.", ToolCalls: calls,
			Thinking: []providertest.Thinking{{Text: "Two cities, two calls."}}, ReasoningField: "reasoning",
			Usage: providertest.Usage{Input: 20, Output: 9, Reasoning: 5}}, Params{}},
		{"anthropic/claude-sonnet-4-5", providertest.NewAnthropicServer, providertest.Reply{Text: "Checking both.", ToolCalls: calls,
			Thinking: []providertest.Thinking{{Text: "Two cities. "}, {Redacted: "redacted-abc"}, {Text: "Two calls."}},
			Usage:    providertest.Usage{Input: 20, Output: 9}}, thinkingOn},
	} {
		run := func(header http.Header) (*Response, []Chunk) {
			t.Helper()
			reply := tc.reply
			reply.Header = header
			srv := tc.fake(t, reply)
			var r recorder
			resp := generate(t, openFake(t, tc.model, srv), &Request{Messages: []*dialog.Message{userMsg("Weather in Paris and Rome?")},
				Tools: []*dialog.Function{weatherTool(t)}, Params: tc.extra, Stream: r.stream})
			resp.Latency = 0
			return resp, r.chunks
		}
		want, wantChunks := run(nil)
		if want.Message.ReasoningText() == "" || len(want.Message.FunctionCalls) != 2 || want.Message.Usage.InputTokens != 20 || want.FinishReason == "" {
			t.Fatalf("%s, labelled text/event-stream: %+v", tc.model, want)
		}
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", "text/plain; charset=utf-8", "application/x-ndjson", ""} {
			header := http.Header{"Content-Type": {ct}}
			if ct == "" {
				header["Content-Type"] = nil // no Content-Type at all
			}
			got, chunks := run(header)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, labelled %q:\n got %+v\nwant %+v", tc.model, ct, got, want)
			}
			if !reflect.DeepEqual(chunks, wantChunks) {
				t.Errorf("%s, labelled %q: Stream got %+v\nwant %+v", tc.model, ct, chunks, wantChunks)
			}
		}
	}
}
