package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/lllm-go/lllm/runtime/server"
)

// ptyChat is lllm chat run as a subprocess at a pseudo-terminal.
type ptyChat struct {
	t    *testing.T
	tty  *os.File
	out  *syncBuffer
	done chan int
}

// startPtyChat runs lllm chat args at a new pseudo-terminal, with the
// environment of the test (so its user cache directory).
func startPtyChat(t *testing.T, args ...string) *ptyChat {
	t.Helper()
	cmd := lllmProcess(append([]string{"chat"}, args...)...)
	cmd.Env = append(cmd.Env, "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	p := &ptyChat{t: t, tty: tty, out: &syncBuffer{}, done: make(chan int, 1)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(p.out, tty) // ends with EIO once the child is gone
	}()
	go func() {
		err := cmd.Wait()
		<-copied
		var ee *exec.ExitError
		switch {
		case err == nil:
			p.done <- 0
		case errors.As(err, &ee):
			p.done <- ee.ExitCode()
		default:
			p.done <- -1
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = tty.Close()
	})
	return p
}

// type_ sends keys to the terminal.
func (p *ptyChat) type_(keys string) {
	p.t.Helper()
	if _, err := p.tty.Write([]byte(keys)); err != nil {
		p.t.Fatal(err)
	}
}

// waitFor waits for s in the output after offset from, and returns the
// offset just after it.
func (p *ptyChat) waitFor(from int, s string) int {
	p.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		out := p.out.String()
		if from <= len(out) {
			if i := strings.Index(out[from:], s); i >= 0 {
				return from + i + len(s)
			}
		}
	}
	p.t.Fatalf("no %q in the output after byte %d:\n%q", s, from, p.out.String())
	return 0
}

// prompt waits for the prompt after offset from: readline draws it once
// the terminal is in raw mode, so keys typed next are its.
func (p *ptyChat) prompt(from int) int { p.t.Helper(); return p.waitFor(from, chatPrompt) }

func (p *ptyChat) exitCode() int {
	p.t.Helper()
	select {
	case code := <-p.done:
		return code
	case <-time.After(15 * time.Second):
		p.t.Fatalf("lllm chat did not exit:\n%q", p.out.String())
		return 0
	}
}

// sentTexts are the texts a sender sent in a conversation, in order.
func sentTexts(t *testing.T, base, agent, sender string) []string {
	t.Helper()
	resp, err := http.Get(base + "/v1/conversations/" + agent + "/" + sender + "/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m server.MessagesResponse
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range m.Messages {
		if e.Message.Name == sender {
			texts = append(texts, e.Message.Text())
		}
	}
	return texts
}

// isolateCache points the user cache directory of the test and of its
// subprocesses at a new directory, and returns the path of the history
// file of the agent assistant there.
func isolateCache(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	t.Setenv("HOME", dir)
	t.Setenv("LocalAppData", dir)
	path, err := chatHistoryPath("assistant")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, dir) {
		t.Fatalf("the history %s is not under the test's cache %s", path, dir)
	}
	return path
}

