package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/provider"
)

// edgeModel is scripted, except that a message containing "slow" closes
// entered (if set) and waits for release, or with ignoreCancel for its
// context to end (closing cancelled) and then answers anyway.
type edgeModel struct {
	release, entered, cancelled chan struct{}
	ignoreCancel                bool
}

func (m *edgeModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == dialog.RoleUser && strings.Contains(last.Content, "slow") {
		if m.entered != nil {
			close(m.entered)
		}
		if m.ignoreCancel {
			<-ctx.Done()
			close(m.cancelled)
		} else {
			select {
			case <-m.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: "the whole slow reply"}}, nil
	}
	return scripted.Generate(ctx, req)
}

// edgeFixture is newFixture with the agents assistant (admits critic),
// critic (admits nobody) and open (admits everyone) on model.
func edgeFixture(t *testing.T, dir string, model provider.Model, ask time.Duration, opts Options) *fixture {
	t.Helper()
	store, err := conversation.Open(dir, conversation.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	sys := func(name string) *dialog.Prompt {
		p, err := dialog.NewPrompt(name+"/system", "You are "+name+".")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	svc, err := conversation.NewService(store, []*conversation.AgentSpec{
		{Name: "assistant", System: sys("assistant"), Model: model, ModelName: "mock/a", Guests: []string{"critic"}},
		{Name: "critic", System: sys("critic"), Model: model, ModelName: "mock/c", Guests: []string{}},
		{Name: "open", System: sys("open"), Model: model, ModelName: "mock/o"},
	}, conversation.ServiceOptions{AskTimeout: ask})
	if err != nil {
		t.Fatal(err)
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = 2 * time.Millisecond // every stream meets keep-alive comments
	}
	srv := httptest.NewServer(New(svc, opts))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		_ = store.Close()
	})
	return &fixture{t: t, dir: dir, svc: svc, srv: srv, store: store}
}

// lastEnd is the end event of a collected stream.
func lastEnd(t *testing.T, evs []sseEvent) conversation.Event {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].name != "end" {
		t.Fatalf("stream without an end event: %+v", evs)
	}
	return evs[len(evs)-1].ev
}

// turn streams body to its end and returns the end event.
func (f *fixture) turn(body string) conversation.Event {
	f.t.Helper()
	code, out, ch := f.stream(body)
	if code != 200 || ch == nil {
		f.t.Fatalf("stream %s: %d %v", body, code, out)
	}
	return lastEnd(f.t, collect(ch))
}

// waitIdle polls until no run is in progress in the conversation.
func (f *fixture) waitIdle(agent, sender string) {
	f.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); f.svc.Running(agent, sender); {
		if time.Now().After(deadline) {
			f.t.Fatalf("%s/%s still running", agent, sender)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestEdgeOneSenderConcurrentStreams: simultaneous streams of one sender get one run and clear 409 busy answers, and turns are never interleaved or lost.
func TestEdgeOneSenderConcurrentStreams(t *testing.T) {
	m := &edgeModel{release: make(chan struct{})}
	f := edgeFixture(t, t.TempDir(), m, time.Minute, Options{})
	type res struct {
		code int
		out  map[string]any
		ch   <-chan sseEvent
	}
	results := make(chan res, 6)
	for i := range 6 {
		go func() {
			code, out, ch := f.stream(fmt.Sprintf(`{"agent":"assistant","sender":"alice","content":"slow %d"}`, i))
			results <- res{code, out, ch}
		}()
	}
	var running <-chan sseEvent
	for range 6 {
		r := <-results
		switch {
		case r.code == 200 && running == nil:
			running = r.ch
		case r.code == 409 && r.out["code"] == "busy" && strings.Contains(r.out["error"].(string), "busy"):
		default:
			t.Fatalf("concurrent stream: %d %v", r.code, r.out)
		}
	}
	close(m.release)
	if end := lastEnd(t, collect(running)); end.Status != "ok" {
		t.Fatalf("end %+v", end)
	}
	if got := f.messages("assistant", "alice"); len(got) != 2 || !strings.HasPrefix(got[0], "slow ") || got[1] != "the whole slow reply" {
		t.Fatalf("stored %q", got)
	}
	// A burst of fast turns: each is finished or refused, whole and in pairs.
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, ch := f.stream(fmt.Sprintf(`{"agent":"assistant","sender":"alice","content":"m%d"}`, i))
			if code == 200 {
				if end := lastEnd(t, collect(ch)); end.Status != "ok" {
					t.Errorf("m%d: end %+v", i, end)
				}
			} else if code != 409 || out["code"] != "busy" {
				t.Errorf("m%d: %d %v", i, code, out)
			}
		}()
	}
	wg.Wait()
	got := f.messages("assistant", "alice")
	for i := 2; i+1 < len(got); i += 2 {
		if got[i+1] != "echo: "+got[i] {
			t.Fatalf("interleaved turns: %q", got)
		}
	}
	if len(got)%2 != 0 {
		t.Fatalf("a turn lost its reply: %q", got)
	}
}

