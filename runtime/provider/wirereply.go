package provider

// What the transport reads of a reply on the wire because langchaingo's
// clients lose it: Gemini's usage, OpenAI's refusals and in-stream errors,
// Anthropic's empty replies (and, in bedrock.go, Bedrock's stop reason),
// and the text and reasoning of a stream, in order, where the client
// hands the streaming function less.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/lllm-go/lllm/dialog"
)

// wireReply is what was read of a reply on the wire because the client
// loses it.
type wireReply struct {
	usage  *dialog.Usage // googleai: the usage of a reply's last part
	finish string        // bedrock: a stop reason langchaingo takes for an error; ollama: done_reason
	// openai: a refusal (message.refusal, delta.refusal), which
	// langchaingo does not read, and an error event inside a stream,
	// which it skips.
	refusal, streamErr string
	// ollama: the reply's tool calls (message.tool_calls), which
	// langchaingo does not read.
	calls []dialog.FunctionCall
	// anthropic: the reply's thinking blocks, with the signatures a
	// stream's client drops and the redacted blocks it cannot read.
	// openai: reasoning under "reasoning", as one unsigned block.
	reasoning []dialog.Reasoning
	// openai streams, ollama: the reply's reasoning text as it came,
	// under whichever name, made one unsigned block.
	thinking []byte
	// openai: the reasoning came under "reasoning" alone (vLLM,
	// OpenRouter, Groq, Cerebras), not DeepSeek's "reasoning_content":
	// it goes back under "reasoning" (see reasoningContent).
	namedReasoning bool
	// googleai: the thought signatures of the reply's function calls
	// (each call's, "" for none) and of its text, which Google's client
	// drops; and, when the reply has thought summaries, their text and the
	// reply's text without them (the client joins them).
	callSignatures   []string
	textSignature    string
	thoughts, answer string
	// openai: the tool calls of a stream, assembled by index, which
	// langchaingo mixes up when there are several (it appends every
	// argument fragment to the last call).
	streamed []streamedCall
}

// streamedCall is one tool call assembled from a stream's fragments.
type streamedCall struct {
	id, name string
	args     []byte
}

// maxStreamedCalls bounds the streamed tool calls the tap assembles: a
// reply never asks for more calls at once.
const maxStreamedCalls = 128

// setWire notes what set changes of the reply's wireReply.
func (st *callState) setWire(set func(*wireReply)) {
	st.mu.Lock()
	set(&st.wire)
	st.mu.Unlock()
}

// wireReply returns what was read of the reply on the wire.
func (st *callState) wireReply() wireReply {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.wire
}

// usageTap keeps a Gemini response body as it is read and, at its end,
// notes the last usageMetadata it holds: a generateContent body is one
// response, a streamGenerateContent body a JSON array of them, whose
// counts are running totals.
type usageTap struct {
	io.ReadCloser
	st   *callState
	buf  bytes.Buffer
	once sync.Once
	// A stream's responses are found as they arrive, so that their text
	// and thought summaries are queued for the streaming function (see
	// callState.tapped): scan is how far buf is scanned, depth the
	// nesting there (1 inside the array), start where the response being
	// read began, and str and esc whether scan is in a string and after
	// its backslash.
	scan, depth, start int
	stream, str, esc   bool
}

func (u *usageTap) Read(p []byte) (int, error) {
	n, err := u.ReadCloser.Read(p)
	u.buf.Write(p[:n])
	if u.scan == 0 && !u.stream && n > 0 {
		if b := bytes.TrimLeft(u.buf.Bytes(), " \t\r\n"); len(b) > 0 && b[0] == '[' {
			u.stream = true
			u.st.tap()
		}
	}
	if u.stream {
		u.queueResponses()
	}
	if err == io.EOF {
		u.once.Do(func() { u.note(true) })
	}
	return n, err
}

func (u *usageTap) Close() error {
	u.once.Do(func() { u.note(false) })
	return u.ReadCloser.Close()
}

