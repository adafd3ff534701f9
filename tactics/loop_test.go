package tactics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// The call loop (REFERENCE section 1) at its edges: failing and repeated
// tool calls, the final prompt, parse retries meeting rate limits,
// cancellation, concurrent dialogs, summary calls, and the session's
// totals against the log.

type numIn struct {
	N int `json:"n"`
}

func callsReply(calls ...dialog.FunctionCall) dialog.Message {
	return dialog.Message{Role: dialog.RoleToolCall, FunctionCalls: calls}
}

func fcall(id, name, args string) dialog.FunctionCall {
	return dialog.FunctionCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// modelCalls returns the model_call records.
func modelCalls(recs []*logs.Record) []*logs.Record {
	var out []*logs.Record
	for _, r := range recs {
		if r.Kind == logs.KindModelCall {
			out = append(out, r)
		}
	}
	return out
}

// tail returns the last n messages of a request.
func tail(req *provider.Request, n int) []*dialog.Message {
	return req.Messages[len(req.Messages)-n:]
}

// Failing tool calls in one reply (panic, error, unknown name, invalid JSON, schema violation) each get an error result under their call id, in order, and the loop goes on.
func TestToolFailuresAnswered(t *testing.T) {
	boom, _ := dialog.NewFunction("boom", "panics", func(context.Context, numIn) (int, error) { panic("kaboom") })
	fail, _ := dialog.NewFunction("fail", "fails", func(context.Context, numIn) (int, error) { return 0, errors.New("disk on fire") })
	ran := 0
	sq, _ := dialog.NewFunction("sq", "squares", func(_ context.Context, in numIn) (int, error) { ran++; return in.N * in.N, nil })
	p := dialog.MustPrompt("t", "Go.", dialog.WithFunctions(boom, fail, sq))
	m := &script{replies: []any{callsReply(
		fcall("c1", "boom", `{"n":1}`),
		fcall("c2", "fail", `{"n":1}`),
		fcall("c3", "nosuch", `{}`),
		fcall("c4", "sq", `{"n":`), // invalid JSON, raw, as a model of one's own may give it
		fcall("c5", "sq", `{"n":"two"}`),
		fcall("c6", "sq", `{"n":3}`),
	), text("done")}}
	a, run := newAgent(t, m, nil)
	a.ReceivePrompt(p, nil)
	reply, s, err := a.Respond(t.Context())
	if err != nil || reply.Content != "done" || len(m.reqs) != 2 || len(m.reqs[1].Tools) != 3 {
		t.Fatalf("reply %v, err %v, %d requests", reply, err, len(m.reqs))
	}
	want := []string{"function boom panicked: kaboom", "disk on fire", "unknown function nosuch", "invalid arguments", "invalid arguments", ""}
	_, recs := run.forest(t)
	var tcs []*logs.ToolCall
	for _, r := range recs {
		if r.Kind == logs.KindToolCall {
			tcs = append(tcs, r.ToolCall)
		}
	}
	if len(s.ToolCalls) != 6 || len(tcs) != 6 {
		t.Fatalf("%d session tool calls, %d records", len(s.ToolCalls), len(tcs))
	}
	for i, tm := range tail(m.reqs[1], 6) {
		id := fmt.Sprintf("c%d", i+1)
		fc := s.ToolCalls[i]
		if tm.Role != dialog.RoleTool || tm.ToolCallID != id || fc.ID != id || tcs[i].CallID != id {
			t.Fatalf("tool answer %d: role %s id %q, session %q, record %q", i, tm.Role, tm.ToolCallID, fc.ID, tcs[i].CallID)
		}
		if want[i] == "" {
			if fc.Error != "" || !strings.Contains(tm.Content, "9") {
				t.Fatalf("good call answered %q (error %q)", tm.Content, fc.Error)
			}
			continue
		}
		if !strings.Contains(fc.Error, want[i]) || !strings.HasPrefix(tm.Content, "Error: ") || !strings.Contains(tm.Content, want[i]) || tcs[i].Error != fc.Error {
			t.Fatalf("call %s: error %q, answer %q, record error %q; want %q", id, fc.Error, tm.Content, tcs[i].Error, want[i])
		}
	}
	if ran != 1 {
		t.Fatalf("sq ran %d times, want 1 (bad arguments must not reach it)", ran)
	}
}

// Truncated JSON arguments on the OpenAI wire reach the tool as a failed call the model is told of, and the run goes on and is logged.
func TestInvalidArgumentsOnWire(t *testing.T) {
	srv := providertest.NewOpenAIServer(t,
		providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "call_x", Name: "sq", Arguments: `{"n":`}}},
		providertest.Reply{Text: "sorry"},
	)
	model, err := provider.Open(t.Context(), "openai/gpt-4o-mini", provider.Config{BaseURL: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	sq, _ := dialog.NewFunction("sq", "squares", func(_ context.Context, in numIn) (int, error) { ran = true; return in.N * in.N, nil })
	a, run := newAgent(t, model, nil)
	a.ModelName = "openai/gpt-4o-mini"
	a.ReceivePrompt(dialog.MustPrompt("t", "Square 3.", dialog.WithFunctions(sq)), nil)
	reply, s, err := a.Respond(t.Context())
	if err != nil || reply.Content != "sorry" || ran || len(s.ToolCalls) != 1 || !strings.Contains(s.ToolCalls[0].Error, "invalid arguments") {
		t.Fatalf("reply %v, err %v, ran %v, tool calls %+v", reply, err, ran, s.ToolCalls)
	}
	if reqs := srv.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), `"tool_call_id":"call_x"`) {
		t.Fatalf("the failed call was not answered on the wire")
	}
	if _, recs := run.forest(t); count(recs, logs.KindToolCall) != 1 {
		t.Fatal("no tool_call record")
	}
}

