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

// A dialog that holds a call whose arguments the model broke (kept as a
// JSON string of its text) can still be sent on every wire: OpenAI's and
// Mistral's carry the model's text as it wrote it, Anthropic's, Gemini's
// and Ollama's, which take an object, get {}.
func TestBrokenArgumentsInHistory(t *testing.T) {
	const broken = `{"city": "Par`
	for _, tc := range []struct {
		model string
		srv   func(testing.TB, ...providertest.Reply) *providertest.Server
		sent  func(body map[string]any) any // the call's arguments on the wire
	}{
		{"openai/gpt-4o", providertest.NewOpenAIServer, func(b map[string]any) any {
			return at(b, "messages", 1, "tool_calls", 0, "function", "arguments")
		}},
		{"mistral/mistral-small-latest", providertest.NewMistralServer, func(b map[string]any) any {
			return at(b, "messages", 1, "tool_calls", 0, "function", "arguments")
		}},
		{"anthropic/claude-sonnet-4-5", providertest.NewAnthropicServer, func(b map[string]any) any {
			return at(b, "messages", 1, "content", 0, "input")
		}},
		{"googleai/gemini-2.5-flash", providertest.NewGeminiServer, func(b map[string]any) any {
			return at(b, "contents", 1, "parts", 0, "functionCall", "args")
		}},
		{"ollama/qwen3", providertest.NewOllamaServer, func(b map[string]any) any {
			return at(b, "messages", 1, "tool_calls", 0, "function", "arguments")
		}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			srv := tc.srv(t)
			m := openFake(t, tc.model, srv)
			args, _ := json.Marshal(broken)
			fc := dialog.FunctionCall{ID: "call00001", Name: "get_weather", Arguments: args}
			msgs := []*dialog.Message{userMsg("Weather in Paris?"),
				{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{fc}},
				{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "call00001", Content: "Error: invalid arguments: not valid JSON"},
			}
			generate(t, m, &Request{Messages: msgs, Tools: []*dialog.Function{weatherTool(t)}})
			got := tc.sent(srv.LastRequest().JSON())
			var want any = map[string]any{}
			if tc.model[:3] == "ope" || tc.model[:3] == "mis" {
				want = broken
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the broken call's arguments went as %#v, want %#v\n%s", got, want, srv.LastRequest().Body)
			}
		})
	}
}

// at is the value at path (object keys and array indexes) in v, or nil.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}
