package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// callState carries one model call's wire edits down to the HTTP transport
// and brings back what the transport saw: langchaingo turns HTTP failures
// into plain strings and drops the headers, so the adapter learns the
// status and Retry-After from here, and why a request got no response at
// all (langchaingo's openai client says only "failed to reach API server").
type callState struct {
	edits []edit // applied to the JSON request body
	// thinking is the reasoning going back to Anthropic, inserted into
	// the request body's messages after the edits.
	thinking []thinkingBack
	// format is the JSON schema the request asks the reply to follow:
	// an OpenAI model may answer it with a refusal; the mock answers it.
	format json.RawMessage
	// stream is set when the request asks for a stream: its reply is one,
	// whatever its Content-Type says (see tapReply).
	stream bool

	mu     sync.Mutex
	status int           // the last response's HTTP status
	retry  time.Duration // the last response's Retry-After
	failed error         // why the last request got no response, naming it
	cut    error         // why the last response's body could not be read whole
	body   bodyTap       // the last response's body, as the client reads it
	reply  openaiTap     // an OpenAI reply's body (see tapReply)
	wire   wireReply
	// tapped is set when the transport reads a stream's text and
	// reasoning itself (OpenAI's sseTap, Gemini's usageTap, ollamaTap):
	// its pieces then wait in queued, from queued[next], for the
	// streaming function, in the order they came. langchaingo hands that
	// function only the calls of an OpenAI delta that carries text and
	// tool calls, and no client there hands it reasoning.
	tapped bool
	queued []Chunk
	next   int
	// gap is set when a reasoning block starts after one with text: the
	// next piece of reasoning streamed starts with a blank line, as
	// dialog.Message.ReasoningText joins the blocks (see blockStart).
	gap bool
}

// bodyTap notes a response body that ends in an error rather than at its
// end (a connection reset, a Content-Length not reached): the clients
// report what that does to their decoding ("unexpected end of JSON
// input"), which says nothing of the network. It lives in the callState,
// so wrapping a body allocates nothing.
type bodyTap struct {
	io.ReadCloser
	st *callState
}

func (b *bodyTap) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.st.mu.Lock()
		if b.st.cut == nil {
			b.st.cut = err
		}
		b.st.mu.Unlock()
	}
	return n, err
}

// unfinished notes that the last response's body ended, at its end of
// file, before the last event of its stream.
func (st *callState) unfinished(err error) {
	st.mu.Lock()
	if st.cut == nil {
		st.cut = err
	}
	st.mu.Unlock()
}

// cutShort is why the last response's body ended early; nil if it did not.
func (st *callState) cutShort() error {
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cut
}

type callStateKey struct{}

func withCallState(ctx context.Context, st *callState) context.Context {
	return context.WithValue(ctx, callStateKey{}, st)
}

func callStateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(callStateKey{}).(*callState)
	return st
}

// record notes a response's status and Retry-After.
func (st *callState) record(status int, h http.Header) {
	retry, _ := retryAfter(h, time.Now())
	st.mu.Lock()
	st.status, st.retry, st.failed, st.cut = status, retry, nil, nil
	st.mu.Unlock()
}

// fail notes that req got no response because of err. The error names
// the request by method and URL, without the URL's credentials or query,
// which may hold a key.
func (st *callState) fail(req *http.Request, err error) {
	u := *req.URL
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	err = fmt.Errorf("%s %s: %w", req.Method, u.String(), err)
	st.mu.Lock()
	st.status, st.retry, st.failed = 0, 0, err
	st.mu.Unlock()
}

