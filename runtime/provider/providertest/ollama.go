package providertest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// NewOllamaServer starts a fake Ollama server speaking its native chat API
// (POST /api/chat) that answers with replies, in order, then with the
// default reply. Give its URL to the client as the host (OLLAMA_HOST, or
// provider.Config.BaseURL for ollama).
//
// As Ollama does, it streams unless the request says "stream": false:
// newline-delimited JSON objects, the text in a few of them, the tool
// calls in one, then a last one with "done": true, done_reason and the
// counts (prompt_eval_count is Usage.Input, eval_count Usage.Output) and
// durations. Unstreamed, the reply is one such object with the whole
// message. Tool calls are Ollama's: {"function": {"index", "name",
// "arguments"}} with the arguments as a JSON object, and an "id" only
// when ToolCall.ID is set (Ollama's older versions give none).
//
// It refuses, with a 400 and Ollama's error shape {"error": "..."}: a
// body that is not JSON, no model, a message role other than system,
// user, assistant and tool, an image that is not base64, a tool that is
// not {"type": "function", "function": {"name", ...}}, and a format other
// than "", "json" or a JSON schema object. The server is closed when the
// test ends.
func NewOllamaServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	return newRoutedServer(t, ollamaProtocol{}, replies, func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Path == "/api/chat"
	}, ollamaCheck)
}

type ollamaProtocol struct{}

func (ollamaProtocol) path() string           { return "" }
func (ollamaProtocol) base(url string) string { return url }

func (ollamaProtocol) writeError(w http.ResponseWriter, r Reply) {
	msg := r.ErrorMessage
	if msg == "" {
		switch r.Status {
		case http.StatusServiceUnavailable:
			msg = "server busy, please try again.  maximum pending requests exceeded"
		case http.StatusTooManyRequests:
			msg = "too many requests"
		default:
			msg = "llama runner process has terminated: exit status 2"
		}
	}
	writeJSON(w, r.Status, map[string]any{"error": msg})
}

func ollamaInvalid(format string, args ...any) (Reply, bool) {
	return Reply{Status: http.StatusBadRequest, ErrorMessage: fmt.Sprintf(format, args...)}, true
}

func ollamaCheck(_ *http.Request, body []byte) (Reply, bool) {
	req := jsonObject(body)
	if req == nil {
		return ollamaInvalid("invalid request body")
	}
	if m, _ := req["model"].(string); m == "" {
		return ollamaInvalid("model is required")
	}
	for i, m := range objects(req["messages"]) {
		switch m["role"] {
		case "system", "user", "assistant", "tool":
		default:
			return ollamaInvalid("messages[%d]: invalid role %v", i, m["role"])
		}
		imgs, _ := m["images"].([]any)
		for _, img := range imgs {
			s, _ := img.(string)
			if _, err := base64.StdEncoding.DecodeString(s); err != nil || s == "" {
				return ollamaInvalid("illegal base64 data at input byte 0")
			}
		}
	}
	for i, tool := range objects(req["tools"]) {
		fn, _ := tool["function"].(map[string]any)
		if name, _ := fn["name"].(string); tool["type"] != "function" || name == "" {
			return ollamaInvalid("tools[%d]: want {\"type\": \"function\", \"function\": {\"name\": ...}}", i)
		}
	}
	switch f := req["format"].(type) {
	case nil, map[string]any:
	case string:
		if f != "" && f != "json" {
			return ollamaInvalid("invalid format: %q; expected \"json\" or a valid JSON Schema", f)
		}
	default:
		return ollamaInvalid("invalid format: expected \"json\" or a valid JSON Schema")
	}
	return Reply{}, false
}

func (ollamaProtocol) write(w http.ResponseWriter, req map[string]any, r Reply) {
	model := modelOf(req)
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	message := func(content string, calls []any) map[string]any {
		m := map[string]any{"role": "assistant", "content": content}
		if len(calls) > 0 {
			m["tool_calls"] = calls
		}
		return m
	}
	var calls []any
	for i, tc := range r.ToolCalls {
		c := map[string]any{"function": map[string]any{"index": i, "name": tc.Name, "arguments": toolArgs(tc.Arguments)}}
		if tc.ID != "" {
			c["id"] = tc.ID
		}
		calls = append(calls, c)
	}
	reason := r.FinishReason
	if reason == "" {
		reason = "stop"
	}
	done := func(m map[string]any) map[string]any {
		return map[string]any{
			"model": model, "created_at": created, "message": m, "done": true, "done_reason": reason,
			"total_duration": 1_200_000_000, "load_duration": 10_000_000,
			"prompt_eval_count": r.Usage.Input, "prompt_eval_duration": 300_000_000,
			"eval_count": r.Usage.Output, "eval_duration": 800_000_000,
		}
	}
	if stream, ok := req["stream"].(bool); (ok && !stream) || r.IgnoreStream {
		m := message(r.Text, calls)
		if t := thinkingText(r); t != "" {
			m["thinking"] = t
		}
		writeJSON(w, http.StatusOK, done(m))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	line := func(v any) {
		b, _ := json.Marshal(v)
		w.Write(append(b, '\n'))
		if f != nil {
			f.Flush()
		}
	}
	for _, p := range pieces(thinkingText(r), 3) {
		m := message("", nil)
		m["thinking"] = p
		line(map[string]any{"model": model, "created_at": created, "message": m, "done": false})
	}
	for _, p := range pieces(r.Text, 3) {
		line(map[string]any{"model": model, "created_at": created, "message": message(p, nil), "done": false})
	}
	if len(calls) > 0 {
		line(map[string]any{"model": model, "created_at": created, "message": message("", calls), "done": false})
	}
	line(done(message("", nil)))
}
