package conversation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
)

// twoAgents is a service with the agents assistant (model a) and critic
// (model c); the assistant admits critic, the critic nobody.
func twoAgents(t *testing.T, dir string, a, c provider.Model, opts ServiceOptions) *Service {
	t.Helper()
	svc, err := NewService(quietStore(t, dir), []*AgentSpec{
		{Name: "assistant", System: prompt(t, "assistant", "You help {sender}."), Model: a, ModelName: "mock/a", Guests: []string{"critic"}},
		{Name: "critic", System: prompt(t, "critic", "You criticise."), Model: c, ModelName: "mock/c", Guests: []string{}},
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func run(t *testing.T, svc *Service, req RunRequest) (*Entry, *events) {
	t.Helper()
	ev := newEvents()
	e, err := svc.Run(context.Background(), req, ev.emit)
	if err != nil {
		t.Fatalf("run %+v: %v", req, err)
	}
	return e, ev
}

func TestRunStreamsAndStores(t *testing.T) {
	a := &recorder{inner: mockModel(t, provider.MockConfig{Rules: []provider.MockRule{{Match: "hi", Reply: provider.MockReply{Text: "hello there, alice"}}}})}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{})
	e, ev := run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "hi"})
	if e.Message.Content != "hello there, alice" || e.Message.Name != "assistant" || e.Message.Agent != "" {
		t.Fatalf("reply %+v", e.Message)
	}
	types := ev.types()
	if types[0] != "start" || types[len(types)-1] != "end" || !slices.Contains(types, "text") {
		t.Fatalf("events %v", types)
	}
	var streamed strings.Builder
	for _, x := range ev.evs {
		if x.Agent != "assistant" {
			t.Errorf("event %+v names %q", x, x.Agent)
		}
		if x.Type == "text" {
			streamed.WriteString(x.Text)
		}
	}
	if streamed.String() != "hello there, alice" || ev.last().Status != "ok" {
		t.Fatalf("streamed %q, end %+v", streamed.String(), ev.last())
	}
	c, _ := svc.Store().Lookup("assistant", "alice")
	if got := texts(c.Messages()); strings.Join(got, "|") != "hi|hello there, alice" || c.Title() != "hi" {
		t.Fatalf("stored %q title %q", got, c.Title())
	}
	// The system prompt was rendered with the sender and carries the tools.
	req := a.requests()[0]
	if req[0].Content != "You help alice." {
		t.Fatalf("system %q", req[0].Content)
	}
}

func TestGuestWrappingAndFramingNotPersisted(t *testing.T) {
	a := &recorder{inner: mockModel(t, provider.MockConfig{Replies: []provider.MockReply{{Text: "primary one"}, {Text: "primary two"}}})}
	c := &recorder{inner: mockModel(t, provider.MockConfig{Replies: []provider.MockReply{{Text: "guest says no"}}})}
	dir := t.TempDir()
	svc := twoAgents(t, dir, a, c, ServiceOptions{})
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "first question"})
	_, ev := run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "critic, your view?", Guest: "critic"})
	if s := ev.evs[0]; s.Type != "start" || s.Agent != "critic" || !s.Guest || ev.last().Agent != "critic" {
		t.Fatalf("guest events: start %+v end %+v", s, ev.last())
	}
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "back to you"})

	// The guest's request: its own system prompt, text only, framing just
	// before the newest user message.
	greq := c.requests()[0]
	if greq[0].Content != "You criticise." {
		t.Fatalf("guest system prompt %q", greq[0].Content)
	}
	n := len(greq)
	if greq[n-1].Content != "critic, your view?" || greq[n-2].Name != "framing" || !strings.Contains(greq[n-2].Content, "You are critic") {
		t.Fatalf("guest request tail: %+v", greq[n-2:])
	}
	// The primary's next request: the guest reply wrapped, one framing
	// message (the primary's, not the guest's), before the newest message.
	preq := a.requests()[len(a.requests())-1]
	var framings, wrapped int
	for i, m := range preq {
		if m.Name == "framing" {
			framings++
			if strings.Contains(m.Content, "You are critic") || i != len(preq)-2 {
				t.Errorf("primary framing %d: %q", i, m.Content)
			}
		}
		if m.Content == "<from agent=\"critic\">\nguest says no\n</from>" {
			wrapped++
		}
	}
	if framings != 1 || wrapped != 1 {
		t.Fatalf("framings %d wrapped %d in %+v", framings, wrapped, preq)
	}
	// Nothing of this is stored: the guest reply is plain and attributed.
	_ = svc.Store().Close()
	s2 := quietStore(t, dir)
	conv, _ := s2.Lookup("assistant", "alice")
	for _, e := range conv.Messages() {
		if e.Message.Name == "framing" || strings.Contains(e.Message.Content, "<from") || strings.Contains(e.Message.Content, "[framing]") {
			t.Fatalf("framing or wrapping persisted: %+v", e.Message)
		}
	}
	if g := conv.Messages()[3].Message; g.Content != "guest says no" || g.Agent != "critic" || g.Name != "critic" {
		t.Fatalf("guest reply stored as %+v", g)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "assistant", "alice", LogFile))
	if strings.Contains(string(data), "framing") {
		t.Fatal("framing in the log")
	}
}

