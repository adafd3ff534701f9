package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/runtime/conversation"
)

// The slash commands /search, /read, /delete and what /history shows of
// asks and aborted runs, against a real server on 127.0.0.1.

// cmdServer serves the config at cfgPath (or cmdConfig when empty) on
// 127.0.0.1 and returns the server, its service and its data directory.
func cmdServer(t *testing.T, cfgPath string) (*httptest.Server, *conversation.Service, string) {
	t.Helper()
	dir := t.TempDir()
	if cfgPath == "" {
		cfgPath = filepath.Join(dir, "serve.yaml")
		if err := os.WriteFile(cfgPath, []byte(cmdConfig), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	srv, svc := serveConfigAt(t, cfgPath, data, 10*time.Minute)
	return srv, svc, data
}

func addrOf(srv *httptest.Server) string { return strings.TrimPrefix(srv.URL, "http://") }

// getJSON decodes the answer of GET base+path into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// conversationsOf lists the conversations the server has, by sender.
func conversationsOf(t *testing.T, base string) map[string]conversation.Summary {
	t.Helper()
	var out struct {
		Conversations []conversation.Summary `json:"conversations"`
	}
	getJSON(t, base+"/v1/conversations", &out)
	m := map[string]conversation.Summary{}
	for _, c := range out.Conversations {
		m[c.Sender] = c
	}
	return m
}

// jsonLine returns the first line of out that is a JSON object of type
// kind, decoded into v.
func jsonLine(t *testing.T, out, kind string, v any) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(l), &head) == nil && head.Type == kind {
			if err := json.Unmarshal([]byte(l), v); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no JSON line of type %q in:\n%s", kind, out)
}

// pipedChat is lllm chat reading from a pipe the test writes to as the
// output comes: input that is not a terminal, typed in step with the
// replies.
type pipedChat struct {
	t        *testing.T
	in       *io.PipeWriter
	out, err *syncBuffer
	done     chan int
}

func startPipedChat(t *testing.T, args ...string) *pipedChat {
	t.Helper()
	r, w := io.Pipe()
	p := &pipedChat{t: t, in: w, out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan int, 1)}
	root := NewRootCmd()
	root.SetArgs(append([]string{"chat"}, args...))
	root.SetIn(r)
	root.SetOut(p.out)
	root.SetErr(p.err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	go func() {
		defer cancel()
		code := ExitOK
		if err := root.ExecuteContext(ctx); err != nil {
			code = ExitError
		}
		p.done <- code
	}()
	t.Cleanup(func() { _ = w.Close() })
	return p
}

func (p *pipedChat) line(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, s+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// waitFor waits for s in the output after offset from and returns the
// offset after it.
func (p *pipedChat) waitFor(from int, s string) int {
	p.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if out := p.out.String(); from <= len(out) {
			if i := strings.Index(out[from:], s); i >= 0 {
				return from + i + len(s)
			}
		}
	}
	p.t.Fatalf("no %q in the output after byte %d:\nstdout %q\nstderr %q", s, from, p.out.String(), p.err.String())
	return 0
}

// end closes the input and returns the exit code.
func (p *pipedChat) end() int {
	p.t.Helper()
	_ = p.in.Close()
	select {
	case code := <-p.done:
		return code
	case <-time.After(20 * time.Second):
		p.t.Fatalf("lllm chat did not exit:\n%s", p.out.String())
		return 0
	}
}

// lines are the lines of s that start with prefix.
func linesWith(s, prefix string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

func TestChatSearch(t *testing.T) {
	srv, _, _ := cmdServer(t, "../../../configs/serve.yaml")
	addr := addrOf(srv)
	if code, out, errs := chatRun(t, "a blue bob\n", "assistant", "--sender", "bob", "--addr", addr); code != 0 {
		t.Fatalf("bob: exit %d\n%s\n%s", code, out, errs)
	}
	script := "the blue whale\nthe red fox\nblue again\n/compact\nblue skies\nplease ask me\nteal\n" +
		"/search BLUE\n/search --limit 2 blue\n/search nothing-like-this\n/search teal\n/search favourite\n/search --all bob\n"
	code, out, errs := chatRun(t, script, "assistant", "--sender", "alice", "--addr", addr)
	if code != 0 || errs != "" && !strings.HasPrefix(errs, "Talking with") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	sections := strings.Split(out, "[compacted into archive 1")
	if len(sections) != 2 {
		t.Fatalf("no compaction:\n%s", out)
	}
	out = sections[1]
	// This conversation: its live history (the summary first), then its
	// archive; never bob's.
	for _, want := range []string{
		"[live #0] summary: …about favourite colours. The user likes blue; nothing is left open.",
		"[live #1] alice: blue skies",
		"[live #2] assistant: mock reply to: blue skies",
		"[archive 1 #0] alice: the blue whale",
		"[archive 1 #1] assistant: mock reply to: the blue whale",
		"[archive 1 #4] alice: blue again",
		`[no match for "nothing-like-this" in this conversation]`,
		// The answer to ask_user and the question are searched too.
		"[live #3] alice, an answer: teal",
		"[live #3] assistant, a question asked: What is your favourite colour?",
		// --all: bob's conversation, the sender first.
		"[bob: live #0] bob: a blue bob",
	} {
		if len(linesWith(out, want)) == 0 { // a mock reply ends in its hash
			t.Errorf("output lacks a line %q...:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[live #0] bob") || strings.Contains(out, "[archive 1 #2]") {
		t.Errorf("a match from another conversation, or without the text:\n%s", out)
	}
	// --limit 2: the first two matches, and the line that says there
	// are more.
	first := strings.Index(out, "[live #0] summary")
	limited := strings.Index(out[first+1:], "[live #0] summary") + first + 1
	if limited <= first {
		t.Fatalf("/search --limit 2 found nothing:\n%s", out)
	}
	block := strings.Split(strings.TrimSpace(out[limited:]), "\n")
	if len(block) < 3 || !strings.HasPrefix(block[1], "[live #1] alice: blue skies") ||
		block[2] != "[more matches than these 2: narrow the search, or /search --limit N (up to 200)]" {
		t.Errorf("/search --limit 2:\n%s", strings.Join(block, "\n"))
	}
	if strings.Count(out, "[more matches") != 1 {
		t.Errorf("\"more matches\" said %d times, want once (for --limit 2 only):\n%s", strings.Count(out, "[more matches"), out)
	}

	// Refused searches: one line each, the chat goes on, exit status 1.
	code, out, errs = chatRun(t, "/search\n/search --limit 0 blue\n/search --bogus blue\n/search -- --all\n/archives\n", "assistant", "--sender", "alice", "--addr", addr)
	if code != ExitError {
		t.Errorf("exit %d after refused searches", code)
	}
	errLines := linesWith(errs, "lllm: ")
	if len(errLines) != 3 || !strings.Contains(errLines[0], "usage: /search [--all] [--limit N] TEXT") ||
		!strings.Contains(errLines[1], `/search --limit "0": want a number from 1 to 200`) ||
		!strings.Contains(errLines[2], "unknown option --bogus") {
		t.Errorf("stderr:\n%s", errs)
	}
	if !strings.Contains(out, `[no match for "--all" in this conversation]`) || !strings.Contains(out, "[archive 1] A chat about favourite colours.") {
		t.Errorf("the chat did not go on after the refused searches:\n%s", out)
	}

	// -o json: the server's answer, as it sent it.
	code, out, errs = chatRun(t, "/search --limit 3 blue\n", "assistant", "--sender", "alice", "--addr", addr, "-o", "json")
	if code != 0 {
		t.Fatalf("json: exit %d\n%s\n%s", code, out, errs)
	}
	var got struct {
		Search conversation.SearchResult `json:"search"`
	}
	jsonLine(t, out, "search", &got)
	var want conversation.SearchResult
	getJSON(t, srv.URL+"/v1/search?q=blue&agent=assistant&sender=alice&archives=true&limit=3", &want)
	if !reflect.DeepEqual(got.Search, want) || len(want.Matches) != 3 || !want.Truncated {
		t.Errorf("json /search: %+v\nthe server says %+v", got.Search, want)
	}
}

func TestChatRead(t *testing.T) {
	srv, svc, _ := cmdServer(t, "")
	addr := addrOf(srv)
	// A reply made with no one listening is unread.
	if _, err := svc.Run(context.Background(), conversation.RunRequest{Agent: "assistant", Sender: "dora", Content: "one"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := conversationsOf(t, srv.URL)["dora"].Unread; n != 1 {
		t.Fatalf("unread %d before /read, want 1", n)
	}
	code, out, errs := chatRun(t, "/read\n", "assistant", "--sender", "dora", "--addr", addr)
	if code != 0 || !strings.Contains(out, "[every reply is read: the conversation's unread count is 0]") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if n := conversationsOf(t, srv.URL)["dora"].Unread; n != 0 {
		t.Fatalf("unread %d after /read, want 0", n)
	}

	// -o json.
	if _, err := svc.Run(context.Background(), conversation.RunRequest{Agent: "assistant", Sender: "dora", Content: "three"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := conversationsOf(t, srv.URL)["dora"].Unread; n != 1 {
		t.Fatalf("unread %d, want 1", n)
	}
	code, out, _ = chatRun(t, "/read\n", "assistant", "--sender", "dora", "--addr", addr, "-o", "json")
	var got struct {
		Read map[string]any `json:"read"`
	}
	jsonLine(t, out, "read", &got)
	if code != 0 || got.Read["unread"] != 0.0 || got.Read["sender"] != "dora" {
		t.Errorf("json /read: exit %d %v", code, got.Read)
	}
	if n := conversationsOf(t, srv.URL)["dora"].Unread; n != 0 {
		t.Fatalf("unread %d after /read, want 0", n)
	}

	// Nothing stored: one line (404 no_conversation), the chat goes on.
	code, out, errs = chatRun(t, "/read\n/read now\nhello\n", "assistant", "--sender", "nobody", "--addr", addr)
	errLines := linesWith(errs, "lllm: ")
	if code != ExitError || len(errLines) != 2 ||
		errLines[0] != "lllm: /read: nothing is stored yet in the conversation of assistant with nobody: there is nothing to mark read" ||
		!strings.Contains(errLines[1], "usage: /read") {
		t.Errorf("/read of nothing: exit %d\n%s", code, errs)
	}
	if !strings.Contains(out, "assistant: mock reply to: hello") {
		t.Errorf("the chat did not go on:\n%s", out)
	}
}

func TestChatDelete(t *testing.T) {
	srv, _, data := cmdServer(t, "")
	addr := addrOf(srv)

	// Piped input: a bare /delete is refused (nothing can confirm), the
	// chat goes on.
	code, _, errs := chatRun(t, "hello\n/delete\nstill here\n", "assistant", "--sender", "eve", "--addr", addr)
	if code != ExitError || !strings.Contains(errs, "lllm: /delete: the input is not a terminal, so nothing can confirm: type /delete --yes to delete the conversation\n") {
		t.Errorf("bare /delete, piped: exit %d\n%s", code, errs)
	}
	if got := strings.Join(sentTexts(t, srv.URL, "assistant", "eve"), "|"); got != "hello|still here" {
		t.Fatalf("the server got %q", got)
	}

	// /delete --yes: the conversation moves to the trash, the chat ends
	// (exit 0) and reads nothing more.
	code, out, errs := chatRun(t, "/delete --yes\nnever sent\n", "assistant", "--sender", "eve", "--addr", addr)
	if code != 0 {
		t.Fatalf("/delete --yes: exit %d\n%s\n%s", code, out, errs)
	}
	const prefix = "[deleted: the conversation of assistant with eve is now "
	i := strings.Index(out, prefix)
	if i < 0 || !strings.HasSuffix(out, "; the chat ends]\n") {
		t.Fatalf("output:\n%s", out)
	}
	trash, _, _ := strings.Cut(out[i+len(prefix):], " ")
	if !strings.HasPrefix(trash, ".trash/assistant/eve/") {
		t.Fatalf("trash %q", trash)
	}
	log, err := os.ReadFile(filepath.Join(data, filepath.FromSlash(trash), "conversation.jsonl"))
	if err != nil || !strings.Contains(string(log), "still here") {
		t.Fatalf("the trash copy: %v\n%s", err, log)
	}
	if _, ok := conversationsOf(t, srv.URL)["eve"]; ok {
		t.Fatal("eve's conversation is still listed")
	}
	if got := sentTexts(t, srv.URL, "assistant", "eve"); len(got) != 0 {
		t.Fatalf("after /delete the server has %q", got)
	}

	// Nothing left to delete: one line (404), the chat goes on.
	code, out, errs = chatRun(t, "/delete --yes\n/archives\n", "assistant", "--sender", "eve", "--addr", addr)
	if code != ExitError || len(linesWith(errs, "lllm: ")) != 1 ||
		!strings.Contains(errs, "lllm: /delete: nothing is stored in the conversation of assistant with eve: there is nothing to delete\n") ||
		!strings.Contains(out, "[no archives]") {
		t.Errorf("/delete of nothing: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = chatRun(t, "/delete now\n", "assistant", "--sender", "eve", "--addr", addr)
	if code != ExitError || !strings.Contains(errs, `/delete: unexpected "now"`) {
		t.Errorf("/delete now: exit %d\n%s", code, errs)
	}

	// -o json: the server's answer.
	code, out, _ = chatRun(t, "hi\n/delete --yes\n", "assistant", "--sender", "frank", "--addr", addr, "-o", "json")
	var got struct {
		Deleted map[string]any `json:"deleted"`
	}
	jsonLine(t, out, "deleted", &got)
	if tr, _ := got.Deleted["trash"].(string); code != 0 || got.Deleted["deleted"] != true || !strings.HasPrefix(tr, ".trash/assistant/frank/") {
		t.Errorf("json /delete: exit %d %v", code, got.Deleted)
	}
	if _, err := os.Stat(filepath.Join(data, filepath.FromSlash(got.Deleted["trash"].(string)), "conversation.jsonl")); err != nil {
		t.Error(err)
	}

	// Busy: another client's reply is in progress (waiting on ask_user).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/stream", strings.NewReader(`{"agent":"assistant","sender":"gus","content":"slow"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && sc.Text() != "event: ask" {
	}
	code, out, errs = chatRun(t, "/delete --yes\n/archives\n", "assistant", "--sender", "gus", "--addr", addr)
	if code != ExitError || len(linesWith(errs, "lllm: ")) != 1 ||
		!strings.Contains(errs, "lllm: /delete: a reply (or a compaction) is in progress in this conversation, for another client: wait for its end or /kill it, then /delete again\n") ||
		!strings.Contains(out, "[no archives]") {
		t.Errorf("/delete while busy: exit %d\n%s\n%s", code, out, errs)
	}
	if _, ok := conversationsOf(t, srv.URL)["gus"]; !ok {
		t.Fatal("a busy conversation was deleted")
	}
	// Once the run is killed, it can go.
	if code, out, errs = chatRun(t, "/kill\n/delete --yes\n", "assistant", "--sender", "gus", "--addr", addr); code != 0 || !strings.Contains(out, "[deleted:") {
		t.Errorf("/kill then /delete: exit %d\n%s\n%s", code, out, errs)
	}
}

// At a terminal /delete asks first: anything but the sender's name or
// "yes" keeps the conversation.
func TestChatTerminalDelete(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no pseudo-terminals")
	}
	isolateCache(t)
	srv, _, _ := cmdServer(t, "")
	addr := addrOf(srv)
	p := startPtyChat(t, "assistant", "--sender", "hal", "--addr", addr, "--no-history")
	at := p.prompt(p.waitFor(0, "Talking with assistant"))
	p.type_("hi\r")
	at = p.prompt(p.waitFor(at, "assistant: mock reply to: hi"))
	p.type_("/del\t\r")
	at = p.prompt(p.waitFor(at, "(2 live messages, 0 archives)? It moves into the server's trash. Type hal or yes to delete it, anything else keeps it."))
	p.type_("no\r")
	at = p.prompt(p.waitFor(at, "[nothing was deleted]"))
	if _, ok := conversationsOf(t, srv.URL)["hal"]; !ok {
		t.Fatal("deleted without a confirmation")
	}
	p.type_("/delete\r")
	at = p.prompt(p.waitFor(at, "Type hal or yes"))
	p.type_("hal\r")
	p.waitFor(at, "; the chat ends]")
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit %d after /delete:\n%q", code, p.out.String())
	}
	if _, ok := conversationsOf(t, srv.URL)["hal"]; ok {
		t.Fatal("not deleted after the confirmation")
	}
}

// /history shows, under a message, the questions its run asked with their
// answers (or why there is none), and how a run that left no reply ended;
// -o json prints the messages as the server sent them.
func TestChatHistoryAsksAndAborts(t *testing.T) {
	srv, _, _ := cmdServer(t, "")
	addr := addrOf(srv)
	p := startPipedChat(t, "assistant", "--sender", "ivy", "--addr", addr)
	// A slow run, killed while it waits for an answer.
	p.line("slow")
	at := p.waitFor(0, "[assistant asks] Shall I go on?")
	p.line("/kill")
	at = p.waitFor(at, "[killed]")
	// A question answered.
	p.line("please ask me")
	at = p.waitFor(at, "[assistant asks] Which colour?")
	p.line("green")
	at = p.waitFor(at, "Thank you, I have noted that.")
	// A run that fails.
	p.line("break")
	at = p.waitFor(at, "[error:")
	p.line("/history")
	at = p.waitFor(at, "ivy: break\n")
	p.waitFor(at, "]\n")
	code := p.end()
	out := p.out.String()
	hist := out[strings.LastIndex(out, "ivy: slow\n"):]
	want := "ivy: slow\n" +
		"  [assistant asked] Shall I go on?\n" +
		"  [no answer: the run ended before the user answered (killed)]\n" +
		"  [no reply: the run was killed]\n" +
		"ivy: please ask me\n" +
		"  [assistant asked] Which colour?\n" +
		"  [ivy answered] green\n" +
		"assistant: Thank you, I have noted that.\n" +
		"ivy: break\n" +
		"  [no reply: the run failed: "
	if !strings.HasPrefix(hist, want) {
		t.Errorf("/history:\n%s\nwant it to start with:\n%s", hist, want)
	}
	if !strings.Contains(hist, "Incorrect API key provided (mock)") || strings.Count(hist, "\n") != 10 {
		t.Errorf("/history of the failed run:\n%s", hist)
	}
	if code != 1 { // the failed run is a failure of the session
		t.Errorf("exit %d, want 1 after a failed run\n%s", code, p.err.String())
	}

	// -o json: what the server sent.
	code, out, errs := chatRun(t, "/history\n", "assistant", "--sender", "ivy", "--addr", addr, "-o", "json")
	if code != 0 {
		t.Fatalf("json: exit %d\n%s\n%s", code, out, errs)
	}
	var got struct {
		Messages []any `json:"messages"`
	}
	jsonLine(t, out, "messages", &got)
	var sent struct {
		Messages []any `json:"messages"`
	}
	getJSON(t, srv.URL+"/v1/conversations/assistant/ivy/messages", &sent)
	if !reflect.DeepEqual(got.Messages, sent.Messages) {
		t.Errorf("json /history:\n%v\nthe server sent\n%v", got.Messages, sent.Messages)
	}
	var entries []conversation.Entry
	data, _ := json.Marshal(got.Messages)
	_ = json.Unmarshal(data, &entries)
	if len(entries) != 4 || len(entries[0].Asks) != 1 || entries[0].Asks[0].Error == "" || entries[0].Aborted == nil ||
		entries[0].Aborted.Status != conversation.AbortKilled || entries[1].Asks[0].Answer != "green" ||
		entries[3].Aborted == nil || entries[3].Aborted.Status != conversation.AbortFailed {
		t.Errorf("json /history entries: %+v", entries)
	}
}

// The notes /history prints for the other ways a run ends without a
// reply, which a test server cannot easily bring about.
func TestChatAbortNote(t *testing.T) {
	for _, tc := range []struct {
		ab   conversation.Abort
		want string
	}{
		{conversation.Abort{Agent: "assistant", Status: conversation.AbortCancelled, Error: "context canceled"},
			"the run was cancelled (the client went away or the server stopped)"},
		{conversation.Abort{Agent: "critic", Status: conversation.AbortKilled}, "the run of the guest critic was killed"},
		{conversation.Abort{Agent: "assistant", Status: conversation.AbortFailed, Error: "boom\nagain"}, "the run failed: boom again"},
		{conversation.Abort{Agent: "assistant", Status: conversation.AbortFailed, Error: strings.Repeat("x", 500)},
			"the run failed: " + strings.Repeat("x", chatNoteMax-1) + "…"},
	} {
		if got := abortNote("assistant", &tc.ab); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.ab, got, tc.want)
		}
	}
}

func TestChatHelpListsCommands(t *testing.T) {
	srv, _, _ := cmdServer(t, "")
	code, out, _ := chatRun(t, "/help\n", "assistant", "--addr", addrOf(srv))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, c := range []string{"/search [--all] TEXT", "/read", "/delete [--yes]", "/history", "/quit"} {
		if len(linesWith(out, c+" ")) != 1 {
			t.Errorf("/help has no line for %s:\n%s", c, out)
		}
	}
	help := NewRootCmd()
	help.SetArgs([]string{"chat", "--help"})
	var b strings.Builder
	help.SetOut(&b)
	_ = help.Execute()
	for _, c := range []string{"  /search [--all] TEXT", "  /read ", "  /delete [--yes] "} {
		if !strings.Contains(b.String(), c) {
			t.Errorf("chat --help lacks %q", c)
		}
	}
	comp := chatCompleter(nil)
	for _, tc := range []struct{ line, want string }{
		{"/sea", "rch "}, {"/rea", "d "}, {"/del", "ete "}, {"/delete --y", "es "}, {"/search --a", "ll "},
	} {
		if got, _ := comp.Do([]rune(tc.line), len([]rune(tc.line))); len(got) != 1 || string(got[0]) != tc.want {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}

// TestChatSenderNamedLikeAnAgent: lllm chat refuses a --sender that is the
// name of one of the server's agents before sending anything.
func TestChatSenderNamedLikeAnAgent(t *testing.T) {
	srv, _, data := cmdServer(t, "../../../configs/serve.yaml")
	addr := addrOf(srv)
	code, out, errs := chatRun(t, "hello\n", "assistant", "--sender", "critic", "--addr", addr)
	if code != ExitError || !strings.Contains(errs, "--sender critic is the name of an agent of the server at "+addr) {
		t.Errorf("exit %d, want a refusal of the sender:\n%s\n%s", code, out, errs)
	}
	ents, _ := os.ReadDir(data)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") { // the server's lock
			t.Errorf("the refused chat stored %s", e.Name())
		}
	}
}
