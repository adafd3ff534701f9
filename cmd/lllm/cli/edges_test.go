package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// wantProblems checks a config error: exit 2, nothing on stdout, every
// stderr line an "lllm: " line, and one line matching each of res.
func wantProblems(t *testing.T, r result, res ...string) {
	t.Helper()
	if r.code != ExitUsage || r.stdout != "" {
		t.Fatalf("want exit 2 and an empty stdout:\n%v", r)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "lllm: ") {
			t.Errorf("stderr line %q does not start with \"lllm: \"", l)
		}
	}
	for _, re := range res {
		if !regexp.MustCompile(re).MatchString(r.stderr) {
			t.Errorf("no stderr line matches %s:\n%s", re, r.stderr)
		}
	}
}

// edgeRuns makes two finished chat runs under a fresh log root.
func edgeRuns(t *testing.T) (cfg, logDir, a, b string) {
	t.Helper()
	cfg, logDir = writeConfig(t, chatConfig)
	return cfg, logDir, runInto(t, cfg, logDir, "Capital of France?"), runInto(t, cfg, logDir, "hi")
}

// openRunLog starts a run log with one dialog and returns its writer,
// flushed, the lock held.
func openRunLog(t *testing.T, root string) (*logs.Writer, *logs.Run) {
	t.Helper()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "slow"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	d := must[*dialog.Dialog](t)(dialog.New("coder", dialog.WithSink(w), dialog.WithAlias("main")))
	must[*dialog.Message](t)(d.PutText("work in progress"))
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return w, run
}

// upperKey returns a key of the JSON value v with an upper-case letter.
func upperKey(v any) string {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if strings.IndexFunc(k, unicode.IsUpper) >= 0 {
				return k
			}
			if k := upperKey(x); k != "" {
				return k
			}
		}
	case []any:
		for _, x := range v {
			if k := upperKey(x); k != "" {
				return k
			}
		}
	}
	return ""
}

// label names a subtest by the arguments that are not paths.
func label(args []string) string {
	var out []string
	for _, a := range args {
		if !strings.ContainsRune(a, os.PathSeparator) && len(a) < 20 {
			out = append(out, a)
		}
	}
	return strings.Join(out, " ")
}

// TestEdgeHelp: every command's --help and help COMMAND give a description, usage and an example.
func TestEdgeHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			path := strings.Fields(sub.CommandPath())[1:]
			t.Run(strings.Join(path, " "), func(t *testing.T) {
				r := lllm(t, append(path, "--help")...)
				if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, sub.Short) && !strings.Contains(r.stdout, strings.SplitN(sub.Long, "\n", 2)[0]) ||
					!strings.Contains(r.stdout, "Usage:\n  lllm") || !regexp.MustCompile(`Examples:\n(\s*#.*\n)*\s+(source <\()?lllm `).MatchString(r.stdout) {
					t.Errorf("--help lacks a description, usage or example:\n%v", r)
				}
				if h := lllm(t, append([]string{"help"}, path...)...); h.code != 0 || h.stdout != r.stdout {
					t.Errorf("help %s differs from --help:\n%v", strings.Join(path, " "), h)
				}
			})
			walk(sub)
		}
	}
	walk(NewRootCmd())
}

// TestEdgeUnknownCommandsAndFlags: a mistyped command, help topic or flag is a usage error with a suggestion.
func TestEdgeUnknownCommandsAndFlags(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"shwo"}, []string{`"shwo"`, `did you mean "show"`}},
		{[]string{"reuns"}, []string{`"reuns"`, `did you mean "runs"`}},
		{[]string{"sweep", "reprot", logDir}, []string{`"reprot"`, `did you mean "report"`}},
		{[]string{"completion", "zsh2"}, []string{`"zsh2"`, `did you mean "zsh"`}},
		{[]string{"help", "tre"}, []string{`"tre"`, `did you mean "tree"`}},
		{[]string{"help", "nosuch"}, []string{`"nosuch"`}},
		{[]string{"tree", "latest", "--log-dr", logDir}, []string{"--log-dr", `did you mean "--log-dir"`}},
		{[]string{"run", cfg, "--tsk", "x"}, []string{"--tsk", `did you mean "--task"`}},
		{[]string{"runs", "--ouput", "json"}, []string{"--ouput", `did you mean "--output"`}},
	} {
		t.Run(label(c.args), func(t *testing.T) {
			wantError(t, lllm(t, c.args...), ExitUsage, c.want...)
		})
	}
}