func TestBadGuestChangesNothing(t *testing.T) {
	a := mockModel(t, provider.MockConfig{})
	dir := t.TempDir()
	svc := twoAgents(t, dir, a, a, ServiceOptions{})
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "hi"})
	conv, _ := svc.Store().Lookup("assistant", "alice")
	before := len(conv.Messages())
	for _, tc := range []struct {
		req  RunRequest
		want error
	}{
		{RunRequest{Agent: "assistant", Sender: "alice", Content: "x", Guest: "nobody"}, ErrUnknownGuest},
		{RunRequest{Agent: "assistant", Sender: "alice", Content: "x", Guest: "assistant"}, ErrGuestNotAdmitted},
		{RunRequest{Agent: "critic", Sender: "alice", Content: "x", Guest: "assistant"}, ErrGuestNotAdmitted},
		{RunRequest{Agent: "nobody", Sender: "alice", Content: "x"}, ErrUnknownAgent},
		{RunRequest{Agent: "assistant", Sender: "alice", Content: "  "}, ErrEmptyContent},
		{RunRequest{Agent: "assistant", Sender: "../etc", Content: "x"}, ErrBadName},
	} {
		if _, err := svc.Run(context.Background(), tc.req, nil); !errors.Is(err, tc.want) {
			t.Errorf("%+v: got %v, want %v", tc.req, err, tc.want)
		}
	}
	if len(conv.Messages()) != before {
		t.Fatal("a refused run stored something")
	}
	if _, ok := svc.Store().Lookup("critic", "alice"); ok {
		t.Fatal("a refused run created a conversation")
	}
	if ents := stored(dir); len(ents) != 1 {
		t.Fatalf("files: %v", ents)
	}
}

// askThenEcho calls ask_user first, then answers with the tool result it got.
func askThenEcho(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == dialog.RoleTool {
		return text("got: " + last.Text()), nil
	}
	return toolCall("ask_user", map[string]any{"question": "Which colour?"}), nil
}

func TestAskUserRoundTrip(t *testing.T) {
	a := &recorder{next: askThenEcho}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{})
	if err := svc.Reply("assistant", "alice", "blue"); !errors.Is(err, ErrNothingPending) {
		t.Fatalf("reply with nothing pending: %v", err)
	}
	ev := newEvents()
	done := make(chan error, 1)
	var entry *Entry
	go func() {
		var err error
		entry, err = svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "pick"}, ev.emit)
		done <- err
	}()
	if q := <-ev.ask; q != "Which colour?" {
		t.Fatalf("question %q", q)
	}
	if !svc.Pending("assistant", "alice") {
		t.Fatal("not pending")
	}
	// A second stream while the first waits is busy and stores nothing.
	if _, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "again"}, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("second run: %v", err)
	}
	if err := svc.Reply("assistant", "alice", "blue"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(entry.Message.Content, "The user answered: blue") {
		t.Fatalf("reply %q", entry.Message.Content)
	}
	if types := ev.types(); strings.Join(types, ",") != "start,tool,ask,text,end" {
		t.Fatalf("events %v", types)
	}
	if err := svc.Reply("assistant", "alice", "blue"); !errors.Is(err, ErrNothingPending) {
		t.Fatalf("second reply: %v", err)
	}
	conv, _ := svc.Store().Lookup("assistant", "alice")
	if got := texts(conv.Messages()); len(got) != 2 || got[0] != "pick" {
		t.Fatalf("stored %q", got)
	}
}

func TestAskUserTimeout(t *testing.T) {
	a := &recorder{next: askThenEcho}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{AskTimeout: 50 * time.Millisecond})
	e, _ := run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "pick"})
	if !strings.Contains(e.Message.Content, "did not answer within 50ms") {
		t.Fatalf("reply %q", e.Message.Content)
	}
}

func TestKillDuringToolCallStoresNoReply(t *testing.T) {
	a := &recorder{next: askThenEcho}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{})
	if err := svc.Kill("assistant", "alice"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("kill with nothing running: %v", err)
	}
	ev := newEvents()
	done := runAsync(context.Background(), svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "pick"}, ev.emit)
	<-ev.ask
	if err := svc.Kill("assistant", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrKilled) {
		t.Fatalf("run: %v", err)
	}
	if end := ev.last(); end.Type != "end" || end.Status != "killed" || end.Agent != "assistant" {
		t.Fatalf("end %+v", end)
	}
	conv, _ := svc.Store().Lookup("assistant", "alice")
	for _, e := range conv.Messages() {
		if e.Message.Role == dialog.RoleAssistant {
			t.Fatalf("a killed run stored %+v", e.Message)
		}
	}
	// The conversation is free again.
	a.next = func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		return text("ok"), nil
	}
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "again"})
}

