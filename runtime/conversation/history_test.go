package conversation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
)

// rc describes messages as "role/name: text", the system prompt left out.
func rc(ms []dialog.Message) []string {
	var out []string
	for _, m := range ms {
		if m.Role == dialog.RoleSystem {
			continue
		}
		out = append(out, string(m.Role)+"/"+m.Name+": "+m.Text())
	}
	return out
}

// askRun runs content in assistant/alice with the model asking, answers
// the question with answer, and returns the stored reply.
func askRun(t *testing.T, svc *Service, content, answer string) *Entry {
	t.Helper()
	ev := newEvents()
	type result struct {
		e   *Entry
		err error
	}
	done := make(chan result, 1)
	go func() {
		e, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: content}, ev.emit)
		done <- result{e, err}
	}()
	if q := <-ev.ask; q != "Which colour?" {
		t.Fatalf("question %q", q)
	}
	if err := svc.Reply("assistant", "alice", answer); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.e
}

// answerWith has the model answer "re: " and the newest message.
func answerWith(prefix string) func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
	return func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		return text(prefix + req.Messages[len(req.Messages)-1].Text()), nil
	}
}

// TestAskUserAnswerIsKept: the question and the answer are stored on the
// sender's message, the next run's request shows them in their place (the
// question as the agent's, the answer as the sender's), and a restart
// keeps them.
func TestAskUserAnswerIsKept(t *testing.T) {
	dir := t.TempDir()
	a := &recorder{next: askThenEcho}
	svc := twoAgents(t, dir, a, a, ServiceOptions{})
	reply := askRun(t, svc, "pick one", "Blue, please")
	if !strings.HasSuffix(reply.Message.Content, "The user answered: Blue, please") {
		t.Fatalf("reply %q", reply.Message.Content)
	}
	conv, _ := svc.Store().Lookup("assistant", "alice")
	ms := conv.Messages()
	if len(ms) != 2 || len(ms[0].Asks) != 1 || len(ms[1].Asks) != 0 {
		t.Fatalf("stored %+v", ms)
	}
	ask := ms[0].Asks[0]
	if ask.Question != "Which colour?" || ask.Answer != "Blue, please" || ask.Error != "" || ask.Turn != ms[0].Seq ||
		ask.Agent != "assistant" || ask.Seq <= ms[0].Seq || ask.Seq >= ms[1].Seq || ask.Time.IsZero() {
		t.Fatalf("ask %+v (turn %d, reply %d)", ask, ms[0].Seq, ms[1].Seq)
	}
	if u := conv.Summary().Unread; u != 0 {
		t.Errorf("unread %d after a streamed turn with a question", u)
	}

	want := []string{
		"user/alice: pick one",
		"assistant/assistant: Which colour?",
		"user/alice: Blue, please",
		"assistant/assistant: " + reply.Message.Content,
		"user/alice: and now?",
	}
	if got := rc(BuildRequest(conv, "assistant", false, "")); !slices.Equal(got, want[:4]) {
		t.Fatalf("BuildRequest after the turn:\n%q\nwant\n%q", got, want[:4])
	}
	a.next = answerWith("re: ")
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "and now?"})
	reqs := a.requests()
	if got := rc(reqs[len(reqs)-1]); !slices.Equal(got, want) {
		t.Fatalf("the next run's request:\n%q\nwant\n%q", got, want)
	}
	before := BuildRequest(conv, "assistant", false, "")

	// The log says 1.1 and holds the ask record; a restart keeps it.
	_ = svc.Store().Close()
	data, err := os.ReadFile(filepath.Join(dir, "assistant", "alice", LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"version":"1.1"`) || strings.Count(string(data), `"kind":"ask"`) != 1 {
		t.Fatalf("log:\n%s", data)
	}
	c2, ok := quietStore(t, dir).Lookup("assistant", "alice")
	if !ok {
		t.Fatal("not restored")
	}
	ms2 := c2.Messages()
	if len(ms2) != 4 || !reflect.DeepEqual(ms2[0].Asks, ms[0].Asks) {
		t.Fatalf("restored %+v, want asks %+v", ms2, ms[0].Asks)
	}
	if after := BuildRequest(c2, "assistant", false, ""); !reflect.DeepEqual(rc(after), rc(before)) {
		t.Fatalf("request after a restart:\n%q\nbefore:\n%q", rc(after), rc(before))
	}
}

// TestAskUserTimeoutIsKeptAsNoAnswer: a question nobody answered is
// stored with why, and shown to the model as such.
func TestAskUserTimeoutIsKeptAsNoAnswer(t *testing.T) {
	a := &recorder{next: askThenEcho}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{AskTimeout: 20 * time.Millisecond})
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "pick"})
	conv, _ := svc.Store().Lookup("assistant", "alice")
	ms := conv.Messages()
	if len(ms) != 2 || len(ms[0].Asks) != 1 || ms[0].Asks[0].Answer != "" || !strings.Contains(ms[0].Asks[0].Error, "did not answer within 20ms") {
		t.Fatalf("stored %+v", ms)
	}
	got := rc(BuildRequest(conv, "assistant", false, ""))
	if len(got) != 4 || got[1] != "assistant/assistant: Which colour?" || got[2] != "user/alice: [no answer: the user did not answer within 20ms]" {
		t.Fatalf("request %q", got)
	}
}

// notes returns the notes of a request.
func notes(ms []dialog.Message) []dialog.Message {
	var out []dialog.Message
	for _, m := range ms {
		if m.Name == NoteName {
			out = append(out, m)
		}
	}
	return out
}

// TestKilledRunIsNotedOnce: a killed run stores an abort record; every
// later request says so once, right after the message it did not answer;
// unread counts, titles and the listing stay right, and a restart keeps it.
func TestKilledRunIsNotedOnce(t *testing.T) {
	dir := t.TempDir()
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; strings.Contains(last.Content, "hang") {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		return answerWith("re: ")(ctx, n, req)
	}}
	svc := twoAgents(t, dir, a, a, ServiceOptions{})
	// An unread reply first (no one listening), so that unread counts.
	if _, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "first. Of all"}, nil); err != nil {
		t.Fatal(err)
	}
	conv, _ := svc.Store().Lookup("assistant", "alice")
	if u := conv.Summary().Unread; u != 1 {
		t.Fatalf("unread %d, want 1", u)
	}
	ev := newEvents()
	done := runAsync(context.Background(), svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "hang on"}, ev.emit)
	for svc.Kill("assistant", "alice") != nil {
		time.Sleep(time.Millisecond)
	}
	if err := <-done; !errors.Is(err, ErrKilled) {
		t.Fatalf("killed run: %v", err)
	}
	ms := conv.Messages()
	if len(ms) != 3 || ms[2].Message.Content != "hang on" || ms[2].Aborted == nil {
		t.Fatalf("stored %+v", ms)
	}
	if ab := ms[2].Aborted; ab.Status != AbortKilled || ab.Turn != ms[2].Seq || ab.Agent != "assistant" || ab.Seq <= ms[2].Seq || !strings.Contains(ab.Error, "killed") {
		t.Fatalf("abort %+v", ab)
	}
	sum := conv.Summary()
	if sum.Unread != 0 || sum.Messages != 3 || sum.LastPreview != "hang on" || conv.Title() != "first." {
		t.Fatalf("after the kill: %+v title %q", sum, conv.Title())
	}

	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "again"})
	reqs := a.requests()
	got := reqs[len(reqs)-1]
	ns := notes(got)
	if len(ns) != 1 || !strings.Contains(ns[0].Content, "killed") || ns[0].Role != dialog.RoleUser || ns[0].Metadata[MetaNote] != AbortKilled {
		t.Fatalf("notes in the next request: %+v\n%q", ns, rc(got))
	}
	want := []string{"user/alice: first. Of all", "assistant/assistant: re: first. Of all", "user/alice: hang on",
		"user/note: " + ns[0].Content, "user/alice: again"}
	if !slices.Equal(rc(got), want) {
		t.Fatalf("next request:\n%q\nwant\n%q", rc(got), want)
	}
	if u := conv.Summary().Unread; u != 0 {
		t.Errorf("unread after the next streamed turn: %d", u)
	}
	// Still once in the turn after, and after a restart.
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "more"})
	reqs = a.requests()
	if ns := notes(reqs[len(reqs)-1]); len(ns) != 1 {
		t.Fatalf("notes two turns later: %d", len(ns))
	}
	before := rc(BuildRequest(conv, "assistant", false, ""))
	_ = svc.Store().Close()
	c2, _ := quietStore(t, dir).Lookup("assistant", "alice")
	if after := rc(BuildRequest(c2, "assistant", false, "")); !slices.Equal(after, before) {
		t.Fatalf("after a restart:\n%q\nbefore:\n%q", after, before)
	}
	if s := c2.Summary(); s.Unread != 0 || s.Messages != 7 {
		t.Fatalf("restored summary %+v", s)
	}
}

// TestKilledWhileAskingKeepsTheQuestion: a run killed while its question
// waits stores the question, without an answer, and the abort.
func TestKilledWhileAskingKeepsTheQuestion(t *testing.T) {
	a := &recorder{next: askThenEcho}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{})
	ev := newEvents()
	done := runAsync(context.Background(), svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "pick"}, ev.emit)
	<-ev.ask
	if err := svc.Kill("assistant", "alice"); err != nil {
		t.Fatal(err)
	}
	<-done
	conv, _ := svc.Store().Lookup("assistant", "alice")
	ms := conv.Messages()
	if len(ms) != 1 || len(ms[0].Asks) != 1 || ms[0].Aborted == nil || ms[0].Asks[0].Seq >= ms[0].Aborted.Seq {
		t.Fatalf("stored %+v", ms)
	}
	if e := ms[0].Asks[0].Error; ms[0].Asks[0].Answer != "" || !strings.Contains(e, "before the user answered") || !strings.Contains(e, "killed") {
		t.Fatalf("ask %+v", ms[0].Asks[0])
	}
	got := rc(BuildRequest(conv, "assistant", false, ""))
	if len(got) != 4 || got[1] != "assistant/assistant: Which colour?" || !strings.HasPrefix(got[2], "user/alice: [no answer: the run ended") ||
		!strings.HasPrefix(got[3], "user/note: [No reply:") {
		t.Fatalf("request %q", got)
	}
}

// TestCancelledAndFailedRunsAreNoted: a run whose context ends (the
// client went away, shutdown) and one whose model fails are noted with
// their status; a guest's with its name.
func TestCancelledAndFailedRunsAreNoted(t *testing.T) {
	entered := make(chan struct{}, 1)
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		switch last := req.Messages[len(req.Messages)-1].Content; {
		case strings.Contains(last, "hang"):
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		case strings.Contains(last, "fail"):
			return nil, errors.New("the model is on fire")
		}
		return text("fine"), nil
	}}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	if _, err := svc.Run(ctx, RunRequest{Agent: "assistant", Sender: "alice", Content: "hang"}, nil); err == nil {
		t.Fatal("a cancelled run succeeded")
	}
	if _, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "fail", Guest: "critic"}, nil); err == nil {
		t.Fatal("a failing run succeeded")
	}
	conv, _ := svc.Store().Lookup("assistant", "alice")
	ms := conv.Messages()
	if len(ms) != 2 || ms[0].Aborted == nil || ms[1].Aborted == nil {
		t.Fatalf("stored %+v", ms)
	}
	if ab := ms[0].Aborted; ab.Status != AbortCancelled || ab.Agent != "assistant" || ab.Error != "conversation assistant/alice: run cancelled: the client went away" {
		t.Errorf("cancelled: %+v", ab)
	}
	if ab := ms[1].Aborted; ab.Status != AbortFailed || ab.Agent != "critic" || !strings.Contains(ab.Error, "on fire") {
		t.Errorf("failed: %+v", ab)
	}
	ns := notes(BuildRequest(conv, "assistant", false, ""))
	if len(ns) != 2 || !strings.Contains(ns[0].Content, "cancelled") || !strings.Contains(ns[1].Content, "guest critic") ||
		!strings.Contains(ns[1].Content, "failed: ") || !strings.Contains(ns[1].Content, "on fire") {
		t.Fatalf("notes %q", rc(ns))
	}
	if u := conv.Summary().Unread; u != 0 {
		t.Errorf("unread %d with no reply stored", u)
	}
}

// TestUnfinishedTurnWithoutAbortIsNoted: a sender's message followed by
// another with no reply and no abort record (the server died mid-run, or
// a 1.0 log) gets a note too; the newest message does not.
func TestUnfinishedTurnWithoutAbortIsNoted(t *testing.T) {
	s := quietStore(t, t.TempDir())
	c, _ := s.Get("assistant", "alice")
	mustAppend(t, c, user("one"), reply("assistant", "", "1"), user("two"), user("three"))
	got := BuildRequest(c, "assistant", false, "/w")
	want := []string{"user/alice: one", "assistant/assistant: 1", "user/alice: two", "user/note: " + noteText("assistant", nil),
		"user/framing: [framing] The working directory of this turn is /w.", "user/alice: three"}
	if !slices.Equal(rc(got), want) {
		t.Fatalf("request\n%q\nwant\n%q", rc(got), want)
	}
	if ns := notes(got); len(ns) != 1 || ns[0].Metadata[MetaNote] != "unfinished" || !strings.Contains(ns[0].Content, "did not finish") {
		t.Fatalf("notes %+v", ns)
	}
}

// TestCompactionSummarisesAsksAndNotes: a compaction's summary call sees
// the questions, answers and notes, and the archive keeps them.
func TestCompactionSummarisesAsksAndNotes(t *testing.T) {
	dir := t.TempDir()
	a := &recorder{next: askThenEcho}
	svc := twoAgents(t, dir, a, a, ServiceOptions{})
	askRun(t, svc, "pick", "green")
	conv, _ := svc.Store().Lookup("assistant", "alice")
	mustAppend(t, conv, user("lost"))
	if err := conv.addAbort(Abort{Turn: conv.Messages()[2].Seq, Agent: "assistant", Status: AbortKilled, Error: "killed"}); err != nil {
		t.Fatal(err)
	}
	var seen []dialog.Message
	a.next = func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		for _, m := range req.Messages {
			seen = append(seen, *m)
		}
		return text("Colours. Green was picked."), nil
	}
	arch, err := svc.Compact(context.Background(), "assistant", "alice")
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rc(seen), "\n")
	for _, want := range []string{"assistant/assistant: Which colour?", "user/alice: green", "user/note: [No reply:"} {
		if !strings.Contains(all, want) {
			t.Errorf("the summary call lacks %q:\n%s", want, all)
		}
	}
	af, err := conv.ReadArchive(arch.ID)
	if err != nil || af.Missing || len(af.Messages) != 3 || len(af.Messages[0].Asks) != 1 || af.Messages[2].Aborted == nil {
		t.Fatalf("archive %+v %v", af, err)
	}
	if arch.Archived != 3 || conv.Summary().Unread != 0 {
		t.Fatalf("archive %+v, summary %+v", arch, conv.Summary())
	}
}

// TestReadsA10LogWithoutTheNewRecords: a 1.0 log reads as before, and an
// unknown field of an ask record is ignored.
func TestReadsA10LogWithoutTheNewRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "assistant", "alice", LogFile)
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	log := `{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"open","open":{"format":"lllm-go/conversation","version":"1.0","agent":"assistant","sender":"alice"}}
{"seq":2,"ts":"2026-01-01T00:00:01Z","kind":"message","message":{"role":"user","content":"hi","name":"alice"}}
{"seq":3,"ts":"2026-01-01T00:00:02Z","kind":"ask","ask":{"turn":2,"agent":"assistant","question":"Q?","answer":"A","mood":"calm"}}
{"seq":4,"ts":"2026-01-01T00:00:03Z","kind":"message","message":{"role":"assistant","content":"hello","name":"assistant"}}
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	c, ok := quietStore(t, dir).Lookup("assistant", "alice")
	if !ok {
		t.Fatal("not loaded")
	}
	ms := c.Messages()
	if len(ms) != 2 || len(ms[0].Asks) != 1 || ms[0].Asks[0].Seq != 3 || ms[0].Asks[0].Answer != "A" || ms[0].Aborted != nil {
		t.Fatalf("loaded %+v", ms)
	}
}

// TestStoreDeleteMovesToTrash: a deleted conversation leaves the store
// and its folder moves to the trash, whole; a restart does not see it, a
// held *Conversation refuses writes, and the next Get starts afresh.
func TestStoreDeleteMovesToTrash(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	c, _ := s.Get("assistant", "alice")
	mustAppend(t, c, user("one"), reply("assistant", "", "two"))
	if _, err := c.Compact(context.Background(), summarizeWith("Counting.")); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, user("three"))
	b, _ := s.Get("assistant", "bob")
	mustAppend(t, b, user("hi"))
	if _, err := s.Delete("assistant", "carol"); !errors.Is(err, ErrNoConversation) {
		t.Fatalf("delete of nothing: %v", err)
	}
	s.Get("assistant", "dave") // referenced only: nothing stored
	if _, err := s.Delete("assistant", "dave"); !errors.Is(err, ErrNoConversation) {
		t.Fatalf("delete of a referenced conversation: %v", err)
	}
	rel, err := s.Delete("assistant", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rel, TrashDir+"/assistant/alice/") {
		t.Fatalf("trash path %q", rel)
	}
	if _, err := os.Stat(filepath.Join(dir, "assistant", "alice")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the folder is still there: %v", err)
	}
	for _, f := range []string{LogFile, "archives/000001.json"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel), f)); err != nil {
			t.Errorf("trash lacks %s: %v", f, err)
		}
	}
	if _, ok := s.Lookup("assistant", "alice"); ok {
		t.Fatal("still in the store")
	}
	if l := s.List(); len(l) != 1 || l[0].Sender != "bob" {
		t.Fatalf("listing %+v", l)
	}
	if _, err := c.Append(user("late")); !errors.Is(err, ErrNoConversation) {
		t.Fatalf("append to a deleted conversation: %v", err)
	}
	if _, err := s.Delete("assistant", "alice"); !errors.Is(err, ErrNoConversation) {
		t.Fatalf("second delete: %v", err)
	}
	c2, _ := s.Get("assistant", "alice")
	if len(c2.Messages()) != 0 || len(c2.Archives()) != 0 {
		t.Fatal("a new conversation is not empty")
	}
	mustAppend(t, c2, user("fresh"))
	_ = s.Close()
	s2 := quietStore(t, dir)
	c3, ok := s2.Lookup("assistant", "alice")
	if !ok || !slices.Equal(texts(c3.Messages()), []string{"fresh"}) || len(c3.Archives()) != 0 {
		t.Fatalf("after a restart: %v %q", ok, texts(c3.Messages()))
	}
	if len(s2.Warnings()) != 0 {
		t.Fatalf("warnings %q", s2.Warnings())
	}
}

