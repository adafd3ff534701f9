package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
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
