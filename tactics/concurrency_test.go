package tactics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
)

// The promise under test, from the README: "every dialog, fork, model call
// and tool call is recorded as it happens in a durable, versioned run log,
// so a run can be rebuilt into its dialog tree". Here it is checked while
// many goroutines drive their own aliases of shared agents, several agents
// share one log (a file from logs.Create and a buffer), and a Batch runs a
// tactic that answers on goroutines and calls sub-tactics: the forest
// rebuilt from the log must equal the dialogs the run held in memory, and
// the log's model_call and tool_call records the sessions' calls. Around
// that: the log's order (seq, ts, run_end last) when it is finished while
// agents still work, Close of one alias while another is mid-Respond, a
// Forest mirroring the dialogs live, and call positions (what replay
// matches calls by) that are unique and do not depend on which goroutine
// the scheduler runs first.

// concModel is a deterministic scripted model, safe for concurrent use.
// What it answers depends on the request alone (and the call's position):
//
//   - a last user message with "[tool]" (and no tool result after it): two
//     calls of add, with ids made of the call's position;
//   - a tool result last: an answer;
//   - "[neverparse]" anywhere: "no tags", which the answer parser refuses;
//   - a last user message with "[badparse]": "no tags" (the exception prompt
//     that follows is a new last user message, answered properly);
//   - a last user message with "[flaky]": a rate limit on a call's first
//     attempt, then an answer;
//   - a last user message with "[boom]": an authentication error;
//   - otherwise "<answer>agent/alias/turn</answer>".
//
// With record set, it keeps every request by its position, and notes a
// position seen twice or a call without one.
type concModel struct {
	record bool
	// hold, when set, runs before each call is answered: a test blocks a
	// call there.
	hold func(ctx context.Context, ci provider.CallInfo) error
	// latency is how long each call takes, cut short by its context.
	latency time.Duration

	calls atomic.Int64

	mu       sync.Mutex
	requests map[provider.CallInfo]concCall
	problems []string
}

// concCall is one call as the model saw it.
type concCall struct {
	req   *provider.Request
	reply *dialog.Message // nil when the call failed
}

func (m *concModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	m.calls.Add(1)
	ci, ok := provider.CallInfoFrom(ctx)
	if m.hold != nil {
		if err := m.hold(ctx, ci); err != nil {
			return nil, err
		}
	}
	if m.latency > 0 {
		select {
		case <-time.After(m.latency):
		case <-ctx.Done():
			return nil, &provider.Error{Kind: provider.ErrCancelled, Provider: "conc", Err: ctx.Err()}
		}
	}
	reply, err := concReply(ci, req)
	if m.record {
		m.mu.Lock()
		if m.requests == nil {
			m.requests = map[provider.CallInfo]concCall{}
		}
		if !ok {
			m.problems = append(m.problems, "a model call without its position (provider.CallInfo)")
		}
		if _, dup := m.requests[ci]; dup {
			m.problems = append(m.problems, fmt.Sprintf("two model calls at position %+v", ci))
		}
		c := concCall{req: req}
		if reply != nil {
			kept := *reply // the agent renames its copy
			c.reply = &kept
		}
		m.requests[ci] = c
		m.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	return &provider.Response{Message: *reply}, nil
}

func concReply(ci provider.CallInfo, req *provider.Request) (*dialog.Message, error) {
	if len(req.Messages) == 0 {
		return nil, &provider.Error{Kind: provider.ErrBadRequest, Provider: "conc", Status: 400, Err: errors.New("no messages")}
	}
	last := req.Messages[len(req.Messages)-1]
	lastUser := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == dialog.RoleUser {
			lastUser = req.Messages[i].Text()
			break
		}
	}
	never := false
	for _, m := range req.Messages {
		never = never || strings.Contains(m.Text(), "[neverparse]")
	}
	pos := fmt.Sprintf("%s/%s/%d", ci.Agent, ci.Dialog, ci.Turn)
	m := &dialog.Message{Role: dialog.RoleAssistant, Modality: dialog.ModalityText}
	switch {
	case last.Role == dialog.RoleUser && strings.Contains(lastUser, "[tool]"):
		m.Role, m.Content = dialog.RoleToolCall, ""
		m.FunctionCalls = []dialog.FunctionCall{
			{ID: "call-" + pos + "-a", Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"a":%d,"b":2}`, ci.Turn))},
			{ID: "call-" + pos + "-b", Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"a":%d,"b":%d}`, len(req.Messages), ci.Turn))},
		}
	case last.Role == dialog.RoleTool:
		m.Content = "<answer>tools said " + last.Text() + "</answer>"
	case never:
		m.Content = "no tags"
	case last.Role == dialog.RoleUser && strings.Contains(lastUser, "[badparse]"):
		m.Content = "no tags"
	case last.Role == dialog.RoleUser && strings.Contains(lastUser, "[boom]"):
		return nil, &provider.Error{Kind: provider.ErrAuth, Provider: "conc", Status: 401, Err: errors.New("bad key")}
	case last.Role == dialog.RoleUser && strings.Contains(lastUser, "[flaky]") && ci.Attempt == 1:
		return nil, &provider.Error{Kind: provider.ErrRateLimit, Provider: "conc", Status: 429, Err: errors.New("slow down")}
	default:
		m.Content = "<answer>" + pos + "</answer>"
	}
	in, out := 7*len(req.Messages)+3, 4+ci.Turn%5
	m.Usage = dialog.Usage{InputTokens: in, CachedInputTokens: len(req.Messages), OutputTokens: out, ReasoningTokens: 1}
	m.USD = float64(in)*1.5e-7 + float64(out)*6e-7
	m.Model = "conc/model"
	return m, nil
}

