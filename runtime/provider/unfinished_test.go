package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// streamServer answers every request with body, as a stream of type ct,
// then ends the response cleanly or, with reset, by closing the connection.
func streamServer(t *testing.T, ct, body string, reset bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		fmt.Fprint(w, body)
		w.(http.Flusher).Flush()
		if reset {
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A stream that stops before its last event, whether its connection
// breaks or its body ends cleanly, is a retryable network error, not a
// reply made of what came: the text would be short and a tool call's
// arguments cut, or (Ollama) the text lost while the calls run. A stream
// that ends as it should is a reply.
func TestUnfinishedStreams(t *testing.T) {
	chunk := func(delta, finish string) string {
		return `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	openaiStart := chunk(`{"role":"assistant","content":"Checking "}`, "null") +
		chunk(`{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":"}}]}`, "null")
	openaiEnd := chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, "null") + chunk(`{}`, `"tool_calls"`) + "data: [DONE]\n\n"

	ollamaLine := func(msg string, done bool) string {
		return fmt.Sprintf(`{"model":"q","created_at":"2026-01-01T00:00:00Z","message":%s,"done":%v}`, msg, done) + "\n"
	}
	ollamaStart := ollamaLine(`{"role":"assistant","content":"Let me check.","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]}`, false)
	ollamaEnd := `{"model":"q","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":5,"eval_count":7}` + "\n"

	event := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
	anthropicStart := event("message_start", `{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`) +
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
		event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Par"}}`)
	anthropicEnd := event("content_block_stop", `{"type":"content_block_stop","index":0}`) +
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`) +
		event("message_stop", `{"type":"message_stop"}`)

	for _, tc := range []struct {
		model, ct, start, end, base string
	}{
		{"openai/gpt-4o", "text/event-stream", openaiStart, openaiEnd, "/v1"},
		{"mistral/mistral-small-latest", "text/event-stream", openaiStart, openaiEnd, "/v1"},
		{"ollama/qwen3", "application/x-ndjson", ollamaStart, ollamaEnd, ""},
		{"anthropic/claude-sonnet-4-5", "text/event-stream", anthropicStart, anthropicEnd, ""},
	} {
		for _, end := range []string{"whole", "ends early", "reset"} {
			t.Run(tc.model+"/"+end, func(t *testing.T) {
				body := tc.start
				if end == "whole" {
					body += tc.end
				}
				srv := streamServer(t, tc.ct, body, end == "reset")
				m, err := Open(context.Background(), tc.model, Config{BaseURL: srv.URL + tc.base, APIKey: "k"})
				if err != nil {
					t.Fatal(err)
				}
				resp, err := m.Generate(context.Background(), &Request{
					Messages: []*dialog.Message{userMsg("Weather in Paris?")}, Tools: []*dialog.Function{weatherTool(t)},
					Stream: func(context.Context, Chunk) error { return nil },
				})
				if end == "whole" {
					if err != nil {
						t.Fatalf("a whole stream: %v", err)
					}
					if resp.Message.Text() == "" {
						t.Errorf("a whole stream made an empty reply: %+v", resp.Message)
					}
					return
				}
				var pe *Error
				if !errors.As(err, &pe) || pe.Kind != ErrNetwork || !pe.Retryable() {
					t.Fatalf("a stream that %s: %v (reply %+v), want a retryable network error", end, err, resp)
				}
				if end == "ends early" && !strings.Contains(err.Error(), "stream ended without") {
					t.Errorf("error %q does not say the stream ended early", err)
				}
			})
		}
	}
}

// The end of a stream is told however its JSON is spaced, and not from
// text that only looks like it.
func TestMemberStarts(t *testing.T) {
	for line, want := range map[string]bool{
		`{"done":true}`:                    true,
		`{"done" : true, "eval_count": 7}`: true,
		`{"done":false}`:                   false,
		`{"message":{"content":"\"done\":true"},"done":false}`: false,
		`{"message":{"content":"done"},"done":  true}`:         true,
	} {
		if got := memberStarts([]byte(line), `"done"`, "true"); got != want {
			t.Errorf("memberStarts(%s) = %v, want %v", line, got, want)
		}
	}
	for data, want := range map[string]bool{
		`{"choices":[{"delta":{},"finish_reason":"stop"}]}`:            true,
		`{"choices":[{"delta":{},"finish_reason": "stop"}]}`:           true,
		`{"choices":[{"delta":{"content":"x"},"finish_reason":null}]}`: false,
	} {
		if got := hasFinishReason([]byte(data)); got != want {
			t.Errorf("hasFinishReason(%s) = %v, want %v", data, got, want)
		}
	}
}