// TestEdgeOutputJSON: every data command takes -o json and --output json, prints JSON with snake_case keys, and rejects -o bogus naming the choices.
func TestEdgeOutputJSON(t *testing.T) {
	cfg, logDir, a, b := edgeRuns(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "chat.yaml"), []byte(chatConfig), 0o644)
	os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte(`{"id": 1, "input": "Capital of France?", "expected": "Paris."}`+"\n"), 0o644)
	spec := filepath.Join(dir, "sweep.yaml")
	os.WriteFile(spec, []byte("name: edge\nconfig: chat.yaml\ndataset: rows.jsonl\nscorers: [exact]\n"), 0o644)
	sweepDir := filepath.Join(logDir, "sweeps", "edge")
	for _, args := range [][]string{
		{"run", cfg, "--task", "hi"},
		{"runs"},
		{"tree", a},
		{"show", a},
		{"diff", a, b},
		{"replay", a},
		{"sweep", spec, "--dry-run"},
		{"sweep", spec},
		{"sweep", "report", sweepDir},
		{"sweep", "merge", sweepDir},
	} {
		for _, flag := range []string{"-o", "--output"} {
			t.Run(label(args)+" "+flag, func(t *testing.T) {
				r := lllm(t, append(args, "--log-dir", logDir, flag, "json")...)
				var v any
				if err := json.Unmarshal([]byte(r.stdout), &v); r.code != 0 || err != nil {
					t.Fatalf("%s json: %v\n%v", strings.Join(args, " "), err, r)
				}
				if k := upperKey(v); k != "" {
					t.Errorf("%s: JSON key %q is not snake_case like the others", strings.Join(args, " "), k)
				}
			})
		}
	}
	for _, args := range [][]string{{"run", cfg, "--task", "hi"}, {"runs"}, {"tree", a}, {"show", a}, {"diff", a, b}, {"replay", a},
		{"sweep", spec}, {"sweep", "report", sweepDir}, {"sweep", "merge", sweepDir}, {"chat", "assistant"}} {
		wantError(t, lllm(t, append(args, "--log-dir", logDir, "-o", "bogus")...), ExitUsage, `"bogus"`, "json")
	}
}

// TestEdgeRunRefs: RUN as an ambiguous prefix, an unknown id, latest with no runs, a run directory and its events.jsonl.
func TestEdgeRunRefs(t *testing.T) {
	_, logDir, a, b := edgeRuns(t)
	whole := lllm(t, "tree", a, "--log-dir", logDir)
	for _, cmd := range []string{"tree", "show", "replay"} {
		t.Run(cmd, func(t *testing.T) {
			wantError(t, lllm(t, cmd, a[:1], "--log-dir", logDir), ExitError, `"`+a[:1]+`"`, a, b)
			wantError(t, lllm(t, cmd, "nosuchrun", "--log-dir", logDir), ExitError, `"nosuchrun"`, "lllm runs --log-dir "+logDir)
			empty := t.TempDir()
			wantError(t, lllm(t, cmd, "latest", "--log-dir", empty), ExitError, "no runs", empty)
		})
	}
	wantError(t, lllm(t, "diff", a, "nosuchrun", "--log-dir", logDir), ExitError, "run B", `"nosuchrun"`)
	// The log root given as RUN: say what it lacks, not that no run has its name.
	wantError(t, lllm(t, "tree", logDir, "--log-dir", logDir), ExitError, logDir, logs.EventsFile)
	for _, ref := range []string{filepath.Join(logDir, a), filepath.Join(logDir, a) + "/", filepath.Join(logDir, a, logs.EventsFile)} {
		if r := lllm(t, "tree", ref, "--log-dir", t.TempDir()); r.code != 0 || r.stdout != whole.stdout {
			t.Errorf("tree %s:\n%v\nwant the tree of %s", ref, r, a)
		}
	}

	// A suggested command can be pasted back into a shell.
	spaced := filepath.Join(t.TempDir(), "my logs")
	newFixture(t, spaced)
	wantError(t, lllm(t, "tree", "nosuchrun", "--log-dir", spaced), ExitError, "lllm runs --log-dir '"+spaced+"'")
}