// TestServiceDeleteAndMarkRead: the Service refuses to delete while a run
// is in progress, and mark-read zeroes unread for good.
func TestServiceDeleteAndMarkRead(t *testing.T) {
	dir := t.TempDir()
	a := &recorder{next: askThenEcho}
	svc := twoAgents(t, dir, a, a, ServiceOptions{})
	ev := newEvents()
	done := runAsync(context.Background(), svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "pick"}, ev.emit)
	<-ev.ask
	if _, err := svc.Delete("assistant", "alice"); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "kill") {
		t.Fatalf("delete while running: %v", err)
	}
	_ = svc.Reply("assistant", "alice", "red")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := svc.MarkRead("assistant", "nobody"); !errors.Is(err, ErrNoConversation) {
		t.Fatalf("mark-read of nothing: %v", err)
	}
	if err := svc.MarkRead("ghost", "alice"); !errors.Is(err, ErrUnknownAgent) {
		t.Fatalf("mark-read of an unknown agent: %v", err)
	}
	a.next = answerWith("re: ")
	if _, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "bob", Content: "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	bob, _ := svc.Store().Lookup("assistant", "bob")
	if u := bob.Summary().Unread; u != 1 {
		t.Fatalf("unread %d", u)
	}
	if err := svc.MarkRead("assistant", "bob"); err != nil || bob.Summary().Unread != 0 {
		t.Fatalf("mark-read: %v, unread %d", err, bob.Summary().Unread)
	}
	if _, err := svc.Delete("assistant", "alice"); err != nil {
		t.Fatal(err)
	}
	if svc.Running("assistant", "alice") {
		t.Fatal("delete left the conversation busy")
	}
	_ = svc.Store().Close()
	s2 := quietStore(t, dir)
	if _, ok := s2.Lookup("assistant", "alice"); ok {
		t.Fatal("a deleted conversation came back")
	}
	if b, _ := s2.Lookup("assistant", "bob"); b.Summary().Unread != 0 {
		t.Fatalf("unread after a restart: %d", b.Summary().Unread)
	}
}

