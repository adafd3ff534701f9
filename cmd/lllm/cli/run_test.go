package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/tactics"
)

const chatConfig = `tactic_type: chat
global:
  model_name: mock/demo
  model_args: {temperature: 0.2}
agent_configs:
  - name: assistant
    system_prompt: You are concise.
mock:
  rules:
    - match: fail
      reply: {error: auth}
  replies:
    - text: "Paris."
`

// writeConfig writes yaml into a temp dir and returns its path and a log
// root beside it.
func writeConfig(t *testing.T, yaml string) (path, logDir string) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "chat.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, filepath.Join(dir, "logs")
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
	return v
}

var statusLine = regexp.MustCompile(`^run (\S+)  status (\w+)  tokens (\d+)/(\d+)  cost \$\d+\.\d{4,}$`)

func TestRunText(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	r := lllm(t, "run", cfg, "--task", "Capital of France?", "--log-dir", logDir)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%v", r)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 || lines[0] != "Paris." {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	m := statusLine.FindStringSubmatch(lines[1])
	if m == nil || m[2] != "ok" || m[3] == "0" || m[4] == "0" {
		t.Fatalf("status line %q", lines[1])
	}
	run, err := logs.Open(logDir, m[1])
	if err != nil || run.Start.Tactic != "chat" {
		t.Fatalf("run %s: %v", m[1], err)
	}
}

func TestRunJSONAndSet(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	r := lllm(t, "run", cfg, "--task", "hi", "--log-dir", logDir, "-o", "json",
		"--set", `mock.replies=[{text: '{"answer": 42}'}]`,
		"--set", "global.model_args.temperature=0.9",
		"--set", "agent_configs.assistant.model_args.max_tokens=50")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	type out struct {
		RunID  string          `json:"run_id"`
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
		Error  *string         `json:"error"`
		Cost   *dialog.Cost    `json:"cost"`
	}
	o := decodeJSON[out](t, r.stdout)
	if o.Status != "ok" || string(o.Result) != `"{\"answer\": 42}"` || o.Error != nil || o.Cost == nil {
		t.Fatalf("output %+v\n%s", o, r.stdout)
	}
	if o.Cost.InputTokens == 0 || o.Cost.OutputTokens == 0 {
		t.Fatalf("cost %+v", *o.Cost)
	}
	run, err := logs.Open(logDir, o.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var start struct {
		Global struct {
			ModelArgs map[string]any `json:"model_args"`
		} `json:"global"`
		AgentConfigs []struct {
			ModelArgs map[string]any `json:"model_args"`
		} `json:"agent_configs"`
		Mock struct{ Replies []map[string]any } `json:"mock"`
	}
	if err := json.Unmarshal(run.Start.Config, &start); err != nil {
		t.Fatal(err)
	}
	if start.Global.ModelArgs["temperature"] != 0.9 || len(start.AgentConfigs) != 1 ||
		start.AgentConfigs[0].ModelArgs["max_tokens"] != 50.0 || start.Mock.Replies[0]["text"] != `{"answer": 42}` {
		t.Fatalf("run_start config = %s", run.Start.Config)
	}

	// A string result prints as its text.
	r = lllm(t, "run", cfg, "--task", "hi", "--log-dir", logDir, "--set", `mock.replies=[{text: "x"}]`, "--set", "tactic_type=chat")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "x\nrun ") {
		t.Fatalf("%v", r)
	}
}

