// Package provider is how lllm-go calls models: one small interface, Model,
// with adapters over langchaingo for the real providers and a deterministic
// mock, plus typed requests, responses, errors and prices.
package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"
	"weak"

	"github.com/lllm-go/lllm/dialog"
)

// Model is one model of one provider, ready to be called. Implementations
// are safe for concurrent use.
type Model interface {
	// Generate sends req and returns the model's reply, or an *Error.
	// The Response is the caller's, which may keep it and change it: a
	// model must not refer to it, or change what it refers to, afterwards.
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// Params are the sampling options of a request. A nil field is unset and
// is not sent to the provider.
type Params struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	TopK        *int     `json:"top_k,omitempty"`
	MaxTokens   *int     `json:"max_tokens,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	Seed        *int     `json:"seed,omitempty"`
	// ExtraBody holds request fields Params does not name, as the
	// provider's API spells them: reasoning_effort (OpenAI), thinking
	// (Anthropic), generationConfig.thinkingConfig (Gemini), think
	// (Ollama). It is a JSON object merged into the request body after
	// every other setting: an object merges member by member, any other
	// value replaces, null deletes. The mock provider ignores it.
	ExtraBody json.RawMessage `json:"extra_body,omitempty"`
}

// IsZero reports whether p sets nothing, so the provider's defaults apply.
func (p Params) IsZero() bool {
	return p.Temperature == nil && p.TopP == nil && p.TopK == nil && p.MaxTokens == nil && len(p.Stop) == 0 && p.Seed == nil &&
		len(p.ExtraBody) == 0
}

// Chunk is a piece of a streamed reply: a piece of its text, or of its
// reasoning (the thinking text a reasoning model shows: Anthropic's
// thinking, Gemini's thought summaries, reasoning_content, Ollama's
// thinking), in the order the model wrote them. One of the two is set.
// The pieces of reasoning add up to the reply's ReasoningText: a block
// after one with text starts with a blank line.
type Chunk struct {
	Text      string
	Reasoning string
}

// Request is one call to a model.
type Request struct {
	// Model is the provider's model name, without the "provider/" prefix.
	// Empty means the model the Model was opened for; the adapters also
	// accept that model's full "provider/model" name.
	Model    string
	Messages []*dialog.Message
	Tools    []*dialog.Function
	// Format is the JSON schema the reply must follow; nil for free text.
	Format json.RawMessage
	Params Params
	// Stream, when set, receives the reply's text and reasoning as they
	// arrive. An error from it cancels the call. With Tools declared, bedrock and custom
	// providers hand Stream the whole text at the end; the others stream.
	Stream func(ctx context.Context, c Chunk) error
}

// Digest is a hash of everything the request sends: model, messages, tool
// declarations, format and params. Equal requests have equal digests. Each
// message's own hash is memoised (messages are immutable), so a long agent
// loop hashes each message once.
func (r *Request) Digest() string {
	d := digesters.Get().(*digester)
	defer digesters.Put(d)
	d.h.Reset()
	d.b = d.b[:0]
	if len(r.Tools) == 0 && len(r.Format) == 0 && r.Params.IsZero() && plainString(r.Model) {
		// What the encoder below writes for such a request, without it.
		d.b = append(append(append(d.b, `{"model":"`...), r.Model...), "\",\"params\":{}}\n"...)
	} else {
		// Encoding our own types cannot fail; a failure would only weaken
		// the digest, never break a call.
		_ = json.NewEncoder(d.h).Encode(struct {
			Model  string             `json:"model"`
			Tools  []*dialog.Function `json:"tools,omitempty"`
			Format json.RawMessage    `json:"format,omitempty"`
			Params Params             `json:"params"`
		}{r.Model, r.Tools, r.Format, r.Params})
	}
	// Message hashes, in pieces of at most 4 KB.
	for ms := r.Messages; len(ms) > 0; {
		if len(d.b) >= 4<<10 {
			d.h.Write(d.b)
			d.b = d.b[:0]
		}
		n := min(len(ms), 128)
		from := len(d.b)
		d.b = slices.Grow(d.b, sha256.Size*n)[:from+sha256.Size*n]
		d.missed = messageDigests(ms[:n], d.b[from:], d.missed[:0])
		ms = ms[n:]
	}
	d.h.Write(d.b)
	sum := d.h.Sum(d.b[:0])
	d.b = hex.AppendEncode(append(sum, "sha256:"...), sum)
	return string(d.b[len(sum):])
}

