// Package providertest has fake model provider servers for tests: local
// HTTP servers (on 127.0.0.1) that speak the wire protocols of OpenAI's
// chat completions, Anthropic's messages, Gemini, Bedrock (SigV4-signed),
// Ollama's native chat and Mistral, answer with scripted replies, and
// record every request they receive, so that tests exercise the real
// langchaingo clients and can check what went on the wire.
//
//	srv := providertest.NewOpenAIServer(t, providertest.Reply{Text: "hi"})
//	m, _ := provider.Open(ctx, "openai/gpt-4o-mini", provider.Config{BaseURL: srv.BaseURL()})
//	resp, err := m.Generate(ctx, req)
//	body := srv.LastRequest().JSON()
package providertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted response of a fake server.
type Reply struct {
	// Status is the HTTP status; 0 is 200. A status of 400 or more sends
	// an error body made of the Error fields.
	Status int
	// Text is the reply's text.
	Text string
	// ToolCalls are the tool calls the reply requests.
	ToolCalls []ToolCall
	// Thinking are the reply's reasoning blocks, before its text
	// (Anthropic); Gemini signs the reply's first call with the first
	// block's text. OpenAI's server sends their text as
	// reasoning_content (as DeepSeek does) or as ReasoningField says,
	// Ollama's as the message's thinking.
	Thinking []Thinking
	// ReasoningField names the OpenAI reply's fields that carry the
	// text of Thinking, comma-separated: "reasoning_content" when empty;
	// "reasoning" as vLLM, OpenRouter and Ollama's /v1 send it.
	ReasoningField string
	// Usage is the reply's token usage.
	Usage Usage
	// FinishReason is the stop reason; empty is the protocol's usual one
	// ("stop" or "tool_calls"; "end_turn" or "tool_use").
	FinishReason string
	// ErrorType, ErrorCode and ErrorMessage make an error body's type,
	// code (OpenAI only) and message.
	ErrorType, ErrorCode, ErrorMessage string
	// RetryAfter is the Retry-After header, if any.
	RetryAfter string
	// Header are more response headers. A stream's Content-Type, when
	// set (nil for none), replaces text/event-stream, as some servers
	// label their streams otherwise.
	Header http.Header
	// Delay is how long the server waits before answering; it stops
	// waiting when the client goes away.
	Delay time.Duration
	// IgnoreStream answers a request with "stream": true with the whole
	// reply, as JSON, as some servers do (OpenAI, Anthropic and Ollama
	// fakes).
	IgnoreStream bool
}

// ToolCall is a tool call in a reply.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is a JSON object, as text.
	Arguments string
}

// thinkingText is the text of r's thinking blocks, redacted ones left out.
func thinkingText(r Reply) string {
	var b strings.Builder
	for _, th := range r.Thinking {
		if th.Redacted == "" {
			b.WriteString(th.Text)
		}
	}
	return b.String()
}

// Thinking is a reasoning block of a reply: an Anthropic thinking block,
// sealed with [Signature], or a redacted_thinking block.
type Thinking struct {
	Text string
	// Redacted, when set, makes the block redacted_thinking with this
	// data; it should start with "redacted-", as the server checks the
	// blocks it gets back.
	Redacted string
}

// Usage is a reply's token usage. Input counts all prompt tokens, Cached
// among them; Output counts all generated tokens, Reasoning among them.
// CacheWrite is Anthropic's cache_creation_input_tokens.
type Usage struct {
	Input, Output, Cached, Reasoning, CacheWrite int
}

// Request is a request a fake server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the request body, or returns nil if it is not a JSON
// object.
func (r Request) JSON() map[string]any {
	var m map[string]any
	if json.Unmarshal(r.Body, &m) != nil {
		return nil
	}
	return m
}

// RateLimited is a 429 reply with the given Retry-After header.
func RateLimited(retryAfter string) Reply {
	return Reply{Status: http.StatusTooManyRequests, ErrorType: "rate_limit_error", ErrorCode: "rate_limit_exceeded",
		ErrorMessage: "Rate limit reached for requests.", RetryAfter: retryAfter}
}

// ServerError is a 500 reply.
func ServerError() Reply {
	return Reply{Status: http.StatusInternalServerError, ErrorType: "server_error",
		ErrorMessage: "The server had an error while processing your request."}
}

// Overloaded is Anthropic's 529 overloaded_error reply.
func Overloaded() Reply {
	return Reply{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}
}