// TestEdgeManySendersAtOnce: many senders streaming while others list and read never mix conversations (run under -race).
func TestEdgeManySendersAtOnce(t *testing.T) {
	f := edgeFixture(t, t.TempDir(), scripted, time.Minute, Options{})
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if code, _ := f.do("GET", "/v1/conversations", ""); code != 200 {
				t.Errorf("list: %d", code)
			}
			f.do("GET", "/v1/conversations/assistant/s3/messages", "")
		}
	}()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 2 {
				if end := f.turn(fmt.Sprintf(`{"agent":"assistant","sender":"s%d","content":"from s%d #%d"}`, i, i, j)); end.Status != "ok" {
					t.Errorf("s%d: %+v", i, end)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	for i := range 16 {
		want := []string{fmt.Sprintf("from s%d #0", i), fmt.Sprintf("echo: from s%d #0", i), fmt.Sprintf("from s%d #1", i), fmt.Sprintf("echo: from s%d #1", i)}
		if got := f.messages("assistant", fmt.Sprint("s", i)); !slices.Equal(got, want) {
			t.Errorf("s%d: %q", i, got)
		}
	}
	if _, out := f.do("GET", "/v1/conversations", ""); len(out["conversations"].([]any)) != 16 {
		t.Fatalf("listed %d", len(out["conversations"].([]any)))
	}
}

// TestEdgeCompactWhileStreaming: a compact during a stream is 409 busy and changes nothing; after it, the whole turn is archived.
func TestEdgeCompactWhileStreaming(t *testing.T) {
	m := &edgeModel{release: make(chan struct{})}
	f := edgeFixture(t, t.TempDir(), m, time.Minute, Options{})
	_, _, ch := f.stream(`{"agent":"assistant","sender":"alice","content":"slow please"}`)
	if e := <-ch; e.name != "start" {
		t.Fatalf("first event %+v", e)
	}
	if code, out := f.do("POST", "/v1/compact", `{"agent":"assistant","sender":"alice"}`); code != 409 || out["code"] != "busy" {
		t.Fatalf("compact while streaming: %d %v", code, out)
	}
	_, out := f.do("GET", "/v1/conversations/assistant/alice/messages", "")
	if out["running"] != true || out["archives"].(float64) != 0 {
		t.Fatalf("while streaming: %v", out)
	}
	close(m.release)
	if end := lastEnd(t, collect(ch)); end.Status != "ok" {
		t.Fatalf("end %+v", end)
	}
	code, out := f.do("POST", "/v1/compact", `{"agent":"assistant","sender":"alice"}`)
	if code != 200 || out["archived"].(float64) != 2 {
		t.Fatalf("compact after: %d %v", code, out)
	}
	_, out = f.do("GET", "/v1/conversations/assistant/alice/archives/1", "")
	ms := out["messages"].([]any)
	if len(ms) != 2 || ms[1].(map[string]any)["message"].(map[string]any)["content"] != "the whole slow reply" {
		t.Fatalf("archive %v", out)
	}
}

// TestEdgeClientDisconnectMidStream: a client gone mid-run cancels it; even a model that answers anyway gets no reply stored, and the conversation is free again.
func TestEdgeClientDisconnectMidStream(t *testing.T) {
	m := &edgeModel{ignoreCancel: true, entered: make(chan struct{}), cancelled: make(chan struct{})}
	f := edgeFixture(t, t.TempDir(), m, time.Minute, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/v1/stream", strings.NewReader(`{"agent":"assistant","sender":"alice","content":"slow one"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	buf := make([]byte, 64)
	if n, _ := resp.Body.Read(buf); !strings.Contains(string(buf[:n]), "event: start") {
		t.Fatalf("first bytes %q", buf[:n])
	}
	<-m.entered
	cancel()
	resp.Body.Close()
	select {
	case <-m.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the run was not cancelled when the client went away")
	}
	f.waitIdle("assistant", "alice")
	if got := f.messages("assistant", "alice"); !slices.Equal(got, []string{"slow one"}) {
		t.Fatalf("after a disconnect: %q", got)
	}
	if end := f.turn(`{"agent":"assistant","sender":"alice","content":"again"}`); end.Status != "ok" {
		t.Fatalf("next turn %+v", end)
	}
	if got := f.messages("assistant", "alice"); !slices.Equal(got, []string{"slow one", "again", "echo: again"}) {
		t.Fatalf("after the next turn: %q", got)
	}
}

// TestEdgeContentLimit: content of exactly max_content_bytes is accepted however JSON escapes it, and one byte over is 413 naming the limit.
func TestEdgeContentLimit(t *testing.T) {
	const max = 65536
	f := edgeFixture(t, t.TempDir(), scripted, time.Minute, Options{MaxContentBytes: max})
	body := func(content string, ascii bool) string {
		b, _ := json.Marshal(content)
		if ascii { // as Python's json.dumps writes it: \uXXXX escapes
			var sb strings.Builder
			for _, r := range content {
				if r < 0x80 {
					sb.WriteRune(r)
				} else {
					fmt.Fprintf(&sb, `\u%04x`, r)
				}
			}
			b = []byte(`"` + sb.String() + `"`)
		}
		return `{"agent":"assistant","sender":"alice","content":` + string(b) + `}`
	}
	exact := strings.Repeat("x", max)
	cjk := strings.Repeat("日", max/3) + "x" // 65536 bytes
	for _, tc := range []struct{ name, body string }{{"ascii", body(exact, false)}, {"utf-8", body(cjk, false)}, {"escaped", body(cjk, true)}} {
		name, b := tc.name, tc.body
		resp, err := http.Post(f.srv.URL+"/v1/stream", "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body) // events too long for collect's scanner
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(raw), "event: end\ndata: {\"type\":\"end\",\"agent\":\"assistant\",\"sender\":\"alice\",\"status\":\"ok\"") {
			t.Errorf("%s content of exactly %d bytes: %d %.300s", name, max, resp.StatusCode, raw)
		}
	}
	for _, b := range []string{body(exact+"y", false), body(cjk+"y", true)} {
		code, out, _ := f.stream(b)
		if msg, _ := out["error"].(string); code != 413 || out["code"] != "too_large" || !strings.Contains(msg, fmt.Sprint(max)) {
			t.Errorf("content one byte over: %d %v", code, out)
		}
	}
	got := f.messages("assistant", "alice")
	if len(got) != 6 || len(got[0]) != max || got[2] != cjk || got[4] != cjk {
		t.Errorf("stored %d messages", len(got))
	}
	if code, out := f.do("POST", "/v1/reply", `{"agent":"assistant","sender":"alice","content":"`+exact+`y"}`); code != 413 || out["code"] != "too_large" {
		t.Fatalf("reply one byte over: %d %v", code, out)
	}
}

// TestEdgeBadRequests: malformed bodies, unknown fields, wrong methods and unknown names are clear 4xx errors (never 500) that store nothing.
func TestEdgeBadRequests(t *testing.T) {
	dir := t.TempDir()
	f := edgeFixture(t, dir, scripted, time.Minute, Options{})
	for _, tc := range []struct {
		method, path, body string
		code               int
		errCode, mention   string
	}{
		{"POST", "/v1/stream", ``, 400, "malformed_json", "malformed JSON"},
		{"POST", "/v1/stream", `null`, 400, "malformed_json", "JSON object"},
		{"POST", "/v1/stream", `{"agent":"assistant","content":"hi"} {"x":1}`, 400, "malformed_json", "malformed JSON"},
		{"POST", "/v1/stream", `{"agent":"assistant","content":"hi","Agent":"critic"}`, 400, "unknown_field", `"Agent"`},
		{"POST", "/v1/stream", `{"agent":"assistant","content":"hi","cwd":5}`, 400, "malformed_json", "cwd"},
		{"POST", "/v1/stream", `{"agent":"assistant","content":"   "}`, 400, "empty_content", "content"},
		{"POST", "/v1/stream", `{"agent":"Nobody","content":"hi"}`, 404, "unknown_agent", `"Nobody"`},
		{"POST", "/v1/kill", `{"agent":"assistant","sender":"alice","content":"x"}`, 400, "unknown_field", `"content"`},
		{"POST", "/v1/compact", `{"agent":"nobody","sender":"alice"}`, 404, "unknown_agent", `"nobody"`},
		{"POST", "/v1/reply", `{"agent":"nobody","sender":"alice","content":"x"}`, 404, "unknown_agent", `"nobody"`},
		{"POST", "/v1/reply", `{"agent":"assistant","sender":"a/b","content":"x"}`, 400, "bad_name", "sender"},
		{"GET", "/v1/conversations/nobody/alice/archives", "", 404, "unknown_agent", `"nobody"`},
		{"GET", "/v1/conversations/assistant/bad%20name/messages", "", 400, "bad_name", "bad name"},
		{"GET", "/v1/conversations/assistant/alice/archives/0", "", 400, "bad_archive", `"0"`},
		{"GET", "/v1/conversations/assistant/alice/archives/99999999999999999999", "", 400, "bad_archive", "want a number"},
	} {
		code, out := f.do(tc.method, tc.path, tc.body)
		msg, _ := out["error"].(string)
		if code != tc.code || out["code"] != tc.errCode || !strings.Contains(msg, tc.mention) {
			t.Errorf("%s %s %.60s: %d %v, want %d %s mentioning %q", tc.method, tc.path, tc.body, code, out, tc.code, tc.errCode, tc.mention)
		}
	}
	// A wrong method is 405 with an Allow header, not a missing endpoint.
	for _, tc := range []struct{ method, path, allow string }{
		{"GET", "/v1/stream", "POST"}, {"PUT", "/v1/kill", "POST"}, {"POST", "/v1/agents", "GET"},
		{"DELETE", "/v1/conversations/assistant/alice/messages", "GET"},
	} {
		req, _ := http.NewRequest(tc.method, f.srv.URL+tc.path, strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != 405 || !strings.Contains(resp.Header.Get("Allow"), tc.allow) || out["code"] == nil || !strings.Contains(fmt.Sprint(out["error"]), tc.allow) {
			t.Errorf("%s %s: %d Allow %q %v, want 405 allowing %s", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), out, tc.allow)
		}
	}
	if ents := stored(dir); len(ents) != 0 {
		t.Fatalf("bad input stored something: %v", ents)
	}
	// Any Content-Type is read as JSON (curl -d sends a form type).
	resp, err := http.Post(f.srv.URL+"/v1/stream", "application/x-www-form-urlencoded", strings.NewReader(`{"agent":"assistant","content":"form"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !slices.Equal(f.messages("assistant", "user"), []string{"form", "echo: form"}) {
		t.Fatalf("form content type: %d", resp.StatusCode)
	}
}

// TestEdgeGuests: an admitted guest joins and leaves, an agent admitting everyone takes any guest, and refused guests store nothing.
func TestEdgeGuests(t *testing.T) {
	dir := t.TempDir()
	f := edgeFixture(t, dir, scripted, time.Minute, Options{})
	f.turn(`{"agent":"assistant","sender":"alice","content":"hello"}`)
	if end := f.turn(`{"agent":"assistant","sender":"alice","content":"critic?","guest":"critic"}`); end.Agent != "critic" || !end.Guest || end.Message.Message.Agent != "critic" {
		t.Fatalf("guest end %+v", end)
	}
	if end := f.turn(`{"agent":"assistant","sender":"alice","content":"back"}`); end.Agent != "assistant" || end.Guest || end.Message.Message.Agent != "" {
		t.Fatalf("primary after the guest %+v", end)
	}
	for _, tc := range []struct {
		body, errCode, mention string
		code                   int
	}{
		{`{"agent":"assistant","sender":"alice","content":"x","guest":"open"}`, "guest_not_admitted", "admitted: critic", 403},
		{`{"agent":"assistant","sender":"alice","content":"x","guest":"assistant"}`, "guest_not_admitted", "assistant", 403},
		{`{"agent":"assistant","sender":"alice","content":"x","guest":"ghost"}`, "unknown_guest", `"ghost"`, 400},
		{`{"agent":"critic","sender":"bob","content":"x","guest":"open"}`, "guest_not_admitted", "(it admits no guests)", 403},
	} {
		code, out, _ := f.stream(tc.body)
		if msg, _ := out["error"].(string); code != tc.code || out["code"] != tc.errCode || !strings.Contains(msg, tc.mention) {
			t.Errorf("%s: %d %v", tc.body, code, out)
		}
	}
	if end := f.turn(`{"agent":"open","sender":"bob","content":"anyone","guest":"critic"}`); end.Status != "ok" || end.Agent != "critic" {
		t.Fatalf("guest of an agent admitting everyone: %+v", end)
	}
	if _, err := os.Stat(filepath.Join(dir, "critic")); err == nil {
		t.Fatal("a refused guest created a conversation")
	}
	_, out := f.do("GET", "/v1/conversations/assistant/alice/messages", "")
	if ps := fmt.Sprint(out["participants"]); ps != "[alice assistant critic]" || out["messages"] == nil || len(out["messages"].([]any)) != 6 {
		t.Fatalf("after the guest left: participants %s, %v", ps, out)
	}
}

// TestEdgeAskUser: an unanswered question times out into the reply; two answers at once take one; answers after the run moved on are 409 and store nothing.
func TestEdgeAskUser(t *testing.T) {
	f := edgeFixture(t, t.TempDir(), scripted, 100*time.Millisecond, Options{})
	_, _, ch := f.stream(`{"agent":"assistant","sender":"alice","content":"please ask"}`)
	waitAsk(t, ch)
	end := lastEnd(t, collect(ch))
	if end.Status != "ok" || !strings.Contains(end.Message.Message.Content, "did not answer within 100ms") {
		t.Fatalf("timed out ask: %+v", end)
	}
	if code, out := f.do("POST", "/v1/reply", `{"agent":"assistant","sender":"alice","content":"too late"}`); code != 409 || out["code"] != "nothing_pending" {
		t.Fatalf("answer after the timeout: %d %v", code, out)
	}

	g := edgeFixture(t, t.TempDir(), scripted, time.Minute, Options{})
	_, _, ch = g.stream(`{"agent":"assistant","sender":"alice","content":"please ask"}`)
	waitAsk(t, ch)
	codes := make(chan int, 2)
	for _, ans := range []string{"red", "blue"} {
		go func() {
			code, _ := g.do("POST", "/v1/reply", `{"agent":"assistant","sender":"alice","content":"`+ans+`"}`)
			codes <- code
		}()
	}
	if c1, c2 := <-codes, <-codes; c1+c2 != 200+409 {
		t.Fatalf("two answers at once: %d, %d", c1, c2)
	}
	end = lastEnd(t, collect(ch))
	if strings.Count(end.Message.Message.Content, "The user answered") != 1 {
		t.Fatalf("reply %+v", end)
	}
	g.turn(`{"agent":"assistant","sender":"alice","content":"moving on"}`)
	if code, out := g.do("POST", "/v1/reply", `{"agent":"assistant","sender":"alice","content":"green"}`); code != 409 || out["code"] != "nothing_pending" {
		t.Fatalf("answer after the conversation moved on: %d %v", code, out)
	}
	if got := g.messages("assistant", "alice"); len(got) != 4 || strings.Contains(strings.Join(got, "|"), "green") {
		t.Fatalf("stored %q", got)
	}
}

// edgeCopyDir copies a data dir as a crash would leave it.
func edgeCopyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// edgeState is everything the API shows of the conversations, without the
// run state (running, pending).
func edgeState(f *fixture, senders ...string) map[string]any {
	f.t.Helper()
	st := map[string]any{}
	_, st["list"] = f.do("GET", "/v1/conversations", "")
	for _, s := range senders {
		_, m := f.do("GET", "/v1/conversations/assistant/"+s+"/messages", "")
		delete(m, "running")
		delete(m, "pending")
		st[s] = m
		_, st[s+"/archives"] = f.do("GET", "/v1/conversations/assistant/"+s+"/archives", "")
		_, st[s+"/archive1"] = f.do("GET", "/v1/conversations/assistant/"+s+"/archives/1", "")
	}
	return st
}

// TestEdgeRestart: after a crash (a copy taken while a question is pending) and after a clean restart, every conversation and archive is as before, and the lost question is not pending.
func TestEdgeRestart(t *testing.T) {
	dir := t.TempDir()
	f := edgeFixture(t, dir, scripted, time.Minute, Options{})
	f.turn(`{"agent":"assistant","sender":"alice","content":"hello there","cwd":"/w"}`)
	f.turn(`{"agent":"assistant","sender":"alice","content":"critic?","guest":"critic"}`)
	if code, out := f.do("POST", "/v1/compact", `{"agent":"assistant","sender":"alice"}`); code != 200 {
		t.Fatalf("compact %d %v", code, out)
	}
	f.turn(`{"agent":"assistant","sender":"alice","content":"after the archive"}`)
	f.turn(`{"agent":"assistant","sender":"bob","content":"hi"}`)
	_, _, ch := f.stream(`{"agent":"assistant","sender":"carol","content":"please ask"}`)
	waitAsk(t, ch)
	before := edgeState(f, "alice", "bob", "carol")
	crashed := t.TempDir()
	edgeCopyDir(t, dir, crashed)
	if code, _ := f.do("POST", "/v1/kill", `{"agent":"assistant","sender":"carol"}`); code != 200 {
		t.Fatal("kill")
	}
	collect(ch)

	g := edgeFixture(t, crashed, scripted, time.Minute, Options{})
	if after := edgeState(g, "alice", "bob", "carol"); !reflect.DeepEqual(before, after) {
		for k := range before {
			if !reflect.DeepEqual(before[k], after[k]) {
				t.Errorf("%s after the crash:\n%v\nbefore:\n%v", k, after[k], before[k])
			}
		}
	}
	_, out := g.do("GET", "/v1/conversations/assistant/carol/messages", "")
	if out["running"] != false || out["pending"] != false {
		t.Fatalf("carol after the crash: %v", out)
	}
	if code, out := g.do("POST", "/v1/reply", `{"agent":"assistant","sender":"carol","content":"blue"}`); code != 409 || out["code"] != "nothing_pending" {
		t.Fatalf("answer to the lost question: %d %v", code, out)
	}
	g.turn(`{"agent":"assistant","sender":"carol","content":"again"}`)
	before = edgeState(g, "alice", "bob", "carol")
	g.srv.Close()
	if err := g.svc.Store().Close(); err != nil {
		t.Fatal(err)
	}
	h := edgeFixture(t, crashed, scripted, time.Minute, Options{})
	if after := edgeState(h, "alice", "bob", "carol"); !reflect.DeepEqual(before, after) {
		t.Errorf("after a clean restart:\n%v\nbefore:\n%v", after, before)
	}
	_, out = h.do("GET", "/v1/conversations/assistant/carol/messages", "")
	var seqs []float64
	for _, m := range out["messages"].([]any) {
		seqs = append(seqs, m.(map[string]any)["seq"].(float64))
	}
	if len(seqs) != 3 || !slices.IsSorted(seqs) || seqs[0] == seqs[1] {
		t.Fatalf("carol's seqs %v", seqs)
	}
}

// TestEdgeCorruptArchiveFlagged: an archive file that exists but cannot be read is listed as missing and served as the placeholder.
func TestEdgeCorruptArchiveFlagged(t *testing.T) {
	dir := t.TempDir()
	f := edgeFixture(t, dir, scripted, time.Minute, Options{})
	f.turn(`{"agent":"assistant","sender":"alice","content":"hello"}`)
	if code, _ := f.do("POST", "/v1/compact", `{"agent":"assistant","sender":"alice"}`); code != 200 {
		t.Fatal("compact")
	}
	if err := os.WriteFile(filepath.Join(dir, "assistant", "alice", "archives", "000001.json"), []byte("{\"messages\":[{"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out := f.do("GET", "/v1/conversations/assistant/alice/archives", "")
	if a := out["archives"].([]any)[0].(map[string]any); a["missing"] != true {
		t.Errorf("corrupt archive listed as %v, want missing", a)
	}
	code, out := f.do("GET", "/v1/conversations/assistant/alice/archives/1", "")
	if code != 200 || out["missing"] != true || out["title"] != "Colours were discussed." {
		t.Errorf("corrupt archive: %d %v", code, out)
	}
}

// TestEdgeBackToBackTurns: a client that sends its next request as soon as it reads the end event is never told busy.
func TestEdgeBackToBackTurns(t *testing.T) {
	f := edgeFixture(t, t.TempDir(), scripted, time.Minute, Options{})
	busy := 0
	for i := range 40 {
		code, out, ch := f.stream(fmt.Sprintf(`{"agent":"assistant","sender":"alice","content":"m%d"}`, i))
		if code != 200 {
			busy++
			if code != 409 {
				t.Fatalf("m%d: %d %v", i, code, out)
			}
			continue
		}
		for e := range ch {
			if e.name == "end" {
				break
			}
		}
	}
	if busy > 0 {
		t.Errorf("%d of 40 requests sent right after the previous end event were refused busy", busy)
	}
}
