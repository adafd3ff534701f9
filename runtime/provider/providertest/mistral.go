package providertest

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// NewMistralServer starts a fake Mistral chat-completions server (POST
// /v1/chat/completions) that answers with replies, in order, then with the
// default reply. BaseURL ends in /v1, as MISTRAL_BASE_URL does.
//
// Mistral speaks OpenAI's protocol with its own rules, which the fake
// enforces as the API does. Without a bearer token: a 401. With a 422
// (invalid_request_error, {"detail": [{"type": "extra_forbidden", ...}]}):
// a request field Mistral does not know (OpenAI's seed,
// max_completion_tokens, stream_options, logprobs, ...: Mistral has
// random_seed and max_tokens) or a message field its role does not take.
// With a 400: an assistant message with neither content nor tool calls,
// a tool call id that is not 9 letters and digits, an
// assistant's tool calls not answered by as many tool messages, and a
// last message that is not the user's or a tool's (or an assistant's
// with "prefix": true).
//
// A reply becomes a chat.completion whose message has the text and the
// tool calls (ids "fakeCall1"... unless given; arguments as a JSON
// string), usage {prompt_tokens, completion_tokens, total_tokens}. A
// request with "stream": true is answered with server-sent events, the
// usage in the last chunk (Mistral sends it without being asked), then
// [DONE]. Errors have Mistral's shape, {"object": "error", "message",
// "type", "param", "code"}; a 429 is {"message": "Requests rate limit
// exceeded"}, as Mistral's gateway sends it. The server is closed when
// the test ends.
func NewMistralServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	return newRoutedServer(t, mistralProtocol{}, replies, func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions"
	}, mistralCheck)
}

type mistralProtocol struct{}

func (mistralProtocol) path() string           { return "" }
func (mistralProtocol) base(url string) string { return url + "/v1" }

func (mistralProtocol) writeError(w http.ResponseWriter, r Reply) {
	if r.Status == http.StatusTooManyRequests {
		writeJSON(w, r.Status, map[string]any{"message": "Requests rate limit exceeded"})
		return
	}
	if r.Status == http.StatusUnauthorized {
		writeJSON(w, r.Status, map[string]any{"message": "Unauthorized", "request_id": "fake-mistral-request"})
		return
	}
	typ := r.ErrorType
	if typ == "" || typ == "server_error" {
		typ = "invalid_request_error"
		if r.Status >= 500 {
			typ = "internal_server_error"
		}
	}
	var code any
	if r.ErrorCode != "" {
		code = r.ErrorCode
	}
	var msg any = r.ErrorMessage
	if r.ErrorMessage == "" {
		msg = "Internal server error"
	}
	if r.Status == http.StatusUnprocessableEntity && strings.HasPrefix(r.ErrorMessage, "[") {
		msg = map[string]any{"detail": rawJSON(r.ErrorMessage)}
	}
	writeJSON(w, r.Status, map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": code})
}

var mistralToolID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

func mistralCheck(r *http.Request, body []byte) (Reply, bool) {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || strings.TrimSpace(tok) == "" {
		return Reply{Status: http.StatusUnauthorized}, true
	}
	bad := func(format string, args ...any) (Reply, bool) {
		return Reply{Status: http.StatusBadRequest, ErrorType: "invalid_request_error", ErrorMessage: fmt.Sprintf(format, args...)}, true
	}
	req := jsonObject(body)
	if req == nil {
		return bad("Invalid JSON body")
	}
	// Fields Mistral does not know are refused, as pydantic's
	// extra_forbidden, all at once.
	var extra []string
	forbid := func(loc []any, obj map[string]any, known []string) {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !slices.Contains(known, k) {
				l, _ := jsonMarshalString(append(append([]any{"body"}, loc...), k))
				in, _ := jsonMarshalString(obj[k])
				extra = append(extra, fmt.Sprintf(`{"type":"extra_forbidden","loc":%s,"msg":"Extra inputs are not permitted","input":%s}`, l, in))
			}
		}
	}
	forbid(nil, req, []string{"model", "messages", "temperature", "top_p", "max_tokens", "stream", "stop", "random_seed",
		"response_format", "tools", "tool_choice", "presence_penalty", "frequency_penalty", "n", "prediction",
		"parallel_tool_calls", "prompt_mode", "safe_prompt"})
	msgs := objects(req["messages"])
	for i, m := range msgs {
		known := map[any][]string{
			"system":    {"role", "content"},
			"user":      {"role", "content"},
			"assistant": {"role", "content", "tool_calls", "prefix"},
			"tool":      {"role", "content", "tool_call_id", "name"},
		}[m["role"]]
		if known == nil {
			return bad("messages[%d]: invalid role %v", i, m["role"])
		}
		forbid([]any{"messages", i}, m, known)
	}
	if len(extra) > 0 {
		return Reply{Status: http.StatusUnprocessableEntity, ErrorMessage: "[" + strings.Join(extra, ",") + "]"}, true
	}
	if len(msgs) == 0 {
		return bad("messages: at least one message is required")
	}
	var pending []string // tool call ids awaiting their tool messages
	for i, m := range msgs {
		for _, tc := range objects(m["tool_calls"]) {
			id, _ := tc["id"].(string)
			if !mistralToolID.MatchString(id) {
				return bad("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", id)
			}
		}
		if content := m["content"]; m["role"] == "assistant" && len(objects(m["tool_calls"])) == 0 &&
			(content == nil || content == "" || isEmptyArray(content)) {
			return bad("Assistant message must have either content or tool_calls, but not none.")
		}
		switch m["role"] {
		case "tool":
			id, _ := m["tool_call_id"].(string)
			if !mistralToolID.MatchString(id) {
				return bad("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", id)
			}
			if !slices.Contains(pending, id) {
				return bad("Not the same number of function calls and responses")
			}
			pending = slices.DeleteFunc(pending, func(p string) bool { return p == id })
		default:
			if len(pending) > 0 {
				return bad("Not the same number of function calls and responses")
			}
			for _, tc := range objects(m["tool_calls"]) {
				id, _ := tc["id"].(string)
				pending = append(pending, id)
			}
		}
		for j, part := range objects(m["content"]) {
			switch part["type"] {
			case "text", "image_url", "document_url", "input_audio", "reference", "thinking", "file":
			default:
				return bad("messages[%d].content[%d]: unknown chunk type %v", i, j, part["type"])
			}
		}
	}
	if len(pending) > 0 {
		return bad("Not the same number of function calls and responses")
	}
	last := msgs[len(msgs)-1]
	if prefix, _ := last["prefix"].(bool); last["role"] != "user" && last["role"] != "tool" && !(last["role"] == "assistant" && prefix) {
		return bad("Expected last role User or Tool (or Assistant with prefix True) for serving but got %v", last["role"])
	}
	return Reply{}, false
}

