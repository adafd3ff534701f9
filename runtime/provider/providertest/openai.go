package providertest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// NewOpenAIServer starts a fake OpenAI chat-completions server (POST
// .../chat/completions) that answers with replies, in order, then with the
// default reply. A request with "stream": true is answered with
// server-sent events: the text in a few chunks, then parallel tool calls
// as OpenAI streams them, with each call's argument fragments interleaved
// by index, then the usage if stream_options.include_usage is set. For a
// deepseek-* model the server refuses, as DeepSeek's thinking mode does, a
// request with an assistant tool call message without its
// reasoning_content; for a MiniMaxAI/* model, one without its reasoning
// (vLLM does not refuse it, but its chat template for MiniMax-M2's
// interleaved thinking loses the reasoning). The server is closed when the
// test ends.
func NewOpenAIServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	return newServer(t, openaiProtocol{}, replies)
}

// StartOpenAIServer is NewOpenAIServer outside a test, for a benchmark's
// server process: the caller closes it.
func StartOpenAIServer(replies ...Reply) *Server {
	return startServer(openaiProtocol{}, replies)
}

type openaiProtocol struct{}

func (openaiProtocol) path() string           { return "/chat/completions" }
func (openaiProtocol) base(url string) string { return url + "/v1" }

func (openaiProtocol) writeError(w http.ResponseWriter, r Reply) {
	var code any
	if r.ErrorCode != "" {
		code = r.ErrorCode
	}
	typ := r.ErrorType
	if typ == "" {
		typ = "invalid_request_error"
	}
	writeJSON(w, r.Status, map[string]any{"error": map[string]any{
		"message": r.ErrorMessage, "type": typ, "param": nil, "code": code,
	}})
}

func openaiUsage(u Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":     u.Input,
		"completion_tokens": u.Output,
		"total_tokens":      u.Input + u.Output,
		"prompt_tokens_details": map[string]any{
			"cached_tokens": u.Cached,
			"audio_tokens":  0,
		},
		"completion_tokens_details": map[string]any{
			"reasoning_tokens":           u.Reasoning,
			"audio_tokens":               0,
			"accepted_prediction_tokens": 0,
			"rejected_prediction_tokens": 0,
		},
	}
}

// reasoningBack reports whether every assistant message of req with
// tool calls carries its reasoning under member: reasoning_content, as
// DeepSeek's thinking mode (its default) requires, or reasoning, which
// vLLM hands to the chat template.
func reasoningBack(req map[string]any, member string) bool {
	for _, m := range Messages(req) {
		if m["role"] == "assistant" && m["tool_calls"] != nil {
			if rc, _ := m[member].(string); rc == "" {
				return false
			}
		}
	}
	return true
}

// reasoningFields are the fields of an OpenAI reply that carry r's
// reasoning.
func reasoningFields(r Reply) []string {
	if r.ReasoningField == "" {
		return []string{"reasoning_content"}
	}
	return strings.Split(r.ReasoningField, ",")
}

func openaiFinish(r Reply) string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func toolCallID(tc ToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return "call_fake_" + string(rune('a'+i%26))
}

func (p openaiProtocol) write(w http.ResponseWriter, req map[string]any, r Reply) {
	switch model := modelOf(req); {
	case strings.HasPrefix(model, "deepseek-") && !reasoningBack(req, "reasoning_content"):
		p.writeError(w, Reply{Status: http.StatusBadRequest, ErrorCode: "invalid_request_error",
			ErrorMessage: "The reasoning_content in the thinking mode must be passed back to the API."})
		return
	case strings.HasPrefix(model, "MiniMaxAI/") && !reasoningBack(req, "reasoning"):
		p.writeError(w, Reply{Status: http.StatusBadRequest,
			ErrorMessage: "fake vLLM: an assistant message with tool_calls lost its reasoning"})
		return
	}
	if stream, _ := req["stream"].(bool); stream && !r.IgnoreStream {
		writeOpenAIStream(w, req, r)
		return
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if r.Text != "" || len(r.ToolCalls) == 0 {
		msg["content"] = r.Text
	}
	if t := thinkingText(r); t != "" {
		for _, f := range reasoningFields(r) {
			msg[f] = t
		}
	}
	if len(r.ToolCalls) > 0 {
		calls := make([]map[string]any, len(r.ToolCalls))
		for i, tc := range r.ToolCalls {
			calls[i] = map[string]any{
				"id":       toolCallID(tc, i),
				"type":     "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			}
		}
		msg["tool_calls"] = calls
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":                 "chatcmpl-fake",
		"object":             "chat.completion",
		"created":            1700000000,
		"model":              modelOf(req),
		"system_fingerprint": "fp_fake",
		"choices": []any{map[string]any{
			"index":         0,
			"message":       msg,
			"logprobs":      nil,
			"finish_reason": openaiFinish(r),
		}},
		"usage": openaiUsage(r.Usage),
	})
}

func writeOpenAIStream(w http.ResponseWriter, req map[string]any, r Reply) {
	s := newSSE(w)
	model := modelOf(req)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000,
			"model": model, "system_fingerprint": "fp_fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
	}
	s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, p := range pieces(thinkingText(r), 3) {
		delta := map[string]any{"content": nil}
		for _, f := range reasoningFields(r) {
			delta[f] = p
		}
		s.event("", chunk(delta, nil))
	}
	for _, p := range pieces(r.Text, 3) {
		s.event("", chunk(map[string]any{"content": p}, nil))
	}
	// Parallel tool calls: each call's head, then the argument fragments
	// of all calls interleaved, as OpenAI streams them.
	for i, tc := range r.ToolCalls {
		s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": toolCallID(tc, i), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
	}
	frags := make([][]string, len(r.ToolCalls))
	rounds := 0
	for i, tc := range r.ToolCalls {
		frags[i] = pieces(tc.Arguments, 3)
		rounds = max(rounds, len(frags[i]))
	}
	for k := range rounds {
		for i := range r.ToolCalls {
			if k < len(frags[i]) {
				s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
					"index": i, "function": map[string]any{"arguments": frags[i][k]},
				}}}, nil))
			}
		}
	}
	s.event("", chunk(map[string]any{}, openaiFinish(r)))
	if opts, _ := req["stream_options"].(map[string]any); opts != nil {
		if inc, _ := opts["include_usage"].(bool); inc {
			s.event("", map[string]any{
				"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000,
				"model": model, "choices": []any{}, "usage": openaiUsage(r.Usage),
			})
		}
	}
	s.event("", "[DONE]")
}

// Messages returns the "messages" of an OpenAI request body, each as a
// map, for assertions.
func Messages(body map[string]any) []map[string]any {
	raw, _ := body["messages"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, m := range raw {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// compactJSON re-encodes a JSON text compactly, or returns it unchanged.
func compactJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return strings.TrimSpace(string(b))
}
