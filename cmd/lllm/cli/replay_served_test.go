package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/server"
)

// servedService is a Service of configs/serve.yaml on a store of its
// own, writing its run logs under root.
func servedService(t *testing.T, root string) *conversation.Service {
	t.Helper()
	cfg, err := server.LoadConfig(context.Background(), "../../../configs/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	store, err := conversation.Open(t.TempDir(), conversation.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	svc, err := conversation.NewService(store, cfg.Agents, conversation.ServiceOptions{AskTimeout: 10 * time.Second, Tokens: cfg.Tokens, LogDir: root})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// serveForReplay runs, through the Service of configs/serve.yaml, a turn
// of the assistant that asks the user (answered "blue"), a guest's turn
// and a compaction, with run logs under the returned root, and returns
// their run directories in that order.
func serveForReplay(t *testing.T) (root string, runs []string) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "runs")
	svc := servedService(t, root)
	latest := func() string {
		t.Helper()
		run, err := logs.Open(root, "latest")
		if err != nil {
			t.Fatal(err)
		}
		return run.Dir
	}
	answer := func(ev conversation.Event) error {
		if ev.Type == "ask" {
			go func() { _ = svc.Reply("assistant", "alice", "blue") }()
		}
		return nil
	}
	for _, req := range []conversation.RunRequest{
		{Agent: "assistant", Sender: "alice", Content: "ask me about colours"},
		{Agent: "assistant", Sender: "alice", Content: "critic, is that right?", Guest: "critic"},
	} {
		if _, err := svc.Run(context.Background(), req, answer); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, latest())
	}
	if _, err := svc.Compact(context.Background(), "assistant", "alice"); err != nil {
		t.Fatal(err)
	}
	return root, append(runs, latest())
}

// replayOutput is what lllm replay -o json prints, as far as these tests
// read it.
type replayOutput struct {
	Status     logs.Status     `json:"status"`
	ReplayOf   string          `json:"replay_of"`
	Calls      int             `json:"calls"`
	Recorded   int             `json:"recorded"`
	Result     json.RawMessage `json:"result"`
	Divergence *struct {
		Agent  string `json:"agent"`
		Dialog string `json:"dialog"`
		Call   int    `json:"call"`
		Diff   string `json:"diff"`
	} `json:"divergence"`
}

func replayJSONOf(t *testing.T, r result) replayOutput {
	t.Helper()
	var out replayOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("lllm replay -o json: %v\n%v", err, r)
	}
	return out
}

// lllm replay DIR re-executes a served turn that asked the user, a
// guest's turn and a compaction from their logs: exit 0, every recorded
// call served, the recorded result.
func TestReplayServedRunsCLI(t *testing.T) {
	_, runs := serveForReplay(t)
	for i, dir := range runs {
		r := lllm(t, "replay", dir, "-o", "json", "--log-dir", t.TempDir())
		if r.code != 0 {
			t.Fatalf("run %d: %v", i, r)
		}
		out := replayJSONOf(t, r)
		run, err := logs.Open(dir, dir)
		if err != nil {
			t.Fatal(err)
		}
		end := run.Summary().End
		if out.Status != logs.StatusOK || out.Divergence != nil || out.Calls != out.Recorded || out.Calls != end.Totals.ModelCalls ||
			out.ReplayOf != run.ID || string(out.Result) != string(end.Result) {
			t.Fatalf("run %d (%s): replay %+v, recorded result %s", i, run.Start.Tactic, out, end.Result)
		}
	}
}

// lllm replay DIR --set with a new system prompt stops at the first call
// of the turn, exit 1, with the prompt in the diff.
func TestReplayServedTurnWithSetCLI(t *testing.T) {
	_, runs := serveForReplay(t)
	r := lllm(t, "replay", runs[0], "-o", "json", "--log-dir", t.TempDir(),
		"--set", "agent_configs.assistant.system_prompt=You are curt with {sender}.")
	if r.code != ExitError {
		t.Fatalf("exit %d, want %d\n%v", r.code, ExitError, r)
	}
	d := replayJSONOf(t, r).Divergence
	if d == nil || d.Agent != "assistant" || d.Dialog != "conversation" || d.Call != 1 || !strings.Contains(d.Diff, "+You are curt with alice.") {
		t.Fatalf("divergence %+v", d)
	}
}

// lllm replay of a served turn killed while it waited for the user says
// the run was cut short and the replay matched it up to there, not that
// the replay diverged: exit 1, divergence.cut_short in JSON.
func TestReplayKilledServedTurnCLI(t *testing.T) {
	root := filepath.Join(t.TempDir(), "runs")
	svc := servedService(t, root)
	kill := func(ev conversation.Event) error {
		if ev.Type == "ask" {
			go func() { _ = svc.Kill("assistant", "alice") }()
		}
		return nil
	}
	if _, err := svc.Run(context.Background(), conversation.RunRequest{Agent: "assistant", Sender: "alice", Content: "ask me about colours"}, kill); err == nil {
		t.Fatal("the turn was not killed")
	}
	run, err := logs.Open(root, "latest")
	if err != nil {
		t.Fatal(err)
	}
	r := lllm(t, "replay", run.Dir, "--log-dir", t.TempDir())
	if r.code != ExitError || !strings.Contains(r.stderr, "lllm: run "+run.ID+" was cut short, and the replay matched it up to where it stopped") ||
		!strings.Contains(r.stdout, `replay reached the end of the recording at agent assistant, dialog "conversation", call 2`) || strings.Contains(r.stdout+r.stderr, "diverged") {
		t.Errorf("lllm replay of a killed turn:\n%v", r)
	}
	r = lllm(t, "replay", run.Dir, "-o", "json", "--log-dir", t.TempDir())
	var out struct {
		Calls, Recorded int
		Divergence      *struct {
			CutShort bool `json:"cut_short"`
		} `json:"divergence"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != ExitError || out.Divergence == nil || !out.Divergence.CutShort || out.Calls != 1 || out.Recorded != 1 {
		t.Errorf("lllm replay -o json of a killed turn (%v):\n%v", err, r)
	}
}
