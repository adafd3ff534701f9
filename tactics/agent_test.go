package tactics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
)

// script is a provider.Model that answers from a list and records requests.
type script struct {
	mu      sync.Mutex
	replies []any // dialog.Message or error
	reqs    []*provider.Request
}

func (s *script) Generate(_ context.Context, req *provider.Request) (*provider.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	if len(s.replies) == 0 {
		return nil, errors.New("script exhausted")
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	if err, ok := r.(error); ok {
		return nil, err
	}
	m := r.(dialog.Message)
	if m.Role == "" {
		m.Role = dialog.RoleAssistant
	}
	m.Usage = dialog.Usage{InputTokens: 10, OutputTokens: 2}
	m.USD = 0.01
	return &provider.Response{Message: m}, nil
}

func text(s string) dialog.Message { return dialog.Message{Content: s} }

func toolCall(id, name, args string) dialog.Message {
	return dialog.Message{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}}
}

type testRun struct {
	buf bytes.Buffer
	w   *logs.Writer
}

func newAgent(t *testing.T, m provider.Model, system *dialog.Prompt) (*Agent, *testRun) {
	t.Helper()
	r := &testRun{}
	w, err := logs.NewWriter(&r.buf, logs.RunStart{}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.w = w
	lim := DefaultLimits()
	lim.BackoffBase, lim.BackoffMax = time.Millisecond, 5*time.Millisecond
	a := &Agent{Name: "solver", System: system, Model: m, ModelName: "mock/test", Limits: lim, Log: w}
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	return a, r
}

func (r *testRun) forest(t *testing.T) (*dialog.Forest, []*logs.Record) {
	t.Helper()
	var recs []*logs.Record
	if err := r.w.Flush(); err != nil {
		t.Fatal(err)
	}
	rd := logs.NewReader(bytes.NewReader(r.buf.Bytes()), "run")
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		recs = append(recs, rec)
	}
	f, err := logs.Rebuild(t.Context(), logs.NewReader(bytes.NewReader(r.buf.Bytes()), "run"))
	if err != nil {
		t.Fatal(err)
	}
	return f, recs
}

func count(recs []*logs.Record, k logs.Kind) int {
	n := 0
	for _, r := range recs {
		if r.Kind == k {
			n++
		}
	}
	return n
}

var answerPrompt = dialog.MustPrompt("solve", "Solve {task}. Answer in <answer></answer>.",
	dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))