// An identical repeated call (in the same reply or a later round, keys reordered) is answered without running; the same function with other arguments runs.
func TestRepeatedCalls(t *testing.T) {
	runs := 0
	add, _ := dialog.NewFunction("add", "adds", func(_ context.Context, in struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (int, error) {
		runs++
		return in.A + in.B, nil
	})
	p := dialog.MustPrompt("calc", "Add.", dialog.WithFunctions(add))
	m := &script{replies: []any{
		callsReply(fcall("c1", "add", `{"a":1,"b":2}`), fcall("c2", "add", `{"b":2,"a":1}`), fcall("c3", "add", `{"a":1,"b":3}`)),
		callsReply(fcall("c4", "add", ` { "a" : 1 , "b" : 2 } `)),
		text("ok"),
	}}
	a, run := newAgent(t, m, nil)
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Fatalf("add ran %d times, want 2", runs)
	}
	_, recs := run.forest(t)
	var got []string
	for _, r := range recs {
		if tc := r.ToolCall; tc != nil {
			got = append(got, fmt.Sprintf("%s:%v", tc.CallID, tc.Repeated))
			if tc.Repeated && (!strings.HasPrefix(tc.Result, "You already called add") || !strings.Contains(tc.Result, "\n3")) {
				t.Fatalf("repeated answer = %q", tc.Result)
			}
		}
	}
	if fmt.Sprint(got) != "[c1:false c2:true c3:false c4:true]" {
		t.Fatalf("repeated flags = %v", got)
	}
	r1 := tail(m.reqs[1], 3)
	if r1[1].ToolCallID != "c2" || !strings.HasPrefix(r1[1].Content, "You already called add") || !strings.Contains(r1[2].Content, "4") {
		t.Fatalf("round 1 answers: %q %q", r1[1].Content, r1[2].Content)
	}
}

