package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/runtime/provider"
)

// latestRun is the newest run under root.
func latestRun(t *testing.T, root string) *logs.Run {
	t.Helper()
	run, err := logs.Open(root, "latest")
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// replayLatest replays the newest run under root, its own log going to
// a new root.
func replayLatest(t *testing.T, root string, sets ...string) *replay.Report {
	t.Helper()
	rec, err := replay.Load(context.Background(), latestRun(t, root))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(context.Background(), rec, replay.Options{LogDir: t.TempDir(), Set: sets})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// toolCalls are the tool_call records of the run in dir, as JSON lines
// without their latency.
func toolCalls(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, rec := range records(t, dir) {
		if tc := rec.ToolCall; tc != nil {
			tc.LatencyMS = 0
			b, _ := json.Marshal(tc)
			out = append(out, string(b))
		}
	}
	return out
}

// An ask_user question that the user never answered replays with the
// recorded error at once: the replay waits for no one.
func TestReplayOfAnUnansweredAskUser(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		if n == 1 {
			return toolCall("ask_user", map[string]any{"question": "Which whale?"}), nil
		}
		return text("I will guess then"), nil
	}}
	root := t.TempDir()
	const wait = time.Second
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{LogDir: root, AskTimeout: wait})
	// No one answers: the question times out, and the run goes on.
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "tell me about a whale"})
	// The first replay in a process builds the tokenizer's encoding
	// (contextmgr.Preload), 3.4 s once under the race detector: the timed
	// replay is the second.
	replayLatest(t, root)
	start := time.Now()
	rep := replayLatest(t, root)
	if rep.Divergence != nil || rep.Run.Status != logs.StatusOK || rep.Calls != 2 {
		t.Fatalf("divergence %v, status %s (%s), %d calls", rep.Divergence, rep.Run.Status, rep.Run.Error, rep.Calls)
	}
	if took := time.Since(start); took >= wait {
		t.Errorf("the replay took %s: it waited for an answer", took)
	}
	got, want := toolCalls(t, rep.Run.Dir), toolCalls(t, latestRun(t, root).Dir)
	if !slices.Equal(got, want) || len(want) != 1 || !strings.Contains(want[0], "did not answer within 1s") {
		t.Fatalf("the replay's tool calls %q, recorded %q", got, want)
	}
}

// A turn's agent built in Go with a context manager but without its
// settings (AgentSpec.ContextConfig) cannot be replayed as it ran: the
// replay says so, and what to set; with the settings given by --set it
// replays.
func TestReplayNeedsTheContextManagersSettings(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		return text("ok"), nil
	}}
	cm, err := contextmgr.New(map[string]any{"type": "window", "n": 4})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	svc, err := NewService(quietStore(t, t.TempDir()), []*AgentSpec{
		{Name: "assistant", System: prompt(t, "assistant", "You help {sender}."), Model: a, ModelName: "mock/a", Context: cm, ContextName: "window"},
	}, ServiceOptions{LogDir: root})
	if err != nil {
		t.Fatal(err)
	}
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "hello"})
	rep := replayLatest(t, root)
	if rep.Run.Status != logs.StatusFailed || !strings.Contains(rep.Run.Error, "context manager window") ||
		!strings.Contains(rep.Run.Error, "agent_configs.assistant.context_manager") || rep.Calls != 0 {
		t.Fatalf("status %s, error %q, %d calls", rep.Run.Status, rep.Run.Error, rep.Calls)
	}
	rep = replayLatest(t, root, "agent_configs.assistant.context_manager.type=window", "agent_configs.assistant.context_manager.n=4")
	if rep.Divergence != nil || rep.Run.Status != logs.StatusOK {
		t.Fatalf("with the settings: divergence %v, status %s (%s)", rep.Divergence, rep.Run.Status, rep.Run.Error)
	}
}

// params.history is the number of messages the turn's dialog starts with
// after its system prompt: the history, the framing and the new message.
func TestRunLogRecordsTheHistory(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		return text("reply"), nil
	}}
	root := t.TempDir()
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{LogDir: root})
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "one"})
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "two?", Guest: "critic"})
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "three", CWD: "/src"})
	var cfg RecordedConfig
	if err := json.Unmarshal(latestRun(t, root).Start.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	// one, reply, two?, critic's reply, the framing, three.
	reqs := a.requests()
	last := reqs[len(reqs)-1]
	if cfg.Params.History != 6 || len(last) != 7 || last[5].Name != "framing" || last[6].Content != "three" {
		t.Fatalf("params.history %d; the request sent: %d messages", cfg.Params.History, len(last))
	}
}