// N exception retries make N+1 invocations, each attempt a branch.
func TestRespondExceptionRetries(t *testing.T) {
	m := &script{replies: []any{text("no tags"), text("still none"), text("<answer>4</answer>")}}
	a, run := newAgent(t, m, dialog.MustPrompt("sys", "You solve."))
	if err := a.ReceivePrompt(answerPrompt, map[string]any{"task": "2+2"}); err != nil {
		t.Fatal(err)
	}
	reply, s, err := a.Respond(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var parsed dialog.TagResult
	if err := reply.ParsedInto(&parsed); err != nil || parsed.XML["answer"][0] != "4" {
		t.Fatalf("parsed = %+v, %v", parsed, err)
	}
	if len(m.reqs) != 3 || len(s.Attempts) != 3 || s.State != "ok" || s.Cost.USD != 0.03 {
		t.Fatalf("%d requests, session %+v", len(m.reqs), s)
	}
	last := m.reqs[2].Messages
	if got := last[len(last)-1].Content; !strings.HasPrefix(got, "Error: ") || !strings.Contains(got, "answer") {
		t.Fatalf("exception prompt = %q", got)
	}
	main, _ := a.Dialog("main")
	if main.Len() != 3 || main.Tail().Content != "<answer>4</answer>" {
		t.Fatalf("canonical dialog: %s", main.Overview(60))
	}
	f, recs := run.forest(t)
	if count(recs, logs.KindModelCall) != 3 {
		t.Fatalf("%d model_call records", count(recs, logs.KindModelCall))
	}
	// main -> attempt 1 -> attempt 2 -> attempt 3: failed attempts are branches.
	if ids := f.SubtreeIDs(main.ID()); len(ids) != 4 {
		t.Fatalf("tree has %d dialogs", len(ids))
	}
	if f.Dialog(s.Attempts[0]).Tail().Content != "no tags" {
		t.Fatal("the first failed attempt is not kept in the tree")
	}

	// With MaxExceptionRetry replies failing, Respond fails after N+1.
	m2 := &script{replies: []any{text("a"), text("b"), text("c"), text("d"), text("e")}}
	a2, _ := newAgent(t, m2, nil)
	a2.Limits.MaxExceptionRetry = 2
	a2.ReceivePrompt(answerPrompt, map[string]any{"task": "x"})
	_, s2, err := a2.Respond(t.Context())
	if err == nil || s2.State != "parse_failed" || len(m2.reqs) != 3 {
		t.Fatalf("err %v, state %s, %d requests", err, s2.State, len(m2.reqs))
	}
}

func TestRespondToolRounds(t *testing.T) {
	add := addTool(t)
	p := dialog.MustPrompt("calc", "Compute {expr}.", dialog.WithFunctions(add))
	m := &script{replies: []any{
		toolCall("c1", "add", `{"a":1,"b":2}`),
		toolCall("c2", "add", `{"b":2, "a":1}`), // the same call again
		toolCall("c3", "add", `{"a":3,"b":3}`),
		text("6"),
	}}
	a, run := newAgent(t, m, nil)
	a.Limits.MaxInterruptSteps = 3
	a.ReceivePrompt(p, map[string]any{"expr": "1+2+3"})
	reply, s, err := a.Respond(t.Context())
	if err != nil || reply.Content != "6" {
		t.Fatalf("reply %v, err %v", reply, err)
	}
	// Round 1: the tool result goes back as a tool message with its call id.
	r2 := m.reqs[1].Messages
	tm := r2[len(r2)-1]
	if tm.Role != dialog.RoleTool || tm.ToolCallID != "c1" || !strings.Contains(tm.Content, "3") || len(m.reqs[1].Tools) != 1 {
		t.Fatalf("tool message = %+v", tm)
	}
	// Round 2 repeats round 1's call: answered without running it.
	r3 := m.reqs[2].Messages
	if c := r3[len(r3)-1].Content; !strings.HasPrefix(c, "You already called add") {
		t.Fatalf("repeated call answer = %q", c)
	}
	// After 3 rounds: the final prompt, with no tools.
	r4 := m.reqs[3].Messages
	if c := r4[len(r4)-1].Content; !strings.Contains(c, "limit of tool calls") || len(m.reqs[3].Tools) != 0 {
		t.Fatalf("final prompt = %q, tools %d", c, len(m.reqs[3].Tools))
	}
	if len(s.ToolCalls) != 3 || !strings.Contains(s.ToolCalls[2].Result, "6") {
		t.Fatalf("tool calls = %+v", s.ToolCalls)
	}
	_, recs := run.forest(t)
	if count(recs, logs.KindToolCall) != 3 || count(recs, logs.KindModelCall) != 4 {
		t.Fatalf("records: %d tool calls, %d model calls", count(recs, logs.KindToolCall), count(recs, logs.KindModelCall))
	}
	// The tools stay in force after plain text arrives (reference bug).
	a.Receive("and now 5+5?")
	m.replies = []any{toolCall("c4", "add", `{"a":5,"b":5}`), text("10")}
	if _, _, err := a.Respond(t.Context()); err != nil || len(m.reqs[4].Tools) != 1 {
		t.Fatalf("tools after Receive: %v, err %v", m.reqs[4].Tools, err)
	}
}

func TestRespondRetriesTransientErrors(t *testing.T) {
	rate := &provider.Error{Kind: provider.ErrRateLimit, Provider: "mock", Status: 429, Retry: 20 * time.Millisecond}
	m := &script{replies: []any{rate, &provider.Error{Kind: provider.ErrServer, Status: 500}, text("ok")}}
	a, run := newAgent(t, m, nil)
	var notices []Retry
	a.Retrying = func(r Retry) { notices = append(notices, r) }
	a.Receive("hi")
	start := time.Now()
	reply, s, err := a.Respond(t.Context())
	if err != nil || reply.Content != "ok" || len(s.Calls) != 3 {
		t.Fatalf("reply %v err %v calls %d", reply, err, len(s.Calls))
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("Retry-After was not honoured")
	}
	most := a.Limits.MaxRetries
	if len(notices) != 2 ||
		notices[0].Agent != a.Name || notices[0].Attempt != 1 || notices[0].Left != most || notices[0].Err != rate || notices[0].Wait < 20*time.Millisecond ||
		notices[1].Attempt != 2 || notices[1].Left != most-1 || notices[1].Err.Kind != provider.ErrServer || notices[1].Wait <= 0 {
		t.Fatalf("retry notices = %+v", notices)
	}
	_, recs := run.forest(t)
	var attempts []int
	for _, r := range recs {
		if r.Kind == logs.KindModelCall {
			attempts = append(attempts, r.ModelCall.Attempt)
			if r.ModelCall.Attempt == 1 && (r.ModelCall.Error == nil || r.ModelCall.Error.Type != "rate_limit" || r.ModelCall.Error.RetryAfterMS != 20) {
				t.Fatalf("first call record = %+v", r.ModelCall.Error)
			}
		}
	}
	if len(attempts) != 3 || attempts[2] != 3 {
		t.Fatalf("attempts = %v", attempts)
	}

	// Never forever: MaxRetries bounds it; a bad request is not retried.
	errs := make([]any, 10)
	for i := range errs {
		errs[i] = &provider.Error{Kind: provider.ErrServer, Status: 503}
	}
	m2 := &script{replies: errs}
	a2, _ := newAgent(t, m2, nil)
	a2.Limits.MaxRetries = 2
	a2.Receive("hi")
	if _, _, err := a2.Respond(t.Context()); err == nil || len(m2.reqs) != 3 {
		t.Fatalf("err %v after %d requests, want 3", err, len(m2.reqs))
	}
	m3 := &script{replies: []any{&provider.Error{Kind: provider.ErrBadRequest, Status: 400}, text("never")}}
	a3, _ := newAgent(t, m3, nil)
	a3.Receive("hi")
	if _, s, err := a3.Respond(t.Context()); err == nil || len(m3.reqs) != 1 || s.State != "error" {
		t.Fatalf("bad request retried: %d requests", len(m3.reqs))
	}
	// MaxLLMRecall makes any error again, at once.
	m4 := &script{replies: []any{&provider.Error{Kind: provider.ErrBadRequest, Status: 400}, text("ok")}}
	a4, _ := newAgent(t, m4, nil)
	a4.Limits.MaxLLMRecall = 2
	notices = nil
	a4.Retrying = func(r Retry) { notices = append(notices, r) }
	a4.Receive("hi")
	if reply, _, err := a4.Respond(t.Context()); err != nil || reply.Content != "ok" {
		t.Fatalf("recall: %v %v", reply, err)
	}
	if len(notices) != 1 || notices[0].Wait != 0 || notices[0].Left != 2 || notices[0].Err.Kind != provider.ErrBadRequest {
		t.Fatalf("recall notices = %+v", notices)
	}
}

func TestAgentAliases(t *testing.T) {
	a := &Agent{Name: "solver", System: dialog.MustPrompt("sys", "You are {role}."), Model: &script{}, Limits: DefaultLimits()}
	if err := a.Open("main", nil); err == nil || !strings.Contains(err.Error(), "role") {
		t.Fatalf("missing system prompt variable: %v", err)
	}
	if err := a.Open("main", map[string]any{"role": "a solver"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Open("main", nil); err == nil || !strings.Contains(err.Error(), `dialog "main" is already open`) {
		t.Fatalf("duplicate alias: %v", err)
	}
	// '#' names Respond's working copies, so the log can tell them apart.
	if err := a.Open("main#1", nil); err == nil || !strings.Contains(err.Error(), `"main#1" has '#', which is reserved`) {
		t.Fatalf("alias with '#': %v", err)
	}
	if err := a.Fork("main", "x#2", 0, 0, false); err == nil || !strings.Contains(err.Error(), "reserved for the working copies") {
		t.Fatalf("fork to an alias with '#': %v", err)
	}
	if err := a.Open("", nil); err == nil || !strings.Contains(err.Error(), "non-empty alias") {
		t.Fatalf("empty alias: %v", err)
	}
	if err := a.Switch("nope"); err == nil || !strings.Contains(err.Error(), `no dialog "nope" (open: main)`) {
		t.Fatalf("switch error = %v", err)
	}
	if err := a.Open("other", map[string]any{"role": "a critic"}); err != nil {
		t.Fatal(err)
	}
	d, _ := a.Dialog("")
	if d.Alias() != "other" || d.Head().Content != "You are a critic." || d.Head().Role != dialog.RoleSystem {
		t.Fatalf("current dialog %s head %q", d.Alias(), d.Head().Content)
	}
	a.Receive("draft one")
	if err := a.Fork("other", "branch", 1, 1, true); err != nil {
		t.Fatal(err)
	}
	b, _ := a.Dialog("")
	if b.Alias() != "branch" || b.Len() != 2 || b.Node().ParentID != d.ID() {
		t.Fatalf("fork: %s %d", b.Alias(), b.Len())
	}
	if err := a.Close("branch"); err != nil {
		t.Fatal(err)
	}
	if err := a.Receive("x"); err == nil {
		t.Fatal("Receive with the current dialog closed succeeded")
	}
	a.Model = nil
	if _, _, err := a.Respond(t.Context()); err == nil || !strings.Contains(err.Error(), "has no model") {
		t.Fatalf("Respond without a model = %v", err)
	}
}

// An Open whose system prompt cannot be rendered leaves nothing in the
// log: no dialog the agent never held.
func TestFailedOpenLogsNothing(t *testing.T) {
	a, run := newAgent(t, &script{}, nil)
	a.System = dialog.MustPrompt("sys", "You are {role}.")
	_, before := run.forest(t)
	if err := a.Open("other", nil); err == nil || !strings.Contains(err.Error(), "role") {
		t.Fatalf("missing system prompt variable: %v", err)
	}
	if _, recs := run.forest(t); len(recs) != len(before) {
		t.Fatalf("the failed Open wrote %d records", len(recs)-len(before))
	}
	if _, err := a.Dialog("other"); err == nil {
		t.Fatal("the failed Open left a dialog")
	}
}

func TestBackoffBoundsAndZeroLimits(t *testing.T) {
	l := Limits{BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second}
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 9: time.Second, 80: time.Second} {
		for range 50 {
			if d := l.backoff(n, 0); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", n, d, want/2, want)
			}
		}
	}
	if d := l.backoff(1, 3*time.Second); d != 3*time.Second {
		t.Fatalf("Retry-After not honoured: %v", d)
	}
	if (Limits{}).Resolved() != DefaultLimits() {
		t.Fatal("zero Limits do not mean DefaultLimits")
	}
	if d := (Limits{BackoffBase: -1}).Resolved().backoff(3, 0); d != 0 {
		t.Fatalf("no backoff waits %v", d)
	}
	if d := (Limits{BackoffBase: -1}).Resolved().backoff(3, time.Second); d != time.Second {
		t.Fatalf("no backoff does not honour Retry-After: %v", d)
	}
}

// A Limits literal changes the fields it names: the others take their
// defaults, and a negative field means none.
func TestLimitsFieldsDefaultAlone(t *testing.T) {
	got := Limits{MaxExceptionRetry: 1, MaxInterruptSteps: -1, CallTimeout: -5, MaxToolOutput: 10}.Resolved()
	want := DefaultLimits()
	want.MaxExceptionRetry, want.MaxInterruptSteps, want.CallTimeout, want.MaxToolOutput = 1, -1, -1, 10
	if got != want {
		t.Fatalf("Resolved = %+v, want %+v", got, want)
	}
	if got.Resolved() != got {
		t.Fatal("Resolved of a resolved value changed it")
	}
}

// A model that asks for tools after they were withdrawn gets every call
// answered (so the wire protocol holds) and a bounded number of chances.
func TestToolCallsAfterWithdrawal(t *testing.T) {
	add, _ := dialog.NewFunction("add", "adds", func(_ context.Context, in struct{ A, B int }) (int, error) { return in.A + in.B, nil })
	p := dialog.MustPrompt("calc", "Compute.", dialog.WithFunctions(add))
	m := &script{replies: []any{toolCall("c1", "add", `{"A":1,"B":2}`), toolCall("c2", "add", `{"A":2,"B":2}`), text("3")}}
	a, run := newAgent(t, m, nil)
	a.Limits.MaxInterruptSteps = 1
	a.ReceivePrompt(p, nil)
	reply, s, err := a.Respond(t.Context())
	if err != nil || reply.Content != "3" || len(s.ToolCalls) != 2 || s.ToolCalls[1].Error == "" {
		t.Fatalf("reply %v err %v calls %+v", reply, err, s.ToolCalls)
	}
	last := m.reqs[2].Messages
	if tm := last[len(last)-1]; tm.Role != dialog.RoleTool || tm.ToolCallID != "c2" || !strings.Contains(tm.Content, "no tools are available") || len(m.reqs[2].Tools) != 0 {
		t.Fatalf("answer to a withdrawn call = %+v", tm)
	}
	_, recs := run.forest(t)
	if count(recs, logs.KindToolCall) != 2 {
		t.Fatalf("%d tool_call records", count(recs, logs.KindToolCall))
	}

	calls := make([]any, 10)
	for i := range calls {
		calls[i] = toolCall(fmt.Sprintf("c%d", i), "add", fmt.Sprintf(`{"A":%d,"B":0}`, i))
	}
	m2 := &script{replies: calls}
	a2, _ := newAgent(t, m2, nil)
	a2.Limits.MaxInterruptSteps, a2.Limits.MaxExceptionRetry = 1, 2
	a2.ReceivePrompt(p, nil)
	if _, _, err := a2.Respond(t.Context()); err == nil || !strings.Contains(err.Error(), "withdrawn") || len(m2.reqs) != 4 {
		t.Fatalf("err %v after %d requests, want an error after 4", err, len(m2.reqs))
	}
}

// positions is a script that also records the CallInfo of every call.
type positions struct {
	script
	got []provider.CallInfo
}

func (p *positions) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	ci, _ := provider.CallInfoFrom(ctx)
	p.mu.Lock()
	p.got = append(p.got, ci)
	p.mu.Unlock()
	return p.script.Generate(ctx, req)
}