func TestRunTasks(t *testing.T) {
	cfg, logDir := writeConfig(t, strings.Replace(chatConfig, "  replies:\n    - text: \"Paris.\"\n", `    - {match: one, reply: {text: "1"}}
    - {match: two, reply: {text: "2"}}
    - {match: three, reply: {text: "3"}}
`, 1))
	tasks := filepath.Join(t.TempDir(), "tasks.jsonl")
	os.WriteFile(tasks, []byte(`{"task": "one"}
{"id": "b", "input": "two"}

{"id": 3, "task": "three"}
`), 0o644)

	r := lllm(t, "run", cfg, "--tasks", tasks, "--log-dir", logDir, "-o", "json", "--concurrency", "3")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	type out struct {
		TaskID string          `json:"task_id"`
		RunID  string          `json:"run_id"`
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	list := decodeJSON[[]out](t, r.stdout)
	if len(list) != 3 {
		t.Fatalf("%d results:\n%s", len(list), r.stdout)
	}
	for i, want := range []string{`"1"`, `"2"`, `"3"`} {
		if list[i].Status != "ok" || string(list[i].Result) != want {
			t.Errorf("result %d = %+v, want %s", i, list[i], want)
		}
	}
	if list[0].TaskID != "" || list[1].TaskID != "b" || list[2].TaskID != "3" {
		t.Errorf("task ids %q %q %q", list[0].TaskID, list[1].TaskID, list[2].TaskID)
	}
	runs := lllm(t, "runs", "-o", "json", "--log-dir", logDir)
	got := decodeJSON[[]logs.RunInfo](t, runs.stdout)
	if runs.code != 0 || len(got) != 3 {
		t.Fatalf("runs:\n%v", runs)
	}
	// Each run's log keeps its task's id, and every run its line.
	ids, taskLines := map[string]string{}, map[string]string{}
	for _, g := range got {
		ids[g.RunID], taskLines[g.RunID] = g.Labels["task_id"], g.Labels["task_line"]
	}
	if ids[list[0].RunID] != "" || ids[list[1].RunID] != "b" || ids[list[2].RunID] != "3" {
		t.Errorf("task_id labels by run %v", ids)
	}
	if taskLines[list[0].RunID] != "1" || taskLines[list[1].RunID] != "2" || taskLines[list[2].RunID] != "4" {
		t.Errorf("task_line labels by run %v", taskLines)
	}
	// A label of the batch's own, or one given twice, is a usage error.
	for _, args := range [][]string{{"--label", "task_line=9"}, {"--label", "task_id=x"}, {"--label", "k=1", "--label", "k=2"}} {
		r := lllm(t, append([]string{"run", cfg, "--tasks", tasks, "--log-dir", logDir}, args...)...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "--label") {
			t.Errorf("%v: %v", args, r)
		}
	}

	// Text: one line per task, in order, then a summary.
	r = lllm(t, "run", cfg, "--tasks", tasks, "--log-dir", logDir)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "1/3  run ") || !strings.HasSuffix(lines[0], `"1"`) ||
		!strings.HasSuffix(lines[2], `"3"`) || !strings.HasPrefix(lines[3], "3 runs: 3 ok  tokens ") {
		t.Fatalf("%v", r)
	}
}

func TestRunBadTasksFile(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	dir := t.TempDir()
	for name, c := range map[string]struct{ body, want string }{
		"no task":    {"{\"task\": \"a\"}\n{\"tsk\": \"b\"}\n", ":2: no \"task\" or \"input\""},
		"not json":   {"{\"task\": \"a\"}\n\n{\"task\": \"b\"}\nnope\n", ":4: not a JSON object"},
		"not string": {"{\"input\": {\"q\": 1}}\n", ":1: \"input\" is {\"q\": 1}, not a string"},
		"empty":      {"\n\n", "has no tasks"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".jsonl")
			os.WriteFile(path, []byte(c.body), 0o644)
			r := lllm(t, "run", cfg, "--tasks", path, "--log-dir", logDir)
			if r.code != ExitUsage || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, path) || r.stdout != "" {
				t.Fatalf("want exit 2 naming %q:\n%v", c.want, r)
			}
		})
	}
	if runs, _ := logs.List(logDir); len(runs) != 0 {
		t.Fatal("a bad tasks file started runs")
	}
	r := lllm(t, "run", cfg, "--tasks", filepath.Join(dir, "missing.jsonl"), "--log-dir", logDir)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "missing.jsonl") {
		t.Fatalf("%v", r)
	}
}

