package tactics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// A negative BackoffMax means no cap, as for any Limits field: the waits
// keep doubling, within [d/2, d], and a huge one does not overflow.
func TestBackoffWithoutMax(t *testing.T) {
	l := Limits{BackoffBase: time.Second, BackoffMax: -1}.Resolved()
	for n, want := range map[int]time.Duration{1: time.Second, 5: 16 * time.Second, 8: 128 * time.Second} {
		if d := l.backoff(n, 0); d < want/2 || d > want {
			t.Errorf("retry %d waits %v, want within [%v, %v]", n, d, want/2, want)
		}
	}
	huge := Limits{BackoffBase: time.Hour, BackoffMax: -1}.Resolved()
	if d := huge.backoff(40, 0); d < time.Hour<<20 {
		t.Errorf("retry 40 with an hour's base waits %v: overflowed", d)
	}
	// A cap below the base is the base, as before.
	if d := (Limits{BackoffBase: time.Second, BackoffMax: time.Millisecond}).backoff(5, 0); d < time.Second/2 || d > time.Second {
		t.Errorf("BackoffMax below BackoffBase: %v", d)
	}
}

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

// An attempt that gets no reply within the call timeout fails as a
// timeout and is retried; here through the real OpenAI client against a
// server that stalls once, with the timeout and retries from a config.
func TestCallTimeoutRetries(t *testing.T) {
	srv := providertest.NewOpenAIServer(t,
		providertest.Reply{Text: "too late", Delay: 10 * time.Second},
		providertest.Reply{Text: "in time"})
	cfg, err := config.Parse("t.yaml", []byte(`
tactic_type: chat
global: {model_name: openai/gpt-4o-mini, base_url: `+srv.BaseURL()+`, call_timeout: 200ms, max_retries: 1}
agent_configs: [{name: solver, system_prompt: Be brief.}]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	makers, err := Agents(t.Context(), cfg, RunOptions{Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	a := makers["solver"]()
	if a.Limits.CallTimeout != 200*time.Millisecond || a.Limits.MaxRetries != 1 {
		t.Fatalf("limits from the config: %+v", a.Limits)
	}
	run := &testRun{}
	if run.w, err = logs.NewWriter(&run.buf, logs.RunStart{}, logs.Options{}); err != nil {
		t.Fatal(err)
	}
	a.Log = run.w
	var notices []Retry
	a.Retrying = func(r Retry) { notices = append(notices, r) }
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Receive("hi"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	reply, s, err := a.Respond(t.Context())
	if err != nil || reply.Content != "in time" || len(s.Calls) != 2 {
		t.Fatalf("reply %v, err %v, %d calls", reply, err, len(s.Calls))
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the stalled attempt was not cut at the call timeout: %v", took)
	}
	if len(notices) != 1 || notices[0].Err.Kind != provider.ErrTimeout ||
		!strings.Contains(notices[0].Err.Error(), "no reply within the call timeout of 200ms (call_timeout)") {
		t.Fatalf("retry notices: %+v", notices)
	}
	_, recs := run.forest(t)
	var errs []*logs.CallError
	for _, r := range recs {
		if r.Kind == logs.KindModelCall {
			errs = append(errs, r.ModelCall.Error)
		}
	}
	if len(errs) != 2 || errs[0] == nil || errs[0].Type != "timeout" || errs[1] != nil {
		t.Fatalf("model_call errors: %+v", errs)
	}

	// With no retries left, the timeout is the call's error.
	srv.Enqueue(providertest.Reply{Text: "too late", Delay: 10 * time.Second})
	a.Limits.MaxRetries = -1
	if err := a.Receive("again"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Respond(t.Context()); provider.AsError("", err).Kind != provider.ErrTimeout {
		t.Fatalf("err = %v, want a timeout", err)
	}
	// The caller's own deadline is not the call timeout's.
	srv.Enqueue(providertest.Reply{Text: "too late", Delay: 10 * time.Second})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := a.Respond(ctx); err == nil || strings.Contains(err.Error(), "call_timeout") {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
}

func TestCallTimeoutConfig(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"call_timeout: 90s", ""},
		{"call_timeout: 120", ""}, // seconds
		{"call_timeout: 0", ""},
		{"call_timeout: soon", "global.call_timeout must be a duration such as 90s or 10m (0 for none), not the string \"soon\""},
		{"call_timeout: -1s", "global.call_timeout must be a duration"},
		{"max_retries: -1", "global.max_retries must be a non-negative integer"},
		{"max_retry_wait: 30s", ""},
		{"max_retry_wait: later", "global.max_retry_wait must be a duration"},
	} {
		_, err := config.Parse("t.yaml", []byte("tactic_type: chat\nglobal: {model_name: mock/demo, "+tc.yaml+"}\nagent_configs: [{name: a}]\n"), nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.yaml, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