func mistralToolCallID(tc ToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("fakeCall%d", (i+1)%10)
}

func mistralUsage(u Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output}
}

func mistralCalls(r Reply) []any {
	calls := make([]any, len(r.ToolCalls))
	for i, tc := range r.ToolCalls {
		calls[i] = map[string]any{
			"id": mistralToolCallID(tc, i), "type": "function", "index": i,
			"function": map[string]any{"name": tc.Name, "arguments": compactJSON(tc.Arguments)},
		}
	}
	return calls
}

func (mistralProtocol) write(w http.ResponseWriter, req map[string]any, r Reply) {
	msg := map[string]any{"role": "assistant", "content": r.Text, "prefix": false}
	if len(r.ToolCalls) > 0 {
		msg["tool_calls"] = mistralCalls(r)
	}
	if stream, _ := req["stream"].(bool); stream {
		s := newSSE(w)
		chunk := func(delta map[string]any, finish any, usage any) map[string]any {
			c := map[string]any{"id": "fake-mistral-completion", "object": "chat.completion.chunk", "created": 1700000000, "model": modelOf(req),
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
			if usage != nil {
				c["usage"] = usage
			}
			return c
		}
		s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil))
		for _, p := range pieces(r.Text, 3) {
			s.event("", chunk(map[string]any{"content": p}, nil, nil))
		}
		if len(r.ToolCalls) > 0 {
			// Mistral sends each call whole.
			s.event("", chunk(map[string]any{"tool_calls": mistralCalls(r)}, nil, nil))
		}
		s.event("", chunk(map[string]any{"content": ""}, openaiFinish(r), mistralUsage(r.Usage)))
		s.event("", "[DONE]")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      "fake-mistral-completion",
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   modelOf(req),
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": openaiFinish(r)}},
		"usage":   mistralUsage(r.Usage),
	})
}

func isEmptyArray(v any) bool {
	a, ok := v.([]any)
	return ok && len(a) == 0
}
