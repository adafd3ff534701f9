package provider

// Reasoning that goes back to the provider that made it, which langchaingo's
// clients cannot send. Anthropic's extended thinking: its client drops a
// streamed block's signature, fails on a redacted_thinking block, and
// cannot send thinking blocks back, which the API requires within a tool
// round ("a final assistant message must start with a thinking block"): the
// transport reads a reply's blocks on the wire (handing the client a
// redacted block as an empty thinking one) and puts the blocks of earlier
// replies back into the request body. Gemini 3's thought signatures, on a
// reply's function call and text parts, which Google's client drops and
// Gemini requires back on the calls of the current turn: the transport
// reads them (usageTap) and puts them back on their parts.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/lllm-go/lllm/dialog"
)

// thinkingBack is the reasoning of one assistant message going back, the
// message at index at of the request's "messages" (Anthropic: the blocks
// go in a message of their own inserted there, which the API joins to the
// assistant turn after it; Bedrock: the blocks go in that message's
// content, before block part, the message's first) or "contents" (Gemini:
// each block's signature goes on the part of the content that parts
// names, -1 for none).
type thinkingBack struct {
	at     int
	blocks []dialog.Reasoning
	parts  []int
	part   int
	// call is, on OpenAI's wire, the id of the message's first tool call,
	// and at the message's place among the request's assistant messages
	// with tool calls, which find the message (langchaingo leaves out the
	// system messages of some models, and a server that gives no ids has
	// call_1 on every round): its reasoning goes in its member (as it
	// came: reasoning_content or reasoning).
	call, member string
}

// bedrockPlaces sets, for each of back (its at the index in msgs of the
// message the reasoning belongs to, in order), where the message's first
// part lands in the body langchaingo's Bedrock client builds of msgs: a
// content block per part, the parts of consecutive messages of a role
// joined into one wire message, and system messages in "system". A
// message that sends nothing gets at -1, which insertBedrockThinking
// refuses.
func bedrockPlaces(msgs []llms.MessageContent, back []thinkingBack) {
	wire, part, k := -1, 0, 0
	var last llms.ChatMessageType
	for i, m := range msgs {
		if k == len(back) {
			return
		}
		if len(m.Parts) == 0 {
			if back[k].at == i {
				back[k].at = -1
				k++
			}
			continue // the client sends nothing of it
		}
		if m.Role != last {
			if m.Role != llms.ChatMessageTypeSystem {
				wire++
			}
			part, last = 0, m.Role
		}
		if back[k].at == i {
			back[k].at, back[k].part = wire, part
			k++
		}
		part += len(m.Parts)
	}
}

// geminiParts is, for each reasoning block of m, the part of m's content on
// Gemini's wire that its signature belongs to: its call's (after the text
// part, when m has text), or the text part; -1 for none.
func geminiParts(m *dialog.Message) []int {
	text := m.Text() != "" || len(m.FunctionCalls) == 0 // a part of its own
	first := 0
	if text {
		first = 1
	}
	parts := make([]int, len(m.Reasoning))
	for i, r := range m.Reasoning {
		parts[i] = -1
		switch {
		case r.Signature == "":
		case r.Call == "" && text:
			parts[i] = 0
		case r.Call != "":
			if k := slices.IndexFunc(m.FunctionCalls, func(fc dialog.FunctionCall) bool { return fc.ID == r.Call }); k >= 0 {
				parts[i] = first + k
			}
		}
	}
	return parts
}

// placeholderSignature is the thought signature Google documents for a
// function call Gemini 3 did not make (one moved from another model, or
// written by hand), which has none: it skips the check that refuses a
// call of the current turn without its signature.
const placeholderSignature = "skip_thought_signature_validator"

// signsCalls reports whether the Gemini model requires the thought
// signatures of the current turn's function calls back: Gemini 3 and
// later, named with or without the API's "models/" (which Google's client
// accepts).
func signsCalls(model string) bool {
	v, ok := strings.CutPrefix(strings.TrimPrefix(model, "models/"), "gemini-")
	return ok && v != "" && v[0] >= '3' && v[0] <= '9'
}

// signFirstCall returns back with the first function call of m, the
// content at index at of a Gemini request, signed: by its own signature if
// back has it, else by placeholderSignature.
func signFirstCall(back []thinkingBack, m *dialog.Message, at int) []thinkingBack {
	part := 0
	if m.Text() != "" {
		part = 1 // after the text part (see geminiParts)
	}
	var b thinkingBack
	if n := len(back); n > 0 && back[n-1].at == at {
		b, back = back[n-1], back[:n-1]
		for i, p := range b.parts {
			if p == part && b.blocks[i].Signature != "" {
				return append(back, b)
			}
		}
	}
	b.at = at
	b.blocks = append(slices.Clip(b.blocks), dialog.Reasoning{Signature: placeholderSignature, Call: m.FunctionCalls[0].ID})
	b.parts = append(slices.Clip(b.parts), part)
	return append(back, b)
}

