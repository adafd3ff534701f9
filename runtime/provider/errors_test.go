package provider

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// awsErr stands for the AWS SDK's response errors.
type awsErr struct{ code int }

func (e awsErr) Error() string       { return "operation error Bedrock Runtime: InvokeModel" }
func (e awsErr) HTTPStatusCode() int { return e.code }

func TestClassify(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		err    error
		kind   ErrorKind
		status int
		retry  time.Duration
	}{
		{errors.New("API returned unexpected status code: 429: Rate limit reached. Please try again in 1.5s."), ErrRateLimit, 429, 1500 * time.Millisecond},
		{errors.New(`(HTTP Error 422) {"detail":"extra fields"}`), ErrBadRequest, 422, 0},
		{errors.New("503 Service Unavailable: model loading"), ErrServer, 503, 0},
		{errors.New("400 Bad Request: prompt is too long"), ErrContextLength, 400, 0},
		{errors.New("API returned unexpected status code: 408: slow"), ErrTimeout, 408, 0},
		{fmt.Errorf("wrapped: %w", awsErr{403}), ErrAuth, 403, 0},
		{errors.New("request timeout: network operation exceeded timeout"), ErrTimeout, 0, 0},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), ErrTimeout, 0, 0},
		{fmt.Errorf("x: %w", context.Canceled), ErrCancelled, 0, 0},
		{errors.New("this model's maximum context length is 8192 tokens"), ErrContextLength, 0, 0},
		{errors.New("something odd"), ErrOther, 0, 0},
	} {
		e := classify(ctx, "p", tc.err, nil, nil)
		if e.Kind != tc.kind || e.Status != tc.status || e.Retry != tc.retry || !errors.Is(e, tc.err) {
			t.Errorf("classify(%q) = %s %d %v, want %s %d %v", tc.err, e.Kind, e.Status, e.Retry, tc.kind, tc.status, tc.retry)
		}
	}
	// What the transport recorded wins over the text.
	st := &callState{}
	st.record(429, http.Header{"Retry-After": {"7"}})
	if e := classify(ctx, "p", errors.New("boom"), st, nil); e.Kind != ErrRateLimit || e.Retry != 7*time.Second {
		t.Errorf("recorded 429: %v %v", e.Kind, e.Retry)
	}
	// An expired context wins over everything.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if e := classify(cctx, "p", errors.New("API returned unexpected status code: 500"), st, nil); e.Kind != ErrCancelled {
		t.Errorf("cancelled ctx: %v", e.Kind)
	}
	// An *Error passes through.
	pe := &Error{Kind: ErrAuth, Provider: "q"}
	if e := classify(ctx, "p", fmt.Errorf("w: %w", pe), nil, nil); e != pe {
		t.Errorf("*Error not passed through: %v", e)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second, true},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, true},
		{http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{"Retry-After": {"NaN"}}, 0, false},
		{http.Header{"Retry-After": {"-3"}}, 0, false},
		{http.Header{}, 0, false},
	} {
		got, ok := retryAfter(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %v, %v; want %v, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

// closedAddr is an address on 127.0.0.1 where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Every provider's client, pointed at an address where nothing listens,
// fails with a retryable network error that names the request and says
// what to check, whatever its client says (langchaingo's openai client
// says only "failed to reach API server").
func TestUnreachableServer(t *testing.T) {
	addr := closedAddr(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	// A custom CA bundle, which the AWS SDK adds to its own client only.
	tls := httptest.NewTLSServer(http.NotFoundHandler())
	tls.Close()
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	pemBlock := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tls.Certificate().Raw})
	if err := os.WriteFile(bundle, pemBlock, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
	for _, tc := range []struct{ model, base string }{
		{"openai/gpt-4o-mini", "http://" + addr + "/v1"},
		{"anthropic/claude-sonnet-4-5", "http://" + addr},
		{"googleai/gemini-2.0-flash", "http://" + addr},
		{"ollama/llama3.1", "http://" + addr},
		{"mistral/mistral-small-latest", "http://" + addr + "/v1"},
		{"bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", "http://" + addr},
	} {
		t.Run(tc.model, func(t *testing.T) {
			m, err := Open(context.Background(), tc.model, Config{BaseURL: tc.base, APIKey: "sk-secret-key"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			pe := generateErr(t, ctx, m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
			msg := pe.Error()
			if pe.Kind != ErrNetwork || !pe.Retryable() || pe.Status != 0 {
				t.Fatalf("kind %s, status %d (%v), want a retryable network error", pe.Kind, pe.Status, pe)
			}
			for _, want := range []string{"POST http://" + addr + "/", "connection refused", "nothing is listening there"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if strings.Contains(msg, "sk-secret-key") || strings.Contains(msg, "?") {
				t.Errorf("error %q shows the URL's query or the key", msg)
			}
		})
	}
}

func TestClassifyTransportFailure(t *testing.T) {
	ctx := context.Background()
	req, _ := http.NewRequest(http.MethodPost, "https://user:pw@api.example.com/v1/models/x:generate?key=SECRET", nil)
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	st := &callState{}
	st.fail(req, refused)
	e := classify(ctx, "p", errors.New("network error: failed to reach API server"), st, nil)
	if e.Kind != ErrNetwork || !errors.Is(e, syscall.ECONNREFUSED) {
		t.Fatalf("refused: %s %v", e.Kind, e)
	}
	if got, want := e.Error(), "p: network: POST https://api.example.com/v1/models/x:generate: dial tcp: connect: connection refused (nothing is listening there: start the server, or fix the base URL)"; got != want {
		t.Errorf("refused:\n got %s\nwant %s", got, want)
	}
	st.fail(req, &net.DNSError{Err: "no such host", Name: "api.example.com", IsNotFound: true})
	if e := classify(ctx, "p", errors.New("x"), st, nil); e.Kind != ErrNetwork || !strings.HasSuffix(e.Error(), "(no such host: fix the base URL)") {
		t.Errorf("unknown host: %s %v", e.Kind, e)
	}
	st.fail(req, &net.DNSError{Err: "i/o timeout", Name: "api.example.com", IsTimeout: true})
	if e := classify(ctx, "p", errors.New("x"), st, nil); e.Kind != ErrTimeout || !strings.Contains(e.Error(), "POST https://api.example.com/") {
		t.Errorf("timeout: %s %v", e.Kind, e)
	}
	// A response after the failure (a client's own retry) is what counts.
	st.record(500, nil)
	if e := classify(ctx, "p", errors.New("x"), st, nil); e.Kind != ErrServer || e.Status != 500 {
		t.Errorf("failure then 500: %s %v", e.Kind, e)
	}
}

// An error of no provider (a replay's) has no empty "provider:" part.
func TestErrorTextWithoutProvider(t *testing.T) {
	e := &Error{Kind: ErrCancelled, Err: errors.New("replay diverged")}
	if got := e.Error(); got != "cancelled: replay diverged" {
		t.Errorf("Error() = %q", got)
	}
	e.Provider, e.Status = "openai", 499
	if got := e.Error(); got != "openai: cancelled (HTTP 499): replay diverged" {
		t.Errorf("Error() = %q", got)
	}
}
