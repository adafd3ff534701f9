package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/conversation"
)

// lllm chat --reasoning prints a reply's reasoning after "[thinking]",
// then the reply on its own line; without it, the reply alone. /history
// shows the reasoning the server kept the same way.
func TestChatReasoning(t *testing.T) {
	yaml := "tactic_type: serve\nglobal: {model_name: mock/serve}\nagent_configs:\n  - name: thinker\n    system_prompt: You think.\n" +
		"mock:\n  rules:\n    - {match: capital, reply: {text: Paris., reasoning: \"France's capital is Paris.\"}}\n"
	addr := addrOf(serveText(t, yaml))
	for _, tc := range []struct {
		flag, want string
	}{
		{"--reasoning", "thinker: [thinking] France's capital is Paris.\nParis.\n"},
		{"--no-history", "thinker: Paris.\n"},
	} {
		code, out, errs := chatRun(t, "capital of France?\n", "thinker", "--addr", addr, tc.flag)
		if code != ExitOK || !strings.Contains(out, tc.want) || tc.flag != "--reasoning" && strings.Contains(out, "thinking") {
			t.Errorf("%s: exit %d, output %q (want %q), stderr %q", tc.flag, code, out, tc.want, errs)
		}
	}
	if code, out, errs := chatRun(t, "capital of France?\n", "thinker", "--addr", addr, "--sender", "alice"); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, tc := range []struct {
		flag, want string
	}{
		{"--reasoning", "alice: capital of France?\nthinker: [thinking] France's capital is Paris.\nParis.\n"},
		{"--no-history", "alice: capital of France?\nthinker: Paris.\n"},
	} {
		code, out, errs := chatRun(t, "/history\n", "thinker", "--addr", addr, "--sender", "alice", tc.flag)
		if code != ExitOK || !strings.Contains(out, tc.want) || tc.flag != "--reasoning" && strings.Contains(out, "thinking") {
			t.Errorf("/history %s: exit %d, output %q (want %q), stderr %q", tc.flag, code, out, tc.want, errs)
		}
	}
}

// With --reasoning, each tool round's reasoning is marked "[thinking]"
// on a line of its own, the tool call on the next, and after an
// ask_user answer the reasoning that follows is marked again: it is
// never printed as if it were the reply.
func TestChatReasoningRounds(t *testing.T) {
	yaml := "tactic_type: serve\nglobal: {model_name: mock/serve, tool_timeout: 1m}\nagent_configs:\n  - name: thinker\n    system_prompt: You think.\n" +
		"params: {ask_user_timeout: 10s}\n" +
		"mock:\n  rules:\n" +
		"    - {match: search, times: 1, reply: {reasoning: I should search., tool_calls: [{name: recall, arguments: {query: foo}}]}}\n" +
		"    - {match: search, reply: {text: Found nothing., reasoning: Nothing there.}}\n" +
		"    - {match: ask me, times: 1, reply: {reasoning: I need to ask., tool_calls: [{name: ask_user, arguments: {question: \"Which?\"}}]}}\n" +
		"    - {match: ask me, reply: {text: Thanks., reasoning: Got the answer.}}\n"
	addr := addrOf(serveText(t, yaml))
	for _, tc := range []struct{ in, want string }{
		{"search please\n", "thinker: [thinking] I should search.\n[tool recall {\"query\":\"foo\"}] [thinking] Nothing there.\nFound nothing.\n"},
		{"ask me\nblue\n", "thinker: [thinking] I need to ask.\n[tool ask_user {\"question\":\"Which?\"}] \n[thinker asks] Which?\nthinker: [thinking] Got the answer.\nThanks.\n"},
	} {
		code, out, errs := chatRun(t, tc.in, "thinker", "--addr", addr, "--sender", "alice", "--reasoning")
		if code != ExitOK || !strings.Contains(out, tc.want) {
			t.Errorf("%q: exit %d, output\n%q\nwant it to hold\n%q\nstderr %q", tc.in, code, out, tc.want, errs)
		}
	}
}

// A retry event starts the reply again on a line of its own, under the
// answering agent's name, after saying why: what the failed attempt
// streamed is not read as part of the reply. After an ask_user question
// it starts on the line after the question, naming the agent once.
func TestChatShowsRetry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []conversation.Event
		want   string
	}{
		{"mid-stream", []conversation.Event{
			{Type: "start", Agent: "helper", Guest: true},
			{Type: "reasoning", Text: "Thinking 1."},
			{Type: "text", Text: "Par"},
			{Type: "retry", Error: "stream cut short"},
			{Type: "reasoning", Text: "Thinking 2."},
			{Type: "text", Text: "Paris."},
			{Type: "end", Status: "ok"},
		}, "helper (guest): [thinking] Thinking 1.\nPar\n[retrying: stream cut short]\nhelper (guest): [thinking] Thinking 2.\nParis.\n"},
		{"after a question", []conversation.Event{
			{Type: "start", Agent: "helper"},
			{Type: "tool", Tool: &dialog.FunctionCall{Name: "ask_user", Arguments: []byte(`{}`)}},
			{Type: "ask", Agent: "helper", Text: "Which city?"},
			{Type: "retry", Error: "stream cut short"},
			{Type: "text", Text: "Paris."},
			{Type: "end", Status: "ok"},
		}, "helper: [tool ask_user {}] \n[helper asks] Which city?\n[retrying: stream cut short]\nhelper: Paris.\n"},
	} {
		var b strings.Builder
		c := &chatClient{out: bufio.NewWriter(&b), reasoning: true}
		for _, ev := range tc.events {
			c.show(ev)
		}
		if b.String() != tc.want {
			t.Errorf("%s: printed\n%q\nwant\n%q", tc.name, b.String(), tc.want)
		}
	}
}