// lllm chat at a terminal: editing keys, history across sessions, Ctrl-R,
// tab completion, an answer to ask_user, and Ctrl-D.
func TestChatTerminalEditingAndHistory(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no pseudo-terminals")
	}
	history := isolateCache(t)
	srv := serveFixture(t, t.TempDir())
	addr := addrOf(srv)

	p := startPtyChat(t, "assistant", "--sender", "alice", "--addr", addr)
	at := p.prompt(p.waitFor(0, "Talking with assistant"))
	// A typo removed with Backspace, a letter put in after three Lefts.
	p.type_("hello wrlds\x7f\x1b[D\x1b[D\x1b[Do\r")
	at = p.prompt(p.waitFor(at, "assistant: mock reply to: hello world"))
	// Up recalls the line before.
	p.type_("\x1b[A\r")
	at = p.prompt(p.waitFor(at, "assistant: mock reply to: hello world"))
	// Tab completes a slash command.
	p.type_("/arc\t\r")
	at = p.prompt(p.waitFor(at, "[no archives]"))
	// ask_user: the answer is typed at the prompt.
	p.type_("please ask me\r")
	at = p.prompt(p.waitFor(at, "[assistant asks] What is your favourite colour?"))
	p.type_("blue\r")
	p.prompt(p.waitFor(at, "Thank you, I have noted that."))
	// The replies are whole lines: no prompt was drawn in their middle.
	for _, l := range strings.Split(p.out.String(), "\r\n") {
		if strings.Contains(l, "mock reply to:") || strings.Contains(l, "noted that") {
			if !strings.HasPrefix(l, "assistant: ") || strings.Contains(l, "\x1b") || strings.Contains(l, chatPrompt+"h") {
				t.Errorf("a reply line with more in it: %q", l)
			}
		}
	}
	p.type_("\x04") // Ctrl-D
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit %d after Ctrl-D:\n%q", code, p.out.String())
	}
	// (The answer to ask_user is the tool's result, not a message.)
	if got, want := strings.Join(sentTexts(t, srv.URL, "assistant", "alice"), "|"), "hello world|hello world|please ask me"; got != want {
		t.Fatalf("the server got %q, want %q", got, want)
	}
	fi, err := os.Stat(history)
	if err != nil {
		t.Fatalf("no history file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the history file is %v, want 0600", fi.Mode().Perm())
	}
	if di, err := os.Stat(filepath.Dir(history)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("the history directory: %v %v, want 0700", di.Mode().Perm(), err)
	}
	data, _ := os.ReadFile(history)
	if got, want := string(data), "hello world\n/archives\nplease ask me\nblue\n"; got != want {
		t.Fatalf("history file %q, want %q", got, want)
	}

	// A second session starts from that history: Up is the last line of
	// the first, Ctrl-R finds an older one.
	p = startPtyChat(t, "assistant", "--sender", "alice", "--addr", addr)
	at = p.prompt(p.waitFor(0, "Talking with assistant"))
	p.type_("\x1b[A\r")
	at = p.prompt(p.waitFor(at, "assistant: mock reply to: blue"))
	p.type_("\x12hello\r")
	p.prompt(p.waitFor(at, "assistant: mock reply to: hello world"))
	p.type_("\x04")
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit %d after Ctrl-D:\n%q", code, p.out.String())
	}
	if got, want := strings.Join(sentTexts(t, srv.URL, "assistant", "alice"), "|"), "hello world|hello world|please ask me|blue|hello world"; got != want {
		t.Fatalf("the server got %q, want %q", got, want)
	}
	data, _ = os.ReadFile(history)
	if got, want := string(data), "hello world\n/archives\nplease ask me\nblue\nhello world\n"; got != want {
		t.Fatalf("history file %q, want %q", got, want)
	}
}

// --no-history keeps no file; Ctrl-C on an empty prompt leaves like
// Ctrl-D, and Ctrl-C on a line only drops the line.
func TestChatTerminalNoHistory(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no pseudo-terminals")
	}
	history := isolateCache(t)
	srv := serveFixture(t, t.TempDir())
	addr := addrOf(srv)
	p := startPtyChat(t, "assistant", "--sender", "bob", "--addr", addr, "--no-history")
	at := p.prompt(p.waitFor(0, "Talking with assistant"))
	p.type_("never sent\x03")
	at = p.prompt(p.waitFor(at, "^C"))
	p.type_("hi\r")
	p.prompt(p.waitFor(at, "assistant: mock reply to: hi"))
	p.type_("\x03")
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit %d after Ctrl-C:\n%q", code, p.out.String())
	}
	if got := sentTexts(t, srv.URL, "assistant", "bob"); len(got) != 1 || got[0] != "hi" {
		t.Fatalf("the server got %q", got)
	}
	if _, err := os.Stat(history); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--no-history: %s exists (%v)", history, err)
	}
}

