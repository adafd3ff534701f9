package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"
)

// A server that ignores a request's "stream": true answers it with the
// whole reply, as JSON, where the client reads a stream of events and
// finds none. The taps (sseTap, thinkingTap) see the body start with "{"
// and hand the client, in its place, the stream that would have carried
// the reply (openaiWholeStream, anthropicWholeStream), which they read as
// any other: the call gets the reply, and Stream gets its reasoning, then
// its text.

// maxPiece is the most bytes of a string an event of such a stream
// carries: escaped (at most six bytes a byte), an event stays under the
// 64 KiB a line of the clients' readers holds.
const maxPiece = 8 << 10

// asStream reads r, a whole reply, and returns the stream convert makes
// of it. A reply that cannot be read whole, or that convert does not
// take, is returned as it is: the client then finds no events in it, and
// the tap reports the stream unfinished.
func asStream(r io.Reader, convert func([]byte) ([]byte, bool)) *bytes.Reader {
	body, err := io.ReadAll(r)
	if err == nil {
		if s, ok := convert(body); ok {
			body = s
		}
	}
	return bytes.NewReader(body)
}

// readCloser reads from a Reader and closes a Closer.
type readCloser struct {
	io.Reader
	io.Closer
}

// pieces splits s into pieces of at most maxPiece bytes, on rune
// boundaries; an empty s is no piece.
func pieces(s string) []string {
	var out []string
	for len(s) > maxPiece {
		i := maxPiece
		for i > maxPiece-utf8.UTFMax && !utf8.RuneStart(s[i]) {
			i--
		}
		out, s = append(out, s[:i]), s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// events writes each of evs as the data of a server-sent event.
func events(evs ...any) []byte {
	var b bytes.Buffer
	for _, ev := range evs {
		b.WriteString("data: ")
		if raw, ok := ev.(string); ok {
			b.WriteString(raw)
		} else {
			data, _ := json.Marshal(ev)
			b.Write(data)
		}
		b.WriteString("\n\n")
	}
	return b.Bytes()
}

// openaiWholeStream is the stream of body, a whole chat completion: its
// reasoning, text and refusal in pieces, its tool calls one after the
// other, its finish_reason and usage, then [DONE]; or an error event, for
// a body that is an error. It is false for a body that is neither.
func openaiWholeStream(body []byte) ([]byte, bool) {
	type call struct {
		Index    int    `json:"index"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type delta struct {
		Role             string `json:"role,omitempty"`
		Content          string `json:"content,omitempty"`
		Reasoning        string `json:"reasoning,omitempty"`
		ReasoningContent string `json:"reasoning_content,omitempty"`
		Refusal          string `json:"refusal,omitempty"`
		ToolCalls        []call `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Delta        delta   `json:"delta"`
		Message      *delta  `json:"message,omitempty"`
		FinishReason *string `json:"finish_reason"`
	}
	type event struct {
		Choices []choice        `json:"choices"`
		Usage   json.RawMessage `json:"usage,omitempty"`
	}
	var r struct {
		event
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &r) != nil {
		return nil, false
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		return events(map[string]json.RawMessage{"error": r.Error}), true
	}
	if len(r.Choices) == 0 || r.Choices[0].Message == nil {
		return nil, false
	}
	m := r.Choices[0].Message
	var evs []any
	send := func(d delta) { evs = append(evs, event{Choices: []choice{{Delta: d}}}) }
	send(delta{Role: m.Role})
	// Both names of the reasoning, where a server sends both, go piece by
	// piece in the same events: the tap reads one of them.
	rc, rs := pieces(m.ReasoningContent), pieces(m.Reasoning)
	for i := range max(len(rc), len(rs)) {
		var d delta
		if i < len(rc) {
			d.ReasoningContent = rc[i]
		}
		if i < len(rs) {
			d.Reasoning = rs[i]
		}
		send(d)
	}
	for _, p := range pieces(m.Content) {
		send(delta{Content: p})
	}
	for _, p := range pieces(m.Refusal) {
		send(delta{Refusal: p})
	}
	for i, c := range m.ToolCalls {
		args := pieces(c.Function.Arguments)
		c.Index, c.Function.Arguments = i, ""
		if len(args) > 0 {
			c.Function.Arguments, args = args[0], args[1:]
		}
		send(delta{ToolCalls: []call{c}})
		for _, p := range args {
			var more call
			more.Index, more.Function.Arguments = i, p
			send(delta{ToolCalls: []call{more}})
		}
	}
	last := r.Choices[0]
	last.Message = nil
	evs = append(evs, event{[]choice{last}, r.Usage}, "[DONE]")
	return events(evs...), true
}

// anthropicWholeStream is the stream of body, a whole message: its blocks
// one after the other, each in pieces, then its stop reason and usage; or
// an error event, for a body that is an error. It is false for a body
// that is neither.
func anthropicWholeStream(body []byte) ([]byte, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil, false
	}
	if string(m["type"]) == `"error"` {
		return events(m), true
	}
	var blocks []json.RawMessage
	if string(m["type"]) != `"message"` || json.Unmarshal(m["content"], &blocks) != nil {
		return nil, false
	}
	type ev = map[string]any
	start := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		start[k] = v
	}
	start["content"] = json.RawMessage("[]")
	evs := []any{ev{"type": "message_start", "message": start}}
	for i, raw := range blocks {
		var b struct {
			Type, Text, Thinking, Signature string
			ID, Name                        json.RawMessage
			Input                           json.RawMessage
		}
		if json.Unmarshal(raw, &b) != nil {
			b.Type = "" // passed on as it is
		}
		deltas := func(typ, key, s string) {
			for _, p := range pieces(s) {
				evs = append(evs, ev{"type": "content_block_delta", "index": i, "delta": ev{"type": typ, key: p}})
			}
		}
		switch b.Type {
		case "text":
			evs = append(evs, ev{"type": "content_block_start", "index": i, "content_block": ev{"type": "text", "text": ""}})
			deltas("text_delta", "text", b.Text)
		case "thinking":
			evs = append(evs, ev{"type": "content_block_start", "index": i, "content_block": ev{"type": "thinking", "thinking": ""}})
			deltas("thinking_delta", "thinking", b.Thinking)
			deltas("signature_delta", "signature", b.Signature)
		case "tool_use":
			var input bytes.Buffer
			if json.Compact(&input, b.Input) != nil {
				return nil, false
			}
			evs = append(evs, ev{"type": "content_block_start", "index": i,
				"content_block": ev{"type": "tool_use", "id": b.ID, "name": b.Name, "input": ev{}}})
			deltas("input_json_delta", "partial_json", input.String())
		default: // redacted_thinking, and what the client may not know
			evs = append(evs, ev{"type": "content_block_start", "index": i, "content_block": raw})
		}
		evs = append(evs, ev{"type": "content_block_stop", "index": i})
	}
	evs = append(evs, ev{"type": "message_delta", "usage": m["usage"],
		"delta": ev{"stop_reason": m["stop_reason"], "stop_sequence": m["stop_sequence"]}},
		ev{"type": "message_stop"})
	return events(evs...), true
}

// wholeTap looks, before the client reads anything, whether the body is
// a whole reply rather than a stream.
func (t *thinkingTap) wholeTap() {
	t.begun = true
	for i := 1; i <= t.r.Size(); i++ {
		b, _ := t.r.Peek(i) // blocks only for what it looks at
		if len(b) < i {
			return
		}
		switch b[i-1] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			t.r = bufio.NewReader(asStream(t.r, anthropicWholeStream))
		}
		return
	}
}