// A reply without text says so instead of ending on a blank line, and
// points to --reasoning when the reply was all reasoning.
func TestChatShowsReplyWithoutText(t *testing.T) {
	for _, tc := range []struct {
		reasoning bool
		msg       *dialog.Message
		want      string
	}{
		{false, &dialog.Message{Role: dialog.RoleAssistant, Reasoning: []dialog.Reasoning{{Text: "Hmm."}}}, "a: [no text: the reply is all reasoning, which --reasoning shows]\n"},
		{true, &dialog.Message{Role: dialog.RoleAssistant, Reasoning: []dialog.Reasoning{{Text: "Hmm."}}}, "a: [thinking] Hmm.\n[no text]\n"},
		{false, &dialog.Message{Role: dialog.RoleAssistant}, "a: [no text]\n"},
		{false, &dialog.Message{Role: dialog.RoleAssistant, Content: "Yes."}, "a: Yes.\n"},
	} {
		var b strings.Builder
		c := &chatClient{out: bufio.NewWriter(&b), reasoning: tc.reasoning}
		c.show(conversation.Event{Type: "start", Agent: "a"})
		if r := tc.msg.ReasoningText(); r != "" {
			c.show(conversation.Event{Type: "reasoning", Text: r})
		}
		if tc.msg.Content != "" {
			c.show(conversation.Event{Type: "text", Text: tc.msg.Content})
		}
		c.show(conversation.Event{Type: "end", Status: "ok", Message: &conversation.Entry{Message: tc.msg}})
		if b.String() != tc.want {
			t.Errorf("printed %q, want %q", b.String(), tc.want)
		}
	}
}

// halfReplyServer serves one agent and streams the start of a reply,
// "half a", then hands the stream to then, which ends it by returning.
func halfReplyServer(t *testing.T, then func(w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/agents":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"agents": [{"name": "assistant"}]}`)
		case "/v1/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: start\ndata: {\"type\":\"start\",\"agent\":\"assistant\"}\n\n")
			fmt.Fprint(w, "event: text\ndata: {\"type\":\"text\",\"agent\":\"assistant\",\"text\":\"half a\"}\n\n")
			w.(http.Flusher).Flush()
			then(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// cutServer is a halfReplyServer that closes the stream: abruptly (the
// connection dropped mid-body, as when the server dies) or cleanly but
// without the reply's end event.
func cutServer(t *testing.T, abrupt bool) *httptest.Server {
	return halfReplyServer(t, func(w http.ResponseWriter, _ *http.Request) {
		if !abrupt {
			return
		}
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close() // the chunked body never ends
		}
	})
}

func TestChatStreamCutShort(t *testing.T) {
	for _, abrupt := range []bool{true, false} {
		t.Run(fmt.Sprintf("abrupt=%v", abrupt), func(t *testing.T) {
			srv := cutServer(t, abrupt)
			addr := addrOf(srv)
			code, out, errs := chatRun(t, "hello\n", "assistant", "--sender", "bob", "--addr", addr)
			if code != ExitError {
				t.Errorf("exit %d, want %d", code, ExitError)
			}
			if !strings.Contains(out, "assistant: half a\n") {
				t.Errorf("the partial reply does not end its line:\n%q", out)
			}
			want := "lllm: the server closed the stream before the reply ended"
			if !strings.Contains(errs, want) || !strings.Contains(errs, "/history") || !strings.Contains(errs, addr) {
				t.Errorf("stderr does not say the stream was cut short (%q), where, and what to do:\n%s", want, errs)
			}
		})
	}
}

// TestChatInterruptedMidReply: Ctrl-C while a reply streams ends the
// partial reply's line, so that "lllm: interrupted" is not glued to it.
func TestChatInterruptedMidReply(t *testing.T) {
	srv := halfReplyServer(t, func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // a slow model
	})
	seen := make(chan struct{})
	out := &signalWriter{want: "half a", seen: seen}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-seen; cancel() }() // the signal, as Execute turns it into
	root := NewRootCmd()
	root.SetArgs([]string{"chat", "assistant", "--addr", addrOf(srv)})
	root.SetIn(strings.NewReader("hello\n"))
	root.SetOut(out)
	root.SetErr(io.Discard)
	if err := root.ExecuteContext(ctx); err == nil {
		t.Fatalf("an interrupted chat succeeded:\n%s", out.String())
	}
	if got := out.String(); got != "assistant: half a\n" {
		t.Errorf("stdout %q, want the partial reply's line ended", got)
	}
}

// signalWriter closes seen once what was written to it contains want.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if w.seen != nil && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
		w.seen = nil
	}
	return n, err
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