// Every call carries its position (agent, alias, turn, attempt) to the
// model and into its model_call record; retries share a turn, parse
// retries and other dialogs take their own.
func TestCallPositions(t *testing.T) {
	m := &positions{script: script{replies: []any{
		&provider.Error{Kind: provider.ErrServer, Err: errors.New("boom")},
		text("no tags"), text("<answer>4</answer>"), text("<answer>5</answer>"),
	}}}
	a, run := newAgent(t, m, nil)
	if err := a.ReceivePrompt(answerPrompt, map[string]any{"task": "2+2"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a.Fork("main", "side", 0, 0, true); err != nil {
		t.Fatal(err)
	}
	if err := a.Receive("and?"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []provider.CallInfo{
		{Agent: "solver", Dialog: "main", Turn: 1, Attempt: 1},
		{Agent: "solver", Dialog: "main", Turn: 1, Attempt: 2},
		{Agent: "solver", Dialog: "main", Turn: 2, Attempt: 1},
		{Agent: "solver", Dialog: "side", Turn: 1, Attempt: 1},
	}
	if fmt.Sprint(m.got) != fmt.Sprint(want) {
		t.Fatalf("call positions:\n got %v\nwant %v", m.got, want)
	}
	_, recs := run.forest(t)
	var logged []provider.CallInfo
	for _, r := range recs {
		if mc := r.ModelCall; mc != nil {
			logged = append(logged, provider.CallInfo{Agent: mc.Agent, Dialog: mc.Alias, Turn: mc.Turn, Attempt: mc.Attempt})
		}
	}
	if fmt.Sprint(logged) != fmt.Sprint(want) {
		t.Fatalf("logged positions:\n got %v\nwant %v", logged, want)
	}
}

// An agent built without a name is named "agent (unnamed)" in its errors,
// not "agent " and a gap.
func TestUnnamedAgentErrors(t *testing.T) {
	if got := AgentLabel("solver"); got != "agent solver" {
		t.Errorf("AgentLabel(solver) = %q", got)
	}
	a := &Agent{}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.HasPrefix(err.Error(), "agent (unnamed)") || strings.Contains(err.Error(), "agent  ") {
			t.Errorf("%s: %v, want an error naming the agent (unnamed)", what, err)
		}
	}
	_, _, err := a.Respond(t.Context())
	check("Respond without a model", err)
	a.Model = &script{}
	_, _, err = a.Respond(t.Context())
	check("Respond without a dialog", err)
	check("Open with no alias", a.Open("", nil))
	check("Open with '#'", a.Open("a#1", nil))
	check("Switch to a dialog never opened", a.Switch("nope"))
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	check("Open twice", a.Open("main", nil))
	_, _, err = a.Respond(t.Context()) // the script has no reply
	check("Respond failing", err)
}

// An Agent whose Log is a nil *logs.Writer (an interface that is not nil)
// fails with an error saying so, and does not panic.
func TestAgentNilWriterLog(t *testing.T) {
	var w *logs.Writer
	a := &Agent{Name: "a", System: dialog.MustPrompt("sys", "Hi."), Model: &script{replies: []any{text("ok")}}, ModelName: "script/test", Log: w}
	err := a.Open("main", nil)
	if err == nil {
		if err = a.Receive("hello"); err == nil {
			_, _, err = a.Respond(t.Context())
		}
	}
	if err == nil || !strings.Contains(err.Error(), "nil *logs.Writer") {
		t.Fatalf("err = %v, want the nil writer named", err)
	}
}