// concPrompt is the prompt the goroutines answer under: it offers add and
// wants an <answer>. Prompts are immutable, so one serves every test.
var concPrompt = sync.OnceValue(func() *dialog.Prompt {
	add, err := dialog.NewFunction("add", "adds two numbers", func(_ context.Context, in struct {
		A int `json:"a"`
		B int `json:"b"`
	}) (int, error) {
		return in.A + in.B, nil
	})
	if err != nil {
		panic(err)
	}
	return dialog.MustPrompt("conc/ask", "Work on {task}. Answer in <answer></answer>.", dialog.WithFunctions(add),
		dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
})

func concLimits() Limits {
	lim := DefaultLimits()
	lim.MaxExceptionRetry, lim.MaxInterruptSteps, lim.MaxRetries = 1, 3, 3
	lim.BackoffBase, lim.BackoffMax = time.Microsecond, time.Microsecond
	return lim
}

// noWait is an Agent.Sleep that does not wait out a backoff.
func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// concExpect is what a run held in memory: the dialogs it made (canonical
// ones, by id, which the agents hand out) and the sessions of every
// Respond, grouped by the Agent value that made them.
type concExpect struct {
	mu     sync.Mutex
	canon  map[string]*dialog.Dialog
	groups map[string][]*CallSession // by agent instance
	model  *concModel                // nil when the model kept no requests
}

func (e *concExpect) dialog(d *dialog.Dialog) {
	if d == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.canon == nil {
		e.canon = map[string]*dialog.Dialog{}
	}
	e.canon[d.ID()] = d
}

func (e *concExpect) session(group string, s *CallSession) {
	if s == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.groups == nil {
		e.groups = map[string][]*CallSession{}
	}
	e.groups[group] = append(e.groups[group], s)
}

func (e *concExpect) sessions() []*CallSession {
	var all []*CallSession
	for _, g := range slices.Sorted(maps.Keys(e.groups)) {
		all = append(all, e.groups[g]...)
	}
	return all
}

// noPanic runs f, turning a panic into a test error.
func noPanic(t *testing.T, what string, f func() error) (err error) {
	t.Helper()
	defer func() {
		if v := recover(); v != nil {
			t.Errorf("%s panicked: %v", what, v)
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return f()
}

// driveAlias is one goroutine's work on its own alias x of agent a: open
// it (or fork it from the shared "hub"), a tool round, a full and a
// partial fork, a parse retry, a rate-limit retry, a Respond that never
// parses, a closed alias answered with an error, and a second tool round.
// cur guards the agent's current dialog: Open, Fork with switchTo and
// Switch move it, and Receive and Respond use it.
func driveAlias(ctx context.Context, t *testing.T, a *Agent, cur *sync.Mutex, e *concExpect, ask *dialog.Prompt, x string, fromHub int) {
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("agent %s, alias %s: %s", a.Name, x, fmt.Sprintf(format, args...))
	}
	note := func(alias string) {
		d, err := a.Dialog(alias)
		if err != nil {
			fail("Dialog(%q): %v", alias, err)
			return
		}
		e.dialog(d)
	}
	respond := func(alias string, current bool, want string) {
		var (
			reply *dialog.Message
			s     *CallSession
			err   error
		)
		perr := noPanic(t, "Respond", func() error {
			if current {
				reply, s, err = a.Respond(ctx)
			} else {
				reply, s, err = a.RespondTo(ctx, alias)
			}
			return nil
		})
		if perr != nil {
			return
		}
		e.session(a.Name, s)
		if s == nil {
			fail("Respond on %s returned no session (err %v)", alias, err)
			return
		}
		if s.State != want {
			fail("Respond on %s: state %s, want %s (err %v)", alias, s.State, want, err)
		}
		if want == "ok" && (err != nil || reply == nil || !strings.HasPrefix(reply.Content, "<answer>")) {
			fail("Respond on %s: reply %v, err %v", alias, reply, err)
		}
		if want != "ok" && err == nil {
			fail("Respond on %s: no error for state %s", alias, s.State)
		}
	}

	// 1. Open (or fork from the hub) and put the prompt that offers tools.
	cur.Lock()
	var err error
	switch {
	case fromHub < 0:
		err = a.Open(x, map[string]any{"n": a.Name})
	default:
		err = a.Fork("hub", x, fromHub, 1, true)
	}
	if err == nil {
		err = a.ReceivePrompt(ask, map[string]any{"task": x + " [tool]"})
	}
	cur.Unlock()
	if err != nil {
		fail("open: %v", err)
		return
	}
	note(x)
	// 2. A tool round: two calls of add, then the answer.
	respond(x, false, "ok")

	// 3. A full fork and a partial one (system prompt + the last two).
	if err := a.Fork(x, x+"f", 0, 0, false); err != nil {
		fail("fork: %v", err)
		return
	}
	note(x + "f")
	if err := a.Fork(x, x+"k", 2, 1, false); err != nil {
		fail("fork: %v", err)
		return
	}
	note(x + "k")

	// 4. A reply that fails to parse, fixed on a second attempt.
	cur.Lock()
	err = a.Switch(x + "f")
	if err == nil {
		err = a.Receive("more please [badparse]")
	}
	cur.Unlock()
	if err != nil {
		fail("switch and receive: %v", err)
		return
	}
	respond(x+"f", false, "ok")

	// 5. A rate limit, retried within the same turn, through Respond on the
	// current dialog.
	cur.Lock()
	err = a.Switch(x + "k")
	if err == nil {
		err = a.Receive("go on [flaky]")
	}
	if err == nil {
		respond(x+"k", true, "ok")
	}
	// 6. A Respond that never parses: every attempt stays a failed branch.
	if err == nil {
		err = a.Fork(x+"k", x+"n", 0, 0, true)
	}
	if err == nil {
		note(x + "n")
		err = a.Receive("give up [neverparse]")
	}
	cur.Unlock()
	if err != nil {
		fail("steps 5 and 6: %v", err)
		return
	}
	respond(x+"n", false, "parse_failed")

	// 7. A closed alias, and one that never was: clear errors, no panic.
	if err := a.Close(x + "k"); err != nil {
		fail("close: %v", err)
	}
	for _, gone := range []string{x + "k", x + "zz"} {
		noPanic(t, "RespondTo a closed alias", func() error {
			_, s, err := a.RespondTo(ctx, gone)
			if err == nil || s != nil || !strings.Contains(err.Error(), strconv.Quote(gone)) {
				fail("RespondTo(%q) after Close: session %v, err %v; want an error naming the alias", gone, s, err)
			}
			return nil
		})
	}
	if err := a.Close(x + "k"); err == nil {
		fail("closing %sk twice is not an error", x)
	}
	if err := a.Switch(x + "k"); err == nil {
		fail("switching to the closed %sk is not an error", x)
	}

	// 8. A second tool round on x, with Receive through Switch.
	cur.Lock()
	err = a.Switch(x)
	if err == nil {
		err = a.Receive("again [tool]")
	}
	cur.Unlock()
	if err != nil {
		fail("receive again: %v", err)
		return
	}
	respond(x, false, "ok")
	if err := a.Close(x + "n"); err != nil {
		fail("close: %v", err)
	}
}

// runAgents drives agents × aliases goroutines on agents sharing log, and
// one goroutine per agent that grows the agent's "hub" dialog while the
// others fork it.
func runAgents(t *testing.T, log Log, agents, aliases int) *concExpect {
	t.Helper()
	m := &concModel{record: true}
	e := &concExpect{model: m}
	ask := concPrompt()
	ctx := t.Context()
	var wg sync.WaitGroup
	for i := range agents {
		a := &Agent{Name: fmt.Sprintf("agent%d", i), System: dialog.MustPrompt("conc/sys", "You are agent {n}."),
			Model: m, ModelName: "conc/model", Limits: concLimits(), Sleep: noWait, Log: log}
		if err := a.Open("hub", map[string]any{"n": i}); err != nil {
			t.Fatal(err)
		}
		hub, _ := a.Dialog("hub")
		e.dialog(hub)
		if err := a.Receive("hub opens"); err != nil {
			t.Fatal(err)
		}
		cur := new(sync.Mutex)
		wg.Go(func() {
			for k := range 4 {
				if _, err := hub.PutText(fmt.Sprintf("hub news %d", k)); err != nil {
					t.Errorf("hub: %v", err)
					return
				}
				_, s, err := a.RespondTo(ctx, "hub")
				e.session(a.Name, s)
				if err != nil {
					t.Errorf("hub: %v", err)
					return
				}
			}
		})
		for j := range aliases {
			fromHub := -1 // open
			if j%2 == 1 {
				fromHub = j % 4 // fork the hub: whole (0) or its first and last messages
			}
			wg.Go(func() { driveAlias(ctx, t, a, cur, e, ask, fmt.Sprintf("g%d", j), fromHub) })
		}
	}
	wg.Wait()
	return e
}

// readLog returns every record of a log and checks the order the format
// promises: run_start first, seq 1, 2, 3, ... in file order, times that
// never decrease, exactly one run_end, and nothing after it.
func readLog(t *testing.T, rd *logs.Reader) []*logs.Record {
	t.Helper()
	var recs []*logs.Record
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the log: %v", err)
		}
		recs = append(recs, rec)
	}
	if w := rd.Warnings(); len(w) > 0 {
		t.Errorf("reader warnings: %v", w)
	}
	if len(recs) < 2 || recs[0].Kind != logs.KindRunStart {
		t.Fatalf("log of %d records does not start with run_start", len(recs))
	}
	ends := 0
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d in file order has seq %d: sequence numbers must be 1, 2, 3, ... in file order", i+1, r.Seq)
		}
		if i > 0 && r.Time.Before(recs[i-1].Time) {
			t.Errorf("record %d (%s) is dated %v, before record %d (%v)", r.Seq, r.Kind, r.Time, i, recs[i-1].Time)
		}
		if r.Kind == logs.KindRunEnd {
			ends++
			if i != len(recs)-1 {
				t.Errorf("run_end is record %d of %d: %d records follow it", r.Seq, len(recs), len(recs)-1-i)
			}
		}
	}
	if ends != 1 {
		t.Errorf("%d run_end records, want 1", ends)
	}
	return recs
}