// digester is a hash and a buffer for Digest, reused across calls.
type digester struct {
	h      hash.Hash
	b      []byte
	missed []int // messages of a piece whose hash is not memoised
}

var digesters = sync.Pool{New: func() any { return &digester{h: sha256.New()} }}

// plainString reports whether s is written in JSON as it is, between
// quotes, by every encoder.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// digestMemo memoises each live message's hash, by the message's
// address, so that a lookup is a map probe, not the making of a weak
// pointer. An entry's weak pointer tells whether its message still lives
// there, and the entry goes when the message is collected.
var digestMemo struct {
	sync.RWMutex
	m map[uintptr]memoDigest
}

// memoDigest is a memoised hash and the message it belongs to.
type memoDigest struct {
	msg weak.Pointer[dialog.Message]
	sum [sha256.Size]byte
}

// messageDigests writes the hash of each of ms to out, one after another,
// looking them all up under one read lock; missed is scratch space.
func messageDigests(ms []*dialog.Message, out []byte, missed []int) []int {
	digestMemo.RLock()
	for i, m := range ms {
		e, ok := digestMemo.m[uintptr(unsafe.Pointer(m))]
		if ok && e.msg.Value() == m {
			copy(out[i*sha256.Size:], e.sum[:])
		} else {
			missed = append(missed, i)
		}
	}
	digestMemo.RUnlock()
	for _, i := range missed {
		sum := memoise(ms[i])
		copy(out[i*sha256.Size:], sum[:])
	}
	return missed
}

// memoise hashes m and memoises its hash.
func memoise(m *dialog.Message) [sha256.Size]byte {
	b, _ := json.Marshal(m) // see Digest
	e := memoDigest{msg: weak.Make(m), sum: sha256.Sum256(b)}
	addr := uintptr(unsafe.Pointer(m))
	digestMemo.Lock()
	defer digestMemo.Unlock()
	if old, ok := digestMemo.m[addr]; !ok || old.msg != e.msg {
		if digestMemo.m == nil {
			digestMemo.m = map[uintptr]memoDigest{}
		}
		digestMemo.m[addr] = e
		runtime.AddCleanup(m, forgetDigest, memoEntry{addr, e.msg})
	}
	return e.sum
}

// forgetDigest drops the memoised digest of a collected message, unless a
// newer message at the same address has taken its entry.
func forgetDigest(e memoEntry) {
	digestMemo.Lock()
	defer digestMemo.Unlock()
	if digestMemo.m[e.addr].msg == e.msg {
		delete(digestMemo.m, e.addr)
	}
}

// memoEntry names an entry of digestMemo without holding its message.
type memoEntry struct {
	addr uintptr
	msg  weak.Pointer[dialog.Message]
}

// Response is a model's reply, carrying what it answered and what it cost.
type Response struct {
	// Message is the reply: role assistant (or tool_call when it only
	// requests tool calls), with its usage, cost and model filled in.
	Message dialog.Message
	// FinishReason is the provider's reason for stopping, if it gave one.
	FinishReason string
	Latency      time.Duration
}

// ErrorKind classifies a failed call.
type ErrorKind string

// The kinds of failure a provider call can have.
const (
	ErrRateLimit     ErrorKind = "rate_limit"
	ErrContextLength ErrorKind = "context_length"
	ErrAuth          ErrorKind = "auth"
	ErrTimeout       ErrorKind = "timeout"
	ErrServer        ErrorKind = "server"
	ErrNetwork       ErrorKind = "network" // no response: refused, reset, unknown host
	ErrBadRequest    ErrorKind = "bad_request"
	ErrCancelled     ErrorKind = "cancelled"
	ErrOther         ErrorKind = "other"
)

// Error is a classified provider failure.
type Error struct {
	Kind     ErrorKind
	Provider string
	Status   int           // HTTP status, 0 when there was none
	Retry    time.Duration // the provider's Retry-After, 0 when it gave none
	Err      error
}

// Error describes the failure: provider, kind, HTTP status and cause.
func (e *Error) Error() string {
	s := string(e.Kind)
	if e.Provider != "" {
		s = e.Provider + ": " + s
	}
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether trying again later may succeed: rate limits,
// timeouts, server errors and network failures.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case ErrRateLimit, ErrTimeout, ErrServer, ErrNetwork:
		return true
	}
	return false
}

// AsError returns err's *Error, or wraps err as ErrOther for provider p.
func AsError(p string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Kind: ErrCancelled, Provider: p, Err: err}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Kind: ErrTimeout, Provider: p, Err: err}
	}
	return &Error{Kind: ErrOther, Provider: p, Err: err}
}