// A blank summary fails the compaction, which archives nothing: the live history stays as it was.
func TestBlankSummaryArchivesNothing(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; strings.HasPrefix(last.Content, "Summarise the conversation above") {
			return text("  "), nil
		}
		return text("hello"), nil
	}}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{})
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "hi"})
	if _, err := svc.Compact(context.Background(), "assistant", "alice"); err == nil || !strings.Contains(err.Error(), "summary is empty") {
		t.Fatalf("compact: %v", err)
	}
	conv, _ := svc.Store().Lookup("assistant", "alice")
	if got := texts(conv.Messages()); strings.Join(got, "|") != "hi|hello" || len(conv.Archives()) != 0 {
		t.Fatalf("live %q, %d archives", got, len(conv.Archives()))
	}
}

func TestAutomaticCompactionAndRecallTool(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case strings.HasPrefix(last.Content, "Summarise the conversation above"):
			return text("Talk about the blue whale. It is the largest animal."), nil
		case last.Role == dialog.RoleTool:
			return text("recalled: " + last.Text()), nil
		case strings.Contains(last.Content, "remember"):
			return toolCall("recall", map[string]any{"query": "whale"}), nil
		}
		return text(strings.Repeat("whales are big ", 20)), nil
	}}
	svc, err := NewService(quietStore(t, t.TempDir()), []*AgentSpec{
		{Name: "assistant", System: prompt(t, "assistant", "Hi."), Model: a, ModelName: "mock/a", CompactTokens: 50},
	}, ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, ev := run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "tell me about whales"})
	if c := ev.last().Compacted; c == nil || c.Title != "Talk about the blue whale." {
		t.Fatalf("end %+v", ev.last())
	}
	conv, _ := svc.Store().Lookup("assistant", "alice")
	if ms := conv.Messages(); len(ms) != 1 || ms[0].Message.Name != "summary" {
		t.Fatalf("live after compaction: %q", texts(ms))
	}
	e, _ := run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "do you remember?"})
	if !strings.Contains(e.Message.Content, "Archive 1") || !strings.Contains(e.Message.Content, "blue whale") {
		t.Fatalf("recall reply %q", e.Message.Content)
	}
	// Explicit compaction: only a summary is live (the last turn was
	// compacted automatically too), so there is nothing, until a message.
	n := len(conv.Archives())
	if _, err := svc.Compact(context.Background(), "assistant", "alice"); !errors.Is(err, ErrNothingToCompact) || !strings.Contains(err.Error(), "since the last compaction") {
		t.Fatalf("compacting a summary: %v", err)
	}
	mustAppend(t, conv, user("one more"))
	arch, err := svc.Compact(context.Background(), "assistant", "alice")
	if err != nil || arch.ID != n+1 {
		t.Fatalf("compact: %+v %v", arch, err)
	}
	if _, err := svc.Compact(context.Background(), "assistant", "nobody"); !errors.Is(err, ErrNoConversation) {
		t.Fatalf("compact of a conversation never held: %v", err)
	}
}

func TestConcurrentConversations(t *testing.T) {
	m := mockModel(t, provider.MockConfig{Latency: 5 * time.Millisecond})
	svc := twoAgents(t, t.TempDir(), m, m, ServiceOptions{})
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			_, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "s" + string(rune('a'+i)), Content: "hi"}, nil)
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if l := svc.Store().List(); len(l) != 20 || l[0].Messages != 2 || l[0].Unread != 1 {
		t.Fatalf("listing %d %+v", len(l), l[0])
	}
}

func TestCrashMidStreamKeepsFinishedTurns(t *testing.T) {
	a := &recorder{next: askThenEcho}
	dir := t.TempDir()
	svc := twoAgents(t, dir, a, a, ServiceOptions{})
	// One finished turn (the question answered), then a run left hanging.
	ev := newEvents()
	done := make(chan error, 2)
	go func() {
		_, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "first"}, ev.emit)
		done <- err
	}()
	<-ev.ask
	if err := svc.Reply("assistant", "alice", "red"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "second"}, ev.emit)
		done <- err
	}()
	<-ev.ask
	// What is on disk now is what a SIGKILL would leave: copy it.
	crashed := t.TempDir()
	src := filepath.Join(dir, "assistant", "alice", LogFile)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(crashed, "assistant", "alice", LogFile)
	_ = os.MkdirAll(filepath.Dir(dst), 0o755)
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = svc.Kill("assistant", "alice")
	<-done
	c, ok := quietStore(t, crashed).Lookup("assistant", "alice")
	if !ok {
		t.Fatal("not restored")
	}
	got := texts(c.Messages())
	if len(got) != 3 || got[0] != "first" || !strings.Contains(got[1], "red") || got[2] != "second" {
		t.Fatalf("after the crash: %q", got)
	}
}