func msgJSON(t *testing.T, m *dialog.Message) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("encoding a message: %v", err)
	}
	return string(b)
}

func sameMessages(t *testing.T, what string, got, want []*dialog.Message) bool {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d messages in the log, %d in memory", what, len(got), len(want))
		return false
	}
	for i := range got {
		if g, w := msgJSON(t, got[i]), msgJSON(t, want[i]); g != w {
			t.Errorf("%s: message %d differs:\n log    %s\n memory %s", what, i, g, w)
			return false
		}
	}
	return true
}

// checkRebuild compares the forest rebuilt from a log, and the log's
// records, with what the run held in memory.
func checkRebuild(t *testing.T, recs []*logs.Record, f *dialog.Forest, e *concExpect) {
	t.Helper()
	sessions := e.sessions()
	end := recs[len(recs)-1].RunEnd
	if end == nil {
		t.Fatal("the log does not end with run_end")
	}

	// Every dialog: the tactic's and every attempt's, nothing else.
	session := map[string]*CallSession{} // attempt id -> its session
	attempt := map[string]int{}          // attempt id -> its number from 1
	for _, s := range sessions {
		if _, ok := e.canon[s.Dialog]; !ok {
			t.Errorf("a session answered dialog %s, which the run did not hand out", s.Dialog)
		}
		for k, id := range s.Attempts {
			if session[id] != nil {
				t.Errorf("attempt %s belongs to two sessions", id)
			}
			session[id], attempt[id] = s, k+1
		}
	}
	want := map[string]bool{}
	for id := range e.canon {
		want[id] = true
	}
	for id := range session {
		want[id] = true
	}
	got := map[string]bool{}
	for _, id := range f.IDs() {
		got[id] = true
		if !want[id] {
			t.Errorf("the log has dialog %s (%+v), which is neither a dialog of the run nor an attempt", id, f.Dialog(id).Node())
		}
	}
	for id := range want {
		if !got[id] {
			t.Errorf("dialog %s of the run is not in the log", id)
		}
	}
	if end.Totals.Dialogs != f.Len() || f.Len() != len(want) {
		t.Errorf("run_end counts %d dialogs, the log rebuilds %d, the run made %d", end.Totals.Dialogs, f.Len(), len(want))
	}

	// The tactic's dialogs: the same node (parent, split point, children
	// in order) and the same messages.
	for id, d := range e.canon {
		fd := f.Dialog(id)
		if fd == nil {
			continue
		}
		if g, w := fd.Node(), d.Node(); !reflect.DeepEqual(g, w) {
			t.Errorf("dialog %s (%s):\n log    %+v\n memory %+v", id, w.Alias, g, w)
		}
		sameMessages(t, "dialog "+d.Alias()+" "+id, fd.Messages(), d.Messages())
	}

	// Every attempt is a branch: "A#1" forked whole from A, "A#k" from
	// "A#k-1".
	for id, s := range session {
		fd := f.Dialog(id)
		if fd == nil {
			continue
		}
		n, k := fd.Node(), attempt[id]
		parent := s.Dialog
		if k > 1 {
			parent = s.Attempts[k-2]
		}
		wantAlias := s.alias + "#" + strconv.Itoa(k)
		pd := f.Dialog(parent)
		if n.Alias != wantAlias || n.Owner != s.Agent || n.ParentID != parent || n.LastN != 0 || n.FirstK != 0 ||
			n.SplitPoint != n.ParentLen || pd == nil || n.Depth != pd.Node().Depth+1 {
			t.Errorf("attempt %d of a Respond on %s: node %+v, want alias %s, parent %s, a whole fork", k, s.alias, n, wantAlias, parent)
		}
		if k < len(s.Attempts) {
			if c := n.ChildrenIDs; len(c) != 1 || c[0] != s.Attempts[k] {
				t.Errorf("attempt %d of a Respond on %s has children %v, want the next attempt %s", k, s.alias, c, s.Attempts[k])
			}
		} else if len(n.ChildrenIDs) != 0 {
			t.Errorf("last attempt of a Respond on %s has children %v", s.alias, n.ChildrenIDs)
		}
	}

	// Model calls: the session's, attempt by attempt, in order.
	byDialog := map[string][]*logs.Record{}
	var mcs, tcs []*logs.Record
	messages := 0
	for _, r := range recs {
		switch r.Kind {
		case logs.KindModelCall:
			mcs = append(mcs, r)
			byDialog[r.Dialog] = append(byDialog[r.Dialog], r)
		case logs.KindToolCall:
			tcs = append(tcs, r)
			byDialog[r.Dialog] = append(byDialog[r.Dialog], r)
		case logs.KindMessage:
			messages++
		}
	}
	var cost dialog.Cost
	calls, toolCalls := 0, 0
	for _, s := range sessions {
		cost = cost.Add(s.Cost)
		calls += len(s.Calls)
		toolCalls += len(s.ToolCalls)
		var sc dialog.Cost
		ci, ti := 0, 0
		for _, id := range s.Attempts {
			for _, r := range byDialog[id] {
				if mc := r.ModelCall; mc != nil {
					if ci >= len(s.Calls) {
						t.Errorf("Respond on %s: the log has more model calls than its session's %d", s.alias, len(s.Calls))
						break
					}
					c := s.Calls[ci]
					ci++
					if c.Dialog != id || c.Attempt != mc.Attempt || c.Digest != mc.RequestDigest || c.Usage != mc.Usage ||
						c.USD != mc.USD || (c.Err != nil) != (mc.Error != nil) || mc.Agent != s.Agent {
						t.Errorf("Respond on %s: call %d of the session %+v, in the log %+v", s.alias, ci, c, mc)
					}
					sc = sc.Add(dialog.Cost{Usage: mc.Usage, USD: mc.USD})
				}
				if tc := r.ToolCall; tc != nil {
					if ti >= len(s.ToolCalls) {
						t.Errorf("Respond on %s: the log has more tool calls than its session's %d", s.alias, len(s.ToolCalls))
						break
					}
					fc := s.ToolCalls[ti]
					ti++
					if tc.CallID != fc.ID || tc.Name != fc.Name || string(tc.Arguments) != string(fc.Arguments) ||
						tc.Result != fc.Result || tc.Error != fc.Error || tc.Agent != s.Agent {
						t.Errorf("Respond on %s: tool call %d of the session %+v, in the log %+v", s.alias, ti, fc, tc)
					}
				}
			}
		}
		if ci != len(s.Calls) || ti != len(s.ToolCalls) {
			t.Errorf("Respond on %s: session has %d model and %d tool calls, its attempts' records %d and %d",
				s.alias, len(s.Calls), len(s.ToolCalls), ci, ti)
		}
		if sc.Usage != s.Cost.Usage || math.Abs(sc.USD-s.Cost.USD) > 1e-12 {
			t.Errorf("Respond on %s: session cost %+v, its model_call records %+v", s.alias, s.Cost, sc)
		}
	}
	var logged dialog.Cost
	for _, r := range mcs {
		logged = logged.Add(dialog.Cost{Usage: r.ModelCall.Usage, USD: r.ModelCall.USD})
		if session[r.Dialog] == nil {
			t.Errorf("model_call %d is on dialog %s, which is no Respond's attempt", r.Seq, r.Dialog)
		}
	}
	for _, r := range tcs {
		if session[r.Dialog] == nil {
			t.Errorf("tool_call %d is on dialog %s, which is no Respond's attempt", r.Seq, r.Dialog)
		}
	}
	if len(mcs) != calls || len(tcs) != toolCalls || end.Totals.ModelCalls != calls || end.Totals.ToolCalls != toolCalls {
		t.Errorf("sessions made %d model and %d tool calls; the log has %d and %d records; run_end counts %d and %d",
			calls, toolCalls, len(mcs), len(tcs), end.Totals.ModelCalls, end.Totals.ToolCalls)
	}
	if logged.Usage != cost.Usage || end.Totals.Cost.Usage != cost.Usage ||
		math.Abs(logged.USD-cost.USD) > 1e-9 || math.Abs(end.Totals.Cost.USD-cost.USD) > 1e-9 {
		t.Errorf("cost: sessions %+v, model_call records %+v, run_end %+v", cost, logged, end.Totals.Cost)
	}
	t.Logf("%d records: %d dialogs, %d messages, %d model calls, %d tool calls, %d sessions", len(recs), f.Len(), messages, len(mcs), len(tcs), len(sessions))
	own := 0
	for _, id := range f.IDs() {
		d := f.Dialog(id)
		own += d.Len() - d.Node().SplitPoint
	}
	if end.Totals.Messages != messages || own != messages {
		t.Errorf("run_end counts %d messages; the log has %d message records; the forest %d own messages", end.Totals.Messages, messages, own)
	}

	// A reply's reference resolves, and the attempts hold exactly what the
	// model was sent and answered, tool results paired with their calls.
	for _, r := range mcs {
		mc := r.ModelCall
		d := f.Dialog(r.Dialog)
		if d == nil {
			continue
		}
		if mc.Reply != nil {
			if mc.Reply.Dialog != r.Dialog || d.At(mc.Reply.Index) == nil || d.At(mc.Reply.Index).Role == dialog.RoleUser {
				t.Errorf("model_call %d: reply %+v does not resolve to a reply in its dialog", r.Seq, mc.Reply)
			}
		} else if mc.Error == nil {
			t.Errorf("model_call %d has neither a reply nor an error", r.Seq)
		}
	}
	for id := range session {
		d := f.Dialog(id)
		if d == nil {
			continue
		}
		msgs := d.Messages()
		for i, m := range msgs {
			for j, fc := range m.FunctionCalls {
				if m.Role == dialog.RoleTool {
					break
				}
				k := i + 1 + j
				if k >= len(msgs) || msgs[k].Role != dialog.RoleTool || msgs[k].ToolCallID != fc.ID {
					t.Errorf("attempt %s: tool call %s of message %d is not answered by a tool message right after it", id, fc.ID, i)
				}
			}
		}
	}
	if e.model == nil {
		return
	}
	e.model.mu.Lock()
	defer e.model.mu.Unlock()
	for _, p := range e.model.problems {
		t.Error(p)
	}
	seen := map[provider.CallInfo]bool{}
	lastOn := map[string]*logs.Record{}
	for _, r := range mcs {
		mc := r.ModelCall
		pos := provider.CallInfo{Agent: mc.Agent, Dialog: mc.Alias, Turn: mc.Turn, Attempt: mc.Attempt}
		seen[pos] = true
		c, ok := e.model.requests[pos]
		if !ok {
			t.Errorf("model_call %d at %+v: the model was never called there", r.Seq, pos)
			continue
		}
		d := f.Dialog(r.Dialog)
		if d == nil {
			continue
		}
		n := len(c.req.Messages)
		if d.Len() < n {
			t.Errorf("model_call %d: attempt %s has %d messages, the request sent %d", r.Seq, r.Dialog, d.Len(), n)
			continue
		}
		sameMessages(t, fmt.Sprintf("request of model_call %d", r.Seq), d.Messages()[:n], c.req.Messages)
		if (c.reply == nil) != (mc.Reply == nil) {
			t.Errorf("model_call %d: the model replied %v, the log's reply is %+v", r.Seq, c.reply != nil, mc.Reply)
		}
		if c.reply != nil && mc.Reply != nil {
			if mc.Reply.Index != n {
				t.Errorf("model_call %d: reply at %d, right after the %d messages sent", r.Seq, mc.Reply.Index, n)
			}
			want := *c.reply
			want.Name = mc.Agent
			sameMessages(t, fmt.Sprintf("reply of model_call %d", r.Seq), []*dialog.Message{d.At(mc.Reply.Index)}, []*dialog.Message{&want})
		}
		lastOn[r.Dialog] = r
	}
	for pos := range e.model.requests {
		if !seen[pos] {
			t.Errorf("the model was called at %+v, and the log has no model_call there", pos)
		}
	}
	// Nothing follows an attempt's last reply in it: the attempt is what the
	// model was sent and what it said.
	for id, r := range lastOn {
		if ref := r.ModelCall.Reply; ref != nil && f.Dialog(id).Len() != ref.Index+1 {
			t.Errorf("attempt %s has %d messages after its last reply", id, f.Dialog(id).Len()-ref.Index-1)
		}
	}
}

