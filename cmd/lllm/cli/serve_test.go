package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/server"
)

// serveFixture serves configs/serve.yaml on 127.0.0.1 with a data dir.
func serveFixture(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	srv, _ := serveConfigAt(t, "../../../configs/serve.yaml", dir, 10*time.Second)
	return srv
}

// serveConfigAt serves the serve config at cfgPath on 127.0.0.1, its
// conversations in dataDir, an ask_user question waiting askTimeout.
func serveConfigAt(t *testing.T, cfgPath, dataDir string, askTimeout time.Duration) (*httptest.Server, *conversation.Service) {
	t.Helper()
	cfg, err := server.LoadConfig(context.Background(), cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	store, err := conversation.Open(dataDir, conversation.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := conversation.NewService(store, cfg.Agents, conversation.ServiceOptions{AskTimeout: askTimeout})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.New(svc, server.Options{KeepAlive: 2 * time.Millisecond}))
	t.Cleanup(func() {
		srv.Close()
		_ = store.Close()
	})
	return srv, svc
}

// chatRun runs lllm chat with stdin and returns its exit code and output.
func chatRun(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	root := NewRootCmd()
	root.SetArgs(append([]string{"chat"}, args...))
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errb)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := ExitOK
	if err := root.ExecuteContext(ctx); err != nil {
		code = ExitError
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}

func TestServeAndChat(t *testing.T) {
	dir := t.TempDir()
	srv := serveFixture(t, dir)
	addr := strings.TrimPrefix(srv.URL, "http://")
	script := "hello there\n/guest critic what do you think?\nplease ask me\nblue\n/compact\n/archives\ndo you remember?\n/bogus\n/quit\nnever sent\n"
	code, out, errs := chatRun(t, script, "assistant", "--sender", "alice", "--addr", addr)
	if code != ExitError { // /bogus was refused: /quit leaves with 1, as the end of the input does
		t.Fatalf("exit %d, want 1 after a refused command\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"assistant: mock reply to: hello there",
		"critic (guest): mock reply to: what do you think?",
		"[tool ask_user",
		// Piped input: no "> " prompt; the reply goes on under its name.
		"[assistant asks] What is your favourite colour?\nassistant: Thank you, I have noted that.",
		"[compacted into archive 1: A chat about favourite colours.]",
		"[archive 1] A chat about favourite colours.",
		"[tool recall {\"query\":\"colour\"}]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "unknown command /bogus") {
		t.Errorf("stderr %q", errs)
	}
	// The conversation is the server's: the answer reached ask_user, the
	// line after /quit was never sent.
	resp, err := http.Get(srv.URL + "/v1/conversations/assistant/alice/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m server.MessagesResponse
	_ = json.NewDecoder(resp.Body).Decode(&m)
	var texts []string
	for _, e := range m.Messages {
		texts = append(texts, e.Message.Text())
	}
	all := strings.Join(texts, "|")
	if len(m.Messages) != 3 || !strings.Contains(all, "do you remember?") || strings.Contains(all, "never sent") || m.Participants[2] != "critic" {
		t.Fatalf("stored %q %+v", texts, m.Summary)
	}

	// JSON output: one event per line.
	code, out, _ = chatRun(t, "hi again\n", "critic", "--sender", "bob", "--addr", addr, "-o", "json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first, last conversation.Event
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if code != 0 || first.Type != "start" || first.Agent != "critic" || last.Type != "end" || last.Status != "ok" {
		t.Fatalf("json output (exit %d):\n%s", code, out)
	}
}

func TestChatErrors(t *testing.T) {
	dir := t.TempDir()
	srv := serveFixture(t, dir)
	addr := strings.TrimPrefix(srv.URL, "http://")
	r := lllm(t, "chat", "nobody", "--addr", addr)
	wantError(t, r, ExitUsage, `unknown agent "nobody"`, "assistant, critic")
	r = lllm(t, "chat")
	wantError(t, r, ExitUsage, "chat needs an AGENT")
	r = lllm(t, "chat", "assistant", "--sender", "../x", "--addr", addr)
	wantError(t, r, ExitUsage, "--sender")
	// Nothing listens on a closed server's address.
	closed := httptest.NewServer(http.NotFoundHandler())
	caddr := strings.TrimPrefix(closed.URL, "http://")
	closed.Close()
	r = lllm(t, "chat", "assistant", "--addr", caddr)
	wantError(t, r, ExitError, "cannot reach the server")
	// A --guest that could never answer is refused before anything is
	// read: not an agent, the agent itself, one the agent does not admit.
	r = lllm(t, "chat", "assistant", "--addr", addr, "--guest", "critc")
	wantError(t, r, ExitUsage, `--guest critc: no such agent (did you mean "critic"?): the server serves assistant, critic`)
	r = lllm(t, "chat", "assistant", "--addr", addr, "--guest", "assistant")
	wantError(t, r, ExitUsage, "--guest assistant: assistant is the agent you talk with: leave --guest out")
	r = lllm(t, "chat", "critic", "--addr", addr, "--guest", "assistant")
	wantError(t, r, ExitUsage, "--guest assistant: critic admits no guests")
	if ents, _ := os.ReadDir(dir); len(ents) > 1 { // the server's lock
		t.Errorf("a refused --guest stored something: %v", ents)
	}
	// A session with a problem ends with ExitError: a line too long to
	// read (nothing after it is sent).
	code, _, errs := chatRun(t, strings.Repeat("b", 2<<20)+"\nnext line\n", "assistant", "--addr", addr, "--sender", "long")
	if code != ExitError || !strings.Contains(errs, "a line is longer than 1 MiB; nothing after it was sent") {
		t.Errorf("a line over 1 MiB: exit %d, %q", code, errs)
	}
}

func TestServeCommand(t *testing.T) {
	dir := t.TempDir()
	url, stop := serveInProcess(t, "--config", "../../../configs/serve.yaml", "--data-dir", dir)
	code, cout, cerr := chatRun(t, "hello\n", "assistant", "--addr", url)
	if code != 0 || !strings.Contains(cout, "assistant: mock reply to: hello") {
		t.Fatalf("chat: %d %q %q", code, cout, cerr)
	}
	if code, out := stop(); code != 0 || !strings.Contains(out, "lllm serve: stopped") {
		t.Fatalf("serve exit %d: %q", code, out)
	}
	// Restarted on the same data dir, the conversation is still there.
	store, err := conversation.Open(dir, conversation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if c, ok := store.Lookup("assistant", "user"); !ok || len(c.Messages()) != 2 {
		t.Fatalf("not persisted: %v", ok)
	}
}

func TestServeUsageErrors(t *testing.T) {
	r := lllm(t, "serve", "--addr", "0.0.0.0:7878", "--config", "../../../configs/serve.yaml")
	wantError(t, r, ExitUsage, "not a loopback address", "--token-env")
	r = lllm(t, "serve", "--token-env", "LLLM_TEST_SURELY_UNSET_TOKEN")
	wantError(t, r, ExitUsage, "LLLM_TEST_SURELY_UNSET_TOKEN", "empty or unset")
	r = lllm(t, "serve", "--config", "testdata/does-not-exist.yaml")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "does-not-exist.yaml") {
		t.Fatalf("missing config: %v", r)
	}
}

// A port in use stops lllm serve before it touches the data dir: a new
// one is not created (with the lock file in it), and a data dir in use by
// another server is not named as the problem.
func TestServePortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	data := filepath.Join(t.TempDir(), "conversations")
	r := lllm(t, "serve", "--config", "../../../configs/serve.yaml", "--addr", addr, "--data-dir", data, "--no-log")
	wantError(t, r, ExitError, "address "+addr+" is in use")
	if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a server that could not listen made its data dir: %v", err)
	}
}

func TestServeConfigProblems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.yaml")
	body := "tactic_type: serve\nglobal: {model_name: mock/x}\nagent_configs:\n" +
		"  - {name: a, system_prompt: Hi., model_args: {temprature: 1}}\n" +
		"params: {agents: {z: {}}}\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r := lllm(t, "serve", "--config", path, "--addr", "127.0.0.1:0", "--data-dir", t.TempDir())
	if r.code != ExitUsage || r.stdout != "" {
		t.Fatalf("%v", r)
	}
	// Each problem on its own line, the agent's in lllm run's words.
	for _, want := range []string{
		"params.agents.z: no such agent in agent_configs (a)\n",
		`agent a: model_args: unknown key "temprature" (did you mean "temperature"?)`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// Outside the repository the default serve config is missing: one usage
// error that says so and how to give one.
func TestServeWithoutDefaultConfig(t *testing.T) {
	t.Chdir(t.TempDir())
	r := lllm(t, "serve", "--addr", "127.0.0.1:0")
	wantError(t, r, ExitUsage, "no serve config at configs/serve.yaml, the default", "--config FILE")
}

// lllm serve empties the trash of what was deleted longer ago than
// --trash-retention when it starts, logging each removal, and keeps the
// rest; a negative retention is a usage error.
func TestServeTrashRetention(t *testing.T) {
	dir := t.TempDir()
	stamp := func(age time.Duration) string { return time.Now().Add(-age).UTC().Format("20060102T150405.000000000Z") }
	old := filepath.Join(dir, ".trash", "assistant", "alice", stamp(3*24*time.Hour))
	recent := filepath.Join(dir, ".trash", "assistant", "bob", stamp(time.Hour))
	for _, p := range []string{old, recent} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errb := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--config", "../../../configs/serve.yaml", "--data-dir", dir, "--trash-retention", "48h"}, out, errb)
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "listening on") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d: %q %q", code, out.String(), errb.String())
	}
	if _, err := os.Stat(old); err == nil {
		t.Error("the conversation deleted 3 days ago is still in the trash")
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("the conversation deleted an hour ago: %v", err)
	}
	if !strings.Contains(errb.String(), "removed a deleted conversation from the trash") || !strings.Contains(errb.String(), filepath.Base(old)) {
		t.Errorf("the removal was not logged: %q", errb.String())
	}

	r := lllm(t, "serve", "--config", "../../../configs/serve.yaml", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--trash-retention=-1h")
	wantError(t, r, ExitUsage, "--trash-retention -1h0m0s is negative")
}
