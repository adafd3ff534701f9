package provider

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// A streamed request that declares no tools may still get tool calls (an
// agent's final prompt withdraws them): the calls are assembled from the
// stream by index, not taken from langchaingo, which appends every
// argument fragment to the last call.
func TestOpenAIStreamedToolCallsWithoutTools(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{ToolCalls: twoCalls})
	m := openFake(t, "openai/gpt-4o", srv)
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{userMsg("Paris and Tokyo?")},
		Stream:   func(context.Context, Chunk) error { return nil },
	})
	if stream, _ := srv.LastRequest().JSON()["stream"].(bool); !stream {
		t.Fatal("the request was not streamed")
	}
	calls := resp.Message.FunctionCalls
	if len(calls) != 2 || resp.Message.Role != dialog.RoleToolCall {
		t.Fatalf("role %s, calls %+v", resp.Message.Role, calls)
	}
	for i, want := range twoCalls {
		if calls[i].ID != want.ID || calls[i].Name != want.Name || !jsonEqual(t, calls[i].Arguments, want.Arguments) {
			t.Errorf("call %d = %s %s(%s), want %+v", i, calls[i].ID, calls[i].Name, calls[i].Arguments, want)
		}
	}
}

// A server that streams parallel tool calls without their index (every
// call at 0) still gets them apart: a new id starts a new call, and the
// fragments that follow go to it.
func TestOpenAIStreamedToolCallsWithoutIndex(t *testing.T) {
	body := "data: " + `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}` + "\n\n" +
		"data: " + `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{\"city\":\"Paris\"}"}}]}}]}` + "\n\n" +
		"data: " + `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_b","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}` + "\n\n" +
		"data: " + `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{\"city\":\"Tokyo\"}"}}]}}]}` + "\n\n" +
		"data: " + `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	m, err := Open(context.Background(), "openai/gpt-4o", Config{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Paris and Tokyo?")},
		Tools: []*dialog.Function{weatherTool(t)}, Stream: func(context.Context, Chunk) error { return nil }})
	calls := resp.Message.FunctionCalls
	if len(calls) != 2 || calls[0].ID != "call_a" || calls[1].ID != "call_b" ||
		!jsonEqual(t, calls[0].Arguments, `{"city":"Paris"}`) || !jsonEqual(t, calls[1].Arguments, `{"city":"Tokyo"}`) {
		t.Fatalf("calls = %+v", calls)
	}
}

// A streamed request that declares tools is streamed on the Anthropic and
// Gemini wires too: the text reaches Stream in pieces, and the parallel
// tool calls come out whole, each with its own arguments.
func TestStreamedToolCalls(t *testing.T) {
	reply := providertest.Reply{Text: "Checking both cities.", ToolCalls: twoCalls, Usage: providertest.Usage{Input: 30, Output: 9}}
	for _, tc := range []struct {
		model string
		srv   func(testing.TB, ...providertest.Reply) *providertest.Server
	}{
		{"anthropic/claude-sonnet-4-5", providertest.NewAnthropicServer},
		{"googleai/gemini-2.0-flash", providertest.NewGeminiServer},
		{"ollama/llama3.1", providertest.NewOllamaServer},
		{"mistral/mistral-large-latest", providertest.NewMistralServer},
	} {
		t.Run(tc.model, func(t *testing.T) {
			srv := tc.srv(t, reply)
			m := openFake(t, tc.model, srv)
			var chunks []string
			resp := generate(t, m, &Request{
				Messages: []*dialog.Message{userMsg("Paris and Tokyo?")},
				Tools:    []*dialog.Function{weatherTool(t)},
				Stream:   func(_ context.Context, c Chunk) error { chunks = append(chunks, c.Text); return nil },
			})
			if len(chunks) < 2 || strings.Join(chunks, "") != reply.Text || resp.Message.Content != reply.Text {
				t.Errorf("streamed %q, message %q: want the text in pieces", chunks, resp.Message.Content)
			}
			calls := resp.Message.FunctionCalls
			if len(calls) != len(twoCalls) {
				t.Fatalf("calls = %+v", calls)
			}
			for i, want := range twoCalls {
				if calls[i].ID != want.ID || calls[i].Name != want.Name || !jsonEqual(t, calls[i].Arguments, want.Arguments) {
					t.Errorf("call %d = %s %s(%s), want %+v", i, calls[i].ID, calls[i].Name, calls[i].Arguments, want)
				}
			}
			if u := resp.Message.Usage; u.InputTokens != 30 || u.OutputTokens != 9 {
				t.Errorf("usage = %+v", u)
			}
		})
	}
}

// Stream gets every piece of a streamed reply's text, once and in order,
// however the deltas combine it with tool calls: langchaingo hands its
// streaming function only the calls of a delta that carries both, and
// text that reads like a call's JSON after the calls began is still text.
func TestOpenAIStreamedTextWithToolCalls(t *testing.T) {
	chunk := func(delta string) string {
		return "data: " + `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	body := chunk(`{"role":"assistant","content":"Let me "}`) +
		chunk(`{"content":"look up ","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}`) +
		chunk(`{"content":"both ","tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_weather","arguments":""}}]}`) +
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}},{"index":1,"function":{"arguments":"{\"city\":"}}]}`) +
		chunk(`{"content":"cities","tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}},{"index":1,"function":{"arguments":"\"Tokyo\"}"}}]}`) +
		chunk(`{"content":": "}`) +
		chunk(`{"content":"[{\"function\":{}}]"}`) +
		chunk(`{"content":""}`) +
		chunk(`{"content":"."}`) +
		"data: " + `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
		"data: [DONE]\n\n"
	const text = `Let me look up both cities: [{"function":{}}].`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	m, err := Open(context.Background(), "openai/gpt-4o", Config{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tools := range [][]*dialog.Function{{weatherTool(t)}, nil} {
		var got []string
		resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Paris and Tokyo?")}, Tools: tools,
			Stream: func(_ context.Context, c Chunk) error { got = append(got, c.Text); return nil }})
		want := []string{"Let me ", "look up ", "both ", "cities", ": ", `[{"function":{}}]`, "."}
		if !slices.Equal(got, want) {
			t.Errorf("%d tools: chunks %q, want %q", len(tools), got, want)
		}
		calls := resp.Message.FunctionCalls
		if resp.Message.Content != text || len(calls) != 2 || calls[0].ID != "call_a" || calls[1].ID != "call_b" ||
			!jsonEqual(t, calls[0].Arguments, `{"city":"Paris"}`) || !jsonEqual(t, calls[1].Arguments, `{"city":"Tokyo"}`) {
			t.Errorf("%d tools: content %q, calls %+v", len(tools), resp.Message.Content, calls)
		}
	}
}

// Bedrock's requests that declare tools are not streamed (its client's
// stream does not carry tool calls), though it speaks Anthropic's body:
// Stream gets the whole text at the end, and the calls come whole.
func TestBedrockToolsNotStreamed(t *testing.T) {
	bedrockEnv(t)
	f := newBedrockFake(t, bedrockMessage("tool_use", 50, 30,
		map[string]any{"type": "text", "text": "Checking."},
		map[string]any{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{"city": "Paris"}},
	))
	m := openBedrockFake(t, f)
	var chunks []string
	msg := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Paris?")}, Tools: []*dialog.Function{weatherTool(t)},
		Stream: func(_ context.Context, c Chunk) error { chunks = append(chunks, c.Text); return nil }}).Message
	if p := f.last(t).Path; strings.Contains(p, "stream") || len(chunks) != 1 || chunks[0] != "Checking." || len(msg.FunctionCalls) != 1 {
		t.Fatalf("path %s, chunks %q, calls %+v", p, chunks, msg.FunctionCalls)
	}
}