// checkPositions checks what replay matches calls by: every model_call has
// a position (agent, alias, turn, attempt) of its own; an agent's turns on
// an alias run 1, 2, 3, ... in log order, each turn's attempts 1, 2, ...;
// the alias is the answered dialog's, never a working copy's. And each
// agent numbers its calls 1, 2, 3, ... once each, a call's retries sharing
// its number and turn. groups says which Agent value made each session.
func checkPositions(t *testing.T, recs []*logs.Record, groups map[string][]*CallSession) {
	t.Helper()
	type pos struct {
		agent, alias  string
		turn, attempt int
	}
	seen := map[pos]int64{}
	lastTurn := map[[2]string]int{}
	lastAttempt := map[pos]int{}
	byDialog := map[string][]*logs.ModelCall{}
	for _, r := range recs {
		mc := r.ModelCall
		if mc == nil {
			continue
		}
		byDialog[r.Dialog] = append(byDialog[r.Dialog], mc)
		p := pos{mc.Agent, mc.Alias, mc.Turn, mc.Attempt}
		if prev, dup := seen[p]; dup {
			t.Errorf("model_calls %d and %d share the position %+v: replay cannot tell them apart", prev, r.Seq, p)
		}
		seen[p] = r.Seq
		if mc.Turn < 1 || mc.Attempt < 1 || mc.Call < 1 || mc.Alias == "" || strings.Contains(mc.Alias, "#") {
			t.Errorf("model_call %d has position %+v, call %d", r.Seq, p, mc.Call)
		}
		k := [2]string{mc.Agent, mc.Alias}
		turn := pos{mc.Agent, mc.Alias, mc.Turn, 0}
		switch {
		case mc.Attempt == 1 && mc.Turn == lastTurn[k]+1:
			lastTurn[k] = mc.Turn
		case mc.Attempt > 1 && mc.Turn == lastTurn[k] && mc.Attempt == lastAttempt[turn]+1:
		default:
			t.Errorf("model_call %d: %s on %s turn %d attempt %d follows turn %d attempt %d", r.Seq, mc.Agent, mc.Alias,
				mc.Turn, mc.Attempt, lastTurn[k], lastAttempt[pos{mc.Agent, mc.Alias, lastTurn[k], 0}])
		}
		lastAttempt[turn] = mc.Attempt
	}
	for g, sessions := range groups {
		type call struct {
			alias, dialog string
			turn          int
		}
		numbered := map[int]call{}
		attempts := map[[2]int]bool{}
		for _, s := range sessions {
			for _, id := range s.Attempts {
				for _, mc := range byDialog[id] {
					if mc.Alias != s.alias {
						t.Errorf("%s: a call on %s is logged on alias %q", g, s.alias, mc.Alias)
					}
					c := call{mc.Alias, id, mc.Turn}
					if prev, ok := numbered[mc.Call]; ok && prev != c {
						t.Errorf("%s numbers two calls %d: %+v and %+v", g, mc.Call, prev, c)
					}
					numbered[mc.Call] = c
					if attempts[[2]int{mc.Call, mc.Attempt}] {
						t.Errorf("%s: call %d attempt %d logged twice", g, mc.Call, mc.Attempt)
					}
					attempts[[2]int{mc.Call, mc.Attempt}] = true
				}
			}
		}
		for n := 1; n <= len(numbered); n++ {
			if _, ok := numbered[n]; !ok {
				t.Errorf("%s numbers %d calls but not call %d", g, len(numbered), n)
				break
			}
		}
	}
}

