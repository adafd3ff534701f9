package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
)

// withUsage gives a scripted reply usage, as a real model's has.
func withUsage(r *provider.Response, in, out int) *provider.Response {
	r.Message.Usage = dialog.Usage{InputTokens: in, OutputTokens: out}
	return r
}

// runsUnder lists the runs under root, failing the test if one cannot be
// read.
func runsUnder(t *testing.T, root string) []logs.Summary {
	t.Helper()
	sums, err := logs.List(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if s.Err != nil {
			t.Fatalf("run %s: %v", s.ID, s.Err)
		}
	}
	return sums
}

// records reads every record of the run's log.
func records(t *testing.T, dir string) []*logs.Record {
	t.Helper()
	rd, err := logs.OpenFile(filepath.Join(dir, logs.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []*logs.Record
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

// TestRunLogOfATurnWithAToolCall: a turn whose model calls recall writes
// one run log that rebuilds into its dialog, with both model calls, the
// tool call, the labels and a run_end ok with the usage.
func TestRunLogOfATurnWithAToolCall(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		if n == 1 {
			return withUsage(toolCall("recall", map[string]any{"query": "whales"}), 11, 3), nil
		}
		return withUsage(text("nothing about whales yet"), 17, 5), nil
	}}
	root := filepath.Join(t.TempDir(), "runs")
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{LogDir: root})
	e, _ := run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "what about whales?", CWD: "/src"})
	if e.Message.Content != "nothing about whales yet" {
		t.Fatalf("reply %q", e.Message.Content)
	}
	sums := runsUnder(t, root)
	if len(sums) != 1 {
		t.Fatalf("%d runs under %s, want 1", len(sums), root)
	}
	s := sums[0]
	if s.Status() != logs.StatusOK || s.End.Error != "" {
		t.Fatalf("status %s, error %q", s.Status(), s.End.Error)
	}
	tot := s.End.Totals
	if tot.ModelCalls != 2 || tot.ToolCalls != 1 || tot.Cost.Usage.InputTokens != 28 || tot.Cost.Usage.OutputTokens != 8 {
		t.Fatalf("totals %+v", tot)
	}
	var result string
	if err := json.Unmarshal(s.End.Result, &result); err != nil || result != "nothing about whales yet" {
		t.Fatalf("result %s (%v)", s.End.Result, err)
	}
	st := s.Start
	if st.Tactic != RunTactic || st.Labels[LabelConversation] != "assistant/alice" || st.Labels[LabelAgent] != "assistant" {
		t.Fatalf("run_start tactic %q labels %v", st.Tactic, st.Labels)
	}
	var task string
	if json.Unmarshal(st.Task, &task) != nil || task != "what about whales?" {
		t.Fatalf("task %s", st.Task)
	}
	// The recorded config is a tactic config: lllm replay and diff read it.
	cfg, err := config.Parse("recorded", st.Config, nil)
	if err != nil {
		t.Fatalf("config %s: %v", st.Config, err)
	}
	if cfg.TacticType != RunTactic || len(cfg.Agents) != 1 || cfg.Agents[0].Name != "assistant" || cfg.Agents[0].ModelName != "mock/a" ||
		cfg.Agents[0].SystemPrompt != "You help {sender}." || cfg.Params["sender"] != "alice" || cfg.Params["agent"] != "assistant" ||
		cfg.Params["role"] != "primary" || cfg.Params["cwd"] != "/src" {
		t.Fatalf("config %s", st.Config)
	}

	// The records: the tool call with its arguments and result, two model
	// calls with their usage.
	var calls []*logs.ModelCall
	var tools []*logs.ToolCall
	for _, rec := range records(t, s.Dir) {
		switch rec.Kind {
		case logs.KindModelCall:
			calls = append(calls, rec.ModelCall)
		case logs.KindToolCall:
			tools = append(tools, rec.ToolCall)
		}
	}
	if len(calls) != 2 || calls[0].Usage.InputTokens != 11 || calls[1].Usage.OutputTokens != 5 || calls[0].Agent != "assistant" {
		t.Fatalf("model calls %+v", calls)
	}
	if len(tools) != 1 || tools[0].Name != "recall" || !strings.Contains(string(tools[0].Arguments), "whales") ||
		!strings.Contains(tools[0].Result, "No archive matches") {
		t.Fatalf("tool calls %+v", tools)
	}

	// The log alone rebuilds the dialog the agent answered in.
	run, err := logs.Open(root, "latest")
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := inspect.Load(context.Background(), run, inspect.Options{Messages: true})
	if err != nil {
		t.Fatal(err)
	}
	if tree.Status != logs.StatusOK || len(tree.Roots) != 1 {
		t.Fatalf("tree status %s, %d roots", tree.Status, len(tree.Roots))
	}
	canon := tree.Roots[0]
	if canon.Owner != "assistant" || canon.Alias != "conversation" || len(canon.Children) != 1 {
		t.Fatalf("root %s/%s with %d children", canon.Owner, canon.Alias, len(canon.Children))
	}
	work := canon.Children[0]
	if work.Calls != 2 || work.Failed {
		t.Fatalf("working copy %s: %d calls, failed %v", work.Alias, work.Calls, work.Failed)
	}
	msgs := tree.Forest.Dialog(canon.ID).Messages()
	if len(msgs) < 3 || msgs[0].Role != dialog.RoleSystem || msgs[0].Content != "You help alice." {
		t.Fatalf("dialog %v", msgs)
	}
	var sawUser, sawFraming bool
	for _, m := range msgs {
		sawUser = sawUser || (m.Role == dialog.RoleUser && m.Content == "what about whales?")
		sawFraming = sawFraming || m.Name == "framing"
	}
	if last := msgs[len(msgs)-1]; !sawUser || !sawFraming || last.Role != dialog.RoleAssistant || last.Text() != "nothing about whales yet" {
		t.Fatalf("dialog: user %v framing %v last %+v", sawUser, sawFraming, msgs[len(msgs)-1])
	}
	var tool *dialog.Message
	for _, m := range tree.Forest.Dialog(work.ID).Messages() {
		if m.Role == dialog.RoleTool {
			tool = m
		}
	}
	if tool == nil || tool.Name != "recall" {
		t.Fatalf("no recall tool message in the working copy %s", work.Alias)
	}
}

