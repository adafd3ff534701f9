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
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
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

// serveText serves the serve config text as serveConfigAt does a file,
// its conversations in a temporary directory, an ask_user question
// waiting 10 seconds.
func serveText(t *testing.T, text string) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	ctWrite(t, cfg, text)
	srv, _ := serveConfigAt(t, cfg, filepath.Join(dir, "data"), 10*time.Second)
	return srv
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
	addr := addrOf(srv)
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
	addr := addrOf(srv)
	r := lllm(t, "chat", "nobody", "--addr", addr)
	wantError(t, r, ExitUsage, `unknown agent "nobody"`, "assistant, critic")
	r = lllm(t, "chat")
	wantError(t, r, ExitUsage, "chat needs an AGENT")
	r = lllm(t, "chat", "assistant", "--sender", "../x", "--addr", addr)
	wantError(t, r, ExitUsage, "--sender")
	// Nothing listens on a closed server's address.
	closed := httptest.NewServer(http.NotFoundHandler())
	caddr := addrOf(closed)
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

// lllm serve builds the tokenizer's encoding of every agent's model when
// it starts, so that the first reply after a start does not wait for it
// (a second or two on a slow machine, where later replies take
// milliseconds).
func TestServePreloadsTokenizer(t *testing.T) {
	var (
		mu     sync.Mutex
		models []string
	)
	old := preloadTokens
	preloadTokens = func(model string) {
		mu.Lock()
		defer mu.Unlock()
		models = append(models, model)
	}
	t.Cleanup(func() { preloadTokens = old })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errb := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- Execute(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--config", "../../../configs/serve.yaml", "--data-dir", t.TempDir()}, out, errb)
	}()
	re := regexp.MustCompile(`listening on http://`)
	var preloaded []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		preloaded = slices.Clone(models)
		mu.Unlock()
		if re.MatchString(out.String()) && len(preloaded) == 2 {
			break
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d: %q %q", code, out.String(), errb.String())
	}
	// configs/serve.yaml serves assistant and critic, both on mock/serve.
	if !slices.Equal(preloaded, []string{"mock/serve", "mock/serve"}) {
		t.Fatalf("preloaded %q; want each agent's model, mock/serve twice", preloaded)
	}
}

// servedProcess is an lllm serve process and its address.
type servedProcess struct {
	*crashProc
	url string
}

// startServe starts bin serve on a kernel-chosen loopback port and waits
// for the line that names it.
func startServe(t *testing.T, bin, config, dataDir string) *servedProcess {
	t.Helper()
	p := &servedProcess{crashProc: startCrashLLLM(t, bin, "", "serve", "--addr", "127.0.0.1:0", "--config", config, "--data-dir", dataDir)}
	crashUntil(t, p.crashProc, "lllm serve says where it listens", func() bool {
		m := serveListening.FindStringSubmatch(p.stdout.String())
		if m != nil {
			p.url = m[1]
		}
		return m != nil
	})
	return p
}

// openStream posts content to /v1/stream and returns the response, whose
// body carries the events.
func openStream(t *testing.T, ctx context.Context, url, content string) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"agent": "assistant", "sender": "alice", "content": content})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("stream %q: %s %s", content, resp.Status, b)
	}
	return resp
}

// finishedTurn streams content and returns its events, which must end ok.
func finishedTurn(t *testing.T, url, content string) []conversation.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := openStream(t, ctx, url, content)
	defer resp.Body.Close()
	var evs []conversation.Event
	if err := readEvents(resp.Body, func(ev conversation.Event) bool { evs = append(evs, ev); return true }); err != nil {
		t.Fatal(err)
	}
	if len(evs) < 2 || evs[0].Type != "start" || evs[len(evs)-1].Type != "end" || evs[len(evs)-1].Status != "ok" {
		t.Fatalf("turn %q: events %+v", content, evs)
	}
	return evs
}

