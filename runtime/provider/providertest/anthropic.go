package providertest

import (
	"encoding/json"
	"net/http"
	"testing"
)

// NewAnthropicServer starts a fake Anthropic messages server (POST
// .../messages) that answers with replies, in order, then with the
// default reply. A reply becomes content blocks: a text block (if there is
// text), then a tool_use block per tool call; usage carries input_tokens
// (the input not read from or written to the cache), output_tokens,
// cache_read_input_tokens and cache_creation_input_tokens. A request with
// "stream": true is answered with the messages API's server-sent events.
// Errors have Anthropic's shape, {"type": "error", "error": {"type":
// "rate_limit_error", ...}}. The server is closed when the test ends.
func NewAnthropicServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	return newServer(t, anthropicProtocol{}, replies)
}

type anthropicProtocol struct{}

func (anthropicProtocol) path() string           { return "/messages" }
func (anthropicProtocol) base(url string) string { return url + "/v1" }

func (anthropicProtocol) writeError(w http.ResponseWriter, r Reply) {
	typ := r.ErrorType
	if typ == "" {
		typ = "api_error"
	}
	writeJSON(w, r.Status, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": r.ErrorMessage},
	})
}

func anthropicUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":                max(u.Input-u.Cached-u.CacheWrite, 0),
		"output_tokens":               u.Output,
		"cache_read_input_tokens":     u.Cached,
		"cache_creation_input_tokens": u.CacheWrite,
	}
}

func anthropicStop(r Reply) string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_use"
	}
	return "end_turn"
}

// toolInput is a tool call's arguments as a JSON object.
func toolInput(args string) json.RawMessage {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil || m == nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(compactJSON(args))
}

func (anthropicProtocol) write(w http.ResponseWriter, req map[string]any, r Reply) {
	if stream, _ := req["stream"].(bool); stream {
		writeAnthropicStream(w, req, r)
		return
	}
	content := []any{}
	if r.Text != "" || len(r.ToolCalls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for i, tc := range r.ToolCalls {
		content = append(content, map[string]any{
			"type": "tool_use", "id": anthropicToolID(tc, i), "name": tc.Name, "input": toolInput(tc.Arguments),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":            "msg_fake",
		"type":          "message",
		"role":          "assistant",
		"model":         modelOf(req),
		"content":       content,
		"stop_reason":   anthropicStop(r),
		"stop_sequence": nil,
		"usage":         anthropicUsage(r.Usage),
	})
}

func anthropicToolID(tc ToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return "toolu_fake_" + string(rune('a'+i%26))
}

func writeAnthropicStream(w http.ResponseWriter, req map[string]any, r Reply) {
	s := newSSE(w)
	usage := anthropicUsage(r.Usage)
	startUsage := map[string]any{
		"input_tokens":                usage["input_tokens"],
		"output_tokens":               1,
		"cache_read_input_tokens":     usage["cache_read_input_tokens"],
		"cache_creation_input_tokens": usage["cache_creation_input_tokens"],
	}
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": modelOf(req),
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": startUsage,
	}})
	index := 0
	if r.Text != "" {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range pieces(r.Text, 3) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": p}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, tc := range r.ToolCalls {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": anthropicToolID(tc, i), "name": tc.Name, "input": map[string]any{}}})
		for _, p := range pieces(string(toolInput(tc.Arguments)), 3) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStop(r), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": r.Usage.Output}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}