// TestEdgeLogDir: --log-dir at a file is an error naming it; at a missing or empty dir there are no runs, and nothing is created.
func TestEdgeLogDir(t *testing.T) {
	cfg, _ := writeConfig(t, chatConfig)
	file := filepath.Join(t.TempDir(), "afile")
	os.WriteFile(file, []byte("x"), 0o644)
	spec := filepath.Join(filepath.Dir(cfg), "sweep.yaml")
	os.WriteFile(filepath.Join(filepath.Dir(cfg), "rows.jsonl"), []byte(`{"id": 1, "input": "a", "expected": "b"}`+"\n"), 0o644)
	os.WriteFile(spec, []byte("config: chat.yaml\ndataset: rows.jsonl\n"), 0o644)
	for _, args := range [][]string{{"runs"}, {"tree", "latest"}, {"show", "latest"}, {"diff", "latest", "latest"}, {"replay", "latest"},
		{"run", cfg, "--task", "hi"}, {"sweep", spec}, {"view", "--addr", "127.0.0.1:0", "--open=false"}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second) // view serves until then
		wantError(t, lllmCtx(t, ctx, append(args, "--log-dir", file)...), ExitError, file, "not a directory")
		cancel()
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, dir := range []string{t.TempDir(), missing} {
		if r := lllm(t, "runs", "--log-dir", dir); r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "no runs under "+dir) {
			t.Errorf("runs in %s:\n%v", dir, r)
		}
		for _, args := range [][]string{{"tree", "latest"}, {"show", "latest"}, {"replay", "latest"}, {"diff", "latest", "latest"}} {
			wantError(t, lllm(t, append(args, "--log-dir", dir)...), ExitError, "no runs under "+dir)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a read-only command created the log root")
	}
}

// TestEdgeRunningRun: tree and show work on a run still being written, and say it is running.
func TestEdgeRunningRun(t *testing.T) {
	root := t.TempDir()
	_, run := openRunLog(t, root)
	for _, args := range [][]string{{"tree", run.ID}, {"show", run.ID}} {
		r := lllm(t, append(args, "--log-dir", root)...)
		if r.code != 0 || !strings.Contains(r.stdout, "coder") {
			t.Fatalf("%s on a running run:\n%v", args[0], r)
		}
		if !strings.Contains(r.stderr, "running") || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "lllm: ") {
			t.Errorf("%s does not say in one line that run %s is still running:\n%s", args[0], run.ID, r.stderr)
		}
	}
}

