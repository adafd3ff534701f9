package tactics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
)

// stuckTool returns a tool that blocks, ignoring its context, until the
// test ends, and a channel that receives once each time it starts.
func stuckTool(t *testing.T) (*dialog.Function, <-chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	started := make(chan struct{}, 8)
	f, err := dialog.NewFunction("stuck", "never returns", func(context.Context, struct{}) (string, error) {
		started <- struct{}{}
		<-release
		return "too late", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f, started
}

// toolCallRecords returns the tool_call records of recs.
func toolCallRecords(recs []*logs.Record) []*logs.ToolCall {
	var out []*logs.ToolCall
	for _, r := range recs {
		if r.Kind == logs.KindToolCall {
			out = append(out, r.ToolCall)
		}
	}
	return out
}

// A tool that does not return within ToolTimeout, ignoring its context,
// is answered with an error saying so, which the model, the tool_call
// record and the session all hold, and the loop goes on without it; so
// does a CallTool hook that does not return.
func TestToolTimeout(t *testing.T) {
	const want = "tool stuck did not return within the tool timeout of 50ms (tool_timeout)"
	for _, hook := range []bool{false, true} {
		name := "function"
		if hook {
			name = "CallTool"
		}
		t.Run(name, func(t *testing.T) {
			stuck, started := stuckTool(t)
			p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(stuck))
			m := &script{replies: []any{toolCall("c1", "stuck", `{}`), text("done")}}
			a, run := newAgent(t, m, nil)
			a.Limits.ToolTimeout = 50 * time.Millisecond
			if hook {
				a.CallTool = func(ctx context.Context, _ string, f *dialog.Function, fc dialog.FunctionCall) dialog.FunctionCall {
					return f.Call(context.Background(), fc) // loses ctx: only the timeout ends the wait
				}
			}
			a.ReceivePrompt(p, nil)
			start := time.Now()
			reply, s, err := a.Respond(t.Context())
			if err != nil || reply.Content != "done" {
				t.Fatalf("reply %v, err %v", reply, err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("Respond took %v with a tool timeout of 50ms", took)
			}
			<-started
			sent := m.reqs[1].Messages[len(m.reqs[1].Messages)-1]
			if sent.Role != dialog.RoleTool || sent.Content != "Error: "+want {
				t.Fatalf("the model got %s %q, want the timeout", sent.Role, sent.Content)
			}
			_, recs := run.forest(t)
			calls := toolCallRecords(recs)
			if len(calls) != 1 || calls[0].Error != want || calls[0].Result != sent.Content {
				t.Fatalf("tool_call records %+v", calls)
			}
			if len(s.ToolCalls) != 1 || s.ToolCalls[0].Error != want {
				t.Fatalf("session tool calls %+v", s.ToolCalls)
			}
		})
	}
}

// A tool that honours its context and fails when it ends is answered
// with the timeout too, which says why; one that returns in time is
// answered with its result.
func TestToolTimeoutHonoured(t *testing.T) {
	slow, _ := dialog.NewFunction("slow", "waits", func(ctx context.Context, in struct {
		Wait string `json:"wait"`
	}) (string, error) {
		d, _ := time.ParseDuration(in.Wait)
		select {
		case <-time.After(d):
			return "waited " + in.Wait, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(slow))
	m := &script{replies: []any{toolCall("c1", "slow", `{"wait": "1h"}`), toolCall("c2", "slow", `{"wait": "1ms"}`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.Limits.ToolTimeout = 100 * time.Millisecond
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, recs := run.forest(t)
	calls := toolCallRecords(recs)
	if len(calls) != 2 || calls[0].Error != "tool slow did not return within the tool timeout of 100ms (tool_timeout)" ||
		calls[1].Error != "" || !strings.HasSuffix(calls[1].Result, "waited 1ms") {
		t.Fatalf("tool_call records %+v", calls)
	}
}

// A Respond whose context is cancelled while a tool that ignores it runs
// returns at once with the context's error; the call is answered with that
// error in the log, as a tool that honours its context would answer it,
// and no model call follows.
func TestToolCancelled(t *testing.T) {
	stuck, started := stuckTool(t)
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(stuck))
	m := &script{replies: []any{toolCall("c1", "stuck", `{}`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.Limits.ToolTimeout = -1 // unbounded: only the cancellation ends the wait
	a.ReceivePrompt(p, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var cancelled time.Time
	go func() {
		<-started
		cancelled = time.Now()
		cancel()
	}()
	_, s, err := a.Respond(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if took := time.Since(cancelled); took > time.Second {
		t.Fatalf("Respond returned %v after the cancellation", took)
	}
	if len(m.reqs) != 1 || s.State != "error" {
		t.Fatalf("%d model calls, state %s", len(m.reqs), s.State)
	}
	if err := run.w.Finish(logs.RunEnd{Status: logs.StatusCancelled, Error: err.Error()}); err != nil {
		t.Fatal(err)
	}
	forest, recs := run.forest(t)
	calls := toolCallRecords(recs)
	if len(calls) != 1 || calls[0].Error != context.Canceled.Error() {
		t.Fatalf("tool_call records %+v", calls)
	}
	if last := recs[len(recs)-1]; last.Kind != logs.KindRunEnd || last.RunEnd.Status != logs.StatusCancelled {
		t.Fatalf("the log ends with %s", last.Kind)
	}
	if forest == nil || len(forest.Roots()) != 1 {
		t.Fatalf("forest %v", forest)
	}
}

// A CallTool hook that panics answers the call with the panic, on the
// goroutine the call ran on, instead of taking the process down.
func TestCallToolPanics(t *testing.T) {
	stuck, _ := stuckTool(t)
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(stuck))
	m := &script{replies: []any{toolCall("c1", "stuck", `{}`), text("done")}}
	a, _ := newAgent(t, m, nil)
	a.CallTool = func(context.Context, string, *dialog.Function, dialog.FunctionCall) dialog.FunctionCall {
		panic("the hook broke")
	}
	a.ReceivePrompt(p, nil)
	_, s, err := a.Respond(t.Context())
	if err != nil || len(s.ToolCalls) != 1 || s.ToolCalls[0].Error != "calling tool stuck panicked: the hook broke" {
		t.Fatalf("err %v, tool calls %+v", err, s.ToolCalls)
	}
}

// tool_timeout, set globally or per agent, is the agents' ToolTimeout;
// unset, the default of ten minutes; 0, none, is -1 there; a value that is not a duration is
// an error at its place.
func TestToolTimeoutConfig(t *testing.T) {
	la, lb := limitsOf(t, "tool_timeout: 30s", "tool_timeout: 0")
	if a, b := la.ToolTimeout, lb.ToolTimeout; a != 30*time.Second || b != -1 {
		t.Errorf("ToolTimeout a %v, b %v; want 30s and -1 (none)", a, b)
	}
	if DefaultLimits().ToolTimeout != 10*time.Minute {
		t.Errorf("default %v", DefaultLimits().ToolTimeout)
	}
	_, err := config.Parse("t.yaml", []byte("tactic_type: chat\nglobal: {model_name: mock/demo, tool_timeout: forever}\nagent_configs: [{name: a, system_prompt: x}]\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `global.tool_timeout must be a duration such as 90s or 10m (0 for none), not the string "forever"`) {
		t.Errorf("err %v", err)
	}
}