// result is what the last request of the call came to: a response's
// status and Retry-After, or the reason it got none.
func (st *callState) result() (status int, retry time.Duration, failed error) {
	if st == nil {
		return 0, 0, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.status, st.retry, st.failed
}

// transport is the http.RoundTripper under every client Open builds. For a
// request made inside an adapter call it applies the call's body edits and
// records the response's status and Retry-After; other requests pass
// through unchanged. It never retries.
type transport struct {
	base http.RoundTripper
	// header is set on every request that lacks it (googleai's API key,
	// which the Google client drops when given an HTTP client).
	header http.Header
	// fail503 turns a 503 response into a transport error, so that a
	// client with built-in retries on 503 (googleai's gax) returns at once;
	// the status is recorded all the same.
	fail503 bool
	// signed is for the AWS SDK's requests, whose body is signed: it is
	// edited before signing (see bedrockEdits), never here, and its
	// WriteTo is hidden from net/http. The SDK closes the body when the
	// response arrives; its WriteTo then returns io.EOF, which net/http's
	// check for bytes past Content-Length takes for a failed write, and
	// it closes the connection under a streamed response.
	signed bool
	// geminiUsage reads usageMetadata from successful response bodies, as
	// Google's client keeps only a stream's first (and drops
	// thoughtsTokenCount).
	geminiUsage bool
	// replies reads what langchaingo loses of a successful reply of
	// this wire style (wireOpenAI, wireAnthropic): see tapReply.
	replies wireStyle
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	st := callStateFrom(req.Context())
	copied := false
	if st != nil && !t.signed && (len(st.edits) > 0 || len(st.thinking) > 0) && req.Body != nil && req.Body != http.NoBody {
		body, err := editBody(req, st.edits)
		if err != nil {
			return nil, err
		}
		if len(st.thinking) > 0 {
			if body, err = insertThinking(body, st.thinking); err != nil {
				return nil, fmt.Errorf("provider: sending the thinking blocks back: %w", err)
			}
		}
		// A shallow copy, as Request.WithContext makes: the caller's
		// request is not changed. The body stays a *bytes.Reader, which
		// net/http sends with the headers in one write.
		r := *req
		req, copied = &r, true
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.Body, _ = req.GetBody()
		req.ContentLength = int64(len(body))
	}
	if t.signed && req.Body != nil && req.Body != http.NoBody {
		r := *req
		r.Body = struct{ io.ReadCloser }{req.Body}
		req, copied = &r, true
	}
	if len(t.header) > 0 {
		h := req.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		for k, vs := range t.header {
			if h.Get(k) == "" {
				h[k] = vs
			}
		}
		if !copied {
			r := *req
			req = &r
		}
		req.Header = h
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		if st != nil {
			st.fail(req, err)
		}
		return nil, err
	}
	if st != nil {
		st.record(resp.StatusCode, resp.Header)
		st.body = bodyTap{ReadCloser: resp.Body, st: st}
		resp.Body = &st.body
		if t.geminiUsage && resp.StatusCode == http.StatusOK {
			resp.Body = &usageTap{ReadCloser: resp.Body, st: st}
		}
		if t.signed && resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Type") == "application/vnd.amazon.eventstream" {
			resp.Body = newBedrockStreamTap(resp.Body, st)
		}
		if t.replies != wireNone && resp.StatusCode == http.StatusOK {
			if err := tapReply(t.replies, resp, st); err != nil {
				return nil, err
			}
		}
	}
	if t.fail503 && resp.StatusCode == http.StatusServiceUnavailable {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, fmt.Errorf("HTTP Error 503: %s", bytes.TrimSpace(msg))
	}
	return resp, nil
}

// editBody reads and closes req's body and returns it with edits applied.
// A client's body is a fresh encoding of its request, sent once, so it is
// edited where it lies rather than copied (see editInPlace): the client's
// buffer then holds the edited request, and so does any resend of it.
func editBody(req *http.Request, edits []edit) ([]byte, error) {
	doc, err := bodyBytes(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("provider: reading the request body: %w", err)
	}
	body, err := editInPlace(doc, edits)
	if err != nil {
		return nil, fmt.Errorf("provider: editing the request body: %w", err)
	}
	return body, nil
}

// bodyBytes returns what body holds. A body that can write itself out (the
// *bytes.Reader every client sends, wrapped in io.NopCloser) hands over its
// own bytes, which are not copied.
func bodyBytes(body io.Reader) ([]byte, error) {
	wt, ok := body.(io.WriterTo)
	if !ok {
		return io.ReadAll(body)
	}
	var k keeper
	_, err := wt.WriteTo(&k)
	return k.b, err
}

// keeper keeps the bytes written to it: the slice of the first Write
// itself, which io.Writer asks implementations not to do, so that a
// request body is not copied (see editBody).
type keeper struct{ b []byte }

func (k *keeper) Write(p []byte) (int, error) {
	if k.b == nil {
		k.b = p
	} else {
		k.b = append(k.b[:len(k.b):len(k.b)], p...)
	}
	return len(p), nil
}

// wrapClient returns a copy of c (or of a zero client) whose transport is
// t over c's transport.
func wrapClient(c *http.Client, t *transport) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	t.base = out.Transport
	if t.base == nil {
		t.base = http.DefaultTransport
	}
	out.Transport = t
	return &out
}

// retryAfter reads how long a response asks the client to wait: the
// retry-after-ms header (milliseconds), else Retry-After in seconds or as
// an HTTP date. A date in the past is zero.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms <= 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	return parseRetryAfter(h.Get("Retry-After"), now)
}

// parseRetryAfter parses a Retry-After value: seconds (possibly
// fractional) or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if !(s >= 0 && s <= 1e9) { // also rejects NaN
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