// TestStoreSearch: case-insensitive (with Unicode folding) substring
// search over the live messages and the asks, across conversations, with
// a limit, snippets and, on request, the archives.
func TestStoreSearch(t *testing.T) {
	s := quietStore(t, t.TempDir())
	ctx := context.Background()
	a, _ := s.Get("assistant", "alice")
	long := strings.Repeat("x", 100) + " The BLUE whale is large. " + strings.Repeat("y", 100)
	mustAppend(t, a, user("old blue archive"), reply("assistant", "", "ok"))
	if _, err := a.Compact(ctx, summarizeWith("Old.")); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, a, user(long), reply("assistant", "", "Blue\nwhales, yes"))
	a.addAsk(Ask{Turn: a.Messages()[1].Seq, Agent: "assistant", Question: "Which one?", Answer: "the bLuE one"})
	b, _ := s.Get("assistant", "bob")
	mustAppend(t, b, user("Été à Zürich: KELVIN 5\u212a"), reply("critic", "critic", "nothing here"))
	o, _ := s.Get("other", "alice")
	mustAppend(t, o, user("blue too"))

	res, err := s.Search(ctx, SearchRequest{Query: "blue", Agent: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	var where []string
	for _, m := range res.Matches {
		where = append(where, m.Sender+"/"+m.Field+"/"+string(m.Role))
	}
	if !slices.Equal(where, []string{"alice/content/user", "alice/answer/user", "alice/content/assistant"}) || res.Truncated {
		t.Fatalf("matches %q truncated %v", where, res.Truncated)
	}
	m := res.Matches[0]
	if m.Index != 1 || m.Seq != a.Messages()[1].Seq || m.Archive != 0 || m.Agent != "assistant" {
		t.Fatalf("match %+v", m)
	}
	if want := "…" + strings.Repeat("x", 35) + " The BLUE whale is large. " + strings.Repeat("y", 23) + "…"; m.Snippet != want {
		t.Fatalf("snippet %q, want %q", m.Snippet, want)
	}
	if len(m.Snippet) > 2*snippetContext+len("blue")+2*len("…") {
		t.Fatalf("snippet of %d bytes: %q", len(m.Snippet), m.Snippet)
	}
	if res.Matches[2].Snippet != "Blue whales, yes" {
		t.Fatalf("one-line snippet %q", res.Matches[2].Snippet)
	}
	// A question is the asking agent's, its answer the sender's.
	res, _ = s.Search(ctx, SearchRequest{Query: "which one", Agent: "assistant", Sender: "alice"})
	if len(res.Matches) != 1 || res.Matches[0].Field != "question" || res.Matches[0].Role != dialog.RoleAssistant || res.Matches[0].Name != "assistant" {
		t.Fatalf("a question's match: %+v", res.Matches)
	}
	res, _ = s.Search(ctx, SearchRequest{Query: "blue one", Agent: "assistant", Sender: "alice"})
	if len(res.Matches) != 1 || res.Matches[0].Role != dialog.RoleUser || res.Matches[0].Name != "alice" {
		t.Fatalf("an answer's match: %+v", res.Matches)
	}
	// Unicode case folding: é/É, the Kelvin sign and k.
	for q, want := range map[string]string{"ÉTÉ": "Été à Zürich: KELVIN 5\u212a", "zÜRICH": "Été à Zürich: KELVIN 5\u212a", "5k": "Été à Zürich: KELVIN 5\u212a"} {
		res, err := s.Search(ctx, SearchRequest{Query: q, Agent: "assistant", Sender: "bob"})
		if err != nil || len(res.Matches) != 1 || res.Matches[0].Snippet != want {
			t.Errorf("%q: %+v %v", q, res, err)
		}
	}
	// The limit, and every agent.
	res, _ = s.Search(ctx, SearchRequest{Query: "BLUE", Limit: 2})
	if len(res.Matches) != 2 || !res.Truncated {
		t.Fatalf("limit 2: %+v", res)
	}
	res, _ = s.Search(ctx, SearchRequest{Query: "BLUE", Limit: 4})
	if len(res.Matches) != 4 || res.Truncated {
		t.Fatalf("limit 4 of 4: %+v", res)
	}
	// Archives, streamed from their files.
	res, _ = s.Search(ctx, SearchRequest{Query: "OLD BLUE", Agent: "assistant", Archives: true})
	if len(res.Matches) != 1 || res.Matches[0].Archive != 1 || res.Matches[0].Index != 0 || res.Matches[0].Snippet != "old blue archive" {
		t.Fatalf("archive search: %+v", res)
	}
	if res, _ := s.Search(ctx, SearchRequest{Query: "old blue", Agent: "assistant"}); len(res.Matches) != 0 {
		t.Fatalf("archives searched unasked: %+v", res)
	}
	for _, q := range []string{"", "  "} {
		if _, err := s.Search(ctx, SearchRequest{Query: q}); !errors.Is(err, ErrEmptyQuery) {
			t.Errorf("query %q: %v", q, err)
		}
	}
	if _, err := s.Search(ctx, SearchRequest{Query: "x", Limit: MaxSearchLimit + 1}); err == nil {
		t.Error("a limit over the maximum was taken")
	}
}

// A question cut by a cancelled run (the client went away, shutdown) says
// so in words, not as Go's "context canceled".
func TestCancelledWhileAskingSaysWhy(t *testing.T) {
	a := &recorder{next: askThenEcho}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{})
	ev := newEvents()
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(ctx, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "pick"}, ev.emit)
	<-ev.ask
	cancel()
	<-done
	conv, _ := svc.Store().Lookup("assistant", "alice")
	ms := conv.Messages()
	if len(ms) != 1 || len(ms[0].Asks) != 1 {
		t.Fatalf("stored %+v", ms)
	}
	if e := ms[0].Asks[0].Error; !strings.Contains(e, "the client went away or the server stopped") || strings.Contains(e, "context canceled") {
		t.Fatalf("ask %+v", ms[0].Asks[0])
	}
}

// A run cancelled by a stopping server ends "cancelled", saying why, in its end event and its abort record alike.
func TestStoppingServerCancelsWithItsCause(t *testing.T) {
	entered := make(chan struct{}, 1)
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, fmt.Errorf("mock: cancelled: %w", ctx.Err())
	}}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { <-entered; cancel(ErrStopping) }()
	ev := newEvents()
	if _, err := svc.Run(ctx, RunRequest{Agent: "assistant", Sender: "alice", Content: "hang"}, ev.emit); err == nil {
		t.Fatal("a cancelled run succeeded")
	}
	const want = "conversation assistant/alice: run cancelled: the server is stopping"
	if end := ev.last(); end.Status != "cancelled" || end.Error != want {
		t.Fatalf("end %+v", end)
	}
	conv, _ := svc.Store().Lookup("assistant", "alice")
	if ab := conv.Messages()[0].Aborted; ab == nil || ab.Status != AbortCancelled || ab.Error != want {
		t.Fatalf("abort %+v", ab)
	}
}
