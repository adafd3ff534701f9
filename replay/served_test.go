package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/server"
	"github.com/lllm-go/lllm/tactics"
)

// servedRuns are the run logs of a conversation of configs/serve.yaml on
// the mock provider, by what each did.
type servedRuns struct {
	root                      string
	hello, ask, recall, guest *logs.Run
	compact                   *logs.Run
	// store is the conversation's data dir: the replays must not need it.
	store string
}

// newService is a Service of the serve config configFile, its
// conversations in dataDir and its run logs under logRoot.
func newService(t *testing.T, configFile, dataDir, logRoot string) *conversation.Service {
	t.Helper()
	cfg, err := server.LoadConfig(context.Background(), configFile)
	if err != nil {
		t.Fatal(err)
	}
	store, err := conversation.Open(dataDir, conversation.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	svc, err := conversation.NewService(store, cfg.Agents, conversation.ServiceOptions{AskTimeout: 10 * time.Second, Tokens: cfg.Tokens, LogDir: logRoot})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// serve records, through a Service, a turn answered in one call, a turn
// that asks the user (answered "blue"), a turn that calls recall after a
// compaction, a guest's turn and a compaction, each in a run log of its
// own under root.
func serve(t *testing.T) *servedRuns {
	t.Helper()
	sr := &servedRuns{root: filepath.Join(t.TempDir(), "runs"), store: t.TempDir()}
	svc := newService(t, filepath.Join("..", "configs", "serve.yaml"), sr.store, sr.root)
	latest := func() *logs.Run {
		t.Helper()
		run, err := logs.Open(sr.root, "latest")
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	turn := func(req conversation.RunRequest, answer string) *logs.Run {
		t.Helper()
		req.Agent, req.Sender = "assistant", "alice"
		emit := func(ev conversation.Event) error {
			if ev.Type == "ask" {
				go func() {
					if err := svc.Reply("assistant", "alice", answer); err != nil {
						t.Error(err)
					}
				}()
			}
			return nil
		}
		if _, err := svc.Run(context.Background(), req, emit); err != nil {
			t.Fatal(err)
		}
		return latest()
	}
	sr.hello = turn(conversation.RunRequest{Content: "hello there", CWD: "/src"}, "")
	sr.ask = turn(conversation.RunRequest{Content: "ask me about colours"}, "blue")
	if _, err := svc.Compact(context.Background(), "assistant", "alice"); err != nil {
		t.Fatal(err)
	}
	sr.compact = latest()
	sr.recall = turn(conversation.RunRequest{Content: "do you remember my colour?"}, "")
	sr.guest = turn(conversation.RunRequest{Content: "critic, what do you think?", Guest: "critic"}, "")
	return sr
}

// servedContent is content without the records' seq, the run_start, whose config a replay
// records resolved, and the tactic_start and tactic_end records a replay's
// tactic writes and a served run has none of.
func servedContent(t *testing.T, dir string) []string {
	t.Helper()
	seq := regexp.MustCompile(`^\{"seq":[0-9]+,`)
	var out []string
	for _, l := range content(t, dir) {
		if !strings.Contains(l, `"kind":"run_start"`) && !strings.Contains(l, `"kind":"tactic_`) {
			out = append(out, seq.ReplaceAllString(l, "{"))
		}
	}
	return out
}

// recorded is the run's result as its log's run_end holds it.
func recorded(t *testing.T, run *logs.Run) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(run.Summary().End.Result, &s); err != nil {
		t.Fatalf("run %s: result %s: %v", run.ID, run.Summary().End.Result, err)
	}
	return s
}

// toolResults are the tool calls of a run's log, as name: result.
func toolResults(t *testing.T, run *logs.Run) []string {
	t.Helper()
	var out []string
	for _, c := range mustLoad(t, run).ToolCalls() {
		r := c.Result
		if c.Error != "" {
			r = "error: " + c.Error
		}
		out = append(out, c.Name+": "+r)
	}
	return out
}

// checkServedReplay checks that rep, a replay of the served run, ended
// with the run's result and made its tool calls with the same results,
// and returns the replay's run.
func checkServedReplay(t *testing.T, run *logs.Run, rep *replay.Report) *logs.Run {
	t.Helper()
	var got string
	if err := json.Unmarshal(rep.Run.Result, &got); err != nil || got != recorded(t, run) {
		t.Fatalf("result %s (%v), recorded %q", rep.Run.Result, err, recorded(t, run))
	}
	again, err := logs.Open(rep.Run.Dir, rep.Run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := strings.Join(toolResults(t, again), "\n"), strings.Join(toolResults(t, run), "\n"); a != b {
		t.Fatalf("the replay's tool calls:\n%s\nrecorded:\n%s", a, b)
	}
	return again
}

// Each served run, a turn with or without tools, a guest's and a
// compaction, replays from its log alone: no divergence, every recorded
// call served, the same result, and the tools' results as recorded (the
// user is not asked again; recall does not read today's archives). The
// conversation's data dir is gone by then.
func TestReplayServedRuns(t *testing.T) {
	sr := serve(t)
	if err := os.RemoveAll(sr.store); err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]*logs.Run{"hello": sr.hello, "ask": sr.ask, "recall": sr.recall, "guest": sr.guest, "compact": sr.compact} {
		t.Run(name, func(t *testing.T) {
			rep := replayRun(t, run, replay.Options{LogDir: t.TempDir()})
			if rep.Divergence != nil {
				t.Fatalf("diverged: %v\n%s", rep.Divergence, rep.Divergence.Diff)
			}
			if rep.Run.Status != logs.StatusOK || rep.Calls != rep.Recorded || rep.Calls == 0 {
				t.Fatalf("status %s (%s), served %d of %d calls", rep.Run.Status, rep.Run.Error, rep.Calls, rep.Recorded)
			}
			again := checkServedReplay(t, run, rep)
			if again.Start.Labels[replay.LabelReplayOf] != run.ID {
				t.Fatalf("labels %v", again.Start.Labels)
			}
			// Record for record, the replay did what the served run did:
			// its dialogs, calls, tool calls and context managers; its
			// tactic's own records aside.
			if a, b := servedContent(t, again.Dir), servedContent(t, run.Dir); strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Fatalf("the replay's log:\n%s\nrecorded:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
			}
		})
	}
	// What each run did, so that the replays above covered it.
	if got := strings.Join(toolResults(t, sr.ask), "\n"); !strings.Contains(got, "ask_user: ") || !strings.Contains(got, "The user answered: blue") {
		t.Errorf("the ask turn's tool calls: %s", got)
	}
	if got := strings.Join(toolResults(t, sr.recall), "\n"); !strings.Contains(got, "recall: ") || !strings.Contains(got, "the conversation has 1 archives") {
		t.Errorf("the recall turn's tool calls: %s", got)
	}
	if sr.guest.Start.Labels[conversation.LabelAgent] != "critic" || sr.compact.Start.Tactic != conversation.CompactTactic {
		t.Errorf("guest labels %v, compaction tactic %q", sr.guest.Start.Labels, sr.compact.Start.Tactic)
	}
}

// A replay of a replay of a served turn replays too, with the same
// result.
func TestReplayServedTurnTwice(t *testing.T) {
	sr := serve(t)
	root := t.TempDir()
	first := replayRun(t, sr.ask, replay.Options{LogDir: root})
	run, err := logs.Open(root, first.Run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	second := replayRun(t, run, replay.Options{LogDir: root})
	if second.Divergence != nil || second.Run.Status != logs.StatusOK || string(second.Run.Result) != string(first.Run.Result) {
		t.Fatalf("second replay: %v, %s, result %s (first %s)", second.Divergence, second.Run.Status, second.Run.Result, first.Run.Result)
	}
}

// Under --run-tools the conversation tools are still served from the
// log: a turn that asked the user replays without asking anyone (there is
// no one to ask, nor a service), with the recorded answer, and so does one
// that called recall, whose archives the replay does not have.
func TestReplayServedTurnWithRunTools(t *testing.T) {
	sr := serve(t)
	if err := os.RemoveAll(sr.store); err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]*logs.Run{"ask": sr.ask, "recall": sr.recall} {
		t.Run(name, func(t *testing.T) {
			rep := replayRun(t, run, replay.Options{LogDir: t.TempDir(), RunTools: true})
			if rep.Divergence != nil || rep.Run.Status != logs.StatusOK || rep.Calls != rep.Recorded {
				t.Fatalf("divergence %v, status %s (%s), served %d of %d calls", rep.Divergence, rep.Run.Status, rep.Run.Error, rep.Calls, rep.Recorded)
			}
			if rep.Tools != 1 || rep.ToolsRun != 0 {
				t.Errorf("tools %d served, %d run; want the conversation tool served", rep.Tools, rep.ToolsRun)
			}
			checkServedReplay(t, run, rep)
		})
	}
}

// With --set, a served turn diverges where the change takes effect: a new
// system prompt at the first call of the primary, with the prompt in the
// diff; new sampling params at a guest's first call; a compaction's
// summary prompt at its call.
func TestReplayServedRunsWithSet(t *testing.T) {
	sr := serve(t)
	for _, c := range []struct {
		name string
		run  *logs.Run
		set  string
		want []string
	}{
		{"system prompt", sr.ask, "agent_configs.assistant.system_prompt=You are terse.", []string{"-You are a helpful assistant talking with alice.", "+You are terse."}},
		{"temperature", sr.guest, "agent_configs.critic.model_args.temperature=0.5", []string{`+params: {"temperature":0.5}`}},
		{"summary prompt", sr.compact, "agent_configs.assistant.system_prompt=Summarise {agent} briefly.", []string{"+Summarise assistant briefly."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := replayRun(t, c.run, replay.Options{LogDir: t.TempDir(), Set: []string{c.set}})
			d := rep.Divergence
			if d == nil {
				t.Fatalf("no divergence (status %s)", rep.Run.Status)
			}
			agent := c.run.Start.Labels[conversation.LabelAgent]
			alias := "conversation"
			if c.run.Start.Tactic == conversation.CompactTactic {
				alias = "compact"
			}
			if d.Agent != agent || d.Dialog != alias || d.Turn != 1 || d.Reason != "the request differs from the recorded one" {
				t.Fatalf("diverged at %+v: %s", d.Position, d.Reason)
			}
			for _, w := range c.want {
				if !strings.Contains(d.Diff, w) {
					t.Errorf("the diff lacks %q:\n%s", w, d.Diff)
				}
			}
			if rep.Run.Status != logs.StatusCancelled {
				t.Errorf("the replay's run ended %s", rep.Run.Status)
			}
		})
	}
}

// A change that takes effect after the user's answer diverges there: with
// the tools withdrawn after one round gone (two rounds allowed), the
// recorded second call (the final prompt) is not the one the replay
// sends.
func TestReplayServedTurnDivergesAfterTheAnswer(t *testing.T) {
	sr := serve(t)
	rep := replayRun(t, sr.ask, replay.Options{LogDir: t.TempDir(), Set: []string{"agent_configs.assistant.max_interrupt_steps=2"}})
	d := rep.Divergence
	if d == nil || d.Turn != 2 || d.Agent != "assistant" {
		t.Fatalf("divergence %v", d)
	}
	// The first call was served, and its ask_user answered from the log.
	if rep.Calls != 1 {
		t.Fatalf("served %d calls, want 1", rep.Calls)
	}
	if !strings.Contains(d.Diff, "The user answered: blue") {
		t.Errorf("the diff does not show the recorded answer in both requests:\n%s", d.Diff)
	}
}

// A served run logged before runs recorded params.history is refused,
// saying why, and so is a served run this binary lacks the tactic of.
func TestReplayOldServedRunRefused(t *testing.T) {
	sr := serve(t)
	var cfg map[string]any
	if err := json.Unmarshal(sr.hello.Start.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	delete(cfg["params"].(map[string]any), "history")
	rec := mustLoad(t, sr.hello)
	rec.Start.Config, _ = json.Marshal(cfg)
	_, err := replay.Run(t.Context(), rec, replay.Options{LogDir: t.TempDir()})
	if err == nil {
		t.Fatal("an old served run was replayed")
	}
	for _, want := range []string{"lllm serve", "assistant/alice", "params.history", "cannot run a served turn or compaction of that age again", "lllm show, tree and diff read its log"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}
	if runs, _ := logs.List(filepath.Dir(sr.hello.Dir)); len(runs) != 5 {
		t.Errorf("%d runs after a refused replay, want the 5 recorded", len(runs))
	}
}

// Without a recording in its context, the served tactics refuse to run:
// lllm run cannot start a served turn.
func TestServedTacticNeedsARecording(t *testing.T) {
	sr := serve(t)
	rec := mustLoad(t, sr.hello)
	cfg, err := replay.Config(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	var task string
	if err := json.Unmarshal(rec.Start.Task, &task); err != nil {
		t.Fatal(err)
	}
	res, err := tactics.Run(t.Context(), cfg, task, tactics.RunOptions{LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != logs.StatusFailed || !strings.Contains(res.Error, "lllm replay RUN") {
		t.Fatalf("status %s, error %q", res.Status, res.Error)
	}
	if res.Totals.ModelCalls != 0 {
		t.Fatalf("%d model calls", res.Totals.ModelCalls)
	}
}

// A served agent whose system prompt is a prompt file with a tool of its
// own, shaped by a window context manager, replays with the prompt file,
// its tool (run again) and the manager, as it ran, from the prompt file's
// text in its log: the file changed or gone since changes nothing, unless
// --set prompts_dir asks for the folder, where the changed file makes the
// replay diverge at once.
func TestReplayServedTurnWithAPromptFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("prompts/helper.md", "---\ntools: [calculator]\n---\nYou help {sender} with sums.\n")
	write("serve.yaml", `tactic_type: serve
global:
  model_name: mock/serve
agent_configs:
  - name: assistant
    system_prompt_path: helper
    context_manager: {type: window, n: 3}
mock:
  rules:
    - match: "sum"
      reply:
        tool_calls:
          - name: calculator
            arguments: {expression: "2 + 3"}
`)
	root := t.TempDir()
	svc := newService(t, filepath.Join(dir, "serve.yaml"), t.TempDir(), root)
	for _, text := range []string{"hello", "what is the sum of 2 and 3?"} {
		if _, err := svc.Run(context.Background(), conversation.RunRequest{Agent: "assistant", Sender: "alice", Content: text}, nil); err != nil {
			t.Fatal(err)
		}
	}
	run, err := logs.Open(root, "latest")
	if err != nil {
		t.Fatal(err)
	}
	tools := strings.Join(toolResults(t, run), "\n")
	if !strings.Contains(tools, "calculator: ") || !strings.Contains(tools, "5") {
		t.Fatalf("the recorded turn's tool calls: %s", tools)
	}
	rep := replayRun(t, run, replay.Options{LogDir: t.TempDir()})
	if rep.Divergence != nil || rep.Run.Status != logs.StatusOK || rep.Calls != rep.Recorded || rep.Calls != 2 {
		t.Fatalf("divergence %v, status %s (%s), %d of %d calls", rep.Divergence, rep.Run.Status, rep.Run.Error, rep.Calls, rep.Recorded)
	}
	again, err := logs.Open(rep.Run.Dir, rep.Run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := servedContent(t, again.Dir), servedContent(t, run.Dir); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("the replay's log:\n%s\nrecorded:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	if got := strings.Join(servedContent(t, run.Dir), "\n"); !strings.Contains(got, `"manager":"window"`) || !strings.Contains(got, `"action":"window"`) {
		t.Errorf("the window manager did not cut the recorded turn, which then tests less:\n%s", got)
	}

	write("prompts/helper.md", "---\ntools: [calculator]\n---\nYou help {sender} with products.\n")
	rep = replayRun(t, run, replay.Options{LogDir: t.TempDir()})
	if rep.Divergence != nil || rep.Calls != 2 {
		t.Fatalf("after the prompt file changed: divergence %v, %d calls", rep.Divergence, rep.Calls)
	}
	rep = replayRun(t, run, replay.Options{LogDir: t.TempDir(), Set: []string{"prompts_dir=" + filepath.Join(dir, "prompts")}})
	if d := rep.Divergence; d == nil || d.Turn != 1 || !strings.Contains(d.Diff, "+You help alice with products.") {
		t.Fatalf("divergence %v", d)
	}
	if err := os.RemoveAll(filepath.Join(dir, "prompts")); err != nil {
		t.Fatal(err)
	}
	rep = replayRun(t, run, replay.Options{LogDir: t.TempDir()})
	if rep.Divergence != nil || rep.Calls != 2 || rep.Run.Status != logs.StatusOK {
		t.Fatalf("without the prompts folder: divergence %v, %d calls, %s %s", rep.Divergence, rep.Calls, rep.Run.Status, rep.Run.Error)
	}
}

// killedTurn records, through a Service, a turn of the assistant killed
// while it waits for the user's answer to ask_user: its log holds the
// one model call, the ask_user call that failed "killed", and a
// cancelled run_end.
func killedTurn(t *testing.T) *logs.Run {
	t.Helper()
	root := filepath.Join(t.TempDir(), "runs")
	svc := newService(t, filepath.Join("..", "configs", "serve.yaml"), t.TempDir(), root)
	emit := func(ev conversation.Event) error {
		if ev.Type == "ask" {
			go func() {
				if err := svc.Kill("assistant", "alice"); err != nil {
					t.Error(err)
				}
			}()
		}
		return nil
	}
	if _, err := svc.Run(context.Background(), conversation.RunRequest{Agent: "assistant", Sender: "alice", Content: "ask me about colours"}, emit); !errors.Is(err, conversation.ErrKilled) {
		t.Fatalf("the turn was not killed: %v", err)
	}
	run, err := logs.Open(root, "latest")
	if err != nil {
		t.Fatal(err)
	}
	if s := run.Summary().Status(); s != logs.StatusCancelled {
		t.Fatalf("the killed turn ended %s", s)
	}
	return run
}

// A turn killed while it waited for the user replays up to where it was
// killed, every recorded call matched; going on from there is not a
// divergence but the end of the recording, and the report says so. A
// replay that differs before the end still diverges.
func TestReplayKilledServedTurn(t *testing.T) {
	run := killedTurn(t)
	rep, err := replay.Run(t.Context(), mustLoad(t, run), replay.Options{LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Divergence
	want := `replay reached the end of the recording at agent assistant, dialog "conversation", call 2: ` +
		"the recorded run stopped before this call: it was cancelled (conversation assistant/alice: run killed); " +
		"the replay matched its 1 recorded model call up to there"
	if d == nil || !d.CutShort || d.Error() != want || d.Diff != "" || rep.Calls != 1 || rep.Recorded != 1 {
		t.Fatalf("replay of a killed turn: %+v, calls %d/%d\nwant %s", d, rep.Calls, rep.Recorded, want)
	}
	if strings.Contains(rep.Run.Error, "diverged") || !strings.Contains(rep.Run.Error, "reached the end of the recording") {
		t.Errorf("the replay's run ends with %q", rep.Run.Error)
	}

	rep, err = replay.Run(t.Context(), mustLoad(t, run), replay.Options{LogDir: t.TempDir(), Set: []string{"agent_configs.assistant.system_prompt=You are terse."}})
	if err != nil {
		t.Fatal(err)
	}
	if d := rep.Divergence; d == nil || d.CutShort || !strings.HasPrefix(d.Error(), `replay diverged at agent assistant, dialog "conversation", call 1: the request differs`) {
		t.Errorf("a changed replay of a killed turn: %v", d)
	}
}
