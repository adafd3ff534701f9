package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// A tool call whose arguments the model wrote as broken JSON is kept, as
// a JSON string of its text, and the tool tells the model that it is not
// valid JSON and why, streamed or not; a JSON string the model sent is
// not a JSON object.
func TestBrokenToolArguments(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{`{"city": "Paris"`, "invalid arguments: not valid JSON (unexpected end of JSON input, at byte 16): send the arguments as one JSON object"},
		{`"Paris"`, "invalid arguments: not a JSON object"},
	} {
		for _, stream := range []bool{false, true} {
			srv := providertest.NewOpenAIServer(t, providertest.Reply{
				ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: c.args}},
			})
			m := openFake(t, "openai/gpt-4o", srv)
			tool := weatherTool(t)
			req := &Request{Messages: []*dialog.Message{userMsg("Weather in Paris?")}, Tools: []*dialog.Function{tool}}
			if stream {
				req.Stream = func(context.Context, Chunk) error { return nil }
			}
			resp := generate(t, m, req)
			if len(resp.Message.FunctionCalls) != 1 {
				t.Fatalf("%s, stream %v: calls %+v", c.args, stream, resp.Message.FunctionCalls)
			}
			got := tool.Call(t.Context(), resp.Message.FunctionCalls[0])
			if got.Error != c.want || !strings.HasPrefix(got.Result, "Error: ") {
				t.Errorf("%s, stream %v: arguments %s, error %q, want %q", c.args, stream, resp.Message.FunctionCalls[0].Arguments, got.Error, c.want)
			}
		}
	}
}