// Each agent has its own history file: the lines typed to the critic are
// not recalled in a chat with the assistant, and each file holds only
// what was typed to its agent. The shared file of earlier versions is
// left as it was, and not read.
func TestChatTerminalHistoryPerAgent(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no pseudo-terminals")
	}
	assistant := isolateCache(t)
	critic, err := chatHistoryPath("critic")
	if err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(filepath.Dir(filepath.Dir(assistant)), "chat_history")
	if err := os.MkdirAll(filepath.Dir(shared), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shared, []byte("an old shared line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := serveFixture(t, t.TempDir())
	addr := addrOf(srv)

	p := startPtyChat(t, "critic", "--sender", "alice", "--addr", addr)
	at := p.prompt(p.waitFor(0, "Talking with critic"))
	p.type_("for the critic\r")
	p.prompt(p.waitFor(at, "critic: mock reply to: for the critic"))
	p.type_("\x04")
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit %d:\n%q", code, p.out.String())
	}

	// Up recalls nothing here: the assistant's history is empty.
	p = startPtyChat(t, "assistant", "--sender", "alice", "--addr", addr)
	at = p.prompt(p.waitFor(0, "Talking with assistant"))
	p.type_("\x1b[Ahello\r")
	p.prompt(p.waitFor(at, "assistant: mock reply to: hello"))
	p.type_("\x04")
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit %d:\n%q", code, p.out.String())
	}
	if got := sentTexts(t, srv.URL, "assistant", "alice"); len(got) != 1 || got[0] != "hello" {
		t.Fatalf("the assistant got %q", got)
	}
	for path, want := range map[string]string{critic: "for the critic\n", assistant: "hello\n", shared: "an old shared line\n"} {
		data, err := os.ReadFile(path)
		if err != nil || string(data) != want {
			t.Errorf("%s: %q (%v), want %q", path, data, err, want)
		}
	}
	if fi, err := os.Stat(critic); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the critic's history file: %v (%v), want 0600", fi, err)
	}
}

// slowServer serves an assistant whose replies take latency to come.
func slowServer(t *testing.T, latency string) *httptest.Server {
	t.Helper()
	return serveText(t, "tactic_type: serve\nglobal: {model_name: mock/slow}\nmock: {latency: "+latency+"}\n"+
		"agent_configs: [{name: assistant, system_prompt: Help.}]\n")
}

// While a reply streams there is no prompt, and a line typed then (which
// the terminal echoes) is still read: /kill stops the reply.
func TestChatTerminalKillWhileStreaming(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no pseudo-terminals")
	}
	history := isolateCache(t)
	srv := slowServer(t, "30s")
	addr := addrOf(srv)
	p := startPtyChat(t, "assistant", "--sender", "carol", "--addr", addr)
	at := p.prompt(p.waitFor(0, "Talking with assistant"))
	p.type_("take your time\r")
	at = p.waitFor(at, "assistant: ")
	time.Sleep(200 * time.Millisecond)
	if strings.Contains(p.out.String()[at:], chatPrompt) {
		t.Fatalf("a prompt while the reply streams: %q", p.out.String()[at:])
	}
	start := time.Now()
	p.type_("/kill\r")
	p.prompt(p.waitFor(at, "[killed]"))
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the kill took %v", d)
	}
	p.type_("\x04")
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit %d:\n%q", code, p.out.String())
	}
	if got := sentTexts(t, srv.URL, "assistant", "carol"); len(got) != 1 || got[0] != "take your time" {
		t.Fatalf("the server got %q", got)
	}
	if data, _ := os.ReadFile(history); string(data) != "take your time\n/kill\n" {
		t.Fatalf("history file %q", data)
	}
}

// Piped input is read as before: no line editing, no history file.
func TestChatPipedKeepsNoHistory(t *testing.T) {
	history := isolateCache(t)
	srv := serveFixture(t, t.TempDir())
	addr := addrOf(srv)
	code, out, errs := chatRun(t, "hello\n", "assistant", "--addr", addr)
	if code != 0 || !strings.Contains(out, "assistant: mock reply to: hello") || strings.Contains(out, chatPrompt) {
		t.Fatalf("exit %d\n%q\n%q", code, out, errs)
	}
	if _, err := os.Stat(history); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("piped input: %s exists (%v)", history, err)
	}
	if _, err := os.Stat(filepath.Dir(history)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("piped input: %s exists (%v)", filepath.Dir(history), err)
	}
}