// TestRunLogOfAKilledRun: a turn killed while its model works ends its
// log as cancelled, and stores no reply.
func TestRunLogOfAKilledRun(t *testing.T) {
	called := make(chan struct{})
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		close(called)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}}
	root := t.TempDir()
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{LogDir: root})
	done := runAsync(context.Background(), svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "take your time"}, nil)
	<-called
	if err := svc.Kill("assistant", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrKilled) {
		t.Fatalf("run: %v", err)
	}
	sums := runsUnder(t, root)
	if len(sums) != 1 || sums[0].Status() != logs.StatusCancelled || sums[0].Writing {
		t.Fatalf("runs %+v", sums)
	}
	if sums[0].End.Totals.ModelCalls != 1 || !strings.Contains(sums[0].End.Error, "killed") {
		t.Fatalf("run_end %+v", sums[0].End)
	}
	c, _ := svc.Store().Lookup("assistant", "alice")
	if ms := c.Messages(); len(ms) != 1 {
		t.Fatalf("stored %q", texts(ms))
	}
}

// TestRunLogOfAFailingModel: a turn whose model fails ends its log as
// failed, with the model's error.
func TestRunLogOfAFailingModel(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		return nil, errors.New("the model is on fire")
	}}
	root := t.TempDir()
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{LogDir: root})
	if _, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "hello"}, nil); err == nil {
		t.Fatal("a failing model: no error")
	}
	sums := runsUnder(t, root)
	if len(sums) != 1 || sums[0].Status() != logs.StatusFailed || !strings.Contains(sums[0].End.Error, "the model is on fire") {
		t.Fatalf("runs %+v", sums)
	}
	var failed int
	for _, rec := range records(t, sums[0].Dir) {
		if rec.Kind == logs.KindModelCall && rec.ModelCall.Error != nil {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("%d failed model_call records, want 1", failed)
	}
}