// returnable reports whether m's reasoning goes back to this adapter's
// provider: blocks it sealed (a signature, or redacted), in a message it
// made.
func (a *Adapter) returnable(m *dialog.Message) bool {
	if !a.d.thinking || !strings.HasPrefix(m.Model, a.prefix) {
		return false
	}
	for _, r := range m.Reasoning {
		if r.Signature != "" || r.Redacted != "" {
			return true
		}
	}
	return false
}

// anthropicBlock is a thinking or redacted_thinking content block.
type anthropicBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// insertThinking returns body with the reasoning of back put back, as
// Gemini's signatures (back's parts set) or Anthropic's blocks.
func insertThinking(body []byte, back []thinkingBack) ([]byte, error) {
	switch {
	case back[0].call != "":
		return setReasoningContent(body, back)
	case back[0].parts != nil:
		return signGeminiParts(body, back)
	}
	return insertAnthropicThinking(body, back)
}

// reasoningContent is the thinkingBack of m, a reply with tool calls, on
// OpenAI's wire, in a request to model: its reasoning's text, under the
// name it came by. DeepSeek's thinking mode requires its reasoning_content
// back on every earlier tool round (it refuses the request without); vLLM
// reads back only "reasoning", which goes back only when model wrote it
// (Groq refuses "reasoning" for a model that does not reason). ok is
// false when m has none, another provider made it, or its reasoning came
// under "reasoning" from another model (see reasoningFieldKey).
func (a *Adapter) reasoningContent(m *dialog.Message, model string) (b thinkingBack, ok bool) {
	if a.d.wire != wireOpenAI || len(m.FunctionCalls) == 0 || m.FunctionCalls[0].ID == "" || !strings.HasPrefix(m.Model, a.prefix) {
		return b, false
	}
	member := "reasoning_content"
	if f := m.Metadata[reasoningFieldKey]; f != "" {
		if f != "reasoning" || m.Model != a.qualified(model) {
			return b, false
		}
		member = f
	}
	text := m.ReasoningText()
	return thinkingBack{call: m.FunctionCalls[0].ID, member: member, blocks: []dialog.Reasoning{{Text: text}}}, text != ""
}

// setReasoningContent returns body, an OpenAI chat-completions request,
// with the reasoning of each of back as back's member of the
// assistant message with tool calls at back's place among them (at), whose
// first tool call is back's.
func setReasoningContent(body []byte, back []thinkingBack) ([]byte, error) {
	var r struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	rounds := 0 // the assistant messages with tool calls before raw
	for i, raw := range r.Messages {
		var m struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		k := slices.IndexFunc(back, func(b thinkingBack) bool { return b.at == rounds && b.call == m.ToolCalls[0].ID })
		rounds++
		if k < 0 {
			continue
		}
		var err error
		if r.Messages[i], err = setMember(raw, back[k].member, back[k].blocks[0].Text); err != nil {
			return nil, err
		}
	}
	return setMember(body, "messages", r.Messages)
}