func TestChatLineEditingOnlyAtTerminals(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if useLineEditing(r, w) || useLineEditing(strings.NewReader(""), &bytes.Buffer{}) {
		t.Fatal("line editing without a terminal")
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if !useLineEditing(tty, tty) {
		t.Fatal("no line editing at a terminal")
	}
	if useLineEditing(tty, w) || useLineEditing(r, tty) {
		t.Fatal("line editing when only one of stdin and stdout is a terminal")
	}
}

func TestChatCompleter(t *testing.T) {
	c := chatCompleter([]string{"critic", "coach"})
	for _, tc := range []struct{ line, want string }{
		{"/arc", "hives "},
		{"/co", "mpact "},
		{"/guest cr", "itic "},
		{"/ki", "ll "},
	} {
		got, _ := c.Do([]rune(tc.line), len([]rune(tc.line)))
		if len(got) != 1 || string(got[0]) != tc.want {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
	if got, _ := c.Do([]rune("/guest c"), 8); len(got) != 2 {
		t.Errorf("/guest c: %q, want the two agents", got)
	}
	if got, _ := c.Do([]rune("hello"), 5); len(got) != 0 {
		t.Errorf("a message completes to %q", got)
	}
}

func TestChatHistoryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lllm", "chat_history")
	var errw bytes.Buffer
	var old strings.Builder
	for i := range chatHistoryLimit + 10 {
		old.WriteString("line " + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(old.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	h, lines := openChatHistory(path, &errw)
	if h == nil || len(lines) != chatHistoryLimit || errw.Len() > 0 {
		t.Fatalf("%d lines, %q", len(lines), errw.String())
	}
	h.add("next")
	h.add("next") // a repeat is kept once
	h.add("  ")
	h.close()
	got, _ := readHistoryLines(path)
	if len(got) != chatHistoryLimit+1 || got[len(got)-1] != "next" || got[len(got)-2] != lines[len(lines)-1] {
		t.Fatalf("%d lines, ending %q", len(got), got[len(got)-2:])
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("rewritten as %v", fi.Mode().Perm())
	}

	// A history that cannot be kept is a warning, once, not a failure.
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	errw.Reset()
	h, lines = openChatHistory(filepath.Join(blocker, "lllm", "chat_history"), &errw)
	h.add("ignored") // nil: nothing happens
	if h != nil || lines != nil || strings.Count(errw.String(), "warning: cannot keep the chat history") != 1 {
		t.Fatalf("%v %q %q", h, lines, errw.String())
	}
}

// A history file's name is the agent's, escaped: always a plain name in
// the history folder, never hidden or a device, one per agent.
func TestChatHistoryFileNames(t *testing.T) {
	for agent, want := range map[string]string{
		"assistant":       "assistant.history",
		"gpt-4o_mini":     "gpt-4o_mini.history",
		"bob@lab.example": "bob%40lab%2Eexample.history",
		"..":              "%2E%2E.history",
		"a/b":             "a%2Fb.history",
		`a\b`:             "a%5Cb.history",
		"50%":             "50%25.history",
		"con":             "%63on.history",
		"LPT1":            "%4CPT1.history",
		"com10":           "com10.history",
		"é":               "%C3%A9.history",
	} {
		if got := historyFileName(agent); got != want {
			t.Errorf("%q: %q, want %q", agent, got, want)
		}
	}
	long := strings.Repeat("x", 300)
	a, b := historyFileName(long), historyFileName(long+"y")
	if len(a) > 255 || a == b || !strings.HasPrefix(a, "xxxx") {
		t.Errorf("long names: %q (%d bytes), %q", a, len(a), b)
	}
	path, err := chatHistoryPath("bob@lab")
	if err != nil || filepath.Base(filepath.Dir(path)) != chatHistoryDir || filepath.Base(path) != "bob%40lab.history" {
		t.Errorf("path %q (%v)", path, err)
	}
	if _, err := chatHistoryPath(""); err == nil {
		t.Error("a history path for no agent")
	}
}