// Unauthorized is a 401 reply.
func Unauthorized() Reply {
	return Reply{Status: http.StatusUnauthorized, ErrorType: "authentication_error", ErrorCode: "invalid_api_key",
		ErrorMessage: "Incorrect API key provided."}
}

// ContextLengthExceeded is OpenAI's 400 context_length_exceeded reply.
func ContextLengthExceeded() Reply {
	return Reply{Status: http.StatusBadRequest, ErrorType: "invalid_request_error", ErrorCode: "context_length_exceeded",
		ErrorMessage: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130021 tokens. Please reduce the length of the messages."}
}

// PromptTooLong is Anthropic's 400 reply to a prompt over the context
// window.
func PromptTooLong() Reply {
	return Reply{Status: http.StatusBadRequest, ErrorType: "invalid_request_error",
		ErrorMessage: "prompt is too long: 210000 tokens > 200000 maximum"}
}

// Server is a fake provider server. Its methods are safe for concurrent
// use.
type Server struct {
	*httptest.Server
	protocol protocol

	mu          sync.Mutex
	queue       []Reply
	def         Reply
	reqs        []Request
	maxRecorded int
}

type protocol interface {
	path() string // the endpoint's path suffix
	base(url string) string
	write(w http.ResponseWriter, req map[string]any, r Reply)
	writeError(w http.ResponseWriter, r Reply)
}

func newServer(t testing.TB, p protocol, replies []Reply) *Server {
	t.Helper()
	s := startServer(p, replies)
	t.Cleanup(s.Close)
	return s
}

func startServer(p protocol, replies []Reply) *Server {
	s := &Server{
		protocol: p,
		queue:    append([]Reply(nil), replies...),
		def:      Reply{Text: "ok", Usage: Usage{Input: 10, Output: 1}},
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is the address to give the client: the server's URL with the
// protocol's /v1.
func (s *Server) BaseURL() string { return s.protocol.base(s.URL) }

// Enqueue adds replies to answer, in order, after those already queued.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, replies...)
	s.mu.Unlock()
}

// SetDefault sets the reply given when the queue is empty; it starts as
// the text "ok".
func (s *Server) SetDefault(r Reply) {
	s.mu.Lock()
	s.def = r
	s.mu.Unlock()
}

// SetMaxRecorded keeps only the last n requests (0: all), for benchmarks.
func (s *Server) SetMaxRecorded(n int) {
	s.mu.Lock()
	s.maxRecorded = n
	s.mu.Unlock()
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// LastRequest returns the last request received, or a zero Request.
func (s *Server) LastRequest() Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return Request{}
	}
	return s.reqs[len(s.reqs)-1]
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	if s.maxRecorded > 0 && len(s.reqs) > s.maxRecorded {
		s.reqs = append(s.reqs[:0], s.reqs[len(s.reqs)-s.maxRecorded:]...)
	}
	reply := s.def
	if len(s.queue) > 0 {
		reply = s.queue[0]
		s.queue = s.queue[1:]
	}
	s.mu.Unlock()

	if r.Method != http.MethodPost || !hasSuffix(r.URL.Path, s.protocol.path()) {
		http.Error(w, "no such endpoint: "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	for k, vs := range reply.Header {
		w.Header()[k] = vs
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Status >= 400 {
		s.protocol.writeError(w, reply)
		return
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "request body is not a JSON object: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.protocol.write(w, req, reply)
}

func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// writeJSON writes v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

// newSSE starts the events of a stream as text/event-stream, unless the
// reply's Header set another Content-Type (nil for none), as some servers
// label their streams.
func newSSE(w http.ResponseWriter) *sse {
	if _, set := w.Header()["Content-Type"]; !set {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event; name may be empty, data is JSON-encoded unless
// it is a string.
func (s *sse) event(name string, data any) {
	if name != "" {
		io.WriteString(s.w, "event: "+name+"\n")
	}
	var b []byte
	if str, ok := data.(string); ok {
		b = []byte(str)
	} else {
		b, _ = json.Marshal(data)
	}
	io.WriteString(s.w, "data: ")
	s.w.Write(b)
	io.WriteString(s.w, "\n\n")
	if s.f != nil {
		s.f.Flush()
	}
}

// pieces splits s into up to n non-empty pieces on byte boundaries that
// keep UTF-8 intact.
func pieces(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && s[end]&0xC0 == 0x80 {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

func modelOf(req map[string]any) string {
	m, _ := req["model"].(string)
	return m
}
