package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/provider"
)

// modelFunc is a provider.Model answering with a function.
type modelFunc func(ctx context.Context, req *provider.Request) (*provider.Response, error)

func (f modelFunc) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	resp, err := f(ctx, req)
	if err == nil && req.Stream != nil && resp.Message.Content != "" {
		for _, w := range strings.SplitAfter(resp.Message.Content, " ") {
			if err := req.Stream(ctx, provider.Chunk{Text: w}); err != nil {
				return nil, err
			}
		}
	}
	return resp, err
}

// scripted asks the user when told "ask", echoes tool results, and
// otherwise answers "echo: CONTENT".
var scripted = modelFunc(func(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == dialog.RoleTool:
		return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: "after tool: " + last.Text()}}, nil
	case strings.Contains(last.Content, "ask"):
		return &provider.Response{Message: dialog.Message{Role: dialog.RoleToolCall,
			FunctionCalls: []dialog.FunctionCall{{ID: "call_1", Name: "ask_user", Arguments: json.RawMessage(`{"question":"Which colour?"}`)}}}}, nil
	case strings.HasPrefix(last.Content, "Summarise"):
		return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: "Colours were discussed. Blue won."}}, nil
	}
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: "echo: " + last.Content}}, nil
})

type fixture struct {
	t     *testing.T
	dir   string
	svc   *conversation.Service
	srv   *httptest.Server
	store *conversation.Store
}

// stored lists what dir holds beside the store's lock file.
func stored(dir string) []os.DirEntry {
	ents, _ := os.ReadDir(dir)
	return slices.DeleteFunc(ents, func(e os.DirEntry) bool { return e.Name() == conversation.LockFile })
}

// stop closes the server and its store, as lllm serve does when it stops,
// so that another may open the data dir.
func (f *fixture) stop() {
	f.srv.Close()
	if err := f.store.Close(); err != nil {
		f.t.Fatal(err)
	}
}