func TestRunUsageAndConfigErrors(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	wantError(t, lllm(t, "run", cfg, "--log-dir", logDir), ExitUsage, "--task TEXT", "--tasks FILE.jsonl")
	wantError(t, lllm(t, "run"), ExitUsage, "CONFIG")
	wantError(t, lllm(t, "run", cfg, "--task", "a", "--tasks", "b"), ExitUsage, "not both")
	wantError(t, lllm(t, "run", cfg, "--task", "a", "--concurrency", "0"), ExitUsage, "--concurrency")
	wantError(t, lllm(t, "run", cfg, "--task", "a", "--set", "noequals"), ExitUsage, "KEY.PATH=VALUE")
	wantError(t, lllm(t, "run", cfg, "--task", "a", "-o", "yaml"), ExitUsage, "text or json")

	// Config errors: exit 2, one "lllm: " line per problem, no run.
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"unknown tactic":   {[]string{"--set", "tactic_type=chta"}, `unknown tactic "chta" (did you mean "chat"?)`},
		"bad set key":      {[]string{"--set", "globl.model_name=x"}, "globl"},
		"unknown provider": {[]string{"--set", "global.model_name=opneai/gpt-4o"}, "opneai"},
		"bad model_args":   {[]string{"--set", "global.model_args.temprature=1"}, `did you mean "temperature"`},
	} {
		t.Run(name, func(t *testing.T) {
			r := lllm(t, append([]string{"run", cfg, "--task", "x", "--log-dir", logDir}, c.args...)...)
			if r.code != ExitUsage || r.stdout != "" || !strings.HasPrefix(r.stderr, "lllm: ") || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("want exit 2 with %q:\n%v", c.want, r)
			}
		})
	}
	// The tactics of lllm serve's run logs are lllm replay's alone: an
	// unknown tactic's error neither lists nor suggests them.
	for _, typ := range []string{"chta", "conversatio"} {
		r := lllm(t, "run", cfg, "--task", "x", "--log-dir", logDir, "--set", "tactic_type="+typ)
		if r.code != ExitUsage || !strings.Contains(r.stderr, `registered tactics: best_of_n, chat, `) {
			t.Errorf("unknown tactic %q: want exit 2 listing the tactics:\n%v", typ, r)
		}
		if strings.Contains(r.stderr, "conversation") {
			t.Errorf("the unknown tactic %q lists or suggests a served tactic:\n%v", typ, r)
		}
	}
	missing := lllm(t, "run", filepath.Join(t.TempDir(), "nope.yaml"), "--task", "x")
	if missing.code != ExitUsage || !strings.Contains(missing.stderr, "nope.yaml") {
		t.Fatalf("missing config:\n%v", missing)
	}
	malformed, _ := writeConfig(t, "tactic_type: chat\nglobal: [\n")
	if r := lllm(t, "run", malformed, "--task", "x"); r.code != ExitUsage || !strings.Contains(r.stderr, "chat.yaml:") {
		t.Fatalf("malformed config:\n%v", r)
	}
	if runs, _ := logs.List(logDir); len(runs) != 0 {
		t.Fatal("a config error started a run")
	}
}