// TestEdgeCrashedRun: a run killed mid-write (no run_end, a torn last line) still shows, with a warning and its status.
func TestEdgeCrashedRun(t *testing.T) {
	root := t.TempDir()
	w, run := openRunLog(t, root)
	w.Close() // the lock goes with the process; no run_end
	f, err := os.OpenFile(run.Path(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":9,"ts":"2026-01-01T00:00:00Z","kind":"mess`)
	f.Close()
	for _, args := range [][]string{{"tree", run.ID}, {"show", run.ID}, {"tree", run.ID, "-o", "json"}, {"show", run.ID, "-o", "json"}} {
		r := lllm(t, append(args, "--log-dir", root)...)
		if r.code != 0 || !strings.Contains(r.stdout, "coder") {
			t.Fatalf("%v on a crashed run:\n%v", args, r)
		}
		if !strings.Contains(r.stderr, "lllm: warning: "+run.Path()) || !strings.Contains(r.stderr, "torn") {
			t.Errorf("%v: no warning naming the torn log:\n%s", args, r.stderr)
		}
		if !strings.Contains(r.stderr, "interrupted") {
			t.Errorf("%v does not say run %s was interrupted:\n%s", args, run.ID, r.stderr)
		}
	}
}

// TestEdgeConfigErrors: config typos, wrong types, a missing config and a directory: every problem on an "lllm: " line with file:line:col, exit 2, no run.
func TestEdgeConfigErrors(t *testing.T) {
	typos, logDir := writeConfig(t, "tactic_type: chat\nglobal:\n  model_nme: mock/demo\nagent_configs:\n  - name: assistant\n    sytem_prompt: Hi.\n")
	q := regexp.QuoteMeta(typos)
	wantProblems(t, lllm(t, "run", typos, "--task", "x", "--log-dir", logDir),
		`(?m)^lllm: `+q+`:3:3: .*"model_nme".*did you mean "model_name"`, `(?m)^lllm: `+q+`:6:5: .*"sytem_prompt"`)
	r := lllm(t, "validate", typos)
	if lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); r.code != ExitUsage || r.stdout != "" || len(lines) != 3 ||
		!strings.HasPrefix(lines[0], typos+":3:3: ") || !strings.HasPrefix(lines[1], typos+":6:5: ") || lines[2] != "lllm: "+typos+": 2 problems" {
		t.Errorf("validate, one line per problem:\n%v", r)
	}

	// model_args problems are problems of the file too, at their place.
	for name, body := range map[string]string{
		"wrong type":  "tactic_type: chat\nglobal:\n  model_name: mock/demo\n  model_args: {temperature: hot}\nagent_configs: [{name: assistant, system_prompt: Hi.}]\n",
		"unknown key": "tactic_type: chat\nglobal:\n  model_name: mock/demo\n  model_args: {temprature: 1}\nagent_configs: [{name: assistant, system_prompt: Hi.}]\n",
	} {
		t.Run(name, func(t *testing.T) {
			path, logDir := writeConfig(t, body)
			re := `(?m)^(lllm: )?` + regexp.QuoteMeta(path) + `:4:\d+: .*temp`
			for _, args := range [][]string{{"validate", path}, {"run", path, "--task", "x", "--log-dir", logDir}} {
				r := lllm(t, args...)
				if r.code != ExitUsage || r.stdout != "" || !regexp.MustCompile(re).MatchString(r.stderr) {
					t.Errorf("%s: want a problem at %s:4:\n%v", args[0], path, r)
				}
				if strings.Contains(r.stderr, "Go struct") || strings.Contains(r.stderr, "json: ") {
					t.Errorf("%s: the problem speaks Go, not config:\n%s", args[0], r.stderr)
				}
			}
		})
	}

	missing := filepath.Join(t.TempDir(), "nope.yaml")
	dir := t.TempDir()
	for _, c := range []struct{ path, want string }{{missing, "no such file"}, {dir, "is a directory"}} {
		wantProblems(t, lllm(t, "run", c.path, "--task", "x", "--log-dir", logDir), regexp.QuoteMeta(c.path), c.want)
		if r := lllm(t, "validate", c.path); r.code != ExitUsage || r.stdout != "" || !strings.Contains(r.stderr, c.path) || !strings.Contains(r.stderr, c.want) {
			t.Errorf("validate %s:\n%v", c.path, r)
		}
	}
	if _, err := os.Stat(logDir); err == nil {
		t.Error("a config error started a run")
	}
}

// TestEdgeSet: --set with a bad path or a bad value names the --set and the value, exit 2.
func TestEdgeSet(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	for _, c := range []struct{ set, want string }{
		{"agent_configs.9.model_name=x", `--set agent_configs.9.model_name: .*no entry 9`},
		{"global.nosuch=1", `--set global.nosuch: unknown key "nosuch"`},
		{"global.model_args=[1", `--set global.model_args: .*invalid YAML`},
		{"global.max_exception_retry=lots", `--set global.max_exception_retry: .*"lots"`},
		{"global.model_args.temperature=hot", `--set global.model_args.temperature: .*"hot"`},
	} {
		wantProblems(t, lllm(t, "run", cfg, "--task", "x", "--log-dir", logDir, "--set", c.set), `(?m)^lllm: `+c.want)
		if r := lllm(t, "validate", cfg, "--set", c.set); r.code != ExitUsage || r.stdout != "" || !regexp.MustCompile(`(?m)^`+c.want).MatchString(r.stderr) {
			t.Errorf("validate --set %s: want a problem matching %s:\n%v", c.set, c.want, r)
		}
	}
	if _, err := os.Stat(logDir); err == nil {
		t.Error("a bad --set started a run")
	}
}

// TestEdgeTasksFile: a malformed line of a --tasks file is one "lllm: " line naming file:line, exit 2, no run.
func TestEdgeTasksFile(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	tasks := filepath.Join(t.TempDir(), "tasks.jsonl")
	os.WriteFile(tasks, []byte("{\"task\": \"a\"}\n{\"task\": \"b\"\n{\"task\": \"c\"}\n"), 0o644)
	for _, c := range []struct{ path, want string }{{tasks, ":2: not a JSON object"}, {filepath.Dir(tasks), "is a directory"}} {
		r := lllm(t, "run", cfg, "--tasks", c.path, "--log-dir", logDir)
		wantProblems(t, r, "^lllm: [^\n]*"+regexp.QuoteMeta(c.path)+"[^\n]*"+c.want)
		if strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("want one line:\n%s", r.stderr)
		}
	}
	if _, err := os.Stat(logDir); err == nil {
		t.Error("a bad tasks file started a run")
	}
}

// TestEdgeDiff: diff of runs of different tactics compares them and says so, in text without trailing blanks and in JSON.
func TestEdgeDiff(t *testing.T) {
	cfg, logDir, a, _ := edgeRuns(t)
	react := filepath.Join(filepath.Dir(cfg), "react.yaml")
	os.WriteFile(react, []byte(retryConfig), 0o644)
	b := runInto(t, react, logDir, "What is 3+4?")
	r := lllm(t, "diff", a, b, "--log-dir", logDir)
	if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "A "+a+" (chat, ok)\nB "+b+" (react, ok)\n") ||
		!strings.Contains(r.stdout, `tactic_type: "chat" → "react"`) || strings.Contains(r.stdout, "identical") {
		t.Fatalf("diff of a chat and a react run:\n%v", r)
	}
	for i, l := range strings.Split(r.stdout, "\n") {
		if strings.TrimRight(l, " \t") != l {
			t.Errorf("line %d has trailing blanks: %q", i+1, l)
		}
	}
	if j := lllm(t, "diff", a, b, "--log-dir", logDir, "-o", "json"); j.code != 0 || decodeJSON[diffJSON](t, j.stdout).Identical {
		t.Errorf("diff -o json:\n%v", j)
	}
}

// TestEdgeReplayUnknownTactic: replaying a run of a tactic this binary lacks is one line naming the tactic and the run, and writes no log.
func TestEdgeReplayUnknownTactic(t *testing.T) {
	_, logDir, a, _ := edgeRuns(t)
	path := filepath.Join(logDir, a, logs.EventsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(strings.ReplaceAll(strings.ReplaceAll(string(data), `"tactic":"chat"`, `"tactic":"nosuch"`), `"tactic_type":"chat"`, `"tactic_type":"nosuch"`)), 0o644)
	before, _ := logs.List(logDir)
	r := lllm(t, "replay", a, "--log-dir", logDir)
	if r.code != ExitUsage || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "lllm: ") ||
		!strings.Contains(r.stderr, `"nosuch"`) || !strings.Contains(r.stderr, a) {
		t.Errorf("replay of an unknown tactic:\n%v", r)
	}
	if after, _ := logs.List(logDir); len(after) != len(before) {
		t.Errorf("the failed replay wrote a run log")
	}
}

// TestEdgeCancelTasks: Ctrl-C during run --tasks exits 1 and leaves every log finished as cancelled.
func TestEdgeCancelTasks(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig+"  latency: 1m\n")
	tasks := filepath.Join(t.TempDir(), "tasks.jsonl")
	os.WriteFile(tasks, []byte("{\"task\": \"a\"}\n{\"task\": \"b\"}\n{\"task\": \"c\"}\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() {
		done <- lllmCtx(t, ctx, "run", cfg, "--tasks", tasks, "--log-dir", logDir, "--concurrency", "2")
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		events, _ := filepath.Glob(filepath.Join(logDir, "*", logs.EventsFile))
		if len(events) > 0 {
			if b, _ := os.ReadFile(events[0]); strings.Contains(string(b), `"kind":"fork"`) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no run got to its model call")
		}
	}
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop on Ctrl-C")
	}
	if r.code != ExitError || !strings.Contains(r.stderr, "lllm: cancelled") {
		t.Errorf("after Ctrl-C:\n%v", r)
	}
	sums, err := logs.List(logDir)
	if err != nil || len(sums) == 0 {
		t.Fatalf("runs: %v %v", sums, err)
	}
	for _, s := range sums {
		if s.End == nil || s.Status() != logs.StatusCancelled {
			t.Errorf("run %s: status %s, want a finished log marked cancelled", s.ID, s.Status())
		}
	}
}