// checkAttempts checks the tree inspect reads from a run's log: every
// attempt but the kept one is a failed branch.
func checkAttempts(t *testing.T, run *logs.Run, sessions []*CallSession, want dialog.Cost) {
	t.Helper()
	tree, _, err := inspect.Load(t.Context(), run, inspect.Options{})
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	for _, s := range sessions {
		for k, id := range s.Attempts {
			n := tree.Node(id)
			if n == nil {
				t.Errorf("inspect has no node for attempt %s", id)
				continue
			}
			failed := s.State != "ok" || k < len(s.Attempts)-1
			if n.Failed != failed {
				t.Errorf("inspect: attempt %d of %d of a Respond on %s (state %s) marked failed=%v (%s)", k+1, len(s.Attempts), s.alias, s.State, n.Failed, n.FailReason)
			}
		}
	}
	if got := tree.Total(); got.Usage != want.Usage || math.Abs(got.USD-want.USD) > 1e-9 {
		t.Errorf("inspect totals %+v, the sessions' %+v", got, want)
	}
}

func totalCost(sessions []*CallSession) dialog.Cost {
	var c dialog.Cost
	for _, s := range sessions {
		c = c.Add(s.Cost)
	}
	return c
}

// Many goroutines each drive their own aliases of one of three agents,
// which share one log: the log, in a run directory or a buffer, rebuilds
// into exactly the dialogs the agents held, and its calls are the
// sessions'.
func TestConcurrentAgentsRebuildExactly(t *testing.T) {
	const agents, aliases = 3, 8
	t.Run("file", func(t *testing.T) {
		for round := range 2 {
			w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "concurrency"}, logs.Options{})
			if err != nil {
				t.Fatal(err)
			}
			e := runAgents(t, w, agents, aliases)
			if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
				t.Fatal(err)
			}
			recs := runRecords(t, run)
			f, warnings, err := run.Forest(t.Context())
			if err != nil || len(warnings) > 0 {
				t.Fatalf("rebuild: %v %v", err, warnings)
			}
			checkRebuild(t, recs, f, e)
			checkPositions(t, recs, e.groups)
			checkAttempts(t, run, e.sessions(), totalCost(e.sessions()))
			if t.Failed() {
				t.Fatalf("round %d failed", round)
			}
		}
	})
	for _, delay := range []time.Duration{0, -1, 2 * time.Millisecond} {
		t.Run(fmt.Sprintf("buffer, flush delay %v", delay), func(t *testing.T) {
			var buf bytes.Buffer
			w, err := logs.NewWriter(&buf, logs.RunStart{Tactic: "concurrency"}, logs.Options{FlushDelay: delay})
			if err != nil {
				t.Fatal(err)
			}
			e := runAgents(t, w, agents, aliases)
			if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
				t.Fatal(err)
			}
			recs := readLog(t, logs.NewReader(bytes.NewReader(buf.Bytes()), "buffer"))
			f, err := logs.Rebuild(t.Context(), logs.NewReader(bytes.NewReader(buf.Bytes()), "buffer"))
			if err != nil {
				t.Fatal(err)
			}
			checkRebuild(t, recs, f, e)
			checkPositions(t, recs, e.groups)
		})
	}
}