// queueResponses queues the text and thought summaries of each response
// of a stream read whole since the last call, in order.
func (u *usageTap) queueResponses() {
	b := u.buf.Bytes()
	for ; u.scan < len(b); u.scan++ {
		c := b[u.scan]
		switch {
		case u.esc:
			u.esc = false
		case u.str:
			u.esc = c == '\\'
			u.str = c != '"'
		case c == '"':
			u.str = true
		case c == '[' || c == '{':
			u.depth++
			if u.depth == 2 {
				u.start = u.scan
			}
		case c == ']' || c == '}':
			u.depth--
			if u.depth == 1 {
				queueParts(u.st, b[u.start:u.scan+1])
			}
		}
	}
}

// queueParts queues the text and thought parts of the Gemini response r.
func queueParts(st *callState, r []byte) {
	var resp struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text    string `json:"text"`
					Thought bool   `json:"thought"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if json.Unmarshal(r, &resp) != nil || len(resp.Candidates) == 0 {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, p := range resp.Candidates[0].Content.Parts {
		if p.Thought {
			st.queue(Chunk{Reasoning: p.Text})
		} else {
			st.queue(Chunk{Text: p.Text})
		}
	}
}

// note notes the usage, thought signatures and thought summaries of the
// body read. A stream (a JSON array) ended before its last event when it
// reached its end of file (eof) without closing its array, or closed it
// without a response with a finishReason (or a blocked prompt's
// blockReason). The client may close the body once it has read the
// closing bracket, before it reads to the end of file.
func (u *usageTap) note(eof bool) {
	type candidate struct {
		FinishReason json.RawMessage `json:"finishReason"`
		Content      struct {
			Parts []struct {
				Text             string          `json:"text"`
				Thought          bool            `json:"thought"`
				FunctionCall     json.RawMessage `json:"functionCall"`
				ThoughtSignature string          `json:"thoughtSignature"`
			} `json:"parts"`
		} `json:"content"`
	}
	type meta struct {
		UsageMetadata *struct {
			PromptTokenCount, CachedContentTokenCount, CandidatesTokenCount, ThoughtsTokenCount int
		} `json:"usageMetadata"`
		Error          json.RawMessage `json:"error"`
		PromptFeedback *struct {
			BlockReason json.RawMessage `json:"blockReason"`
		} `json:"promptFeedback"`
		Candidates []candidate `json:"candidates"`
	}
	// ended reports whether m ends a stream: an error, a blocked prompt,
	// or a candidate with a finishReason (a usage-only response may
	// follow).
	ended := func(m meta) bool {
		if len(m.Error) > 0 || m.PromptFeedback != nil && len(m.PromptFeedback.BlockReason) > 0 {
			return true
		}
		return slices.ContainsFunc(m.Candidates, func(c candidate) bool {
			return len(c.FinishReason) > 0 && string(c.FinishReason) != "null"
		})
	}
	body := bytes.TrimSpace(u.buf.Bytes())
	var resps []meta
	if bytes.HasPrefix(body, []byte("[")) {
		// Element by element: a stream cut short still gives its whole ones.
		dec := json.NewDecoder(bytes.NewReader(body))
		_, _ = dec.Token()
		whole := true
		for dec.More() {
			var m meta
			if dec.Decode(&m) != nil {
				whole = false
				break
			}
			resps = append(resps, m)
		}
		if whole {
			end, err := dec.Token()
			whole = err == nil && end == json.Delim(']')
		}
		if (eof || whole) && !(whole && slices.ContainsFunc(resps, ended)) {
			u.st.unfinished(errNoFinishReason)
		}
	} else {
		var m meta
		if json.Unmarshal(body, &m) == nil {
			resps = append(resps, m)
		}
	}
	// Thought signatures (Gemini 3): each call's, and a text part's. And
	// thought summaries (includeThoughts), which the client takes for text.
	var (
		calls            []string
		sig              string
		thoughts, answer strings.Builder
		thought          bool
	)
	for _, r := range resps {
		if len(r.Candidates) == 0 {
			continue
		}
		for _, p := range r.Candidates[0].Content.Parts {
			switch {
			case len(p.FunctionCall) > 0:
				calls = append(calls, p.ThoughtSignature)
			case p.ThoughtSignature != "":
				sig = p.ThoughtSignature
			}
			if p.Thought {
				thought = true
				thoughts.WriteString(p.Text)
			} else {
				answer.WriteString(p.Text)
			}
		}
	}
	if sig != "" || thought || slices.ContainsFunc(calls, func(s string) bool { return s != "" }) {
		u.st.setWire(func(w *wireReply) {
			w.callSignatures, w.textSignature = calls, sig
			if thought {
				w.thoughts, w.answer = thoughts.String(), answer.String()
			}
		})
	}
	for i := len(resps) - 1; i >= 0; i-- {
		if m := resps[i].UsageMetadata; m != nil {
			usage := dialog.Usage{
				InputTokens:       m.PromptTokenCount,
				CachedInputTokens: m.CachedContentTokenCount,
				OutputTokens:      m.CandidatesTokenCount + m.ThoughtsTokenCount,
				ReasoningTokens:   m.ThoughtsTokenCount,
			}
			u.st.setWire(func(w *wireReply) { w.usage = &usage })
			return
		}
	}
}

// errNoFinishReason is why a Gemini stream is unfinished.
var errNoFinishReason = errors.New("the stream ended without a finishReason")

// tapReply reads what langchaingo loses of a successful reply. ollama: the
// tool calls and thinking. openai: a refusal, reasoning under "reasoning",
// and an error event inside a stream.
// anthropic: the thinking blocks (see thinking.go), and a reply without
// content blocks (a refusal, an empty end_turn), which langchaingo takes
// for an error: it is handed one empty text block instead.
func tapReply(style wireStyle, resp *http.Response, st *callState) error {
	if style == wireOllama {
		// A streamed request's reply is streamed to the caller even when
		// it comes whole (a server that ignores "stream": true).
		t := &ollamaTap{ReadCloser: resp.Body, st: st, stream: st.stream || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-ndjson")}
		if t.stream {
			st.tap()
		}
		resp.Body = t
		return nil
	}
	// A streamed request's reply is a stream however it is labelled:
	// some servers send theirs as application/json (Foundry Local),
	// text/plain (a proxy's) or with no Content-Type at all.
	if st.stream || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if style == wireAnthropic {
			resp.Body = newThinkingTap(resp.Body, st)
		}
		if style == wireOpenAI {
			resp.Body = &sseTap{ReadCloser: resp.Body, st: st}
			st.tap()
		}
		return nil
	}
	if style == wireOpenAI {
		st.reply = openaiTap{ReadCloser: resp.Body, st: st, buf: replyBufs.Get().(*bytes.Buffer)}
		resp.Body = &st.reply
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if style == wireAnthropic {
		var r struct {
			Content []json.RawMessage `json:"content"`
		}
		switch {
		case json.Unmarshal(body, &r) != nil || r.Content == nil:
		case len(r.Content) == 0:
			if b, err := editJSON(body, []edit{{path: []string{"content"}, value: []byte(`[{"type":"text","text":""}]`)}}); err == nil {
				body = b
			}
		case bytes.Contains(body, []byte("thinking")):
			body = noteThinking(body, r.Content, st)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return nil
}

// openaiTap keeps an OpenAI reply's body as the client reads it and, once
// it is read, notes what the client loses of it: a refusal
// (message.refusal), and reasoning under "reasoning" (vLLM, OpenRouter,
// Ollama's /v1), where langchaingo reads only DeepSeek's
// "reasoning_content". It lives in the callState, and its buffer is
// pooled, so a reply costs no allocation.
type openaiTap struct {
	io.ReadCloser
	st   *callState
	buf  *bytes.Buffer // nil once noted
	once sync.Once
}

// replyBufs are the buffers of openaiTaps.
var replyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (t *openaiTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if t.buf != nil {
		t.buf.Write(p[:n])
	}
	if err == io.EOF {
		t.once.Do(t.note)
	}
	return n, err
}

func (t *openaiTap) Close() error {
	t.once.Do(t.note)
	return t.ReadCloser.Close()
}

func (t *openaiTap) note() {
	body := t.buf.Bytes()
	// OpenAI spaces its replies ("refusal": "..."), and sends
	// "refusal": null on every one.
	if memberStarts(body, `"refusal"`, `"`) || bytes.Contains(body, []byte(`"reasoning"`)) {
		var r struct {
			Choices []struct {
				Message struct {
					Refusal          string
					Reasoning        string `json:"reasoning"`
					ReasoningContent string `json:"reasoning_content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if json.Unmarshal(body, &r) == nil && len(r.Choices) > 0 {
			m := r.Choices[0].Message
			t.st.setWire(func(w *wireReply) {
				w.refusal = m.Refusal
				if m.ReasoningContent == "" && m.Reasoning != "" {
					w.reasoning = []dialog.Reasoning{{Text: m.Reasoning}}
					w.namedReasoning = true
				}
			})
		}
	}
	if t.buf.Cap() <= 1<<20 { // a huge reply's buffer is not kept
		t.buf.Reset()
		replyBufs.Put(t.buf)
	}
	t.buf = nil
}

// sseTap notes, line by line, the text, tool calls, refusal and error
// events of an OpenAI stream as langchaingo reads it.
type sseTap struct {
	io.ReadCloser
	st   *callState
	line []byte
	// slot maps a streamed tool call's index to its place in
	// wireReply.streamed: a call with a new id at an index already taken
	// (a server that sends no index, so every call has 0) takes a new
	// place, and the fragments that follow go to it.
	slot map[int]int
	// finished is set by the stream's last event: a finish_reason, or
	// [DONE].
	finished bool
	// begun is set once the body has shown its first byte other than
	// white space: a "{" starts a whole reply (see openaiWholeStream).
	begun bool
}

var (
	errNoFinish = errors.New("the stream ended without a finish_reason or [DONE]")
	errNoDone   = errors.New(`the stream ended without its last line ("done": true)`)
	errNoStop   = errors.New("the stream ended without message_stop")
)

func (s *sseTap) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if !s.begun {
		if rest := bytes.TrimLeft(p[:n], " \t\r\n"); len(rest) > 0 {
			s.begun = true
			if rest[0] == '{' {
				s.ReadCloser = readCloser{asStream(io.MultiReader(bytes.NewReader(rest), s.ReadCloser), openaiWholeStream), s.ReadCloser}
				return s.Read(p)
			}
		}
	}
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.line = append(s.line, b...)
			break
		}
		s.note(append(s.line, b[:i]...))
		s.line, b = s.line[:0], b[i+1:]
	}
	if err == io.EOF {
		s.note(s.line)
		s.line = s.line[:0]
		if !s.finished {
			s.st.unfinished(errNoFinish)
		}
	}
	return n, err
}

func (s *sseTap) note(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
	if ok && !s.finished {
		s.finished = bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) || hasFinishReason(data)
	}
	if !ok || !bytes.Contains(data, []byte(`"error"`)) && !bytes.Contains(data, []byte(`"refusal":"`)) &&
		!bytes.Contains(data, []byte(`"tool_calls"`)) && !bytes.Contains(data, []byte(`content"`)) &&
		!bytes.Contains(data, []byte(`"reasoning"`)) {
		return // content" is in "content" and "reasoning_content"
	}
	var ev struct {
		Error   *struct{ Type, Message string } `json:"error"`
		Choices []struct {
			Delta struct {
				Content string
				// DeepSeek's name, which langchaingo reads, and vLLM's,
				// OpenRouter's and Ollama's, which it does not.
				ReasoningContent string `json:"reasoning_content"`
				Reasoning        string `json:"reasoning"`
				Refusal          string
				ToolCalls        []struct {
					Index    int
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	if len(ev.Choices) > 0 {
		d := &ev.Choices[0].Delta
		reasoning := cmp.Or(d.ReasoningContent, d.Reasoning)
		s.st.mu.Lock()
		s.st.queue(Chunk{Reasoning: reasoning})
		s.st.queue(Chunk{Text: d.Content})
		s.st.wire.thinking = append(s.st.wire.thinking, reasoning...)
		s.st.wire.namedReasoning = s.st.wire.namedReasoning || d.ReasoningContent == "" && d.Reasoning != ""
		s.st.mu.Unlock()
	}
	if ev.Error == nil && (len(ev.Choices) == 0 || ev.Choices[0].Delta.Refusal == "" && len(ev.Choices[0].Delta.ToolCalls) == 0) {
		return
	}
	if ev.Error != nil {
		s.finished = true // an error event ends a stream too
	}
	s.st.setWire(func(w *wireReply) {
		if ev.Error != nil {
			w.streamErr = ev.Error.Type + ": " + ev.Error.Message
		}
		if len(ev.Choices) == 0 {
			return
		}
		w.refusal += ev.Choices[0].Delta.Refusal
		for _, tc := range ev.Choices[0].Delta.ToolCalls {
			i, ok := s.slot[tc.Index]
			if !ok || tc.ID != "" && w.streamed[i].id != "" && tc.ID != w.streamed[i].id {
				if len(w.streamed) >= maxStreamedCalls {
					continue
				}
				if s.slot == nil {
					s.slot = map[int]int{}
				}
				i = len(w.streamed)
				s.slot[tc.Index] = i
				w.streamed = append(w.streamed, streamedCall{})
			}
			c := &w.streamed[i]
			if tc.ID != "" {
				c.id = tc.ID
			}
			c.name += tc.Function.Name
			c.args = append(c.args, tc.Function.Arguments...)
		}
	})
}

// tap marks the call's stream as tapped (see callState.tapped).
func (st *callState) tap() {
	st.mu.Lock()
	st.tapped, st.queued, st.next = true, st.queued[:0], 0
	st.mu.Unlock()
}

// queue adds a piece of a tapped stream for the streaming function; an
// empty one is dropped. The caller holds st.mu.
func (st *callState) queue(c Chunk) {
	if c.Text != "" || c.Reasoning != "" {
		st.queued = append(st.queued, c)
	}
}

// streamed returns the next piece of a tapped stream that the streaming
// function has not had, and false when there is none; tapped reports
// whether the stream is tapped at all.
func (st *callState) streamed() (c Chunk, ok, tapped bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.next == len(st.queued) {
		st.queued, st.next = st.queued[:0], 0
		return Chunk{}, false, st.tapped
	}
	c = st.queued[st.next]
	st.queued[st.next] = Chunk{}
	st.next++
	return c, true, st.tapped
}

// hasFinishReason reports whether the event data holds a finish_reason
// that is a string, not null.
func hasFinishReason(data []byte) bool { return memberStarts(data, `"finish_reason"`, `"`) }

// memberStarts reports whether data, JSON, has a member named key (quoted)
// whose value starts with prefix, however it is spaced: a look for the
// end of a stream, not a parse.
func memberStarts(data []byte, key, prefix string) bool {
	for {
		i := bytes.Index(data, []byte(key))
		if i < 0 {
			return false
		}
		data = data[i+len(key):]
		rest := bytes.TrimLeft(data, " \t\r\n")
		if rest, ok := bytes.CutPrefix(rest, []byte(":")); ok && bytes.HasPrefix(bytes.TrimLeft(rest, " \t\r\n"), []byte(prefix)) {
			return true
		}
	}
}