// Exactly MaxInterruptSteps tool rounds run with tools offered; then the final prompt (no tools, parser kept) follows the last tool result, and a call after it is answered, not run.
func TestFinalPromptAfterExactlyNRounds(t *testing.T) {
	runs := 0
	sq, _ := dialog.NewFunction("sq", "squares", func(_ context.Context, in numIn) (int, error) { runs++; return in.N * in.N, nil })
	p := dialog.MustPrompt("calc", "Square. Answer in <answer></answer>.", dialog.WithFunctions(sq),
		dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
	m := &script{replies: []any{
		toolCall("c1", "sq", `{"n":1}`), toolCall("c2", "sq", `{"n":2}`), toolCall("c3", "sq", `{"n":3}`),
		text("no tags"), text("<answer>4</answer>"),
	}}
	a, _ := newAgent(t, m, nil)
	a.Limits.MaxInterruptSteps = 2
	a.ReceivePrompt(p, nil)
	reply, s, err := a.Respond(t.Context())
	if err != nil || string(reply.Parsed) == "" {
		t.Fatalf("reply %v, err %v", reply, err)
	}
	if len(m.reqs) != 5 || len(m.reqs[0].Tools) != 1 || len(m.reqs[1].Tools) != 1 {
		t.Fatalf("%d requests; tools offered in rounds 1 and 2: %d %d", len(m.reqs), len(m.reqs[0].Tools), len(m.reqs[1].Tools))
	}
	for i := 2; i < 5; i++ {
		if len(m.reqs[i].Tools) != 0 {
			t.Fatalf("request %d offers tools after %d rounds", i+1, a.Limits.MaxInterruptSteps)
		}
	}
	r3 := tail(m.reqs[2], 2)
	if r3[0].Role != dialog.RoleTool || r3[0].ToolCallID != "c2" || r3[1].Role != dialog.RoleUser || !strings.Contains(r3[1].Content, "limit of tool calls") {
		t.Fatalf("after round 2: %s %q / %s %q", r3[0].Role, r3[0].ToolCallID, r3[1].Role, r3[1].Content)
	}
	if tm := m.reqs[3].Messages[len(m.reqs[3].Messages)-1]; tm.ToolCallID != "c3" || !strings.Contains(tm.Content, "no tools are available") {
		t.Fatalf("answer to the call after the final prompt = %+v", tm)
	}
	if runs != 2 || len(s.ToolCalls) != 3 || len(s.Attempts) != 2 {
		t.Fatalf("sq ran %d times; %d tool calls, %d attempts", runs, len(s.ToolCalls), len(s.Attempts))
	}
}

// A reply with tool calls and text that would not parse is a tool round, not a parse failure: no exception prompt, no new attempt.
func TestToolCallReplyIsNotParsed(t *testing.T) {
	sq, _ := dialog.NewFunction("sq", "squares", func(_ context.Context, in numIn) (int, error) { return in.N * in.N, nil })
	p := dialog.MustPrompt("calc", "Square 3. Answer in <answer></answer>.", dialog.WithFunctions(sq),
		dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
	call := toolCall("c1", "sq", `{"n":3}`)
	call.Role, call.Content = dialog.RoleAssistant, "Let me compute first."
	m := &script{replies: []any{call, text("<answer>9</answer>")}}
	a, _ := newAgent(t, m, nil)
	a.ReceivePrompt(p, nil)
	reply, s, err := a.Respond(t.Context())
	if err != nil || reply.Content != "<answer>9</answer>" || len(s.Attempts) != 1 || len(m.reqs) != 2 || len(s.ToolCalls) != 1 {
		t.Fatalf("reply %v err %v, %d attempts, %d requests", reply, err, len(s.Attempts), len(m.reqs))
	}
	for _, msg := range m.reqs[1].Messages {
		if strings.Contains(msg.Content, "Please fix") {
			t.Fatalf("exception prompt sent for a tool-call reply: %q", msg.Content)
		}
	}
}

// A parse retry that then hits a rate limit: calls, attempts and turns are numbered right in the session and the log, and the log rebuilds into main -> #1 -> #2.
func TestParseRetryThenRateLimit(t *testing.T) {
	rate := &provider.Error{Kind: provider.ErrRateLimit, Provider: "mock", Status: 429}
	m := &positions{script: script{replies: []any{text("no tags"), rate, text("<answer>4</answer>")}}}
	a, run := newAgent(t, m, nil)
	a.ReceivePrompt(answerPrompt, map[string]any{"task": "2+2"})
	reply, s, err := a.Respond(t.Context())
	if err != nil || reply.Content != "<answer>4</answer>" || s.State != "ok" || len(s.Attempts) != 2 {
		t.Fatalf("reply %v err %v session %+v", reply, err, s)
	}
	a1, a2 := s.Attempts[0], s.Attempts[1]
	var calls []string
	for _, c := range s.Calls {
		calls = append(calls, fmt.Sprintf("%s/%d/%v", c.Dialog, c.Attempt, c.Err != nil))
	}
	if want := []string{a1 + "/1/false", a2 + "/1/true", a2 + "/2/false"}; fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("session calls %v, want %v", calls, want)
	}
	if s.Calls[1].Digest != s.Calls[2].Digest || s.Calls[0].Digest == s.Calls[1].Digest {
		t.Fatal("a retry must resend the same request, a parse retry a new one")
	}
	f, recs := run.forest(t)
	var got []string
	for _, r := range modelCalls(recs) {
		mc := r.ModelCall
		e := ""
		if mc.Error != nil {
			e = mc.Error.Type
		}
		got = append(got, fmt.Sprintf("%s call%d att%d turn%d %s", r.Dialog, mc.Call, mc.Attempt, mc.Turn, e))
		if mc.Reply != nil {
			if msg := f.Dialog(mc.Reply.Dialog).At(mc.Reply.Index); msg == nil || msg.Role != dialog.RoleAssistant {
				t.Fatalf("model_call reply ref %+v does not resolve to a reply", mc.Reply)
			}
		} else if mc.Error == nil {
			t.Fatal("a model_call has neither a reply nor an error")
		}
	}
	want := []string{a1 + " call1 att1 turn1 ", a2 + " call2 att1 turn2 rate_limit", a2 + " call2 att2 turn2 "}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("model_call records:\n got %v\nwant %v", got, want)
	}
	main, _ := a.Dialog("main")
	if ids := f.SubtreeIDs(main.ID()); fmt.Sprint(ids) != fmt.Sprint([]string{main.ID(), a1, a2}) {
		t.Fatalf("tree %v", ids)
	}
	n1, n2 := f.Dialog(a1).Node(), f.Dialog(a2).Node()
	if n1.Alias != "main#1" || n2.Alias != "main#2" || n2.ParentID != a1 || f.Dialog(a1).Tail().Content != "no tags" {
		t.Fatalf("attempt nodes %+v %+v", n1, n2)
	}
	if msgs := f.Dialog(a2).Messages(); len(msgs) != 4 || !strings.Contains(msgs[2].Content, "Please fix") || msgs[3].Content != "<answer>4</answer>" {
		t.Fatalf("attempt 2:\n%s", f.Dialog(a2).Overview(60))
	}
	if fm := f.Dialog(main.ID()); fm.Len() != 2 || fm.Tail().Content != "<answer>4</answer>" || len(fm.Tail().Parsed) == 0 {
		t.Fatalf("main:\n%s", fm.Overview(60))
	}
}