// Closing one alias while another is mid-Respond does not disturb the
// other: its reply lands in its dialog, its session is whole, and the log
// rebuilds. Responding on the closed alias, on one never opened, or with
// no current dialog is an error that says so, never a panic.
func TestCloseWhileAnotherAliasResponds(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	m := &concModel{record: true, hold: func(ctx context.Context, ci provider.CallInfo) error {
		if ci.Dialog != "slow" {
			return nil
		}
		once.Do(func() { close(entered) })
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	e := &concExpect{model: m}
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "close"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ask := concPrompt()
	a := &Agent{Name: "solo", System: dialog.MustPrompt("conc/sys", "You are solo."), Model: m, ModelName: "conc/model",
		Limits: concLimits(), Sleep: noWait, Log: w}
	for _, alias := range []string{"slow", "other"} {
		if err := a.Open(alias, nil); err != nil {
			t.Fatal(err)
		}
		if err := a.ReceivePrompt(ask, map[string]any{"task": alias + " [tool]"}); err != nil {
			t.Fatal(err)
		}
		d, _ := a.Dialog(alias)
		e.dialog(d)
	}
	type result struct {
		reply *dialog.Message
		s     *CallSession
		err   error
	}
	done := make(chan result, 1)
	go func() {
		reply, s, err := a.RespondTo(t.Context(), "slow")
		done <- result{reply, s, err}
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the Respond on slow never reached the model")
	}

	// While slow waits for its model: close other, open, answer and close a
	// third dialog, fork slow itself.
	if err := a.Close("other"); err != nil {
		t.Fatal(err)
	}
	if err := a.Open("third", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Receive("quick one"); err != nil {
		t.Fatal(err)
	}
	d3, _ := a.Dialog("third")
	e.dialog(d3)
	_, s3, err := a.RespondTo(t.Context(), "third")
	e.session(a.Name, s3)
	if err != nil {
		t.Fatalf("Respond on third while slow is mid-Respond: %v", err)
	}
	if err := a.Fork("slow", "slowfork", 0, 0, false); err != nil {
		t.Fatal(err)
	}
	df, _ := a.Dialog("slowfork")
	e.dialog(df)
	if err := a.Close("third"); err != nil {
		t.Fatal(err)
	}
	for _, alias := range []string{"other", "third", "never"} {
		noPanic(t, "RespondTo "+alias, func() error {
			_, s, err := a.RespondTo(t.Context(), alias)
			if err == nil || s != nil || !strings.Contains(err.Error(), strconv.Quote(alias)) {
				t.Errorf("RespondTo(%q): session %v, err %v; want an error naming the alias", alias, s, err)
			}
			return nil
		})
	}
	// third was current: closing it leaves none.
	noPanic(t, "Respond with no current dialog", func() error {
		_, s, err := a.Respond(t.Context())
		if err == nil || s != nil || !strings.Contains(err.Error(), "no current dialog") {
			t.Errorf("Respond after closing the current dialog: session %v, err %v", s, err)
		}
		return nil
	})
	noPanic(t, "Receive with no current dialog", func() error {
		if err := a.Receive("hello?"); err == nil {
			t.Error("Receive after closing the current dialog is not an error")
		}
		return nil
	})
	noPanic(t, "Respond of an agent without a model", func() error {
		var zero Agent
		if _, _, err := zero.Respond(t.Context()); err == nil {
			t.Error("Respond of a zero Agent is not an error")
		}
		if _, _, err := (&Agent{Name: "x", Model: m}).RespondTo(t.Context(), "main"); err == nil {
			t.Error("RespondTo of an agent with no dialog is not an error")
		}
		return nil
	})

	close(release)
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the Respond on slow never returned")
	}
	e.session(a.Name, r.s)
	if r.err != nil || r.s == nil || r.s.State != "ok" || len(r.s.ToolCalls) != 2 || len(r.s.Calls) != 2 {
		t.Fatalf("Respond on slow: err %v, session %+v", r.err, r.s)
	}
	slow, err := a.Dialog("slow")
	if err != nil || slow.Tail().Content != r.reply.Content || slow.Len() != 3 {
		t.Fatalf("slow after its Respond: %v\n%s", err, slow.Overview(60))
	}
	if df.Len() != 2 {
		t.Fatalf("the fork of slow made mid-Respond has %d messages, want the 2 slow had", df.Len())
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	recs := runRecords(t, run)
	f, _, err := run.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	checkRebuild(t, recs, f, e)
	checkPositions(t, recs, e.groups)
	checkAttempts(t, run, e.sessions(), totalCost(e.sessions()))
}

// Finishing a log while agents still work on it: run_end is the last
// record, with the totals of the records before it; every change refused
// after it is an error that wraps logs.ErrClosed and is not made in memory
// either, so the dialogs the agents hold still equal the log's; and once
// Finish has returned, no model is called any more (a call could not be
// logged).
func TestFinishWhileAgentsWork(t *testing.T) {
	for round := range 3 {
		m := &concModel{}
		w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "finish"}, logs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		e := &concExpect{}
		ctx := t.Context()
		var wg sync.WaitGroup
		var agentsMade []*Agent
		for i := range 3 {
			a := &Agent{Name: fmt.Sprintf("w%d", i), System: dialog.MustPrompt("conc/sys", "You work."), Model: m,
				ModelName: "conc/model", Limits: concLimits(), Sleep: noWait, Log: w}
			agentsMade = append(agentsMade, a)
			for j := range 4 {
				alias := fmt.Sprintf("a%d", j)
				wg.Go(func() {
					if err := a.Open(alias, nil); err != nil {
						if !errors.Is(err, logs.ErrClosed) {
							t.Errorf("Open after the log closed: %v, want an error wrapping logs.ErrClosed", err)
						}
						return
					}
					d, _ := a.Dialog(alias)
					e.dialog(d)
					for k := 0; ; k++ {
						_, err := d.PutText(fmt.Sprintf("step %d", k))
						if err == nil {
							_, _, err = a.RespondTo(ctx, alias)
						}
						if err == nil && k%3 == 0 {
							child := fmt.Sprintf("%s.%d", alias, k)
							if err = a.Fork(alias, child, 1, 1, false); err == nil {
								c, _ := a.Dialog(child)
								e.dialog(c)
							}
						}
						if err != nil {
							if !errors.Is(err, logs.ErrClosed) {
								t.Errorf("%s/%s: %v, want an error wrapping logs.ErrClosed", a.Name, alias, err)
							}
							return
						}
					}
				})
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for w.Seq() < 300 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		before := m.calls.Load()
		for _, a := range agentsMade {
			if _, err := a.Dialog("a0"); err != nil {
				continue // its Open came after Finish
			}
			if err := noPanic(t, "Respond after Finish", func() error {
				_, _, err := a.RespondTo(ctx, "a0")
				return err
			}); !errors.Is(err, logs.ErrClosed) {
				t.Errorf("Respond after Finish: %v, want an error wrapping logs.ErrClosed", err)
			}
		}
		if after := m.calls.Load(); after != before {
			t.Errorf("%d model calls made after Finish, which the log cannot hold", after-before)
		}

		recs := runRecords(t, run)
		end := recs[len(recs)-1].RunEnd
		var tot logs.Totals
		for _, r := range recs[:len(recs)-1] {
			switch r.Kind {
			case logs.KindDialogOpen, logs.KindFork:
				tot.Dialogs++
			case logs.KindMessage:
				tot.Messages++
			case logs.KindModelCall:
				tot.ModelCalls++
				tot.Cost = tot.Cost.Add(dialog.Cost{Usage: r.ModelCall.Usage, USD: r.ModelCall.USD})
			case logs.KindToolCall:
				tot.ToolCalls++
			}
		}
		if end == nil || end.Totals.Dialogs != tot.Dialogs || end.Totals.Messages != tot.Messages ||
			end.Totals.ModelCalls != tot.ModelCalls || end.Totals.Cost.Usage != tot.Cost.Usage {
			t.Errorf("run_end totals %+v, the records before it %+v", end, tot)
		}
		f, _, err := run.Forest(ctx)
		if err != nil {
			t.Fatalf("rebuild: %v", err)
		}
		for id, d := range e.canon {
			fd := f.Dialog(id)
			if fd == nil {
				t.Errorf("dialog %s (%s) is not in the log", id, d.Alias())
				continue
			}
			if g, w := fd.Node(), d.Node(); !reflect.DeepEqual(g, w) {
				t.Errorf("dialog %s:\n log    %+v\n memory %+v", id, g, w)
			}
			sameMessages(t, "dialog "+d.Alias(), fd.Messages(), d.Messages())
		}
		if t.Failed() {
			t.Fatalf("round %d failed", round)
		}
	}
}

// concStash keeps, per task, what the concurrency tactics held in memory,
// for the test to compare with each run's log.
var concStash sync.Map // task -> *concTask

type concTask struct {
	e    concExpect
	mu   sync.Mutex
	top  *Session
	subs []*Session
}

func stashFor(task string) *concTask {
	v, _ := concStash.LoadOrStore(task, &concTask{})
	return v.(*concTask)
}

// concFanout: the solver answers the task with a tool round, then forks
// it into branches answered on goroutines (parse retries and rate limits
// among them) while the critic answers in its own dialog and a sub-tactic
// runs with a fresh solver; then a second sub-tactic answers on the
// alias "main" too, whose turns go on from the first session's.
type concFanout struct{ branches int }

func (concFanout) Agents() []string { return []string{"solver", "critic"} }

func (c concFanout) Call(ctx context.Context, s *Session, task string) (any, error) {
	st := stashFor(task)
	st.mu.Lock()
	st.top = s
	st.mu.Unlock()
	solver, err := s.Agent("solver")
	if err != nil {
		return nil, err
	}
	critic, err := s.Agent("critic")
	if err != nil {
		return nil, err
	}
	ask := concPrompt()
	if err := solver.Open("main", nil); err != nil {
		return nil, err
	}
	if err := solver.ReceivePrompt(ask, map[string]any{"task": task + " [tool]"}); err != nil {
		return nil, err
	}
	main, _ := solver.Dialog("main")
	st.e.dialog(main)
	if _, _, err := solver.RespondTo(ctx, "main"); err != nil {
		return nil, err
	}
	answers := make([]string, c.branches+2)
	errs := make([]error, c.branches+2)
	var wg sync.WaitGroup
	for i := range c.branches {
		alias := fmt.Sprintf("b%d", i)
		if err := solver.Fork("main", alias, (i%2)*2, 1, false); err != nil {
			return nil, err
		}
		d, _ := solver.Dialog(alias)
		st.e.dialog(d)
		wg.Go(func() {
			marker := []string{"[badparse]", "[flaky]", "[tool]", ""}[i%4]
			if i == 3 && strings.Contains(task, "[boom]") {
				marker = "[boom]"
			}
			if _, err := d.PutText("branch " + alias + " " + marker); err != nil {
				errs[i] = err
				return
			}
			reply, _, err := solver.RespondTo(ctx, alias)
			if err == nil {
				answers[i] = reply.Content
			}
			errs[i] = err
		})
	}
	wg.Go(func() {
		if err := critic.Open("main", nil); err != nil {
			errs[c.branches] = err
			return
		}
		d, _ := critic.Dialog("main")
		st.e.dialog(d)
		if _, err := d.PutText("criticise " + task); err != nil {
			errs[c.branches] = err
			return
		}
		reply, _, err := critic.RespondTo(ctx, "main")
		if err == nil {
			answers[c.branches] = reply.Content
		}
		errs[c.branches] = err
	})
	wg.Go(func() {
		out, err := s.Sub(ctx, "conc:sub", map[string]any{"alias": "side"}, task)
		answers[c.branches+1], errs[c.branches+1] = fmt.Sprint(out), err
	})
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if _, err := s.Sub(ctx, "conc:sub", map[string]any{"alias": "main"}, task); err != nil {
		return nil, err
	}
	return answers, nil
}

// concSub has a (fresh) solver answer the task under the alias it is given.
type concSub struct{ alias string }

func (concSub) Agents() []string { return []string{"solver"} }

func (c concSub) Call(ctx context.Context, s *Session, task string) (any, error) {
	st := stashFor(task)
	st.mu.Lock()
	st.subs = append(st.subs, s)
	st.mu.Unlock()
	solver, err := s.Agent("solver")
	if err != nil {
		return nil, err
	}
	if err := solver.Open(c.alias, nil); err != nil {
		return nil, err
	}
	d, _ := solver.Dialog(c.alias)
	st.e.dialog(d)
	if err := solver.Receive("sub " + task + " [flaky]"); err != nil {
		return nil, err
	}
	reply, _, err := solver.Respond(ctx)
	if err != nil {
		return nil, err
	}
	return reply.Content, nil
}

func init() {
	Register("conc:fanout", func(params map[string]any) (Tactic, error) {
		n, _ := params["branches"].(int)
		if n <= 0 {
			return nil, fmt.Errorf("branches must be a positive whole number, not %v", params["branches"])
		}
		return concFanout{branches: n}, nil
	})
	Register("conc:sub", func(params map[string]any) (Tactic, error) {
		alias, _ := params["alias"].(string)
		return concSub{alias: alias}, nil
	})
}

const concYAML = `
tactic_type: conc:fanout
params: {branches: 6}
global:
  model_name: conc/model
  max_exception_retry: 1
agent_configs:
  - name: solver
    system_prompt: You solve.
  - name: critic
    system_prompt: You criticise.
`

// A Batch runs several tasks in parallel, each a run whose tactic answers
// on goroutines and calls sub-tactics: each run's log rebuilds into
// exactly the dialogs its agents held, its calls are its sessions', its
// positions are unique, and its totals are the Result's and the top
// tactic's.
func TestBatchOfConcurrentTacticsRebuilds(t *testing.T) {
	t.Run("all ok", func(t *testing.T) { batchOfConcurrentTactics(t, -1) })
	// One task fails while the others are under way: the runs in flight
	// are cancelled mid-call, and their logs still hold every call made.
	t.Run("fail fast", func(t *testing.T) { batchOfConcurrentTactics(t, 5) })
}

func batchOfConcurrentTactics(t *testing.T, boom int) {
	cfg := parseConfig(t, "conc.yaml", concYAML)
	model := &concModel{}
	if boom >= 0 {
		model.latency = 3 * time.Millisecond
	}
	tasks := make([]string, 8)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("task %d of %s", i, t.Name())
		if i == boom {
			tasks[i] += " [boom]"
		}
		concStash.Delete(tasks[i])
	}
	dir := t.TempDir()
	results, err := Batch(t.Context(), cfg, tasks, BatchOptions{Concurrency: 4, RunOptions: RunOptions{LogDir: dir, Sleep: noWait,
		Models: func(context.Context, config.Agent, provider.Config) (provider.Model, error) { return model, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[logs.Status]int{}
	for i, res := range results {
		statuses[res.Status]++
		wantStatus := logs.StatusOK
		if i == boom {
			wantStatus = logs.StatusFailed
		}
		if boom < 0 || i == boom {
			if res.Status != wantStatus {
				t.Fatalf("task %d: %s: %s", i, res.Status, res.Error)
			}
		}
		if res.RunID == "" {
			continue // never started
		}
		st := stashFor(tasks[i])
		if st.top == nil {
			t.Fatalf("task %d: run %s never called its tactic", i, res.RunID)
		}
		run, err := logs.Open(dir, res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		recs := runRecords(t, run)
		f, _, err := run.Forest(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		end := recs[len(recs)-1].RunEnd
		if end == nil || end.Status != res.Status {
			t.Errorf("task %d: run_end %+v, the Result's status %s", i, end, res.Status)
		}
		// Group the sessions by the Agent value that made them: the top
		// session's agents, and each sub-session's fresh solver.
		inSub := map[*CallSession]bool{}
		for k, sub := range st.subs {
			for _, c := range sub.Calls() {
				inSub[c] = true
				st.e.session(fmt.Sprintf("sub%d/%s", k, c.Agent), c)
			}
		}
		for _, c := range st.top.Calls() {
			if !inSub[c] {
				st.e.session("top/"+c.Agent, c)
			}
		}
		if got, want := len(st.top.Calls()), len(st.e.sessions()); got != want {
			t.Errorf("task %d: the top session holds %d calls, its own and its subs' are %d", i, got, want)
		}
		checkRebuild(t, recs, f, &st.e)
		checkPositions(t, recs, st.e.groups)
		checkAttempts(t, run, st.e.sessions(), st.top.Cost())

		got, want := res.Totals, end.Totals
		got.DurationMS, want.DurationMS = 0, 0
		if got != want {
			t.Errorf("task %d: Result totals %+v, run_end %+v", i, got, want)
		}
		starts, ends := map[string]*logs.TacticStart{}, map[string]*logs.TacticEnd{}
		for _, r := range recs {
			if ts := r.TacticStart; ts != nil {
				starts[ts.Session] = ts
			}
			if te := r.TacticEnd; te != nil {
				if starts[te.Session] == nil {
					t.Errorf("task %d: tactic_end of session %s before its tactic_start", i, te.Session)
				}
				ends[te.Session] = te
			}
		}
		if len(starts) != 1+len(st.subs) || len(ends) != len(starts) {
			t.Errorf("task %d: %d tactic_start and %d tactic_end records for 1 session and %d subs", i, len(starts), len(ends), len(st.subs))
		}
		for _, sub := range st.subs {
			if s := starts[sub.ID]; s == nil || s.Parent != st.top.ID {
				t.Errorf("task %d: sub-session %s starts as %+v, want parent %s", i, sub.ID, s, st.top.ID)
			}
		}
		if te := ends[st.top.ID]; te == nil || te.Status != res.Status || te.Cost.Usage != end.Totals.Cost.Usage ||
			math.Abs(te.Cost.USD-end.Totals.Cost.USD) > 1e-9 {
			t.Errorf("task %d: the top tactic_end %+v, the run's status %s and cost %+v", i, te, res.Status, end.Totals.Cost)
		}
		concStash.Delete(tasks[i])
	}
	t.Logf("statuses %v", statuses)
}

// mirrorLog logs to a Writer and mirrors every dialog change, live, in a
// Forest: what a viewer of a running run would hold.
type mirrorLog struct {
	*logs.Writer
	mirror *dialog.Forest
}

func (l mirrorLog) Emit(ev dialog.Event) error { return dialog.Tee(l.Writer, l.mirror).Emit(ev) }

// A Forest mirrors live dialogs ("a Forest is also a Sink, so it can mirror
// live dialogs ... safe for concurrent use"): read while the agents work,
// it ends equal to the forest rebuilt from the log and to the dialogs the
// agents held.
func TestLiveForestMirror(t *testing.T) {
	var buf bytes.Buffer
	w, err := logs.NewWriter(&buf, logs.RunStart{Tactic: "mirror"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mirror := new(dialog.Forest)
	stop := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		// Hold on to the mirrored dialogs and read them, as a viewer
		// would, going back to the forest for new ones now and then.
		var held []*dialog.Dialog
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%8 == 0 {
				for _, id := range mirror.IDs()[len(held):] {
					held = append(held, mirror.Dialog(id))
				}
			}
			for _, d := range held {
				n := d.Node()
				if msgs := d.Messages(); len(msgs) < n.SplitPoint {
					t.Errorf("mirrored dialog %s has %d messages, fewer than its split point %d", n.ID, len(msgs), n.SplitPoint)
				}
				_ = d.Tail()
			}
		}
	})
	e := runAgents(t, mirrorLog{w, mirror}, 2, 4)
	close(stop)
	watcher.Wait()
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	recs := readLog(t, logs.NewReader(bytes.NewReader(buf.Bytes()), "buffer"))
	f, err := logs.Rebuild(t.Context(), logs.NewReader(bytes.NewReader(buf.Bytes()), "buffer"))
	if err != nil {
		t.Fatal(err)
	}
	// Unrelated dialogs may reach the writer and the mirror in other
	// orders; a parent's forks may not (its children's order is checked).
	if g, w := slices.Sorted(slices.Values(mirror.IDs())), slices.Sorted(slices.Values(f.IDs())); !slices.Equal(g, w) {
		t.Fatalf("the mirror has dialogs %v, the log %v", g, w)
	}
	for _, id := range f.IDs() {
		if g, w := mirror.Dialog(id).Node(), f.Dialog(id).Node(); !reflect.DeepEqual(g, w) {
			t.Errorf("dialog %s: mirror %+v, log %+v", id, g, w)
		}
		sameMessages(t, "mirrored dialog "+id, mirror.Dialog(id).Messages(), f.Dialog(id).Messages())
	}
	checkRebuild(t, recs, mirror, e)
}

// positionsOf maps every model_call of a log to its request's digest, by
// position: what a replay serves calls by.
func positionsOf(t *testing.T, recs []*logs.Record) map[provider.CallInfo]string {
	t.Helper()
	out := map[provider.CallInfo]string{}
	for _, r := range recs {
		if mc := r.ModelCall; mc != nil {
			out[provider.CallInfo{Agent: mc.Agent, Dialog: mc.Alias, Turn: mc.Turn, Attempt: mc.Attempt}] = mc.RequestDigest
		}
	}
	return out
}

// Branches answered on goroutines are recorded at the same positions, with
// the same requests, whichever branch the scheduler lets finish first:
// docs/replay.md promises that matching by position "makes tactics that
// call models concurrently (branches on goroutines) replay correctly", and
// a replay schedules its goroutines anew. The branches share a long
// prefix, so a context manager has work to do on each.
func TestBranchPositionsIndependentOfTiming(t *testing.T) {
	managers := []struct {
		name string
		cfg  map[string]any
	}{
		{"none", nil},
		{"default", map[string]any{"type": "default", "max_tokens": 600, "buffer": 100}},
		{"summary", map[string]any{"type": "summary", "max_tokens": 600, "buffer": 100}},
	}
	branches := []string{"b1", "b2", "b3"}
	for _, mgr := range managers {
		t.Run(mgr.name, func(t *testing.T) {
			// record runs the branches with first finishing first, the
			// others waiting for it, and returns the calls by position.
			record := func(first string) map[provider.CallInfo]string {
				var buf bytes.Buffer
				w, err := logs.NewWriter(&buf, logs.RunStart{Tactic: "branches"}, logs.Options{})
				if err != nil {
					t.Fatal(err)
				}
				a := &Agent{Name: "brancher", System: dialog.MustPrompt("conc/sys", "You branch."), Model: &concModel{},
					ModelName: "conc/model", Limits: concLimits(), Sleep: noWait, Log: w}
				if mgr.cfg != nil {
					if a.Context, err = contextmgr.New(mgr.cfg); err != nil {
						t.Fatal(err)
					}
					a.ContextName = mgr.name
				}
				if err := a.Open("main", nil); err != nil {
					t.Fatal(err)
				}
				for i := range 20 {
					if err := a.Receive(strings.Repeat("a long shared history ", 12) + strconv.Itoa(i)); err != nil {
						t.Fatal(err)
					}
				}
				gate := make(chan struct{})
				var wg sync.WaitGroup
				for _, b := range branches {
					if err := a.Fork("main", b, 0, 0, false); err != nil {
						t.Fatal(err)
					}
					d, _ := a.Dialog(b)
					wg.Go(func() {
						if b != first {
							<-gate
						}
						if _, err := d.PutText("now branch " + b); err != nil {
							t.Error(err)
						}
						if _, _, err := a.RespondTo(t.Context(), b); err != nil {
							t.Error(err)
						}
						if b == first {
							close(gate)
						}
					})
				}
				wg.Wait()
				if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
					t.Fatal(err)
				}
				return positionsOf(t, readLog(t, logs.NewReader(bytes.NewReader(buf.Bytes()), "buffer")))
			}
			runs := map[string]map[provider.CallInfo]string{}
			for _, first := range branches {
				runs[first] = record(first)
			}
			want := runs[branches[0]]
			for _, first := range branches[1:] {
				got := runs[first]
				for pos, digest := range want {
					if d, ok := got[pos]; !ok {
						t.Errorf("with %s first, no call at %+v, which the run with %s first made", first, pos, branches[0])
					} else if d != digest {
						t.Errorf("with %s first, the call at %+v sends another request than with %s first", first, pos, branches[0])
					}
				}
				for pos := range got {
					if _, ok := want[pos]; !ok {
						t.Errorf("with %s first, a call at %+v, which the run with %s first did not make", first, pos, branches[0])
					}
				}
			}
		})
	}
}

// Two Responds on one dialog at once: the second is refused, rather than both appending a reply to the same message.
func TestConcurrentRespondOnOneDialogRefused(t *testing.T) {
	g := &gated{entered: make(chan struct{}), release: make(chan struct{})}
	a, _ := newAgent(t, g, nil)
	entered, release := g.entered, g.release
	a.Receive("hi")
	done := make(chan error)
	go func() { _, _, err := a.Respond(t.Context()); done <- err }()
	<-entered
	_, _, err := a.Respond(t.Context())
	close(release)
	if err == nil || !strings.Contains(err.Error(), `dialog "main" is already being answered`) {
		t.Fatalf("second Respond: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d, _ := a.Dialog("main")
	if d.Len() != 2 || d.Tail().Content != "first" { // the user's message, one reply
		t.Fatalf("main has %d messages", d.Len())
	}
}

// gated answers "first" once release is closed, closing entered when the call starts.
type gated struct{ entered, release chan struct{} }

func (g *gated) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	close(g.entered)
	<-g.release
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: "first"}}, nil
}