func newFixture(t *testing.T, dir string, opts Options) *fixture {
	t.Helper()
	store, err := conversation.Open(dir, conversation.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	sys := func(name, text string) *dialog.Prompt {
		p, err := dialog.NewPrompt(name+"/system", text)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	svc, err := conversation.NewService(store, []*conversation.AgentSpec{
		{Name: "assistant", System: sys("assistant", "You help."), Model: scripted, ModelName: "mock/a", Guests: []string{"critic"}},
		{Name: "critic", System: sys("critic", "You criticise."), Model: scripted, ModelName: "mock/c", Guests: []string{}},
	}, conversation.ServiceOptions{AskTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if opts.MaxContentBytes == 0 {
		opts.MaxContentBytes = 1000
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = 2 * time.Millisecond // every stream meets keep-alive comments
	}
	srv := httptest.NewServer(New(svc, opts))
	t.Cleanup(func() {
		srv.Close()
		_ = store.Close()
	})
	return &fixture{t: t, dir: dir, svc: svc, srv: srv, store: store}
}

func (f *fixture) do(method, path, body string, hdr ...string) (int, map[string]any) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &out); err != nil {
		f.t.Fatalf("%s %s: %d, not JSON: %q", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode, out
}

type sseEvent struct {
	name string
	ev   conversation.Event
}

// stream posts body to /v1/stream and sends each event to the channel,
// closing it at the end. A non-SSE answer is returned as status and body.
func (f *fixture) stream(body string) (int, map[string]any, <-chan sseEvent) {
	f.t.Helper()
	resp, err := http.Post(f.srv.URL+"/v1/stream", "application/json", strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out, nil
	}
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var name string
		for sc.Scan() {
			line := sc.Text()
			if n, ok := strings.CutPrefix(line, "event: "); ok {
				name = n
			} else if d, ok := strings.CutPrefix(line, "data: "); ok {
				var ev conversation.Event
				if err := json.Unmarshal([]byte(d), &ev); err != nil {
					f.t.Errorf("bad event data %q", d)
				}
				ch <- sseEvent{name, ev}
			}
		}
	}()
	return resp.StatusCode, nil, ch
}

func collect(ch <-chan sseEvent) []sseEvent {
	var out []sseEvent
	for e := range ch {
		out = append(out, e)
	}
	return out
}

func (f *fixture) messages(agent, sender string) []string {
	f.t.Helper()
	code, out := f.do("GET", "/v1/conversations/"+agent+"/"+sender+"/messages", "")
	if code != 200 {
		f.t.Fatalf("messages: %d %v", code, out)
	}
	var texts []string
	for _, m := range out["messages"].([]any) {
		texts = append(texts, m.(map[string]any)["message"].(map[string]any)["content"].(string))
	}
	return texts
}

func TestStreamEventOrderAndAgents(t *testing.T) {
	f := newFixture(t, t.TempDir(), Options{})
	code, _, ch := f.stream(`{"agent":"assistant","sender":"alice","content":"hello there"}`)
	if code != 200 || ch == nil {
		t.Fatalf("status %d", code)
	}
	evs := collect(ch)
	var names []string
	var text strings.Builder
	for _, e := range evs {
		names = append(names, e.name)
		if e.name != e.ev.Type || e.ev.Agent != "assistant" {
			t.Errorf("event %+v", e)
		}
		if e.name == "text" {
			text.WriteString(e.ev.Text)
		}
	}
	if names[0] != "start" || names[len(names)-1] != "end" || len(names) < 4 {
		t.Fatalf("events %v", names)
	}
	if text.String() != "echo: hello there" || evs[len(evs)-1].ev.Status != "ok" {
		t.Fatalf("text %q end %+v", text.String(), evs[len(evs)-1].ev)
	}
	// A guest turn names the guest at start and end.
	_, _, ch = f.stream(`{"agent":"assistant","sender":"alice","content":"thoughts?","guest":"critic"}`)
	evs = collect(ch)
	if s, e := evs[0].ev, evs[len(evs)-1].ev; s.Agent != "critic" || !s.Guest || e.Agent != "critic" || e.Status != "ok" {
		t.Fatalf("guest start %+v end %+v", s, e)
	}
	if got := f.messages("assistant", "alice"); len(got) != 4 || got[3] != "echo: thoughts?" {
		t.Fatalf("messages %q", got)
	}
	// The default sender is "user".
	collect(func() <-chan sseEvent { _, _, ch := f.stream(`{"agent":"critic","content":"hi"}`); return ch }())
	if got := f.messages("critic", "user"); len(got) != 2 {
		t.Fatalf("default sender: %q", got)
	}
	code, out := f.do("GET", "/v1/conversations", "")
	convs := out["conversations"].([]any)
	if code != 200 || len(convs) != 2 {
		t.Fatalf("list %d %v", code, out)
	}
	var found bool
	for _, c := range convs {
		c := c.(map[string]any)
		if c["agent"] == "assistant" {
			found = true
			ps, _ := json.Marshal(c["participants"])
			if c["title"] != "hello there" || c["last_preview"] == "" || c["last_time"] == nil || string(ps) != `["alice","assistant","critic"]` || c["unread"].(float64) != 0 {
				t.Errorf("summary %v", c)
			}
		}
	}
	if !found {
		t.Fatal("assistant/alice not listed")
	}
	code, out = f.do("GET", "/v1/agents", "")
	if code != 200 || len(out["agents"].([]any)) != 2 {
		t.Fatalf("agents %d %v", code, out)
	}
}

// waitAsk reads events until the ask event.
func waitAsk(t *testing.T, ch <-chan sseEvent) {
	t.Helper()
	for e := range ch {
		if e.name == "ask" {
			if e.ev.Text != "Which colour?" {
				t.Fatalf("ask %+v", e.ev)
			}
			return
		}
	}
	t.Fatal("no ask event")
}

func TestBusyReplyAndKill(t *testing.T) {
	f := newFixture(t, t.TempDir(), Options{})
	code, out := f.do("POST", "/v1/reply", `{"agent":"assistant","sender":"alice","content":"blue"}`)
	if code != 409 || out["code"] != "nothing_pending" || !strings.Contains(out["error"].(string), "no ask_user question is pending") {
		t.Fatalf("reply with nothing pending: %d %v", code, out)
	}
	_, _, ch := f.stream(`{"agent":"assistant","sender":"alice","content":"please ask me"}`)
	waitAsk(t, ch)
	// Busy says what to do about it.
	const hint = "busy: a run is already in progress in this conversation: wait for its end, or kill it (POST /v1/kill)"
	code, out, _ = f.stream(`{"agent":"assistant","sender":"alice","content":"second"}`)
	if code != 409 || out["code"] != "busy" || !strings.Contains(out["error"].(string), hint) {
		t.Fatalf("second stream: %d %v", code, out)
	}
	if code, out := f.do("POST", "/v1/compact", `{"agent":"assistant","sender":"alice"}`); code != 409 || out["code"] != "busy" || !strings.Contains(out["error"].(string), hint) {
		t.Fatalf("compact while running: %d %v", code, out)
	}
	if code, out := f.do("POST", "/v1/reply", `{"agent":"assistant","sender":"alice","content":"blue"}`); code != 200 {
		t.Fatalf("reply: %d %v", code, out)
	}
	evs := collect(ch)
	end := evs[len(evs)-1].ev
	if end.Type != "end" || end.Status != "ok" || !strings.Contains(end.Message.Message.Content, "The user answered: blue") {
		t.Fatalf("end %+v", end)
	}
	if got := f.messages("assistant", "alice"); len(got) != 2 {
		t.Fatalf("busy stream stored something: %q", got)
	}

	// Kill during the ask_user tool call.
	_, _, ch = f.stream(`{"agent":"assistant","sender":"alice","content":"ask again"}`)
	waitAsk(t, ch)
	if code, out := f.do("POST", "/v1/kill", `{"agent":"assistant","sender":"alice"}`); code != 200 || out["killed"] != true {
		t.Fatalf("kill: %d %v", code, out)
	}
	evs = collect(ch)
	if end := evs[len(evs)-1].ev; end.Type != "end" || end.Status != "killed" || end.Agent != "assistant" {
		t.Fatalf("killed end %+v", end)
	}
	got := f.messages("assistant", "alice")
	if len(got) != 3 || got[2] != "ask again" {
		t.Fatalf("after kill: %q", got)
	}
	if code, out := f.do("POST", "/v1/kill", `{"agent":"assistant","sender":"alice"}`); code != 409 || out["code"] != "not_running" {
		t.Fatalf("kill with nothing running: %d %v", code, out)
	}
}

func TestBearerToken(t *testing.T) {
	f := newFixture(t, t.TempDir(), Options{Token: "s3cret"})
	if code, out := f.do("GET", "/v1/agents", ""); code != 401 || !strings.Contains(out["error"].(string), "missing bearer token") {
		t.Fatalf("no token: %d %v", code, out)
	}
	if code, out := f.do("GET", "/v1/agents", "", "Authorization", "Bearer nope"); code != 401 || out["error"] != "wrong bearer token" {
		t.Fatalf("wrong token: %d %v", code, out)
	}
	if code, _ := f.do("GET", "/v1/agents", "", "Authorization", "Bearer s3cret"); code != 200 {
		t.Fatalf("right token: %d", code)
	}
}

func TestLoopbackOnlyByDefault(t *testing.T) {
	f := newFixture(t, t.TempDir(), Options{})
	h := New(f.svc, Options{})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/agents", nil)
	req.RemoteAddr = "192.0.2.7:5555"
	h.ServeHTTP(rec, req)
	if rec.Code != 403 || !strings.Contains(rec.Body.String(), "loopback clients only") {
		t.Fatalf("remote client: %d %s", rec.Code, rec.Body)
	}
	for addr, want := range map[string]bool{"127.0.0.1:7878": true, "localhost:1": true, "[::1]:1": true, "0.0.0.0:7878": false, ":7878": false} {
		if IsLoopbackAddr(addr) != want {
			t.Errorf("IsLoopbackAddr(%q) != %v", addr, want)
		}
	}
}

func TestBadInputStoresNothing(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, dir, Options{})
	big := strings.Repeat("x", 1001)
	for _, tc := range []struct {
		method, path, body string
		code               int
		errCode, mention   string
	}{
		{"POST", "/v1/stream", `{"agent":"nobody","content":"hi"}`, 404, "unknown_agent", `unknown agent "nobody"`},
		{"POST", "/v1/stream", `{"content":"hi"}`, 400, "missing_field", "agent"},
		{"POST", "/v1/stream", `{"agent":"assistant"}`, 400, "missing_field", "content"},
		{"POST", "/v1/stream", `{"agent":"assistant","content":"` + big + `"}`, 413, "too_large", "1001 bytes"},
		{"POST", "/v1/stream", `{"agent":"assistant","content":"` + strings.Repeat("x", 40000) + `"}`, 413, "too_large", "content may have at most 1000"},
		{"POST", "/v1/stream", `{"agent":"assistant","content":`, 400, "malformed_json", "malformed JSON"},
		{"POST", "/v1/stream", `[1,2]`, 400, "malformed_json", "malformed JSON"},
		{"POST", "/v1/stream", `{"agent":"assistant","content":"hi","colour":"red"}`, 400, "unknown_field", `"colour"`},
		{"POST", "/v1/stream", `{"agent":"assistant","content":"hi","guest":"ghost"}`, 400, "unknown_guest", `"ghost"`},
		{"POST", "/v1/stream", `{"agent":"critic","content":"hi","guest":"assistant"}`, 403, "guest_not_admitted", "may not join"},
		{"POST", "/v1/stream", `{"agent":"assistant","sender":"../x","content":"hi"}`, 400, "bad_name", "sender"},
		{"POST", "/v1/stream", `{"agent":"assistant","content":5}`, 400, "malformed_json", "field content must be a string, not a number"},
		{"POST", "/v1/reply", `{"agent":"assistant","sender":"alice","content":"x"}`, 409, "nothing_pending", "no ask_user question"},
		{"POST", "/v1/reply", `{"agent":"assistant","sender":"alice"}`, 400, "missing_field", "content"},
		{"POST", "/v1/kill", `{"agent":"assistant"}`, 400, "missing_field", `missing field: sender (whose conversation it is: a stream request that named no sender was sent as "user")`},
		{"POST", "/v1/compact", `{"agent":"assistant"}`, 400, "missing_field", `sent as "user"`},
		{"POST", "/v1/reply", `{"agent":"assistant"}`, 400, "missing_field", `missing field: sender, content (whose conversation`},
		{"POST", "/v1/kill", `{"agent":"nobody","sender":"a"}`, 404, "unknown_agent", "nobody"},
		{"POST", "/v1/compact", `{"agent":"assistant","sender":"alice"}`, 404, "no_conversation", "nothing is stored for it"},
		{"GET", "/v1/conversations/nobody/alice/messages", "", 404, "unknown_agent", "nobody"},
		{"GET", "/v1/conversations/assistant/alice/archives/x", "", 400, "bad_archive", "want a number"},
		{"GET", "/v1/conversations/assistant/alice/archives/1", "", 404, "no_archive", "no archives"},
		{"GET", "/v1/nothing", "", 404, "not_found", "/v1/nothing"},
	} {
		code, out := f.do(tc.method, tc.path, tc.body)
		msg, _ := out["error"].(string)
		if code != tc.code || out["code"] != tc.errCode || !strings.Contains(msg, tc.mention) {
			t.Errorf("%s %s %.60s: %d %v, want %d %s mentioning %q", tc.method, tc.path, tc.body, code, out, tc.code, tc.errCode, tc.mention)
		}
	}
	if ents := stored(dir); len(ents) != 0 {
		t.Fatalf("bad input stored something: %v", ents)
	}
	if _, out := f.do("GET", "/v1/conversations", ""); len(out["conversations"].([]any)) != 0 {
		t.Fatalf("listed %v", out)
	}
}

func TestCompactArchivesAndRestart(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, dir, Options{})
	collect(func() <-chan sseEvent {
		_, _, ch := f.stream(`{"agent":"assistant","sender":"bob","content":"I like blue","cwd":"/tmp/w"}`)
		return ch
	}())
	code, out := f.do("POST", "/v1/compact", `{"agent":"assistant","sender":"bob"}`)
	if code != 200 || out["title"] != "Colours were discussed." || out["id"].(float64) != 1 {
		t.Fatalf("compact: %d %v", code, out)
	}
	code, out = f.do("GET", "/v1/conversations/assistant/bob/archives", "")
	as := out["archives"].([]any)
	if code != 200 || len(as) != 1 || as[0].(map[string]any)["missing"] != nil {
		t.Fatalf("archives %d %v", code, out)
	}
	code, out = f.do("GET", "/v1/conversations/assistant/bob/archives/1", "")
	if code != 200 || len(out["messages"].([]any)) != 2 {
		t.Fatalf("archive 1: %d %v", code, out)
	}
	collect(func() <-chan sseEvent {
		_, _, ch := f.stream(`{"agent":"assistant","sender":"bob","content":"and now?"}`)
		return ch
	}())
	f.stop()

	// Restart on the same data dir: history, title, cwd and archives are back.
	if err := os.Remove(filepath.Join(dir, "assistant", "bob", "archives", "000001.json")); err != nil {
		t.Fatal(err)
	}
	g := newFixture(t, dir, Options{})
	got := g.messages("assistant", "bob")
	if len(got) != 3 || !strings.Contains(got[0], "Colours were discussed.") || got[1] != "and now?" {
		t.Fatalf("after restart: %q", got)
	}
	_, out = g.do("GET", "/v1/conversations/assistant/bob/messages", "")
	if out["title"] != "I like blue" || out["cwd"] != "/tmp/w" || out["archives"].(float64) != 1 {
		t.Fatalf("summary after restart %v", out)
	}
	_, out = g.do("GET", "/v1/conversations/assistant/bob/archives", "")
	if a := out["archives"].([]any)[0].(map[string]any); a["missing"] != true {
		t.Fatalf("missing archive not flagged: %v", a)
	}
	code, out = g.do("GET", "/v1/conversations/assistant/bob/archives/1", "")
	if code != 200 || out["missing"] != true || !strings.Contains(out["messages"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string), "is missing") {
		t.Fatalf("missing archive: %d %v", code, out)
	}
}

// A stream with nothing to send, here a run waiting on ask_user, sends an
// SSE comment every KeepAlive, so that an idle timeout does not close it.
func TestStreamKeepAlive(t *testing.T) {
	f := newFixture(t, t.TempDir(), Options{KeepAlive: 20 * time.Millisecond})
	resp, err := http.Post(f.srv.URL+"/v1/stream", "application/json", strings.NewReader(`{"agent":"assistant","sender":"alice","content":"please ask"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	asked, alive := false, 0
	for alive < 3 && sc.Scan() {
		switch line := sc.Text(); {
		case strings.HasPrefix(line, "event: ask"):
			asked = true
		case line == ": keep-alive" && asked:
			alive++
		}
	}
	if alive < 3 {
		t.Fatalf("%d keep-alive comments while the question waited", alive)
	}
	if code, _ := f.do("POST", "/v1/kill", `{"agent":"assistant","sender":"alice"}`); code != 200 {
		t.Fatal("kill")
	}
}

// A conversation stored for an agent the config no longer has is listed, and so can be read, searched, marked read and deleted; an unknown agent with nothing stored is still a 404.
func TestConversationOfAnAgentNoLongerServed(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "oldagent", "bob"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := `{"seq":1,"ts":"2026-11-22T07:38:59Z","kind":"open","open":{"format":"lllm-go/conversation","version":"1.1","agent":"oldagent","sender":"bob"}}
{"seq":2,"ts":"2026-11-22T07:38:59Z","kind":"message","message":{"role":"user","content":"hello there","name":"bob"}}
{"seq":3,"ts":"2026-11-22T07:39:00Z","kind":"message","message":{"role":"assistant","content":"Hi!","name":"oldagent"}}
`
	if err := os.WriteFile(filepath.Join(dir, "oldagent", "bob", "conversation.jsonl"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, dir, Options{})
	if _, out := f.do("GET", "/v1/conversations", ""); len(out["conversations"].([]any)) != 1 {
		t.Fatalf("not listed: %v", out)
	}
	if got := f.messages("oldagent", "bob"); strings.Join(got, "|") != "hello there|Hi!" {
		t.Fatalf("messages %q", got)
	}
	if code, out := f.do("GET", "/v1/conversations/oldagent/bob/archives", ""); code != 200 {
		t.Fatalf("archives: %d %v", code, out)
	}
	if code, out := f.do("POST", "/v1/mark-read", `{"agent":"oldagent","sender":"bob"}`); code != 200 {
		t.Fatalf("mark-read: %d %v", code, out)
	}
	if code, out := f.do("GET", "/v1/conversations/oldagent/eve/messages", ""); code != 404 || out["code"] != "unknown_agent" {
		t.Fatalf("nothing stored: %d %v", code, out)
	}
	if code, out := f.do("DELETE", "/v1/conversations/oldagent/bob", ""); code != 200 || out["deleted"] != true {
		t.Fatalf("delete: %d %v", code, out)
	}
	if code, _ := f.do("GET", "/v1/conversations/oldagent/bob/messages", ""); code != 404 {
		t.Fatalf("after delete: %d", code)
	}
}

// A client that sends a stream request and then reads nothing does not
// hold the conversation busy: once the socket buffers are full, a write
// that cannot proceed for WriteTimeout ends the run as a client that went
// away, and the next turn finds the conversation free.
func TestStalledClientFreesTheConversation(t *testing.T) {
	f := newFixture(t, t.TempDir(), Options{MaxContentBytes: 1 << 20, WriteTimeout: 200 * time.Millisecond, KeepAlive: time.Hour})
	// Each word of the echo is an SSE event: megabytes of them, more than
	// the socket buffers hold.
	body, _ := json.Marshal(map[string]string{"agent": "assistant", "sender": "stuck", "content": strings.Repeat("x ", 150_000)})
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	fmt.Fprintf(conn, "POST /v1/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// Writing the events that fill the buffers took 8 to 10 s under the
	// race detector on a loaded 2-core machine: the deadline is for a run
	// that never ends, not for a slow one.
	const wait = time.Minute
	deadline := time.Now().Add(wait)
	for !f.svc.Running("assistant", "stuck") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for f.svc.Running("assistant", "stuck") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if f.svc.Running("assistant", "stuck") {
		t.Fatalf("the run of a client that reads nothing still holds the conversation after %v", wait)
	}
	_, _, ch := f.stream(`{"agent":"assistant","sender":"stuck","content":"again"}`)
	evs := collect(ch)
	if end := evs[len(evs)-1].ev; end.Type != "end" || end.Status != "ok" {
		t.Fatalf("next turn: %+v", end)
	}
}
