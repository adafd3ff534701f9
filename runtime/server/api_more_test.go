package server

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/conversation"
)

// listed returns the conversations GET /v1/conversations lists, as
// "AGENT/SENDER" with their unread counts.
func (f *fixture) listed(hdr ...string) map[string]float64 {
	f.t.Helper()
	code, out := f.do("GET", "/v1/conversations", "", hdr...)
	if code != 200 {
		f.t.Fatalf("conversations: %d %v", code, out)
	}
	m := map[string]float64{}
	for _, c := range out["conversations"].([]any) {
		c := c.(map[string]any)
		m[c["agent"].(string)+"/"+c["sender"].(string)] = c["unread"].(float64)
	}
	return m
}

// TestDeleteConversation: DELETE moves the conversation into the trash and
// out of every listing, now and after a restart; 409 while it runs, 404
// for what does not exist, 405 for other methods.
func TestDeleteConversation(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, dir, Options{})
	f.turn(`{"agent":"assistant","sender":"alice","content":"hello"}`)
	f.turn(`{"agent":"assistant","sender":"bob","content":"hi"}`)
	if code, _ := f.do("POST", "/v1/compact", `{"agent":"assistant","sender":"alice"}`); code != 200 {
		t.Fatal("compact")
	}
	f.turn(`{"agent":"assistant","sender":"alice","content":"after"}`)

	// While a run waits on ask_user: busy, and nothing moves.
	_, _, ch := f.stream(`{"agent":"assistant","sender":"alice","content":"please ask"}`)
	waitAsk(t, ch)
	code, out := f.do("DELETE", "/v1/conversations/assistant/alice", "")
	if code != 409 || out["code"] != "busy" || !strings.Contains(out["error"].(string), "/v1/kill") {
		t.Fatalf("delete while running: %d %v", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "assistant", "alice", conversation.LogFile)); err != nil {
		t.Fatalf("a refused delete moved the log: %v", err)
	}
	if code, _ := f.do("POST", "/v1/reply", `{"agent":"assistant","sender":"alice","content":"blue"}`); code != 200 {
		t.Fatal("reply")
	}
	collect(ch)
	f.waitIdle("assistant", "alice")

	code, out = f.do("DELETE", "/v1/conversations/assistant/alice", "")
	if code != 200 || out["deleted"] != true || out["agent"] != "assistant" || out["sender"] != "alice" {
		t.Fatalf("delete: %d %v", code, out)
	}
	trash := out["trash"].(string)
	if !strings.HasPrefix(trash, ".trash/assistant/alice/") {
		t.Fatalf("trash %q", trash)
	}
	for _, p := range []string{conversation.LogFile, "archives/000001.json"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(trash), p)); err != nil {
			t.Errorf("the trash lacks %s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "assistant", "alice")); !os.IsNotExist(err) {
		t.Fatalf("the conversation's folder is still there: %v", err)
	}
	if l := f.listed(); len(l) != 1 || l["assistant/bob"] != 0 {
		t.Fatalf("listing after delete: %v", l)
	}
	if got := f.messages("assistant", "alice"); len(got) != 0 {
		t.Fatalf("messages after delete: %q", got)
	}
	code, out = f.do("GET", "/v1/conversations/assistant/alice/archives", "")
	if code != 200 || len(out["archives"].([]any)) != 0 {
		t.Fatalf("archives after delete: %d %v", code, out)
	}

	// 404s, 400s and 405.
	for path, want := range map[string]string{
		"/v1/conversations/assistant/alice":  "no_conversation", // deleted already
		"/v1/conversations/assistant/nobody": "no_conversation",
		"/v1/conversations/ghost/alice":      "unknown_agent",
	} {
		if code, out := f.do("DELETE", path, ""); code != 404 || out["code"] != want {
			t.Errorf("DELETE %s: %d %v, want 404 %s", path, code, out, want)
		}
	}
	if code, out := f.do("DELETE", "/v1/conversations/assistant/-bad", ""); code != 400 || out["code"] != "bad_name" {
		t.Errorf("bad sender: %d %v", code, out)
	}
	if code, out := f.do("GET", "/v1/conversations/assistant/bob", ""); code != 405 || out["code"] != "method_not_allowed" {
		t.Errorf("GET of a conversation: %d %v", code, out)
	}

	// The conversation starts afresh; a restart neither brings the old one
	// back nor loses the new one.
	f.turn(`{"agent":"assistant","sender":"alice","content":"new start"}`)
	f.stop()
	g := newFixture(t, dir, Options{})
	if got := g.messages("assistant", "alice"); !slices.Equal(got, []string{"new start", "echo: new start"}) {
		t.Fatalf("after a restart: %q", got)
	}
	if l := g.listed(); len(l) != 2 {
		t.Fatalf("listing after a restart: %v", l)
	}
	_, out = g.do("GET", "/v1/conversations/assistant/alice/archives", "")
	if len(out["archives"].([]any)) != 0 {
		t.Fatalf("the deleted archives came back: %v", out)
	}
}

