package tactics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
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

// A call the tool timeout ended is not remembered: the model's identical
// call runs the tool again (a hang may be transient), and what that one
// returns is what a later repeat quotes; also when max_tool_output is
// smaller than the timeout's error, which is not cut.
func TestTimedOutCallRunsAgain(t *testing.T) {
	for _, max := range []int{0, 20} {
		t.Run(fmt.Sprint("max_tool_output=", max), func(t *testing.T) { timedOutRunsAgain(t, max) })
	}
}

func timedOutRunsAgain(t *testing.T, maxOutput int) {
	var runs atomic.Int32 // the timed-out call's goroutine is left running
	flaky, err := dialog.NewFunction("flaky", "Slow the first time.", func(ctx context.Context, _ struct{}) (string, error) {
		if runs.Add(1) == 1 {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "fine", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(flaky))
	m := &script{replies: []any{toolCall("c1", "flaky", `{}`), toolCall("c2", "flaky", `{}`), toolCall("c3", "flaky", `{}`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.Limits.ToolTimeout = 50 * time.Millisecond
	a.Limits.MaxToolOutput = maxOutput
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, recs := run.forest(t)
	var got []string
	for _, c := range toolCallRecords(recs) {
		got = append(got, fmt.Sprintf("%s repeated=%v %s", c.CallID, c.Repeated, strings.ReplaceAll(c.Result, "\n", " ")))
	}
	// The second call's result, as the model got it.
	fine := strings.ReplaceAll(cutOutput("Return of calling function flaky with arguments {}:\nfine", maxOutput), "\n", " ")
	want := []string{
		"c1 repeated=false Error: tool flaky did not return within the tool timeout of 50ms (tool_timeout)",
		"c2 repeated=false " + fine,
		"c3 repeated=true You already called flaky with these arguments. The result was: " + fine,
	}
	if runs.Load() != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the tool ran %d times (want 2); tool calls:\n%q\nwant\n%q", runs.Load(), got, want)
	}
}

// inFlight is a tool that counts the calls running at once, each waiting
// until want of them are running (or a second has passed), so that calls
// run together are seen together.
type inFlight struct {
	want      int
	now, peak atomic.Int32
	ran       atomic.Int32
	mu        sync.Mutex
	arrived   chan struct{}
}

func newInFlight(want int) *inFlight { return &inFlight{want: want, arrived: make(chan struct{})} }

func (f *inFlight) fn(t *testing.T) *dialog.Function {
	fn, err := dialog.NewFunction("fetch", "fetches", func(ctx context.Context, in numIn) (string, error) {
		f.ran.Add(1)
		n := f.now.Add(1)
		defer f.now.Add(-1)
		for {
			p := f.peak.Load()
			if n <= p || f.peak.CompareAndSwap(p, n) {
				break
			}
		}
		f.mu.Lock()
		if int(n) >= f.want {
			select {
			case <-f.arrived:
			default:
				close(f.arrived)
			}
		}
		f.mu.Unlock()
		select {
		case <-f.arrived:
		case <-time.After(time.Second):
		}
		return fmt.Sprintf("page %d", in.N), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

// With tool_concurrency, a reply's calls run together, at most that many
// at once; their results go back in the model's order, and a call
// identical to an earlier one of the reply quotes it without running.
// Without it, they run one after another.
func TestToolConcurrency(t *testing.T) {
	for _, tc := range []struct {
		limit, peak int
	}{{0, 1}, {1, 1}, {2, 2}, {8, 4}} {
		f := newInFlight(min(max(tc.limit, 1), 4))
		p := dialog.MustPrompt("t", "Go.", dialog.WithFunctions(f.fn(t)))
		m := &script{replies: []any{
			callsReply(fcall("c1", "fetch", `{"n":1}`), fcall("c2", "fetch", `{"n":2}`), fcall("c3", "fetch", `{"n":1}`),
				fcall("c4", "fetch", `{"n":3}`), fcall("c5", "fetch", `{"n":4}`)),
			text("done"),
		}}
		a, run := newAgent(t, m, nil)
		a.Limits.ToolConcurrency = tc.limit
		a.ReceivePrompt(p, nil)
		_, s, err := a.Respond(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := int(f.peak.Load()); got != tc.peak || f.ran.Load() != 4 {
			t.Errorf("limit %d: %d calls ran at once (want %d), %d ran (want 4: c3 repeats c1)", tc.limit, got, tc.peak, f.ran.Load())
		}
		var got []string
		for _, c := range s.ToolCalls {
			page := c.Result[strings.LastIndex(c.Result, "page"):]
			if strings.HasPrefix(c.Result, "You already called") {
				page = "quoted " + page
			}
			got = append(got, c.ID+"="+page)
		}
		if want := "[c1=page 1 c2=page 2 c3=quoted page 1 c4=page 3 c5=page 4]"; fmt.Sprint(got) != want {
			t.Errorf("limit %d: results %q, want %s", tc.limit, got, want)
		}
		_, recs := run.forest(t)
		var ids []string
		for _, c := range toolCallRecords(recs) {
			ids = append(ids, fmt.Sprintf("%s:%v", c.CallID, c.Repeated))
		}
		if fmt.Sprint(ids) != "[c1:false c2:false c3:true c4:false c5:false]" {
			t.Errorf("limit %d: tool_call records %v", tc.limit, ids)
		}
	}
}

// tool_concurrency, set globally or per agent, is the agents'
// ToolConcurrency; unset, 1 (one call after another).
func TestToolConcurrencyConfig(t *testing.T) {
	la, lb := limitsOf(t, "tool_concurrency: 4", "tool_concurrency: 1")
	if a, b := la.ToolConcurrency, lb.ToolConcurrency; a != 4 || b != 1 || DefaultLimits().ToolConcurrency != 1 {
		t.Errorf("ToolConcurrency a %d, b %d, default %d; want 4, 1 and 1", a, b, DefaultLimits().ToolConcurrency)
	}
}

// A call run at once with others is logged with the time its tool took,
// not with the time its result waited for the calls before it to be
// answered: a quick call after a slow one has a small latency_ms.
func TestToolConcurrencyLatency(t *testing.T) {
	quickDone := make(chan struct{})
	tool, err := dialog.NewFunction("work", "works", func(ctx context.Context, in struct {
		Slow bool `json:"slow"`
	}) (string, error) {
		if !in.Slow {
			close(quickDone)
			return "quick", nil
		}
		<-quickDone // the quick call has returned: it waits only to be answered
		time.Sleep(500 * time.Millisecond)
		return "slow", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(tool))
	m := &script{replies: []any{callsReply(fcall("c1", "work", `{"slow":true}`), fcall("c2", "work", `{"slow":false}`)), text("done")}}
	a, run := newAgent(t, m, nil)
	a.Limits.ToolConcurrency = 2
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, recs := run.forest(t)
	calls := toolCallRecords(recs)
	if len(calls) != 2 || calls[0].CallID != "c1" || calls[1].CallID != "c2" {
		t.Fatalf("tool_call records %+v", calls)
	}
	if slow, quick := calls[0].LatencyMS, calls[1].LatencyMS; slow < 500 || quick >= 250 {
		t.Errorf("latency_ms: slow call %.1f (want at least 500), quick call %.1f (want under 250: its tool returned at once)", slow, quick)
	}
}

func TestCutOutput(t *testing.T) {
	long := strings.Repeat("ab", 10) + "é" + strings.Repeat("z", 20) // é at bytes 20-21; 42 bytes
	for _, c := range []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"no cap", long, 0, long},
		{"short", "abc", 3, "abc"},
		{"at a rune start", long, 20, long[:20] + "\n[output cut to the first 20 of 42 bytes]"},
		{"inside a rune", long, 21, long[:20] + "\n[output cut to the first 20 of 42 bytes]"},
		{"after a rune", long, 22, long[:22] + "\n[output cut to the first 22 of 42 bytes]"},
		{"already cut", "x\n[output cut to the first 1 of 99 bytes]", 5, "x\n[output cut to the first 1 of 99 bytes]"},
		{"a line like the cut's, but not its", "x\n[output cut to the first 3 of 99 bytes]", 5, "x\n[ou\n[output cut to the first 5 of 41 bytes]"},
	} {
		got := cutOutput(c.in, c.max)
		if got != c.want {
			t.Errorf("%s: cutOutput(%q, %d) = %q, want %q", c.name, c.in, c.max, got, c.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: %q is not UTF-8", c.name, got)
		}
		if again := cutOutput(got, c.max); again != got {
			t.Errorf("%s: cut again, %q became %q", c.name, got, again)
		}
	}
}

// A tool's result longer than MaxToolOutput is cut, once, before anything
// holds it: the model, the tool message, the tool_call record and the
// session all get the same cut text; an error is cut alike, and a repeat
// of the call quotes the cut result.
func TestMaxToolOutput(t *testing.T) {
	big, _ := dialog.NewFunction("big", "talks a lot", func(_ context.Context, in struct {
		Fail bool `json:"fail,omitempty"`
	}) (string, error) {
		text := strings.Repeat("é", 3000) // 6000 bytes
		if in.Fail {
			return "", errors.New(text)
		}
		return text, nil
	})
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(big))
	m := &script{replies: []any{toolCall("c1", "big", `{}`), toolCall("c2", "big", `{}`), toolCall("c3", "big", `{"fail": true}`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.Limits.MaxToolOutput = 1001
	a.ReceivePrompt(p, nil)
	_, s, err := a.Respond(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, recs := run.forest(t)
	calls := toolCallRecords(recs)
	if len(calls) != 3 || len(s.ToolCalls) != 3 {
		t.Fatalf("%d tool_call records, %d in the session", len(calls), len(s.ToolCalls))
	}
	for i, c := range calls {
		sent := m.reqs[i+1].Messages[len(m.reqs[i+1].Messages)-1]
		if sent.Content != c.Result || sent.FunctionCalls[0].Result != c.Result || s.ToolCalls[i].Result != c.Result || s.ToolCalls[i].Error != c.Error {
			t.Errorf("call %d: the model got %d bytes, the log has %d", i+1, len(sent.Content), len(c.Result))
		}
	}
	first := calls[0].Result
	const prefix = "Return of calling function big with arguments {}:\n"
	runes := (1001 - len(prefix)) / 2
	if want := prefix + strings.Repeat("é", runes) + cutLine(len(prefix)+2*runes, len(prefix)+6000); first != want {
		t.Errorf("first result %q, want %q", first, want)
	}
	if want := "You already called big with these arguments. The result was:\n" + first; calls[1].Result != want || !calls[1].Repeated {
		t.Errorf("the repeat %q, want %q", calls[1].Result, want)
	}
	errText := calls[2].Error
	if errText != strings.Repeat("é", 500)+"\n[output cut to the first 1000 of 6000 bytes]" ||
		calls[2].Result != "Error: "+strings.Repeat("é", 497)+"\n[output cut to the first 1001 of 6007 bytes]" {
		t.Errorf("the error %q, result %q", errText, calls[2].Result)
	}
}

// A result a replay serves from the log, already cut, is sent as the log
// holds it, not cut again.
func TestMaxToolOutputServed(t *testing.T) {
	recorded := strings.Repeat("x", 100) + cutLine(100, 5000)
	f, _ := dialog.NewFunction("big", "talks a lot", func(context.Context, struct{}) (string, error) { return "not run", nil })
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(f))
	m := &script{replies: []any{toolCall("c1", "big", `{}`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.Limits.MaxToolOutput = 100
	a.CallTool = func(_ context.Context, _ string, _ *dialog.Function, fc dialog.FunctionCall) dialog.FunctionCall {
		fc.Result = recorded
		return fc
	}
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, recs := run.forest(t)
	if calls := toolCallRecords(recs); len(calls) != 1 || calls[0].Result != recorded || m.reqs[1].Messages[len(m.reqs[1].Messages)-1].Content != recorded {
		t.Fatalf("tool_call records %+v", calls)
	}
}

// max_tool_output, set globally or per agent, is the agents'
// MaxToolOutput; unset, 1 MiB; 0, none, is -1 there; a negative one is an error at its place.
func TestMaxToolOutputConfig(t *testing.T) {
	la, lb := limitsOf(t, "max_tool_output: 2048", "max_tool_output: 0")
	if a, b := la.MaxToolOutput, lb.MaxToolOutput; a != 2048 || b != -1 {
		t.Errorf("MaxToolOutput a %d, b %d; want 2048 and -1 (none)", a, b)
	}
	if DefaultLimits().MaxToolOutput != 1048576 {
		t.Errorf("default %d", DefaultLimits().MaxToolOutput)
	}
	_, err := config.Parse("t.yaml", []byte("tactic_type: chat\nglobal: {model_name: mock/demo, max_tool_output: -1}\nagent_configs: [{name: a, system_prompt: x}]\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "global.max_tool_output must be a non-negative integer, not the integer -1") {
		t.Errorf("err %v", err)
	}
}

// A tool whose text is not UTF-8 (its output cut in the middle of a rune)
// is answered with the text the log records: each stray byte a U+FFFD.
// The model saw the raw bytes while the log kept U+FFFD, so a replay,
// which serves the logged result, sent another request and diverged.
func TestToolResultNotUTF8(t *testing.T) {
	cut, _ := dialog.NewFunction("cut", "cuts", func(_ context.Context, in struct{}) (string, error) {
		return strings.Repeat("é", 4)[:7] + "\xff\xfe end", nil
	})
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(cut))
	m := &script{replies: []any{toolCall("c1", "cut", `{}`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	sent := m.reqs[1].Messages[len(m.reqs[1].Messages)-1]
	_, recs := run.forest(t)
	var logged string
	for _, r := range recs {
		if r.Kind == logs.KindToolCall {
			logged = r.ToolCall.Result
		}
	}
	if !utf8.ValidString(sent.Content) || !strings.HasSuffix(sent.Content, "ééé\uFFFD\uFFFD\uFFFD end") {
		t.Fatalf("the model got %q", sent.Content)
	}
	if logged != sent.FunctionCalls[0].Result {
		t.Fatalf("the log has %q, the model got %q", logged, sent.FunctionCalls[0].Result)
	}
}

// A Respond cancelled in a tool round leaves a working dialog whose last
// reply called tools: the tree says the run stopped there (cancelled, or
// interrupted when its log has no run_end), not that a reply failed to
// parse, which no tool call ever does.
func TestTreeOfRunStoppedInToolRound(t *testing.T) {
	for _, finish := range []bool{true, false} {
		ctx, cancel := context.WithCancel(t.Context())
		stop, _ := dialog.NewFunction("stop", "stops", func(_ context.Context, in struct{}) (string, error) {
			cancel()
			return "stopped", nil
		})
		p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(stop),
			dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
		w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "stop"}, logs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		a := &Agent{Name: "solver", Model: &script{replies: []any{toolCall("c1", "stop", `{}`), text("<answer>x</answer>")}},
			ModelName: "mock/test", Log: w}
		if err := a.Open("main", nil); err != nil {
			t.Fatal(err)
		}
		a.ReceivePrompt(p, nil)
		if _, _, err := a.Respond(ctx); err == nil {
			t.Fatal("Respond was not cancelled")
		}
		if finish {
			if err := w.Finish(logs.RunEnd{Status: logs.StatusCancelled, Error: "cancelled"}); err != nil {
				t.Fatal(err)
			}
		} else if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		tree, _, err := inspect.Load(t.Context(), run, inspect.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := "no final reply: stopped in a tool round (the run was interrupted)"
		if finish {
			want = "no final reply: stopped in a tool round (the run was cancelled)"
		}
		var reasons []string
		for _, n := range tree.Nodes {
			if n.Failed {
				reasons = append(reasons, n.FailReason)
			}
		}
		if len(reasons) != 1 || reasons[0] != want {
			t.Errorf("finished %v: failed attempts %q, want [%q]", finish, reasons, want)
		}
		_ = strings.Contains
	}
}