// TestRunLogOfAGuestAndAnAskUserTimeout: a guest's turn is labelled with
// the guest and says so in its config; an ask_user the user never
// answers is a tool call that failed, in a run that went on.
func TestRunLogOfAGuestAndAnAskUserTimeout(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		if n == 1 {
			return toolCall("ask_user", map[string]any{"question": "Which whale?"}), nil
		}
		return text("I will guess then"), nil
	}}
	c := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		return text("weak claim"), nil
	}}
	root := t.TempDir()
	svc := twoAgents(t, t.TempDir(), a, c, ServiceOptions{LogDir: root, AskTimeout: 20 * time.Millisecond})
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "tell me about a whale"})
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "critic?", Guest: "critic"})
	sums := runsUnder(t, root)
	if len(sums) != 2 {
		t.Fatalf("%d runs, want 2", len(sums))
	}
	var ask *logs.ToolCall
	for _, rec := range records(t, sums[0].Dir) {
		if rec.Kind == logs.KindToolCall {
			ask = rec.ToolCall
		}
	}
	if sums[0].Status() != logs.StatusOK || ask == nil || ask.Name != "ask_user" || !strings.Contains(ask.Error, "did not answer") {
		t.Fatalf("ask_user run %s, tool call %+v", sums[0].Status(), ask)
	}
	g := sums[1]
	var cfg RecordedConfig
	_ = json.Unmarshal(g.Start.Config, &cfg)
	if g.Status() != logs.StatusOK || g.Start.Labels[LabelConversation] != "assistant/alice" || g.Start.Labels[LabelAgent] != "critic" ||
		cfg.Params.Role != "guest" || cfg.Params.Answering != "critic" || len(cfg.Agents) != 1 || cfg.Agents[0].Name != "critic" ||
		cfg.Agents[0].MaxInterruptSteps != 0 || g.End.Totals.ModelCalls != 1 {
		t.Fatalf("guest run: labels %v config %s end %+v", g.Start.Labels, g.Start.Config, g.End)
	}
}

// TestRunLogsOfConcurrentConversations: two conversations running at once
// write one log each, each with its own turn only.
func TestRunLogsOfConcurrentConversations(t *testing.T) {
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	var once sync.Map
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		last := req.Messages[len(req.Messages)-1].Content
		if _, seen := once.LoadOrStore(last, true); !seen {
			started.Done()
		}
		select { // both runs are in their model call at once
		case <-both:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return text("answer to " + last), nil
	}}
	root := t.TempDir()
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{LogDir: root})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, sender := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: sender, Content: "question of " + sender}, nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	sums := runsUnder(t, root)
	if len(sums) != 2 {
		t.Fatalf("%d runs, want 2", len(sums))
	}
	seen := map[string]bool{}
	for _, s := range sums {
		conv := s.Start.Labels[LabelConversation]
		sender := strings.TrimPrefix(conv, "assistant/")
		seen[sender] = true
		var result string
		_ = json.Unmarshal(s.End.Result, &result)
		if s.Status() != logs.StatusOK || result != "answer to question of "+sender || s.End.Totals.ModelCalls != 1 {
			t.Fatalf("run %s of %s: %s %s", s.ID, conv, s.Status(), s.End.Result)
		}
		for _, rec := range records(t, s.Dir) {
			if ev, ok := rec.Event(); ok && ev.Message != nil {
				for _, other := range []string{"alice", "bob"} {
					if other != sender && strings.Contains(ev.Message.Content, other) {
						t.Fatalf("the log of %s holds %q", conv, ev.Message.Content)
					}
				}
			}
		}
	}
	if !seen["alice"] || !seen["bob"] {
		t.Fatalf("conversations logged: %v", seen)
	}
}