// A context cancelled while waiting out a Retry-After returns at once with ctx's error, and the log holds exactly the calls made.
func TestCancelDuringBackoff(t *testing.T) {
	rate := &provider.Error{Kind: provider.ErrRateLimit, Provider: "mock", Status: 429, Retry: 30 * time.Second}
	m := &script{replies: []any{rate, text("never")}}
	a, run := newAgent(t, m, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	a.Retrying = func(Retry) { go func() { time.Sleep(10 * time.Millisecond); cancel() }() }
	a.Receive("hi")
	start := time.Now()
	_, s, err := a.Respond(ctx)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Respond took %v after the cancel", d)
	}
	if !errors.Is(err, context.Canceled) || s.State == "ok" || len(m.reqs) != 1 || len(s.Calls) != 1 {
		t.Fatalf("err %v, state %s, %d requests, %d calls", err, s.State, len(m.reqs), len(s.Calls))
	}
	_, recs := run.forest(t)
	mcs := modelCalls(recs)
	if len(mcs) != 1 || mcs[0].ModelCall.Error == nil || mcs[0].ModelCall.Error.Type != "rate_limit" {
		t.Fatalf("model_call records: %d", len(mcs))
	}
	if main, _ := a.Dialog("main"); main.Len() != 1 {
		t.Fatalf("canonical dialog changed by a cancelled Respond:\n%s", main.Overview(60))
	}
}

// A context cancelled during a tool call stops the loop: Respond returns ctx's error, the other calls of the reply do not run, and the model is not asked again.
func TestCancelDuringToolCall(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	slow, _ := dialog.NewFunction("slow", "is cancelled", func(ctx context.Context, _ numIn) (int, error) {
		cancel()
		<-ctx.Done()
		return 0, ctx.Err()
	})
	otherRan := false
	other, _ := dialog.NewFunction("other", "must not run", func(context.Context, numIn) (int, error) { otherRan = true; return 1, nil })
	p := dialog.MustPrompt("t", "Go.", dialog.WithFunctions(slow, other))
	m := &script{replies: []any{callsReply(fcall("c1", "slow", `{"n":1}`), fcall("c2", "other", `{"n":1}`)), text("done anyway")}}
	a, run := newAgent(t, m, nil)
	a.ReceivePrompt(p, nil)
	_, s, err := a.Respond(ctx)
	if !errors.Is(err, context.Canceled) || s.State == "ok" {
		t.Errorf("Respond after a cancel during a tool call: err %v, state %s", err, s.State)
	}
	if len(m.reqs) != 1 {
		t.Errorf("the model was asked %d times; a cancelled Respond must not call it again", len(m.reqs))
	}
	if otherRan {
		t.Error("a tool ran after the context was cancelled")
	}
	_, recs := run.forest(t)
	var first *logs.ToolCall
	for _, r := range recs {
		if r.Kind == logs.KindToolCall && first == nil {
			first = r.ToolCall
		}
	}
	if first == nil || first.CallID != "c1" || !strings.Contains(first.Error, "context canceled") {
		t.Errorf("tool_call record of the cancelled call = %+v", first)
	}
	if main, _ := a.Dialog("main"); main.Len() != 1 {
		t.Errorf("canonical dialog changed by a cancelled Respond:\n%s", main.Overview(60))
	}
}

// Respond with a context that is already done fails with its error without calling the model.
func TestRespondWithDoneContext(t *testing.T) {
	m := &script{replies: []any{text("should not be asked")}}
	a, _ := newAgent(t, m, nil)
	a.Receive("hi")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := a.Respond(ctx)
	if !errors.Is(err, context.Canceled) || len(m.reqs) != 0 {
		t.Fatalf("err %v after %d model calls, want context.Canceled after none", err, len(m.reqs))
	}
}

// Respond on a dialog that ends with the assistant's turn sends it as is, keeps the governing parser and appends one reply.
func TestRespondAfterAssistantTurn(t *testing.T) {
	m := &script{replies: []any{text("<answer>1</answer>"), text("<answer>2</answer>")}}
	a, _ := newAgent(t, m, nil)
	a.ReceivePrompt(answerPrompt, map[string]any{"task": "count"})
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	reply, _, err := a.Respond(t.Context())
	if err != nil || reply.Content != "<answer>2</answer>" || len(reply.Parsed) == 0 {
		t.Fatalf("second reply %v, err %v", reply, err)
	}
	if last := m.reqs[1].Messages[len(m.reqs[1].Messages)-1]; last.Role != dialog.RoleAssistant || last.Content != "<answer>1</answer>" {
		t.Fatalf("second request ends with %s %q", last.Role, last.Content)
	}
	if main, _ := a.Dialog("main"); main.Len() != 3 {
		t.Fatalf("main:\n%s", main.Overview(60))
	}
}