func getMessages(t *testing.T, url string) server.MessagesResponse {
	t.Helper()
	resp, err := http.Get(url + "/v1/conversations/assistant/alice/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m server.MessagesResponse
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("messages: %s %s", resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// roles describes stored messages as "role:text" for failure messages
// and comparisons.
func roles(m server.MessagesResponse) []string {
	var out []string
	for _, e := range m.Messages {
		out = append(out, string(e.Message.Role)+":"+e.Message.Text())
	}
	return out
}

// TestServeSIGKILLMidStream kills a real lllm serve process while a reply
// streams, restarts it on the same data dir, and checks that the history
// holds every finished turn and nothing of the unfinished one but the
// sender's message, and that the conversation carries on.
func TestServeSIGKILLMidStream(t *testing.T) {
	bin := buildLLLM(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "serve.yaml")
	// "slow" streams "thinking it over", then waits on ask_user.
	if err := os.WriteFile(config, []byte(cmdConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")

	p := startServe(t, bin, config, dataDir)
	first := finishedTurn(t, p.url, "hello there")
	firstReply := first[len(first)-1].Message.Message.Text()
	if !strings.HasPrefix(firstReply, "mock reply to: hello there") {
		t.Fatalf("first reply %q", firstReply)
	}
	before := getMessages(t, p.url)

	// The slow turn: wait until its text has streamed and the run waits
	// inside ask_user, then SIGKILL the server.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := openStream(t, ctx, p.url, "please go slow")
	defer resp.Body.Close()
	var seen []string
	var partial strings.Builder
	err := readEvents(resp.Body, func(ev conversation.Event) bool {
		seen = append(seen, ev.Type)
		if ev.Type == "text" {
			partial.WriteString(ev.Text)
		}
		return ev.Type != "ask" && ev.Type != "end"
	})
	if err != nil || seen[len(seen)-1] != "ask" || !strings.Contains(partial.String(), "thinking it over") {
		t.Fatalf("slow stream: events %v, text %q, err %v", seen, partial.String(), err)
	}
	if m := getMessages(t, p.url); !m.Running || !m.Pending {
		t.Fatalf("the slow run is not in flight: running %v pending %v", m.Running, m.Pending)
	}
	p.kill(t)
	// The client sees the stream cut short, without an end event.
	var after []string
	_ = readEvents(resp.Body, func(ev conversation.Event) bool { after = append(after, ev.Type); return true })
	if len(after) != 0 {
		t.Fatalf("events after SIGKILL: %v", after)
	}

	// The log on disk never held the partial reply.
	logData, err := os.ReadFile(filepath.Join(dataDir, "assistant", "alice", conversation.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(logData, []byte("thinking it over")) || bytes.Contains(logData, []byte("Shall I go on?")) {
		t.Fatalf("the unfinished reply reached the log:\n%s", logData)
	}

	q := startServe(t, bin, config, dataDir)
	restored := getMessages(t, q.url)
	got := roles(restored)
	want := append(roles(before), "user:please go slow")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("restored history:\n%q\nwant the finished turn and the unanswered message:\n%q", got, want)
	}
	for i, e := range before.Messages {
		r := restored.Messages[i]
		if r.Seq != e.Seq || !r.Time.Equal(e.Time) || r.Message.Name != e.Message.Name {
			t.Errorf("message %d changed across the restart: %+v, was %+v", i, r, e)
		}
	}
	if restored.Running || restored.Pending || restored.Title != "hello there" {
		t.Fatalf("restored summary %+v running %v pending %v", restored.Summary, restored.Running, restored.Pending)
	}
	if w := q.stderr.String(); strings.Contains(w, "torn") || strings.Contains(strings.ToLower(w), "error") {
		t.Errorf("restart complained:\n%s", w)
	}

	// The conversation carries on where it stopped.
	third := finishedTurn(t, q.url, "hello again")
	if r := third[len(third)-1].Message.Message.Text(); !strings.HasPrefix(r, "mock reply to: hello again") {
		t.Fatalf("third reply %q", r)
	}
	final := getMessages(t, q.url)
	got = roles(final)
	if len(got) != 5 || got[3] != "user:hello again" || final.Messages[4].Message.Role != dialog.RoleAssistant {
		t.Fatalf("history after the new turn: %q", got)
	}
	for i := 1; i < len(final.Messages); i++ {
		if final.Messages[i].Seq <= final.Messages[i-1].Seq {
			t.Fatalf("sequence numbers not increasing: %+v", final.Messages)
		}
	}

	// Ctrl-C stops the restarted server cleanly.
	if code := q.signal(t, os.Interrupt); code != 0 {
		t.Fatalf("serve exited %d after an interrupt:\n%s", code, q.stderr.String())
	}
}

// servedRun is one run of lllm runs -o json, as these tests read it.
type servedRun struct {
	ID     string            `json:"run_id"`
	Tactic string            `json:"tactic"`
	Status string            `json:"status"`
	Labels map[string]string `json:"labels"`
	Totals *struct {
		ModelCalls int `json:"model_calls"`
		ToolCalls  int `json:"tool_calls"`
		Cost       struct {
			InputTokens int `json:"input_tokens"`
		} `json:"cost"`
	} `json:"totals"`
}

// servedRuns lists the runs under root with lllm runs -o json.
func servedRuns(t *testing.T, root string) []servedRun {
	t.Helper()
	r := lllm(t, "runs", "--log-dir", root, "-o", "json")
	if r.code != 0 {
		t.Fatalf("lllm runs: %v", r)
	}
	var runs []servedRun
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil {
		t.Fatalf("lllm runs -o json: %v\n%s", err, r.stdout)
	}
	return runs
}

// TestServeWritesRunLogs: lllm serve logs each turn under DATA_DIR/runs
// by default, where lllm runs and lllm tree find it, with the tool call
// the agent made.
func TestServeWritesRunLogs(t *testing.T) {
	data := t.TempDir()
	url, stop := serveInProcess(t, "--config", "../../../configs/serve.yaml", "--data-dir", data)
	// configs/serve.yaml: "remember" makes the assistant call recall.
	code, cout, cerr := chatRun(t, "do you remember?\n", "assistant", "--sender", "alice", "--addr", url)
	if code != 0 || !strings.Contains(cout, "[tool recall") {
		t.Fatalf("chat: %d %q %q", code, cout, cerr)
	}
	root := filepath.Join(data, "runs")
	// Listed while the server still runs: the turn's log is finished.
	runs := servedRuns(t, root)
	if len(runs) != 1 {
		t.Fatalf("%d runs under %s, want 1: %+v", len(runs), root, runs)
	}
	r := runs[0]
	if r.Tactic != "conversation" || r.Status != "ok" || r.Labels["conversation"] != "assistant/alice" || r.Labels["agent"] != "assistant" {
		t.Fatalf("run %+v", r)
	}
	if r.Totals == nil || r.Totals.ModelCalls != 2 || r.Totals.ToolCalls != 1 || r.Totals.Cost.InputTokens == 0 {
		t.Fatalf("totals %+v", r.Totals)
	}
	tree := lllm(t, "tree", r.ID, "--log-dir", root)
	if tree.code != 0 || !strings.Contains(tree.stdout, "owner=assistant alias=conversation#1") {
		t.Fatalf("lllm tree: %v", tree)
	}
	show := lllm(t, "show", r.ID, "--log-dir", root)
	if show.code != 0 || !strings.Contains(show.stdout, "do you remember?") || !strings.Contains(show.stdout, "recall") {
		t.Fatalf("lllm show: %v", show)
	}
	code, out := stop()
	if code != 0 || !strings.Contains(out, "run logs: "+root) {
		t.Fatalf("serve exit %d: %q", code, out)
	}
}

// TestServeRunLogRoots: --log-dir and the config's log_dir choose the
// root, --no-log writes none, and contradictory or empty flags are usage
// errors.
func TestServeRunLogRoots(t *testing.T) {
	dir := t.TempDir()
	cfgLogs := filepath.Join(dir, "from-config")
	cfg := filepath.Join(dir, "serve.yaml")
	body := "tactic_type: serve\nlog_dir: " + cfgLogs + "\nglobal: {model_name: mock/x}\nagent_configs:\n  - {name: a, system_prompt: Hi.}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	turn := func(t *testing.T, args ...string) string {
		t.Helper()
		data := t.TempDir()
		url, stop := serveInProcess(t, append([]string{"--config", cfg, "--data-dir", data}, args...)...)
		if code, cout, cerr := chatRun(t, "hello\n", "a", "--addr", url); code != 0 {
			t.Fatalf("chat: %d %q %q", code, cout, cerr)
		}
		if code, out := stop(); code != 0 {
			t.Fatalf("serve exit %d: %q", code, out)
		}
		return data
	}

	t.Run("config log_dir", func(t *testing.T) {
		data := turn(t)
		if runs := servedRuns(t, cfgLogs); len(runs) != 1 || runs[0].Labels["conversation"] != "a/user" {
			t.Fatalf("runs under the config's log_dir: %+v", runs)
		}
		if _, err := os.Stat(filepath.Join(data, "runs")); !os.IsNotExist(err) {
			t.Fatalf("DATA_DIR/runs exists: %v", err)
		}
	})
	t.Run("--log-dir wins", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "chosen")
		turn(t, "--log-dir", root)
		if runs := servedRuns(t, root); len(runs) != 1 || runs[0].Status != "ok" {
			t.Fatalf("runs under --log-dir: %+v", runs)
		}
	})
	t.Run("--no-log", func(t *testing.T) {
		before := servedRuns(t, cfgLogs)
		data := turn(t, "--no-log")
		if after := servedRuns(t, cfgLogs); len(after) != len(before) {
			t.Fatalf("--no-log wrote a run: %d runs, then %d", len(before), len(after))
		}
		ents, _ := os.ReadDir(data)
		for _, e := range ents {
			if e.Name() == "runs" {
				t.Fatalf("--no-log made %s", filepath.Join(data, "runs"))
			}
		}
	})
	t.Run("help", func(t *testing.T) {
		// The root's --log-dir defaults to ./logs; serve's does not.
		r := lllm(t, "serve", "--help")
		i := strings.Index(r.stdout, "--log-dir DIR")
		line, _, _ := strings.Cut(r.stdout[max(i, 0):], "\n")
		if r.code != 0 || i < 0 || strings.Contains(line, `(default "logs")`) || !strings.Contains(line, "else DATA_DIR/runs") {
			t.Fatalf("serve --help says of --log-dir: %q", line)
		}
	})
	t.Run("usage errors", func(t *testing.T) {
		r := lllm(t, "serve", "--config", cfg, "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-log", "--log-dir", dir)
		wantError(t, r, ExitUsage, "--no-log and --log-dir", "contradict")
		r = lllm(t, "serve", "--config", cfg, "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-dir", "")
		wantError(t, r, ExitUsage, "--log-dir is empty", "--no-log")
	})
	t.Run("an agent named runs", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "serve.yaml")
		body := "tactic_type: serve\nglobal: {model_name: mock/x}\nagent_configs:\n  - {name: runs, system_prompt: Hi.}\n"
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		r := lllm(t, "serve", "--config", cfg, "--addr", "127.0.0.1:0", "--data-dir", t.TempDir())
		wantError(t, r, ExitUsage, `the agent "runs" would share`, "--log-dir DIR")
	})
}