// TestDeleteMarkReadAndSearchNeedTheToken: with a token, the new
// endpoints refuse requests without it and change nothing.
func TestDeleteMarkReadAndSearchNeedTheToken(t *testing.T) {
	f := newFixture(t, t.TempDir(), Options{Token: "s3cret"})
	auth := []string{"Authorization", "Bearer s3cret"}
	if _, err := f.svc.Run(context.Background(), conversation.RunRequest{Agent: "assistant", Sender: "alice", Content: "hello"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][3]string{
		{"DELETE", "/v1/conversations/assistant/alice", ""},
		{"POST", "/v1/mark-read", `{"agent":"assistant","sender":"alice"}`},
		{"GET", "/v1/search?q=hello", ""},
	} {
		if code, out := f.do(r[0], r[1], r[2]); code != 401 || out["code"] != "unauthorized" {
			t.Errorf("%s %s without a token: %d %v", r[0], r[1], code, out)
		}
		if code, out := f.do(r[0], r[1], r[2], "Authorization", "Bearer nope"); code != 401 {
			t.Errorf("%s %s with a wrong token: %d %v", r[0], r[1], code, out)
		}
	}
	if l := f.listed(auth...); len(l) != 1 {
		t.Fatalf("refused requests changed something: %v", l)
	}
	if code, out := f.do("GET", "/v1/search?q=HELLO", "", auth...); code != 200 || len(out["matches"].([]any)) != 2 {
		t.Fatalf("search with the token: %d %v", code, out)
	}
	if code, out := f.do("POST", "/v1/mark-read", `{"agent":"assistant","sender":"alice"}`, auth...); code != 200 {
		t.Fatalf("mark-read with the token: %d %v", code, out)
	}
	if code, out := f.do("DELETE", "/v1/conversations/assistant/alice", "", auth...); code != 200 {
		t.Fatalf("delete with the token: %d %v", code, out)
	}
}

// TestMarkRead: POST /v1/mark-read zeroes unread without sending a
// message, and it stays zero after a restart.
func TestMarkRead(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, dir, Options{})
	// Replies no one received: runs with no one listening.
	for _, c := range []string{"one", "two"} {
		if _, err := f.svc.Run(context.Background(), conversation.RunRequest{Agent: "assistant", Sender: "alice", Content: c}, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.turn(`{"agent":"assistant","sender":"bob","content":"hi"}`)
	// Each run marks what came before it read: one reply is unread.
	if l := f.listed(); l["assistant/alice"] != 1 || l["assistant/bob"] != 0 {
		t.Fatalf("unread before: %v", l)
	}
	code, out := f.do("POST", "/v1/mark-read", `{"agent":"assistant","sender":"alice"}`)
	if code != 200 || out["unread"] != float64(0) || out["agent"] != "assistant" || out["sender"] != "alice" {
		t.Fatalf("mark-read: %d %v", code, out)
	}
	if l := f.listed(); l["assistant/alice"] != 0 {
		t.Fatalf("unread after mark-read: %v", l)
	}
	if got := f.messages("assistant", "alice"); len(got) != 4 {
		t.Fatalf("mark-read changed the history: %q", got)
	}
	// Again: nothing to do, still fine.
	if code, _ := f.do("POST", "/v1/mark-read", `{"agent":"assistant","sender":"alice"}`); code != 200 {
		t.Fatalf("second mark-read: %d", code)
	}
	for body, want := range map[string]string{
		`{"agent":"assistant","sender":"nobody"}`:            "no_conversation",
		`{"agent":"ghost","sender":"alice"}`:                 "unknown_agent",
		`{"agent":"assistant"}`:                              "missing_field",
		`{"agent":"assistant","sender":"alice","content":1}`: "unknown_field",
	} {
		if code, out := f.do("POST", "/v1/mark-read", body); code/100 != 4 || out["code"] != want {
			t.Errorf("mark-read %s: %d %v, want %s", body, code, out, want)
		}
	}
	if code, out := f.do("GET", "/v1/mark-read", ""); code != 405 || out["code"] != "method_not_allowed" {
		t.Errorf("GET /v1/mark-read: %d %v", code, out)
	}
	f.stop()
	g := newFixture(t, dir, Options{})
	if l := g.listed(); l["assistant/alice"] != 0 || len(l) != 2 {
		t.Fatalf("unread after a restart: %v", l)
	}
}

// search runs GET /v1/search with params and returns the status, the body
// and the matches as "SENDER#INDEX:FIELD".
func (f *fixture) search(params url.Values) (int, map[string]any, []string) {
	f.t.Helper()
	code, out := f.do("GET", "/v1/search?"+params.Encode(), "")
	var ms []string
	if code == 200 {
		for _, m := range out["matches"].([]any) {
			m := m.(map[string]any)
			s := fmt.Sprintf("%s#%v:%s", m["sender"], m["index"], m["field"])
			if a, ok := m["archive"]; ok {
				s = fmt.Sprintf("archive%v/%s", a, s)
			}
			ms = append(ms, s)
		}
	}
	return code, out, ms
}

// TestSearch: GET /v1/search finds the query in the live messages (and the
// asks' answers) of every conversation of an agent or of one, ignoring
// case, within the limit; archives on request; 400 for bad parameters.
func TestSearch(t *testing.T) {
	f := newFixture(t, t.TempDir(), Options{})
	f.turn(`{"agent":"assistant","sender":"alice","content":"The Blue Whale"}`)
	if code, _ := f.do("POST", "/v1/compact", `{"agent":"assistant","sender":"alice"}`); code != 200 {
		t.Fatal("compact")
	}
	f.turn(`{"agent":"assistant","sender":"alice","content":"a blue sky"}`)
	_, _, ch := f.stream(`{"agent":"assistant","sender":"bob","content":"please ask"}`)
	waitAsk(t, ch)
	if code, _ := f.do("POST", "/v1/reply", `{"agent":"assistant","sender":"bob","content":"BLUE, of course"}`); code != 200 {
		t.Fatal("reply")
	}
	collect(ch)
	f.turn(`{"agent":"assistant","sender":"carol","content":"nothing to see"}`)
	f.turn(`{"agent":"critic","sender":"dave","content":"blue critic"}`)

	// The ask's answer is in the history the API shows.
	_, out := f.do("GET", "/v1/conversations/assistant/bob/messages", "")
	asks := out["messages"].([]any)[0].(map[string]any)["asks"].([]any)
	if a := asks[0].(map[string]any); a["question"] != "Which colour?" || a["answer"] != "BLUE, of course" {
		t.Fatalf("asks %v", asks)
	}

	code, out, ms := f.search(url.Values{"q": {"bLUe"}, "agent": {"assistant"}})
	// Most recent conversation first (bob), each in history order; alice's
	// live history starts with the summary ("... Blue won.").
	want := []string{"bob#0:answer", "bob#1:content", "alice#0:content", "alice#1:content", "alice#2:content"}
	if code != 200 || !slices.Equal(ms, want) || out["truncated"] != false || out["query"] != "bLUe" {
		t.Fatalf("search: %d %q %v, want %q", code, ms, out, want)
	}
	m := out["matches"].([]any)[3].(map[string]any)
	if m["agent"] != "assistant" || m["role"] != "user" || m["snippet"] != "a blue sky" || m["seq"].(float64) <= 0 {
		t.Fatalf("match %v", m)
	}
	_, out, ms = f.search(url.Values{"q": {"BLUE"}, "agent": {"assistant"}, "limit": {"2"}})
	if !slices.Equal(ms, want[:2]) || out["truncated"] != true {
		t.Fatalf("limit 2: %q %v", ms, out)
	}
	if _, _, ms = f.search(url.Values{"q": {"blue"}, "agent": {"assistant"}, "sender": {"alice"}}); !slices.Equal(ms, want[2:]) {
		t.Fatalf("one conversation: %q", ms)
	}
	if _, _, ms = f.search(url.Values{"q": {"blue"}}); len(ms) != 7 || !slices.Contains(ms, "dave#0:content") {
		t.Fatalf("every agent: %q", ms)
	}
	if _, _, ms = f.search(url.Values{"q": {"whale"}, "agent": {"assistant"}, "archives": {"true"}}); !slices.Equal(ms, []string{"archive1/alice#0:content", "archive1/alice#1:content"}) {
		t.Fatalf("archives: %q", ms)
	}
	if _, _, ms = f.search(url.Values{"q": {"whale"}, "agent": {"assistant"}}); len(ms) != 0 {
		t.Fatalf("archives searched unasked: %q", ms)
	}
	if _, _, ms = f.search(url.Values{"q": {"blue"}, "agent": {"assistant"}, "sender": {"nobody"}}); len(ms) != 0 {
		t.Fatalf("unknown conversation: %q", ms)
	}

	for _, c := range []struct {
		params url.Values
		status int
		code   string
	}{
		{url.Values{"q": {""}, "agent": {"assistant"}}, 400, "empty_query"},
		{url.Values{"q": {"   "}}, 400, "empty_query"},
		{url.Values{"agent": {"assistant"}}, 400, "empty_query"},
		{url.Values{"q": {"x"}, "limit": {"0"}}, 400, "bad_parameter"},
		{url.Values{"q": {"x"}, "limit": {"201"}}, 400, "bad_parameter"},
		{url.Values{"q": {"x"}, "limit": {"ten"}}, 400, "bad_parameter"},
		{url.Values{"q": {"x"}, "archives": {"maybe"}}, 400, "bad_parameter"},
		{url.Values{"q": {"x", "y"}}, 400, "bad_parameter"},
		{url.Values{"q": {"x"}, "color": {"blue"}}, 400, "unknown_field"},
		{url.Values{"q": {"x"}, "sender": {"alice"}}, 400, "missing_field"},
		{url.Values{"q": {"x"}, "agent": {"ghost"}}, 404, "unknown_agent"},
		{url.Values{"q": {"x"}, "agent": {"assistant"}, "sender": {"-x"}}, 400, "bad_name"},
		{url.Values{"q": {strings.Repeat("x", 1001)}}, 413, "too_large"},
	} {
		if code, out, _ := f.search(c.params); code != c.status || out["code"] != c.code {
			t.Errorf("search %s: %d %v, want %d %s", c.params.Encode(), code, out, c.status, c.code)
		}
	}
	if code, out := f.do("POST", "/v1/search?q=x", `{}`); code != 405 || out["code"] != "method_not_allowed" {
		t.Errorf("POST /v1/search: %d %v", code, out)
	}
}

// TestKilledTurnIsShown: after a kill the history the API shows says so
// on the sender's message (and keeps the unanswered question), the
// listing counts nothing unread, and the conversation carries on.
func TestKilledTurnIsShown(t *testing.T) {
	f := newFixture(t, t.TempDir(), Options{})
	_, _, ch := f.stream(`{"agent":"assistant","sender":"alice","content":"please ask"}`)
	waitAsk(t, ch)
	if code, _ := f.do("POST", "/v1/kill", `{"agent":"assistant","sender":"alice"}`); code != 200 {
		t.Fatal("kill")
	}
	collect(ch)
	f.waitIdle("assistant", "alice")
	_, out := f.do("GET", "/v1/conversations/assistant/alice/messages", "")
	ms := out["messages"].([]any)
	e := ms[0].(map[string]any)
	ab, _ := e["aborted"].(map[string]any)
	asks, _ := e["asks"].([]any)
	if len(ms) != 1 || ab["status"] != "killed" || ab["agent"] != "assistant" || len(asks) != 1 ||
		!strings.Contains(asks[0].(map[string]any)["error"].(string), "killed") || out["unread"] != float64(0) {
		t.Fatalf("after a kill: %v", out)
	}
	if end := f.turn(`{"agent":"assistant","sender":"alice","content":"again"}`); end.Status != "ok" || end.Message.Message.Content != "echo: again" {
		t.Fatalf("next turn %+v", end)
	}
	if l := f.listed(); l["assistant/alice"] != 0 {
		t.Fatalf("unread %v", l)
	}
}
