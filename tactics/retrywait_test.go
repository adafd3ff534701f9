package tactics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/runtime/provider"
)

// A Retry-After beyond MaxRetryWait (a quota that resets in hours) fails
// the call at once with the rate limit, and so does a wait that would
// outlast the context's deadline; a wait within both is taken.
func TestMaxRetryWait(t *testing.T) {
	rate := func(after time.Duration) *provider.Error {
		return &provider.Error{Kind: provider.ErrRateLimit, Provider: "mock", Status: 429, Retry: after}
	}
	for _, c := range []struct {
		name     string
		after    time.Duration
		deadline time.Duration // 0: none
		want     string        // "" when the retry is made
	}{
		{"hours", 3 * time.Hour, 0, "not retried: the provider asks to wait 3h0m0s, more than max_retry_wait (5m0s)"},
		{"past the deadline", 30 * time.Second, 10 * time.Second, "not retried: the wait of 30s before the retry would outlast the context's deadline"},
		{"within both", 20 * time.Millisecond, 10 * time.Second, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &script{replies: []any{rate(c.after), text("ok")}}
			a, _ := newAgent(t, m, nil)
			a.Limits.MaxRetryWait = DefaultLimits().MaxRetryWait
			a.Receive("hi")
			ctx := t.Context()
			if c.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.deadline)
				defer cancel()
			}
			start := time.Now()
			reply, _, err := a.Respond(ctx)
			if c.want == "" {
				if err != nil || reply.Content != "ok" || len(m.reqs) != 2 {
					t.Fatalf("reply %v, err %v, %d requests: want the retry made", reply, err, len(m.reqs))
				}
				return
			}
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != provider.ErrRateLimit || !strings.Contains(err.Error(), c.want) || len(m.reqs) != 1 {
				t.Fatalf("err %v, %d requests: want the rate limit at once, %q", err, len(m.reqs), c.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("failed after %v, not at once", d)
			}
		})
	}
}

// max_retry_wait, set globally or per agent, is the agents' MaxRetryWait;
// unset, the default; 0, none, is -1 there.
func TestMaxRetryWaitConfig(t *testing.T) {
	la, lb := limitsOf(t, "max_retry_wait: 30s", "max_retry_wait: 0")
	if a, b := la.MaxRetryWait, lb.MaxRetryWait; a != 30*time.Second || b != -1 {
		t.Errorf("MaxRetryWait a %v, b %v; want 30s and -1 (none)", a, b)
	}
	if DefaultLimits().MaxRetryWait != 5*time.Minute {
		t.Errorf("default %v", DefaultLimits().MaxRetryWait)
	}
}