// barrier answers "re: " and the last message, only once two calls are in flight together.
type barrier struct {
	mu  sync.Mutex
	n   int
	all chan struct{}
}

func (b *barrier) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	b.mu.Lock()
	if b.n++; b.n == 2 {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-time.After(5 * time.Second):
		return nil, errors.New("calls on two aliases were serialised")
	}
	last := req.Messages[len(req.Messages)-1]
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: "re: " + last.Content,
		Usage: dialog.Usage{InputTokens: 10, OutputTokens: 2}, USD: 0.01}}, nil
}

// Two RespondTo of one agent on two aliases run at once, each reply landing in its own dialog, with distinct call numbers and per-alias turns in the log.
func TestConcurrentRespondTwoAliases(t *testing.T) {
	m := &barrier{all: make(chan struct{})}
	a, run := newAgent(t, m, nil)
	a.Receive("question A")
	if err := a.Open("b", nil); err != nil {
		t.Fatal(err)
	}
	a.Receive("question B")
	errs := make(chan error, 2)
	for _, alias := range []string{"main", "b"} {
		go func() { _, _, err := a.RespondTo(t.Context(), alias); errs <- err }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	da, _ := a.Dialog("main")
	db, _ := a.Dialog("b")
	if da.Tail().Content != "re: question A" || db.Tail().Content != "re: question B" {
		t.Fatalf("replies: main %q, b %q", da.Tail().Content, db.Tail().Content)
	}
	_, recs := run.forest(t)
	seen := map[string]bool{}
	for _, r := range modelCalls(recs) {
		mc := r.ModelCall
		seen[fmt.Sprintf("call%d", mc.Call)] = true
		seen[fmt.Sprintf("%s/%d", mc.Alias, mc.Turn)] = true
	}
	if len(seen) != 4 || !seen["call1"] || !seen["call2"] || !seen["main/1"] || !seen["b/1"] {
		t.Fatalf("model_call positions %v", seen)
	}
}

// summarizeAll is a context manager that folds all but the newest message into a model-written summary.
type summarizeAll struct{}

func (summarizeAll) Fit(ctx context.Context, in contextmgr.Input) (contextmgr.Result, error) {
	n := len(in.Messages)
	if n < 2 {
		return contextmgr.Result{Messages: in.Messages, Action: "none"}, nil
	}
	sum, err := in.Summarize(ctx, in.Messages[:n-1])
	if err != nil {
		return contextmgr.Result{}, err
	}
	return contextmgr.Result{Messages: []*dialog.Message{sum, in.Messages[n-1]}, Action: "summary"}, nil
}

// checkTotals asserts that the session's calls and cost are those of the log's model_call records, each numbered.
func checkTotals(t *testing.T, s *CallSession, run *testRun) {
	t.Helper()
	_, recs := run.forest(t)
	mcs := modelCalls(recs)
	var sum dialog.Cost
	calls := map[int]bool{}
	for _, r := range mcs {
		sum = sum.Add(dialog.Cost{Usage: r.ModelCall.Usage, USD: r.ModelCall.USD})
		if r.ModelCall.Attempt == 1 {
			if r.ModelCall.Call < 1 || calls[r.ModelCall.Call] {
				t.Errorf("model_call numbered %d (numbers so far %v)", r.ModelCall.Call, calls)
			}
			calls[r.ModelCall.Call] = true
		}
	}
	if len(s.Calls) != len(mcs) {
		t.Errorf("session has %d calls, the log %d model_call records", len(s.Calls), len(mcs))
	}
	if s.Cost.Usage != sum.Usage || math.Abs(s.Cost.USD-sum.USD) > 1e-9 {
		t.Errorf("session cost %+v, model_call records sum to %+v", s.Cost, sum)
	}
	if tot := run.w.Totals(); tot.ModelCalls != len(s.Calls) || tot.Cost.Usage != s.Cost.Usage {
		t.Errorf("run totals %+v, session %d calls costing %+v", tot, len(s.Calls), s.Cost)
	}
}

// lastOnly sends the system message and the last message alone.
type lastOnly struct{}

func (lastOnly) Fit(ctx context.Context, in contextmgr.Input) (contextmgr.Result, error) {
	n := len(in.Messages)
	return contextmgr.Result{Messages: []*dialog.Message{in.Messages[0], in.Messages[n-1]}, Action: "last"}, nil
}

// A context manager that keeps a tool result without the call it answers fails the Respond, naming itself, before the provider refuses the request.
func TestManagerSplittingAToolCallFails(t *testing.T) {
	sq, _ := dialog.NewFunction("sq", "squares", func(_ context.Context, in numIn) (int, error) { return in.N * in.N, nil })
	p := dialog.MustPrompt("calc", "Square 2.", dialog.WithFunctions(sq))
	m := &script{replies: []any{toolCall("c1", "sq", `{"n":2}`), text("4")}}
	a, _ := newAgent(t, m, dialog.MustPrompt("sys", "You calculate."))
	a.Context, a.ContextName = lastOnly{}, "lastonly"
	a.ReceivePrompt(p, nil)
	_, _, err := a.Respond(t.Context())
	if err == nil || !strings.Contains(err.Error(), "context manager lastonly: message 1 of the 2 it returned is the result of tool call c1 (sq)") {
		t.Fatalf("err = %v", err)
	}
	if len(m.reqs) != 1 {
		t.Fatalf("%d requests sent; the one with the orphan tool result should not be", len(m.reqs))
	}
}

// A session's calls, tool calls and cost equal the log's model_call and tool_call records over a rate limit, a tool round and a parse retry.
func TestSessionTotalsMatchLog(t *testing.T) {
	sq, _ := dialog.NewFunction("sq", "squares", func(_ context.Context, in numIn) (int, error) { return in.N * in.N, nil })
	p := dialog.MustPrompt("calc", "Square 2. Answer in <answer></answer>.", dialog.WithFunctions(sq),
		dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
	m := &script{replies: []any{toolCall("c1", "sq", `{"n":2}`), &provider.Error{Kind: provider.ErrServer, Status: 503}, text("four"), text("<answer>4</answer>")}}
	a, run := newAgent(t, m, nil)
	a.ReceivePrompt(p, nil)
	_, s, err := a.Respond(t.Context())
	if err != nil || len(s.Calls) != 4 || len(s.ToolCalls) != 1 || s.Cost.OutputTokens != 6 {
		t.Fatalf("err %v, session %+v", err, s)
	}
	checkTotals(t, s, run)
	_, recs := run.forest(t)
	if count(recs, logs.KindToolCall) != len(s.ToolCalls) {
		t.Fatalf("%d tool_call records", count(recs, logs.KindToolCall))
	}
}

// A context manager's summary call is one of the session's numbered, costed model calls, like every model_call in the log.
func TestSummaryCallsInSession(t *testing.T) {
	m := &script{replies: []any{text("they said hi"), text("hello")}}
	a, run := newAgent(t, m, dialog.MustPrompt("sys", "You chat."))
	a.Context, a.ContextName = summarizeAll{}, "all"
	a.Receive("hi")
	reply, s, err := a.Respond(t.Context())
	if err != nil || reply.Content != "hello" {
		t.Fatalf("reply %v, err %v", reply, err)
	}
	checkTotals(t, s, run)
}

// A summary call that hits a rate limit is retried with backoff like any model call, instead of failing the Respond.
func TestSummaryCallRetried(t *testing.T) {
	rate := &provider.Error{Kind: provider.ErrRateLimit, Provider: "mock", Status: 429}
	m := &script{replies: []any{rate, text("they said hi"), text("hello")}}
	a, _ := newAgent(t, m, dialog.MustPrompt("sys", "You chat."))
	a.Context, a.ContextName = summarizeAll{}, "all"
	a.Receive("hi")
	reply, _, err := a.Respond(t.Context())
	if err != nil || reply.Content != "hello" || len(m.reqs) != 3 {
		t.Fatalf("reply %v, err %v after %d requests", reply, err, len(m.reqs))
	}
}

// A summary reply with no text (here a tool call) fails the Respond rather than replacing the old messages by an empty summary.
func TestSummaryWithoutTextFails(t *testing.T) {
	m := &script{replies: []any{toolCall("c1", "sq", `{"n":2}`), text("hello")}}
	a, _ := newAgent(t, m, dialog.MustPrompt("sys", "You chat."))
	a.Context, a.ContextName = summarizeAll{}, "all"
	a.Receive("hi")
	_, _, err := a.Respond(t.Context())
	if err == nil || !strings.Contains(err.Error(), "the model's summary has tool calls (sq) and no text") {
		t.Fatalf("err = %v", err)
	}
}

// The tactic session is handed a finished CallSession: its State is set before onCall sees it.
func TestOnCallSeesFinalState(t *testing.T) {
	m := &script{replies: []any{text("hello"), text("a"), text("b")}}
	a, _ := newAgent(t, m, nil)
	var states []string
	a.onCall = func(s *CallSession) { states = append(states, s.State) }
	a.Receive("hi")
	a.Respond(t.Context())
	a.Limits.MaxExceptionRetry = 1
	a.ReceivePrompt(answerPrompt, map[string]any{"task": "x"})
	a.Respond(t.Context())
	if fmt.Sprint(states) != "[ok parse_failed]" {
		t.Fatalf("states seen by onCall = %q", states)
	}
}

// The log of a failed and a successful Respond rebuilds into a tree where each attempt is a branch and only the successful reply is in main.
func TestLogRebuildsEveryAttempt(t *testing.T) {
	m := &script{replies: []any{text("x"), text("y"), text("<answer>1</answer>")}}
	a, run := newAgent(t, m, nil)
	a.Limits.MaxExceptionRetry = 1
	a.ReceivePrompt(answerPrompt, map[string]any{"task": "t"})
	_, s1, err := a.Respond(t.Context())
	if err == nil || s1.State != "parse_failed" || len(s1.Attempts) != 2 {
		t.Fatalf("first Respond: err %v, session %+v", err, s1)
	}
	_, s2, err := a.Respond(t.Context())
	if err != nil || len(s2.Attempts) != 1 {
		t.Fatalf("second Respond: err %v", err)
	}
	f, recs := run.forest(t)
	main, _ := a.Dialog("main")
	fm := f.Dialog(main.ID())
	if fm == nil || fm.Len() != 2 || fm.Tail().Content != "<answer>1</answer>" {
		t.Fatalf("main in the log:\n%v", fm)
	}
	if got := fm.Node().ChildrenIDs; fmt.Sprint(got) != fmt.Sprint([]string{s1.Attempts[0], s2.Attempts[0]}) {
		t.Fatalf("main's children %v", got)
	}
	if n := f.Dialog(s1.Attempts[1]).Node(); n.ParentID != s1.Attempts[0] {
		t.Fatalf("retry attempt's parent %s", n.ParentID)
	}
	for i, want := range []string{"x", "y"} {
		if got := f.Dialog(s1.Attempts[i]).Tail().Content; got != want {
			t.Fatalf("failed attempt %d ends with %q", i+1, got)
		}
	}
	for _, r := range modelCalls(recs) {
		ref := r.ModelCall.Reply
		if ref == nil || ref.Dialog != r.Dialog || f.Dialog(ref.Dialog).At(ref.Index) == nil {
			t.Fatalf("model_call %+v: reply ref does not resolve", r.ModelCall)
		}
	}
}

// toolSpy is a pass-through context manager that notes how many tools
// each request declares.
type toolSpy struct{ tools []int }

func (s *toolSpy) Fit(ctx context.Context, in contextmgr.Input) (contextmgr.Result, error) {
	s.tools = append(s.tools, len(in.Tools))
	return contextmgr.Result{Messages: in.Messages, Action: "none"}, nil
}

// The context manager is told which tools each request declares, as they
// take room in the window: those of the governing prompt while tools are
// offered, none once they are withdrawn.
func TestContextManagerSeesDeclaredTools(t *testing.T) {
	sq, _ := dialog.NewFunction("sq", "squares", func(_ context.Context, in numIn) (int, error) { return in.N * in.N, nil })
	cube, _ := dialog.NewFunction("cube", "cubes", func(_ context.Context, in numIn) (int, error) { return in.N * in.N * in.N, nil })
	p := dialog.MustPrompt("calc", "Square.", dialog.WithFunctions(sq, cube))
	m := &script{replies: []any{toolCall("c1", "sq", `{"n":1}`), toolCall("c2", "sq", `{"n":2}`), text("4")}}
	a, _ := newAgent(t, m, nil)
	spy := &toolSpy{}
	a.Context, a.ContextName = spy, "spy"
	a.Limits.MaxInterruptSteps = 1
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(spy.tools) != "[2 0 0]" {
		t.Fatalf("tools the manager saw per call = %v, want [2 0 0] (offered, then withdrawn)", spy.tools)
	}
}

// The tools and format a call declares are logged once per run, and every
// call that sends them names them; a call without either names none.
func TestDeclarationsLoggedOnce(t *testing.T) {
	sq, _ := dialog.NewFunction("sq", "squares", func(_ context.Context, in numIn) (int, error) { return in.N * in.N, nil })
	p := dialog.MustPrompt("calc", "Square.", dialog.WithFunctions(sq))
	m := &script{replies: []any{toolCall("c1", "sq", `{"n":3}`), text("9"), text("plain")}}
	a, run := newAgent(t, m, nil)
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a.Open("plain", nil); err != nil { // no prompt with tools governs it
		t.Fatal(err)
	}
	a.Receive("and now?")
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, recs := run.forest(t)
	var decls []*logs.Declarations
	for _, r := range recs {
		if r.Kind == logs.KindDeclarations {
			decls = append(decls, r.Declarations)
		}
	}
	if len(decls) != 1 || len(decls[0].Tools) != 1 || decls[0].Tools[0].Name != "sq" || decls[0].Tools[0].Description != "squares" {
		t.Fatalf("declarations records: %+v, want one, of sq", decls)
	}
	var named []string
	for _, r := range modelCalls(recs) {
		named = append(named, r.ModelCall.Declarations)
	}
	if want := []string{decls[0].Digest, decls[0].Digest, ""}; fmt.Sprint(named) != fmt.Sprint(want) {
		t.Errorf("model calls name declarations %q, want %q", named, want)
	}
}

// Structured output that does not follow the prompt's format is a parse
// failure: the model is told where, and answers again.
func TestReplyOffTheFormatIsRetried(t *testing.T) {
	p := dialog.MustPrompt("verdict", "Judge.", dialog.WithFormat(json.RawMessage(
		`{"type":"object","properties":{"best":{"type":"integer"}},"required":["best"],"additionalProperties":false}`)))
	m := &script{replies: []any{text(`{"best": 17, "extra": true}`), text(`{"best": 17}`)}}
	a, _ := newAgent(t, m, nil)
	a.ReceivePrompt(p, nil)
	reply, s, err := a.Respond(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if string(reply.Parsed) != `{"best":17}` || len(s.Attempts) != 2 || len(m.reqs) != 2 {
		t.Fatalf("parsed %s after %d attempts, %d calls; want the second reply after a retry", reply.Parsed, len(s.Attempts), len(m.reqs))
	}
	if last := m.reqs[1].Messages[len(m.reqs[1].Messages)-1]; !strings.Contains(last.Content, "does not follow the required JSON schema") {
		t.Errorf("the retry does not say what was wrong: %q", last.Content)
	}
}

// A nil context is an error naming the agent, not a nil-pointer panic halfway through a call (after the working copy was logged).
func TestRespondNilContext(t *testing.T) {
	m := &script{replies: []any{text("hi")}}
	a, _ := newAgent(t, m, nil)
	a.Receive("hi")
	//lint:ignore SA1012 a nil context on purpose
	_, _, err := a.Respond(nil) //nolint:staticcheck
	if err == nil || !strings.Contains(err.Error(), "nil context") || len(m.reqs) != 0 {
		t.Fatalf("err = %v after %d requests", err, len(m.reqs))
	}
}

// Arguments a model of our own making hands over as broken JSON are kept,
// as a JSON string of their text (the tool_call record holds that, as it
// did), and the model is told that they are not valid JSON and why.
func TestBrokenToolArgumentsAnswered(t *testing.T) {
	called := false
	f, _ := dialog.NewFunction("lookup", "looks up", func(context.Context, struct {
		Term string `json:"term"`
	}) (string, error) {
		called = true
		return "found", nil
	})
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(f))
	m := &script{replies: []any{toolCall("c1", "lookup", `{"term": "go"`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	const want = "invalid arguments: not valid JSON (unexpected end of JSON input, at byte 13): send the arguments as one JSON object"
	sent := m.reqs[1].Messages[len(m.reqs[1].Messages)-1]
	if called || sent.Content != "Error: "+want {
		t.Fatalf("the model got %q (tool called: %v)", sent.Content, called)
	}
	_, recs := run.forest(t)
	var calls []*logs.ToolCall
	for _, r := range recs {
		if r.Kind == logs.KindToolCall {
			calls = append(calls, r.ToolCall)
		}
	}
	var args string
	if len(calls) == 1 {
		json.Unmarshal(calls[0].Arguments, &args)
	}
	if len(calls) != 1 || calls[0].Error != want || args != `{"term": "go"` {
		t.Fatalf("tool_call records %+v", calls)
	}
}

// Which repeats are quoted: a call that ran (its tool failing or not) is
// quoted when repeated; a call to an unknown function is answered again,
// not quoted; and once tools are withdrawn, a repeat of a call that ran is
// told there are no tools, not quoted.
func TestRepeatedCallsWhatIsQuoted(t *testing.T) {
	runs := 0
	fail, _ := dialog.NewFunction("fail", "fails", func(context.Context, numIn) (int, error) {
		runs++
		return 0, errors.New("disk on fire")
	})
	p := dialog.MustPrompt("t", "Go.", dialog.WithFunctions(fail))
	m := &script{replies: []any{
		callsReply(fcall("c1", "fail", `{"n":1}`), fcall("c2", "nosuch", `{}`)),
		callsReply(fcall("c3", "fail", `{"n":1}`), fcall("c4", "nosuch", `{}`)),
		callsReply(fcall("c5", "fail", `{"n":1}`)),
		text("done"),
	}}
	a, run := newAgent(t, m, nil)
	a.Limits.MaxInterruptSteps = 2
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Errorf("fail ran %d times, want 1", runs)
	}
	_, recs := run.forest(t)
	var got []string
	for _, c := range toolCallRecords(recs) {
		got = append(got, fmt.Sprintf("%s repeated=%v error=%q result=%q", c.CallID, c.Repeated, c.Error, c.Result))
	}
	want := []string{
		`c1 repeated=false error="disk on fire" result="Error: disk on fire"`,
		`c2 repeated=false error="unknown function nosuch" result="Error: unknown function nosuch"`,
		`c3 repeated=true error="" result="You already called fail with these arguments. The result was:\nError: disk on fire"`,
		`c4 repeated=false error="unknown function nosuch" result="Error: unknown function nosuch"`,
		`c5 repeated=false error="no tools are available now" result="Error: no tools are available now. Give your final answer."`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tool_call records:\n%q\nwant\n%q", got, want)
	}
}
