package providertest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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
//
// Extended thinking is checked as the API does: a reply's Thinking comes
// first, each block sealed with [Signature]; a thinking block sent back
// must carry its seal, and when the request enables thinking, the
// assistant turn before a final tool result must start with a thinking
// block. A request that breaks either gets the API's 400.
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
	if msg := checkThinking(req); msg != "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{
			"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg},
		})
		return
	}
	if stream, _ := req["stream"].(bool); stream && !r.IgnoreStream {
		sse := newSSE(w)
		for _, ev := range anthropicEvents("msg_fake", modelOf(req), r, anthropicToolID) {
			sse.event(ev["type"].(string), ev)
		}
		return
	}
	writeJSON(w, http.StatusOK, anthropicMessage("msg_fake", modelOf(req), r, anthropicToolID))
}

func anthropicToolID(tc ToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return "toolu_fake_" + string(rune('a'+i%26))
}

// anthropicMessage is the messages API's reply r, as message id of model;
// toolID names its i-th tool call. Bedrock answers with it too.
func anthropicMessage(id, model string, r Reply, toolID func(ToolCall, int) string) map[string]any {
	content := []any{}
	for _, th := range r.Thinking {
		if th.Redacted != "" {
			content = append(content, map[string]any{"type": "redacted_thinking", "data": th.Redacted})
		} else {
			content = append(content, map[string]any{"type": "thinking", "thinking": th.Text, "signature": Signature(th.Text)})
		}
	}
	if r.Text != "" || len(r.ToolCalls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for i, tc := range r.ToolCalls {
		content = append(content, map[string]any{
			"type": "tool_use", "id": toolID(tc, i), "name": tc.Name, "input": toolInput(tc.Arguments),
		})
	}
	return map[string]any{
		"id":            id,
		"type":          "message",
		"role":          "assistant",
		"model":         model,
		"content":       content,
		"stop_reason":   anthropicStop(r),
		"stop_sequence": nil,
		"usage":         anthropicUsage(r.Usage),
	}
}

// anthropicEvents are the events, in order, of the messages API's stream
// of r, as message id of model, each with its "type"; toolID names its
// i-th tool call. Bedrock sends them too, each in an event of its own.
func anthropicEvents(id, model string, r Reply, toolID func(ToolCall, int) string) []map[string]any {
	var evs []map[string]any
	send := func(ev map[string]any) { evs = append(evs, ev) }
	startUsage := anthropicUsage(r.Usage)
	startUsage["output_tokens"] = 1
	send(map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": startUsage,
	}})
	index := 0
	block := func(start map[string]any, deltas ...map[string]any) {
		send(map[string]any{"type": "content_block_start", "index": index, "content_block": start})
		for _, d := range deltas {
			send(map[string]any{"type": "content_block_delta", "index": index, "delta": d})
		}
		send(map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	deltas := func(typ, key, s string) []map[string]any {
		var out []map[string]any
		for _, p := range pieces(s, 3) {
			out = append(out, map[string]any{"type": typ, key: p})
		}
		return out
	}
	for _, th := range r.Thinking {
		if th.Redacted != "" {
			block(map[string]any{"type": "redacted_thinking", "data": th.Redacted})
			continue
		}
		block(map[string]any{"type": "thinking", "thinking": ""}, append(deltas("thinking_delta", "thinking", th.Text),
			map[string]any{"type": "signature_delta", "signature": Signature(th.Text)})...)
	}
	if r.Text != "" {
		block(map[string]any{"type": "text", "text": ""}, deltas("text_delta", "text", r.Text)...)
	}
	for i, tc := range r.ToolCalls {
		block(map[string]any{"type": "tool_use", "id": toolID(tc, i), "name": tc.Name, "input": map[string]any{}},
			deltas("input_json_delta", "partial_json", string(toolInput(tc.Arguments)))...)
	}
	send(map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStop(r), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": r.Usage.Output}})
	send(map[string]any{"type": "message_stop"})
	return evs
}

// Signature is the seal the fake Anthropic server puts on a thinking
// block's text, and checks when the block comes back.
func Signature(text string) string {
	sum := sha256.Sum256([]byte("providertest thinking\x00" + text))
	return "sig-" + base64.StdEncoding.EncodeToString(sum[:18])
}

// checkThinking returns the API's error for a request whose thinking
// blocks are not as the server sent them, or that enables thinking and
// answers tool calls without the thinking that came with them; "" if it
// is fine.
func checkThinking(req map[string]any) string {
	msgs, _ := req["messages"].([]any)
	blocks := func(m any) []map[string]any {
		mm, _ := m.(map[string]any)
		content, _ := mm["content"].([]any)
		var out []map[string]any
		for _, c := range content {
			if b, ok := c.(map[string]any); ok {
				out = append(out, b)
			}
		}
		return out
	}
	role := func(m any) string {
		mm, _ := m.(map[string]any)
		r, _ := mm["role"].(string)
		return r
	}
	for i, m := range msgs {
		for j, b := range blocks(m) {
			switch b["type"] {
			case "thinking":
				text, _ := b["thinking"].(string)
				if sig, _ := b["signature"].(string); sig != Signature(text) {
					return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
				}
			case "redacted_thinking":
				if data, _ := b["data"].(string); !strings.HasPrefix(data, "redacted-") {
					return fmt.Sprintf("messages.%d.content.%d: Invalid `data` in `redacted_thinking` block", i, j)
				}
			}
		}
	}
	th, _ := req["thinking"].(map[string]any)
	if th["type"] != "enabled" || len(msgs) < 2 || role(msgs[len(msgs)-1]) != "user" {
		return ""
	}
	toolResult := false
	for _, b := range blocks(msgs[len(msgs)-1]) {
		toolResult = toolResult || b["type"] == "tool_result"
	}
	// The API joins consecutive messages of a role into one turn.
	first := len(msgs) - 1
	for first > 0 && role(msgs[first-1]) == "assistant" {
		first--
	}
	if !toolResult || first == len(msgs)-1 {
		return ""
	}
	var found string
	if bs := blocks(msgs[first]); len(bs) > 0 {
		found, _ = bs[0]["type"].(string)
	}
	if found == "thinking" || found == "redacted_thinking" {
		return ""
	}
	return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. "+
		"When `thinking` is enabled, a final `assistant` message must start with a thinking block "+
		"(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include "+
		"thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult "+
		"our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking", first, found)
}