// signGeminiParts returns body, a Gemini generateContent request, with each
// signature of back on its part.
func signGeminiParts(body []byte, back []thinkingBack) ([]byte, error) {
	var r struct {
		Contents []json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	for _, b := range back {
		if b.at >= len(r.Contents) {
			return nil, errors.New("thought signatures past the request's contents")
		}
		var c struct {
			Parts []json.RawMessage `json:"parts"`
		}
		if err := json.Unmarshal(r.Contents[b.at], &c); err != nil {
			return nil, err
		}
		signed := false
		for i, p := range b.parts {
			if p < 0 || p >= len(c.Parts) {
				continue
			}
			var err error
			if c.Parts[p], err = setMember(c.Parts[p], "thoughtSignature", b.blocks[i].Signature); err != nil {
				return nil, err
			}
			signed = true
		}
		if !signed {
			continue
		}
		var err error
		if r.Contents[b.at], err = setMember(r.Contents[b.at], "parts", c.Parts); err != nil {
			return nil, err
		}
	}
	return setMember(body, "contents", r.Contents)
}

// insertAnthropicThinking returns body, an Anthropic messages request, with
// the messages of back inserted. Only the sealed blocks go: the API rejects
// a thinking block without its signature.
func insertAnthropicThinking(body []byte, back []thinkingBack) ([]byte, error) {
	var r struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	msgs := make([]json.RawMessage, 0, len(r.Messages)+len(back))
	next := 0
	for _, b := range back {
		if b.at > len(r.Messages) {
			return nil, errors.New("thinking blocks past the request's messages")
		}
		msgs = append(msgs, r.Messages[next:b.at]...)
		next = b.at
		m, err := json.Marshal(struct {
			Role    string           `json:"role"`
			Content []anthropicBlock `json:"content"`
		}{"assistant", sealedBlocks(b.blocks)})
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	msgs = append(msgs, r.Messages[next:]...)
	return setMember(body, "messages", msgs)
}

// sealedBlocks are the sealed blocks of rs, as Anthropic takes them back.
func sealedBlocks(rs []dialog.Reasoning) []anthropicBlock {
	var blocks []anthropicBlock
	for _, x := range rs {
		switch {
		case x.Redacted != "":
			blocks = append(blocks, anthropicBlock{Type: "redacted_thinking", Data: x.Redacted})
		case x.Signature != "":
			blocks = append(blocks, anthropicBlock{Type: "thinking", Thinking: x.Text, Signature: x.Signature})
		}
	}
	return blocks
}

// insertBedrockThinking returns body, the Anthropic messages request of a
// Bedrock model, with the blocks of back put in the content of their
// assistant messages, before each one's first part (see bedrockPlaces).
func insertBedrockThinking(body []byte, back []thinkingBack) ([]byte, error) {
	var r struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	for _, b := range back {
		if b.at < 0 || b.at >= len(r.Messages) {
			return nil, fmt.Errorf("thinking blocks for message %d of the request's %d", b.at, len(r.Messages))
		}
		var m struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(r.Messages[b.at], &m); err != nil {
			return nil, err
		}
		if m.Role != "assistant" || b.part > len(m.Content) {
			return nil, fmt.Errorf("thinking blocks for block %d of message %d, a %q message of %d blocks", b.part, b.at, m.Role, len(m.Content))
		}
		content := make([]any, 0, len(m.Content)+len(b.blocks))
		for _, c := range m.Content[:b.part] {
			content = append(content, c)
		}
		for _, x := range sealedBlocks(b.blocks) {
			content = append(content, x)
		}
		for _, c := range m.Content[b.part:] {
			content = append(content, c)
		}
		var err error
		if r.Messages[b.at], err = setMember(r.Messages[b.at], "content", content); err != nil {
			return nil, err
		}
	}
	return setMember(body, "messages", r.Messages)
}

// setMember returns doc, a JSON object, with its member key set to the
// JSON of v.
func setMember(doc []byte, key string, v any) ([]byte, error) {
	value, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return editJSON(doc, []edit{{path: []string{key}, value: value}})
}

// thinkingOf reads the thinking and redacted_thinking blocks of an
// Anthropic reply's content.
func thinkingOf(blocks []json.RawMessage) []dialog.Reasoning {
	var reasoning []dialog.Reasoning
	for _, raw := range blocks {
		var b anthropicBlock
		if json.Unmarshal(raw, &b) != nil {
			continue
		}
		switch b.Type {
		case "thinking":
			reasoning = append(reasoning, dialog.Reasoning{Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			reasoning = append(reasoning, dialog.Reasoning{Redacted: b.Data})
		}
	}
	return reasoning
}

// noteThinking reads the thinking blocks of body, a whole Anthropic reply,
// into st, and returns body with each redacted_thinking block made an empty
// thinking block, which the client can read.
func noteThinking(body []byte, blocks []json.RawMessage, st *callState) []byte {
	reasoning := thinkingOf(blocks)
	if reasoning == nil {
		return body
	}
	st.setWire(func(w *wireReply) { w.reasoning = reasoning })
	if !slices.ContainsFunc(reasoning, func(r dialog.Reasoning) bool { return r.Redacted != "" }) {
		return body
	}
	for i, raw := range blocks {
		var b struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &b) == nil && b.Type == "redacted_thinking" {
			blocks[i] = json.RawMessage(`{"type":"thinking","thinking":""}`)
		}
	}
	if b, err := setMember(body, "content", blocks); err == nil {
		return b
	}
	return body
}

// thinkingTap reads an Anthropic stream line by line as the client reads
// it, noting the thinking blocks (their text, signature_delta and redacted
// data) and whether the stream came to its end, and handing the client
// each redacted_thinking block as an empty thinking block.
type thinkingTap struct {
	rc   io.ReadCloser
	r    *bufio.Reader
	st   *callState
	out  []byte // what the client has not read yet of the current line
	line []byte
	// slot maps a block's index in the stream to its place in blocks.
	slot    map[int]int
	blocks  []*streamedThinking
	err     error
	stopped bool // message_stop (or an error event), the stream's last, was read
	// queue is set when the stream's text and thinking are queued for
	// the streaming function (see callState.tapped): for Bedrock, whose
	// client hands that function the text alone.
	queue bool
	begun bool // wholeTap has looked at the body
}

// streamedThinking is a thinking block assembled from a stream's deltas.
type streamedThinking struct {
	text, signature strings.Builder
	redacted        string
}

func newThinkingTap(rc io.ReadCloser, st *callState) *thinkingTap {
	return &thinkingTap{rc: rc, r: bufio.NewReader(rc), st: st}
}

func (t *thinkingTap) Read(p []byte) (int, error) {
	if !t.begun {
		t.wholeTap()
	}
	for len(t.out) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		t.line = t.line[:0]
		for {
			frag, err := t.r.ReadSlice('\n')
			t.line = append(t.line, frag...)
			if err != bufio.ErrBufferFull {
				t.err = err
				break
			}
		}
		if t.err == io.EOF || t.err == nil {
			t.out = t.note(t.line)
		} else {
			t.out = t.line
		}
		if t.err == io.EOF && !t.stopped {
			t.st.unfinished(errNoStop)
		}
		if t.err != nil {
			t.flush()
		}
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	return n, nil
}

func (t *thinkingTap) Close() error {
	t.flush()
	return t.rc.Close()
}

// flush hands what the stream's blocks hold to the call state.
func (t *thinkingTap) flush() {
	if len(t.blocks) == 0 {
		return
	}
	r := make([]dialog.Reasoning, len(t.blocks))
	for i, b := range t.blocks {
		r[i] = dialog.Reasoning{Text: b.text.String(), Signature: b.signature.String(), Redacted: b.redacted}
	}
	t.st.setWire(func(w *wireReply) { w.reasoning = r })
}

// note notes one line of the stream and returns it as the client gets it.
func (t *thinkingTap) note(line []byte) []byte {
	data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
	if !ok {
		return line
	}
	if out := t.event(data); out != nil {
		return out
	}
	return line
}

// event notes one event of the stream, and returns the line the client
// gets in its place, or nil for the event itself.
func (t *thinkingTap) event(data []byte) []byte {
	// An error event ends a stream too.
	t.stopped = t.stopped || bytes.Contains(data, []byte(`"message_stop"`)) || memberStarts(data, `"type"`, `"error"`)
	if !bytes.Contains(data, []byte("thinking")) && !bytes.Contains(data, []byte("signature_delta")) &&
		!(t.queue && bytes.Contains(data, []byte("text_delta"))) {
		return nil
	}
	var ev struct {
		Type         string         `json:"type"`
		Index        int            `json:"index"`
		ContentBlock anthropicBlock `json:"content_block"`
		Delta        struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		} `json:"delta"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return nil
	}
	if t.queue && ev.Type == "content_block_delta" {
		t.st.mu.Lock()
		t.st.queue(Chunk{Text: ev.Delta.Text, Reasoning: t.st.spaced(ev.Delta.Thinking)})
		t.st.mu.Unlock()
	}
	switch ev.Type {
	case "content_block_start":
		switch ev.ContentBlock.Type {
		case "thinking":
			if slices.ContainsFunc(t.blocks, func(b *streamedThinking) bool { return b.text.Len() > 0 }) {
				t.st.mu.Lock()
				t.st.gap = true
				t.st.mu.Unlock()
			}
			b := t.start(ev.Index)
			b.text.WriteString(ev.ContentBlock.Thinking)
			b.signature.WriteString(ev.ContentBlock.Signature)
		case "redacted_thinking":
			t.start(ev.Index).redacted = ev.ContentBlock.Data
			b, _ := json.Marshal(struct {
				Type         string            `json:"type"`
				Index        int               `json:"index"`
				ContentBlock map[string]string `json:"content_block"`
			}{"content_block_start", ev.Index, map[string]string{"type": "thinking", "thinking": ""}})
			return append(append([]byte("data: "), b...), '\n')
		}
	case "content_block_delta":
		i, ok := t.slot[ev.Index]
		if !ok {
			return nil
		}
		switch ev.Delta.Type {
		case "thinking_delta":
			t.blocks[i].text.WriteString(ev.Delta.Thinking)
		case "signature_delta":
			t.blocks[i].signature.WriteString(ev.Delta.Signature)
		}
	}
	return nil
}

// spaced returns s, a piece of streamed reasoning, after the blank line
// that separates it from the block before, if it is the first piece of a
// block (see callState.gap). The caller holds st.mu.
func (st *callState) spaced(s string) string {
	if s == "" || !st.gap {
		return s
	}
	st.gap = false
	return "\n\n" + s
}

// start notes the start of a thinking block at index i of the stream.
func (t *thinkingTap) start(i int) *streamedThinking {
	if t.slot == nil {
		t.slot = map[int]int{}
	}
	t.slot[i] = len(t.blocks)
	b := &streamedThinking{}
	t.blocks = append(t.blocks, b)
	return b
}