// TestRunLogOfACompaction: an explicit compaction writes a run of its
// own, with the summary call and the summary as its result; so does an
// automatic one, after the turn's.
func TestRunLogOfACompaction(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if strings.HasPrefix(last.Content, "Summarise the conversation above") {
			return withUsage(text("Whales. They are big."), 40, 6), nil
		}
		if n == 1 {
			return text(strings.Repeat("whales are big ", 20)), nil
		}
		return text("ok"), nil
	}}
	root := t.TempDir()
	svc, err := NewService(quietStore(t, t.TempDir()), []*AgentSpec{
		{Name: "assistant", System: prompt(t, "assistant", "Hi."), Model: a, ModelName: "mock/a", CompactTokens: 50},
	}, ServiceOptions{LogDir: root})
	if err != nil {
		t.Fatal(err)
	}
	_, ev := run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "tell me about whales"})
	if ev.last().Compacted == nil {
		t.Fatalf("no automatic compaction: %+v", ev.last())
	}
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "more"})
	if _, err := svc.Compact(context.Background(), "assistant", "alice"); err != nil {
		t.Fatal(err)
	}
	sums := runsUnder(t, root)
	var tactics []string
	for _, s := range sums {
		tactics = append(tactics, s.Start.Tactic)
	}
	// turn, compaction (automatic), turn, compaction (explicit)
	want := []string{RunTactic, CompactTactic, RunTactic, CompactTactic}
	if strings.Join(tactics, " ") != strings.Join(want, " ") {
		t.Fatalf("tactics %v, want %v", tactics, want)
	}
	c := sums[len(sums)-1]
	var summary string
	_ = json.Unmarshal(c.End.Result, &summary)
	if c.Status() != logs.StatusOK || summary != "Whales. They are big." || c.End.Totals.ModelCalls != 1 ||
		c.End.Totals.Cost.Usage.InputTokens != 40 || c.Start.Labels[LabelConversation] != "assistant/alice" {
		t.Fatalf("compaction run %s: end %+v labels %v", c.Status(), c.End, c.Start.Labels)
	}
	// Its dialog is the summary request the model got.
	r, err := logs.Open(root, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := r.Forest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, id := range f.Roots() {
		d := f.Dialog(id)
		ms := d.Messages()
		if d.Alias() == "compact" && ms[0].Content == "You summarise conversations of the agent assistant." &&
			ms[len(ms)-1].Text() == "Whales. They are big." {
			found = true
		}
	}
	if !found {
		t.Fatalf("no compact dialog with the summary in %s", c.Dir)
	}
}

// TestRunLogFailureFailsTheTurn: a log root that cannot be written fails
// the turn at once, saying so, and stores nothing.
func TestRunLogFailureFailsTheTurn(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		return text("never"), nil
	}}
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	svc := twoAgents(t, data, a, a, ServiceOptions{LogDir: blocker})
	_, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "hello"}, nil)
	if err == nil || !strings.Contains(err.Error(), "creating the run log under "+blocker) {
		t.Fatalf("run: %v", err)
	}
	if len(a.requests()) != 0 || len(stored(data)) != 0 {
		t.Fatalf("%d model calls, stored %v", len(a.requests()), stored(data))
	}
	if svc.Running("assistant", "alice") {
		t.Fatal("the conversation is still busy")
	}
}

// TestRunLogAfterAPanic: a run that panics ends its log as failed with
// the panic, and the panic goes on.
func TestRunLogAfterAPanic(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		panic("model exploded")
	}}
	root := t.TempDir()
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{LogDir: root})
	var v any
	func() {
		defer func() { v = recover() }()
		_, _ = svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "hello"}, nil)
	}()
	if v != "model exploded" {
		t.Fatalf("recovered %v", v)
	}
	sums := runsUnder(t, root)
	if len(sums) != 1 || sums[0].Status() != logs.StatusFailed || !strings.Contains(sums[0].End.Error, "panic: model exploded") || sums[0].Writing {
		t.Fatalf("runs %+v", sums)
	}
}

// TestNoRunLogWithoutLogDir: without LogDir a turn with a tool call and
// a compaction write nothing beside the conversation, not even ./logs.
func TestNoRunLogWithoutLogDir(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case strings.HasPrefix(last.Content, "Summarise"):
			return text("A summary."), nil
		case n == 1:
			return toolCall("recall", map[string]any{"query": "x"}), nil
		}
		return text("done"), nil
	}}
	data := filepath.Join(cwd, "data")
	svc := twoAgents(t, data, a, a, ServiceOptions{})
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "hello"})
	if _, err := svc.Compact(context.Background(), "assistant", "alice"); err != nil {
		t.Fatal(err)
	}
	if len(a.requests()) != 3 {
		t.Fatalf("%d model calls, want 3", len(a.requests()))
	}
	ents, _ := os.ReadDir(cwd)
	if len(ents) != 1 || ents[0].Name() != "data" {
		t.Fatalf("the working directory holds %v", ents)
	}
	if got := stored(data); len(got) != 1 || got[0].Name() != "assistant" {
		t.Fatalf("the data dir holds %v", got)
	}
}