func TestRunFailedAndCancelled(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	r := lllm(t, "run", cfg, "--task", "please fail", "--log-dir", logDir, "-o", "json")
	if r.code != ExitError || !strings.Contains(r.stderr, "failed") || !strings.Contains(r.stderr, "log at ") {
		t.Fatalf("%v", r)
	}
	o := decodeJSON[map[string]any](t, r.stdout)
	if o["status"] != "failed" || o["result"] != nil || !strings.Contains(o["error"].(string), "401") {
		t.Fatalf("output %v", o)
	}
	if sums, _ := logs.List(logDir); len(sums) != 1 || sums[0].ID != o["run_id"] || sums[0].End == nil ||
		sums[0].Status() != logs.StatusFailed || !strings.Contains(sums[0].End.Error, "401") {
		t.Fatalf("log: %+v", sums)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = lllmCtx(t, ctx, "run", cfg, "--task", "hi", "--log-dir", logDir)
	if r.code != ExitError || !strings.Contains(r.stderr, "lllm: cancelled; log at "+logDir) {
		t.Fatalf("%v", r)
	}
	sums, _ := logs.List(logDir)
	if len(sums) != 2 || sums[1].Status() != logs.StatusCancelled {
		t.Fatalf("runs %+v", sums)
	}

	// Many tasks, fail-fast and keep-going: exit 1 either way.
	tasks := filepath.Join(t.TempDir(), "tasks.jsonl")
	os.WriteFile(tasks, []byte("{\"task\": \"fail\"}\n{\"task\": \"a\"}\n{\"task\": \"b\"}\n"), 0o644)
	r = lllm(t, "run", cfg, "--tasks", tasks, "--log-dir", logDir, "--concurrency", "1")
	if r.code != ExitError || !strings.Contains(r.stderr, "--keep-going") || !strings.Contains(r.stdout, "1 failed, 2 cancelled") {
		t.Fatalf("fail-fast:\n%v", r)
	}
	r = lllm(t, "run", cfg, "--tasks", tasks, "--log-dir", logDir, "--keep-going", "-o", "json")
	list := decodeJSON[[]map[string]any](t, r.stdout)
	if r.code != ExitError || len(list) != 3 || list[0]["status"] != "failed" || list[1]["status"] != "ok" || list[2]["status"] != "ok" {
		t.Fatalf("keep-going:\n%v", r)
	}
}

// buildLLLM builds the lllm binary once per test process and returns its
// path. It skips the test under -short or when go is not on PATH.
func buildLLLM(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "lllm-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "lllm")
		if out, err := exec.Command(gobin, "build", "-o", built.path, "github.com/lllm-go/lllm/cmd/lllm").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

var built struct {
	once sync.Once
	path string
	err  error
}

// lllm run and lllm runs as subprocesses of a binary built here.
func TestBinaryRunAndRuns(t *testing.T) {
	bin := buildLLLM(t)
	dir := t.TempDir()
	cfg, logDir := writeConfig(t, chatConfig)
	run := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), stdout.String(), stderr.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, stdout.String(), stderr.String()
	}
	code, stdout, stderr := run("run", cfg, "--task", "hi", "-o", "json", "--log-dir", logDir)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	res := decodeJSON[map[string]any](t, stdout)
	if res["status"] != "ok" || res["result"] != "Paris." || res["run_id"] == "" {
		t.Fatalf("run output %v", res)
	}
	code, stdout, stderr = run("runs", "-o", "json", "--log-dir", logDir)
	runs := decodeJSON[[]logs.RunInfo](t, stdout)
	if code != 0 || len(runs) != 1 || runs[0].RunID != res["run_id"] || runs[0].Status != "ok" || runs[0].Tactic != "chat" {
		t.Fatalf("runs: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr = run("run", cfg, "--task", "fail", "--log-dir", logDir); code != 1 || !strings.Contains(stderr, "failed") {
		t.Fatalf("failed run: exit %d\n%s", code, stderr)
	}
	if code, _, stderr = run("run", cfg, "--log-dir", logDir); code != 2 {
		t.Fatalf("no task: exit %d\n%s", code, stderr)
	}

	// Ctrl-C in the middle of a model call: the run ends cancelled, exit 1,
	// and its log is finished and says so.
	slow, slowLogs := writeConfig(t, chatConfig+"  latency: 1m\n")
	cmd := exec.Command(bin, "run", slow, "--task", "hi", "--log-dir", slowLogs)
	var stderrBuf bytes.Buffer
	cmd.Stderr = &stderrBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAtCleanup(t, cmd.Process)
	// The working fork is made just before the model is called.
	waitFor(t, slowLogs, `"kind":"fork"`)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderrBuf.String(), "cancelled; log at") {
		t.Fatalf("after Ctrl-C: %v\n%s", err, stderrBuf.String())
	}
	sums, err := logs.List(slowLogs)
	if err != nil || len(sums) != 1 || sums[0].Status() != logs.StatusCancelled {
		t.Fatalf("the cancelled run's log: %v %+v", err, sums)
	}

	// SIGKILL leaves no run_end: lllm runs tells it from a live run.
	killed, killedLogs := writeConfig(t, chatConfig+"  latency: 1m\n")
	cmd = exec.Command(bin, "run", killed, "--task", "hi", "--log-dir", killedLogs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAtCleanup(t, cmd.Process)
	waitFor(t, killedLogs, `"kind":"fork"`)
	if sums, err := logs.List(killedLogs); err != nil || len(sums) != 1 || sums[0].Status() != logs.StatusRunning {
		t.Fatalf("a run in flight: %v %+v", err, sums)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if code, stdout, _ := run("runs", "--log-dir", killedLogs, "-o", "json"); code != 0 || decodeJSON[[]logs.RunInfo](t, stdout)[0].Status != "interrupted" {
		t.Fatalf("a killed run: exit %d\n%s", code, stdout)
	}
}

// killAtCleanup kills p when the test ends, in case it failed first.
func killAtCleanup(t *testing.T, p *os.Process) {
	t.Cleanup(func() { _ = p.Kill() })
}

// waitFor waits until the one run log under root contains s.
func waitFor(t *testing.T, root, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		events, _ := filepath.Glob(filepath.Join(root, "*", logs.EventsFile))
		if len(events) == 1 {
			if b, _ := os.ReadFile(events[0]); bytes.Contains(b, []byte(s)) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no run log under %s came to contain %s", root, s)
}

// TestMain removes the binary buildLLLM built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		_ = os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// A run says on stderr when an agent makes a failed call again, and why,
// so that a run waiting on a dead server does not look stuck.
func TestRunTellsOfRetries(t *testing.T) {
	cfg, logDir := writeConfig(t, `
tactic_type: chat
global: {model_name: mock/demo}
agent_configs:
  - {name: assistant, system_prompt: You answer.}
mock:
  replies: [{error: network}, {text: fine}]
`)
	r := lllm(t, "run", cfg, "--task", "hi", "--log-dir", logDir)
	if r.code != 0 || !strings.Contains(r.stdout, "fine") {
		t.Fatalf("run: %v", r)
	}
	want := regexp.MustCompile(`^lllm: agent assistant: attempt 1 failed: mock: network: POST mock: connect: connection refused \(mock\); trying again in [0-9.]+m?s \(5 tries left\)\n$`)
	if !want.MatchString(r.stderr) {
		t.Errorf("stderr:\n%s\nwant it to match %s", r.stderr, want)
	}
}

// An empty or blank --task is a usage error: no run starts and no log is
// written.
func TestRunEmptyTask(t *testing.T) {
	cfg, logDir := writeConfig(t, `
tactic_type: chat
global: {model_name: mock/demo}
agent_configs:
  - {name: assistant, system_prompt: You answer.}
`)
	for _, task := range []string{"", " \n\t"} {
		r := lllm(t, "run", cfg, "--task", task, "--log-dir", logDir)
		wantError(t, r, ExitUsage, "--task is empty")
		if _, err := os.Stat(logDir); !os.IsNotExist(err) {
			t.Errorf("task %q: a log root was made (%v)", task, err)
		}
	}
}

// A file of another kind given to run or sweep is one usage error saying
// what it is and which command takes it.
func TestWrongKindOfFile(t *testing.T) {
	const configs = "../../../configs/"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", configs + "sweep-example.yaml", "--task", "x"}, "is a sweep spec: run it with lllm sweep"},
		{[]string{"run", configs + "serve.yaml", "--task", "x"}, "is a serve config: serve it with lllm serve --config"},
		{[]string{"sweep", configs + "quickstart.yaml", "--dry-run"}, "is a tactic config: run it with lllm run"},
		{[]string{"sweep", configs + "serve.yaml", "--dry-run"}, "is a serve config"},
	} {
		r := lllm(t, append(tc.args, "--log-dir", t.TempDir())...)
		wantError(t, r, ExitUsage, tc.want)
	}
}

// --label records KEY=VALUE in the run's log; lllm runs shows the labels
// and the start of the task, which tell runs of one config apart.
func TestRunLabels(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	r := lllm(t, "run", cfg, "--task", "Capital of France?", "--log-dir", logDir, "--label", "variant=b", "--label", "seed=1")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	runs := lllm(t, "runs", "--log-dir", logDir)
	if !strings.Contains(runs.stdout, "seed=1 variant=b Capital of France?") {
		t.Errorf("runs table:\n%s", runs.stdout)
	}
	js := lllm(t, "runs", "--log-dir", logDir, "-o", "json")
	if !strings.Contains(js.stdout, `"variant": "b"`) {
		t.Errorf("runs -o json lacks the label:\n%s", js.stdout)
	}
	bad := lllm(t, "run", cfg, "--task", "x", "--log-dir", logDir, "--label", "novalue")
	wantError(t, bad, ExitUsage, `--label "novalue": want KEY=VALUE`)
}

// A tasks file line that is not UTF-8 is refused at its line: decoded as
// JSON it would have become U+FFFD, and the run would have answered
// another task than the file's.
func TestReadTasksNotUTF8(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	body := "{\"task\": \"caf\u00e9 \ufffd\"}\n{\"task\": \"What is \xff?\"}\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tasks, err := readTasks(path)
	if err == nil {
		t.Fatalf("readTasks = %+v, want an error at line 2", tasks)
	}
	if want := path + ":2: not UTF-8 text"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	// The first line alone, UTF-8 with a literal U+FFFD, is read as it is.
	if err := os.WriteFile(path, []byte(body[:strings.Index(body, "\n")+1]), 0o644); err != nil {
		t.Fatal(err)
	}
	tasks, err = readTasks(path)
	if err != nil || len(tasks) != 1 || tasks[0].task != "caf\u00e9 \ufffd" {
		t.Fatalf("readTasks = %+v, %v; want the one task as written", tasks, err)
	}
}

// TestSeedFlagPointsToModelArgs: --seed, which a researcher tries first, is
// a usage error that says where a run's seed is, on every command with
// --set; elsewhere it is an unknown flag like any other.
func TestSeedFlagPointsToModelArgs(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	for _, args := range [][]string{
		{"run", cfg, "--task", "x", "--seed", "7"},
		{"run", cfg, "--task", "x", "--seed=7"},
		{"validate", cfg, "--seed", "7"},
		{"replay", "latest", "--log-dir", logDir, "--seed", "7"},
		{"sweep", cfg, "--seed", "7"},
	} {
		t.Run(label(args), func(t *testing.T) {
			wantError(t, lllm(t, args...), ExitUsage, "unknown flag: --seed", "--set global.model_args.seed=N")
		})
	}
	if r := lllm(t, "runs", "--log-dir", logDir, "--seed", "7"); r.code != ExitUsage || strings.Contains(r.stderr, "model_args") {
		t.Errorf("lllm runs --seed: want a plain unknown flag:\n%v", r)
	}
}

// TestSeedIsModelArgs checks what README says of a run's seed: --set
// global.model_args.seed=N changes the mock's default reply, is recorded in
// run_start's config and each model_call's params, and a replay reuses it
// (and diverges when it is changed).
func TestSeedIsModelArgs(t *testing.T) {
	cfg, logDir := writeConfig(t, "tactic_type: chat\nglobal: {model_name: mock/demo}\nagent_configs:\n  - name: assistant\n    system_prompt: You answer.\n")
	run := func(sets ...string) map[string]any {
		t.Helper()
		r := lllm(t, append([]string{"run", cfg, "--task", "Hello there", "--log-dir", logDir, "-o", "json"}, sets...)...)
		if r.code != 0 {
			t.Fatalf("lllm run %v:\n%v", sets, r)
		}
		return decodeJSON[map[string]any](t, r.stdout)
	}
	plain, seeded := run(), run("--set", "global.model_args.seed=7")
	if plain["result"] == seeded["result"] {
		t.Errorf("model_args.seed=7 left the mock's default reply as it was: %v", plain["result"])
	}

	id := seeded["run_id"].(string)
	f, err := os.Open(filepath.Join(logDir, id, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var starts, calls int
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var rec struct {
			Kind     string `json:"kind"`
			RunStart *struct {
				Seed   int64 `json:"seed"`
				Config struct {
					Global struct {
						ModelArgs map[string]any `json:"model_args"`
					} `json:"global"`
				} `json:"config"`
			} `json:"run_start"`
			ModelCall *struct {
				Params map[string]any `json:"params"`
			} `json:"model_call"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		switch rec.Kind {
		case "run_start":
			starts++
			if s := rec.RunStart; s.Config.Global.ModelArgs["seed"] != 7.0 || s.Seed != 0 {
				t.Errorf("run_start: config.global.model_args %v and seed %d, want model_args.seed 7 and no seed of its own", s.Config.Global.ModelArgs, s.Seed)
			}
		case "model_call":
			calls++
			if p := rec.ModelCall.Params; p["seed"] != 7.0 {
				t.Errorf("model_call params %v, want seed 7", p)
			}
		}
	}
	if starts != 1 || calls != 1 {
		t.Fatalf("the log has %d run_start and %d model_call records, want 1 and 1", starts, calls)
	}

	r := lllm(t, "replay", id, "--log-dir", logDir, "-o", "json")
	if got := decodeJSON[map[string]any](t, r.stdout); r.code != 0 || got["result"] != seeded["result"] {
		t.Errorf("the replay of the seeded run:\n%v", r)
	}
	if r := lllm(t, "replay", id, "--log-dir", logDir, "-o", "json", "--set", "global.model_args.seed=8"); r.code != ExitError {
		t.Errorf("a replay with another seed exits %d, want %d (diverged):\n%v", r.code, ExitError, r)
	}
}

// removesLogRoot is a tactic that deletes the log root its run writes in,
// as a user cleaning the wrong folder would.
type removesLogRoot struct{ root string }

func (removesLogRoot) Agents() []string { return []string{"assistant"} }
func (t removesLogRoot) Call(context.Context, *tactics.Session, string) (any, error) {
	return "done", os.RemoveAll(t.root)
}

func init() {
	tactics.Register("cli_test_removes_log_root", func(p map[string]any) (tactics.Tactic, error) {
		root, _ := p["root"].(string)
		return removesLogRoot{root}, nil
	})
}

// A run whose log could not be finished does not say only "status ok",
// alone (--task) or one of several (--tasks): the text and the JSON say
// the log is unfinished, and the exit status is 1.
func TestRunSaysLogUnfinished(t *testing.T) {
	for _, many := range []bool{false, true} {
		for _, format := range []string{"text", "json"} {
			t.Run(fmt.Sprintf("tasks=%v/%s", many, format), func(t *testing.T) {
				cfg, logDir := writeConfig(t, "")
				src := strings.Replace(chatConfig, "tactic_type: chat", "tactic_type: cli_test_removes_log_root\nparams: {root: "+logDir+"}", 1)
				if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				task := []string{"--task", "x"}
				if many {
					tasks := filepath.Join(t.TempDir(), "tasks.jsonl")
					if err := os.WriteFile(tasks, []byte("{\"task\": \"x\"}\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					task = []string{"--tasks", tasks}
				}
				r := lllm(t, append([]string{"run", cfg, "--log-dir", logDir, "-o", format}, task...)...)
				if r.code != ExitError || !strings.Contains(r.stderr, "deleted or moved") {
					t.Fatalf("%v", r)
				}
				if format == "text" {
					if !strings.Contains(r.stdout, "status ok (log unfinished)") {
						t.Errorf("stdout %q does not say the log is unfinished", r.stdout)
					}
					return
				}
				var got []resultJSON
				out := r.stdout
				if !many {
					out = "[" + out + "]"
				}
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || got[0].Status != "ok" || !strings.Contains(got[0].LogError, "deleted or moved") {
					t.Errorf("JSON %+v: want status ok and log_error saying the log was deleted", got)
				}
			})
		}
	}
}

type panicSiteTactic struct{}

func (panicSiteTactic) Agents() []string { return []string{"assistant"} }
func (panicSiteTactic) Call(context.Context, *tactics.Session, string) (any, error) {
	panic("the tactic has a bug")
}

func init() {
	tactics.Register("cli_test_panics", func(map[string]any) (tactics.Tactic, error) { return panicSiteTactic{}, nil })
}

// lllm run of a tactic that panics says what panicked and where on its
// one line, and leaves the stack to the log instead of joining it in.
func TestRunPanicOneLine(t *testing.T) {
	cfg, logDir := writeConfig(t, strings.Replace(chatConfig, "tactic_type: chat", "tactic_type: cli_test_panics", 1))
	r := lllm(t, "run", cfg, "--task", "x", "--log-dir", logDir)
	if r.code != ExitError || strings.Count(r.stderr, "\n") != 1 ||
		!strings.Contains(r.stderr, "panicked: the tactic has a bug (at ") ||
		!strings.Contains(r.stderr, "run_test.go:") ||
		!strings.Contains(r.stderr, "(its stack is run_end.error in the log)") ||
		strings.Contains(r.stderr, "goroutine ") {
		t.Fatalf("%v", r)
	}
}
