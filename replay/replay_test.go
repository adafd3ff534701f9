package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
	_ "github.com/lllm-go/lllm/tactics/builtin"
)

// record runs the config file on task into root and returns its run.
func record(t *testing.T, root, file, task string, sets ...string) *logs.Run {
	t.Helper()
	run, _ := runOK(t, configFile(t, file, sets...), root, task)
	return run
}

// recordYAML writes text as the config file path, runs it on task into a
// new log root, and returns its run and result.
func recordYAML(t *testing.T, path, text, task string) (*logs.Run, *tactics.Result) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return runOK(t, cfg, t.TempDir(), task)
}

// runOK runs cfg on task into root, which must end ok.
func runOK(t *testing.T, cfg *config.Config, root, task string) (*logs.Run, *tactics.Result) {
	t.Helper()
	res, err := tactics.Run(t.Context(), cfg, task, tactics.RunOptions{LogDir: root, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != logs.StatusOK {
		t.Fatalf("%s: %s %s", cfg.Path, res.Status, res.Error)
	}
	run, err := logs.Open(root, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return run, res
}

func replayRun(t *testing.T, run *logs.Run, opts replay.Options) *replay.Report {
	t.Helper()
	rep, err := replay.Run(t.Context(), mustLoad(t, run), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// Every built-in tactic's run replays with no divergence, and replaying
// the replay gives the same log content.
func TestReplayBuiltins(t *testing.T) {
	cases := []struct{ file, task string }{
		{"quickstart.yaml", "Name a prime number above 10."},
		{"chat.yaml", "Capital of France?"},
		{"best_of_n.yaml", "Name a prime number above 10."},
		{"debate.yaml", "Is 0.999... equal to 1?"},
		{"self_refine.yaml", "Write a haiku about autumn."},
		{"react.yaml", "What is 17 * 23?"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			root := t.TempDir()
			run := record(t, root, c.file, c.task)
			rep := replayRun(t, run, replay.Options{})
			if rep.Divergence != nil {
				t.Fatalf("replay of %s diverged: %v\n%s", c.file, rep.Divergence, rep.Divergence.Diff)
			}
			if rep.Run.Status != logs.StatusOK || rep.Calls != rep.Recorded || rep.Calls == 0 {
				t.Fatalf("replay: status %s (%s), %d of %d calls", rep.Run.Status, rep.Run.Error, rep.Calls, rep.Recorded)
			}
			again := rep.Log
			if opened, err := logs.Open(root, rep.Run.RunID); err != nil || again == nil || again.ID != opened.ID || again.Dir != opened.Dir || !reflect.DeepEqual(again.Start, opened.Start) {
				t.Fatalf("the report's replay run is %+v; Open gives %+v, %v", again, opened, err)
			}
			if again.Start.Labels[replay.LabelReplayOf] != run.ID {
				t.Fatalf("labels %v", again.Start.Labels)
			}
			rep2 := replayRun(t, again, replay.Options{})
			if rep2.Divergence != nil {
				t.Fatalf("replay of the replay diverged: %v", rep2.Divergence)
			}
			a, b, orig := content(t, again.Dir), content(t, rep2.Run.Dir), content(t, run.Dir)
			if strings.Join(a, "\n") != strings.Join(b, "\n") {
				t.Fatalf("replaying a replay changed the log:\n%s\n----\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
			}
			if strings.Join(a, "\n") != strings.Join(orig, "\n") {
				t.Fatalf("the replay's log differs from the original's:\n%s\n----\n%s", strings.Join(orig, "\n"), strings.Join(a, "\n"))
			}
		})
	}
}

// A changed prompt shows where it first takes effect: the first call
// whose request contains it, with a diff naming the old and new text.
func TestReplayWithChangedPrompt(t *testing.T) {
	root := t.TempDir()
	run := record(t, root, "debate.yaml", "Is 0.999... equal to 1?")
	cfg, _ := replay.Config(mustLoad(t, run), nil)
	judge := -1
	for i, ac := range cfg.Agents {
		if ac.Name == "judge" {
			judge = i
		}
	}
	if judge < 0 {
		t.Fatal("debate.yaml has no judge")
	}
	rep := replayRun(t, run, replay.Options{Set: []string{"agent_configs.judge.system_prompt=You are a lenient judge."}})
	d := rep.Divergence
	if d == nil {
		t.Fatal("no divergence after changing the judge's prompt")
	}
	if d.Agent != "judge" || d.Turn != 1 || d.Attempt != 1 || d.Recorded == nil {
		t.Fatalf("divergence at %+v, want the judge's first call", d.Position)
	}
	if !strings.Contains(d.Diff, "+You are a lenient judge.") || !strings.Contains(d.Diff, "-"+cfg.Agents[judge].SystemPrompt) {
		t.Fatalf("diff does not show the prompt change:\n%s", d.Diff)
	}
	// Every call before the judge's was served from the recording.
	if rep.Calls == 0 || rep.Run.Status != logs.StatusCancelled {
		t.Fatalf("%d calls served, status %s", rep.Calls, rep.Run.Status)
	}
	if !strings.Contains(rep.Run.Error, "replay diverged at agent judge") {
		t.Fatalf("the replay's log does not say why it stopped: %q", rep.Run.Error)
	}
}

// A model parameter changed with --set diverges at the first call of the
// agent it applies to, and the diff shows the params line.
func TestReplayWithChangedParams(t *testing.T) {
	root := t.TempDir()
	run := record(t, root, "chat.yaml", "Capital of France?")
	rep := replayRun(t, run, replay.Options{Set: []string{"global.model_args.temperature=0.55"}})
	d := rep.Divergence
	if d == nil || d.Turn != 1 || !strings.Contains(d.Diff, `+params: {`) || !strings.Contains(d.Diff, `0.55`) {
		t.Fatalf("divergence %v\n%v", d, d)
	}
}

// Runs that cannot be replayed say why, and write nothing.
func TestReplayBadRuns(t *testing.T) {
	root := t.TempDir()
	run := record(t, root, "chat.yaml", "Capital of France?")
	path := run.Path()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")

	write := func(name string, lines []string) *logs.Run {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, logs.EventsFile), []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := logs.Open(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	edit := func(line, old, new string) string { return strings.Replace(line, old, new, 1) }

	noConfig := write("noconfig", append([]string{regexp.MustCompile(`"config":\{.*?\},"task"`).ReplaceAllString(lines[0], `"task"`)}, lines[1:]...))
	unknown := write("unknown", append([]string{strings.ReplaceAll(lines[0], `"chat"`, `"mytactic"`)}, lines[1:]...))
	version := fmt.Sprintf("%d.%d", logs.VersionMajor, logs.VersionMinor)
	old := make([]string, len(lines))
	for i, l := range lines {
		old[i] = regexp.MustCompile(`"alias":"[^"]*","turn":\d+,`).ReplaceAllString(edit(l, `"version":"`+version+`"`, `"version":"1.0"`), "")
	}
	oldFormat := write("oldformat", old)

	before, _ := logs.List(root)
	for name, c := range map[string]struct {
		run  *logs.Run
		want string
	}{
		"no config":  {noConfig, "records no config"},
		"unknown":    {unknown, `used tactic "mytactic", which this binary does not register`},
		"format 1.0": {oldFormat, "format 1.0"},
	} {
		rec, err := replay.Load(t.Context(), c.run)
		if err == nil {
			_, err = replay.Run(t.Context(), rec, replay.Options{})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", name, err, c.want)
		}
	}
	if after, _ := logs.List(root); len(after) != len(before) {
		t.Fatalf("failed replays wrote runs: %d before, %d after", len(before), len(after))
	}

	// A torn last line (a crash) is tolerated; the replay then makes calls
	// the recording cut short, and says so.
	cut := strings.Join(lines[:len(lines)-1], "")
	last := lines[len(lines)-1]
	torn := write("torn", strings.SplitAfter(cut+last[:len(last)/2], "\n"))
	rec := mustLoad(t, torn)
	if len(rec.Warnings) == 0 {
		t.Fatal("no warning for the torn line")
	}
	rep, err := replay.Run(t.Context(), rec, replay.Options{})
	if err != nil || rep.Divergence != nil {
		t.Fatalf("replay of a run torn after its last call: %v %v", err, rep.Divergence)
	}
}

// Recorded failures replay as the same errors, so the agent retries again,
// but without waiting its backoff.
func TestReplayRetriesWithoutWaiting(t *testing.T) {
	cfg, err := config.Parse("retry.yaml", []byte(`
tactic_type: chat
global: {model_name: mock/demo}
agent_configs:
  - {name: assistant, system_prompt: You answer.}
mock:
  replies: [{error: rate_limit}, {error: server}, {text: "Paris."}]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	noWait := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	res, err := tactics.Run(t.Context(), cfg, "Capital of France?", tactics.RunOptions{LogDir: root, Sleep: noWait})
	if err != nil || res.Status != logs.StatusOK || res.Totals.ModelCalls != 3 {
		t.Fatalf("recording: %v %+v", err, res)
	}
	run, err := logs.Open(root, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep := replayRun(t, run, replay.Options{})
	// The agent's first backoff alone is at least half a second.
	if took := time.Since(start); rep.Divergence != nil || rep.Calls != 3 || string(rep.Run.Result) != `"Paris."` || took >= 500*time.Millisecond {
		t.Fatalf("replay: %v, %d calls, result %s, took %v", rep.Divergence, rep.Calls, rep.Run.Result, took)
	}
}

// A run whose context manager cut its dialogs, replayed with a different
// cut, diverges at the first call cut differently; the diff compares the
// dialogs before the manager on both sides, so it shows only the cut.
func TestReplayDiffWithContextManager(t *testing.T) {
	root := t.TempDir()
	run := record(t, root, "self_refine.yaml", "Write a haiku about the sea.",
		"global.context_manager.type=window", "global.context_manager.n=2")
	rep := replayRun(t, run, replay.Options{Set: []string{"global.context_manager.n=3"}})
	d := rep.Divergence
	if d == nil {
		t.Fatal("no divergence after changing the window")
	}
	if d.Agent != "solver" || d.Turn != 2 {
		t.Fatalf("divergence at %+v, want the solver's second call, the first the window cuts", d.Position)
	}
	for _, want := range []string{"\n-context manager: window (window), 4 -> 3 messages\n", "\n+context manager: window (none), 4 -> 4 messages\n"} {
		if !strings.Contains(d.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, d.Diff)
		}
	}
	changed := 0
	for _, l := range strings.Split(d.Diff, "\n") {
		if strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+") {
			changed++
		}
	}
	if changed != 4 { // two headers, two lines
		t.Errorf("diff shows more than the cut:\n%s", d.Diff)
	}
}