// A compaction's task counts the conversation's messages it summarises,
// not the questions, answers and notes the summary request shows with
// them; params.history counts those too, as the model got them.
func TestCompactionTaskCountsTheConversationsMessages(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		switch {
		case strings.HasPrefix(req.Messages[len(req.Messages)-1].Content, "Summarise the conversation above"):
			return text("Colours. Blue."), nil
		case n == 1:
			return toolCall("ask_user", map[string]any{"question": "Which colour?"}), nil
		case n == 2:
			return text("Blue it is."), nil
		}
		return nil, &provider.Error{Kind: provider.ErrBadRequest, Err: errors.New("no")}
	}}
	root := t.TempDir()
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{LogDir: root, AskTimeout: 10 * time.Second})
	ev := newEvents()
	go func() {
		<-ev.ask
		if err := svc.Reply("assistant", "alice", "blue"); err != nil {
			t.Error(err)
		}
	}()
	if _, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "pick a colour"}, ev.emit); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "and a number"}, nil); err == nil {
		t.Fatal("the failing turn did not fail")
	}
	arch, err := svc.Compact(context.Background(), "assistant", "alice")
	if err != nil {
		t.Fatal(err)
	}
	run := latestRun(t, root)
	var task string
	_ = json.Unmarshal(run.Start.Task, &task)
	var cfg RecordedConfig
	if err := json.Unmarshal(run.Start.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	// pick a colour, Blue it is., and a number; then the question, the
	// answer and the note on the failed turn.
	if arch.Archived != 3 || task != "Summarise 3 messages of the conversation assistant/alice." || cfg.Params.History != 6 {
		t.Fatalf("archived %d, task %q, params.history %d", arch.Archived, task, cfg.Params.History)
	}
	rep := replayLatest(t, root)
	var summary string
	if rep.Divergence != nil || json.Unmarshal(rep.Run.Result, &summary) != nil || summary != "Colours. Blue." {
		t.Fatalf("replay of the compaction: %v, result %s", rep.Divergence, rep.Run.Result)
	}
}

// Open reads conversations only: not the run logs lllm serve writes to
// DATA_DIR/runs by default, nor the trash or any dot-folder; a
// conversation of an agent named runs, in the same folder as run logs,
// is still read.
func TestOpenSkipsRunLogsAndDotFolders(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	for _, k := range []key{{"assistant", "alice"}, {"assistant", "bob"}, {"runs", "carol"}} {
		c, err := s.Get(k.agent, k.sender)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, c, user("hello from "+k.sender))
	}
	if _, err := s.Delete("assistant", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "runs")
	for range 3 {
		start, err := logs.NewRunStart(context.Background(), RunTactic, nil, "x", 0)
		if err != nil {
			t.Fatal(err)
		}
		w, _, err := logs.Create(root, start, logs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, ".cache", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	found, err := scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []key{{"assistant", "alice"}, {"runs", "carol"}}
	if !slices.Equal(found, want) {
		t.Fatalf("scan found %v, want %v", found, want)
	}
	s2 := quietStore(t, dir)
	var got []string
	for _, sum := range s2.List() {
		got = append(got, sum.Agent+"/"+sum.Sender)
	}
	slices.Sort(got)
	if strings.Join(got, " ") != "assistant/alice runs/carol" || len(s2.Warnings()) != 0 {
		t.Fatalf("conversations %v, warnings %v", got, s2.Warnings())
	}
	// A folder of an agent with a conversation named like a run, but no
	// run logs, is an agent's like any other.
	odd := filepath.Join(dir, "dave", "20261122T063802.354466Z-24572e")
	if err := os.MkdirAll(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	if found, _ := scan(dir); !slices.Contains(found, key{"dave", "20261122T063802.354466Z-24572e"}) {
		t.Fatalf("scan found %v", found)
	}
}
