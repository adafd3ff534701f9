package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/sweep"
	"github.com/lllm-go/lllm/tactics"
)

type runCmdOptions struct {
	*options
	task        string
	tasksFile   string
	sets        []string
	format      *enumValue
	concurrency int
	keepGoing   bool
	labels      []string
}

func newRunCmd(opts *options) *cobra.Command {
	o := &runCmdOptions{options: opts, format: newEnum("text", "text", "json")}
	cmd := &cobra.Command{
		Use:   "run CONFIG (--task TEXT | --tasks FILE.jsonl)",
		Short: "Run a config's tactic on one task or many",
		Long: `Run the tactic of a YAML config on a task, recording everything in a new
run log under the log root (--log-dir, else the config's log_dir, else
./logs).

--set KEY.PATH=VALUE overrides one value of the config after its base chain
is resolved; repeat it for more, they apply in order. Values are YAML:
numbers, booleans, [lists] and {maps} are typed. Agents are addressed by
index or by name: agent_configs.solver.model_args.temperature=0.

With --task, the result is printed (as is if it is a string, else as
indented JSON), then the run id, status, tokens (input/output) and cost.
With --tasks, each line of the JSONL file is a task, {"task": "..."} or
{"id": ..., "input": "..."}; every task is its own run, --concurrency at a
time, and one line is printed per task, in file order, then a summary. A
progress bar goes to stderr when it is a terminal. The first failed run
cancels the rest unless --keep-going. Each run is labelled task_line (its
line in the file) and, when the line has an id, task_id: lllm runs
--label task_line lists the runs of batches.

-o json prints one JSON object per run ({run_id, dir, status, result,
cost, duration_ms}), an array of them for --tasks, where each also
has the task_id of its line when the line has an id; error is there only
when the run failed or was cancelled. cost is the run log's
cost object: input_tokens, cached_input_tokens, cache_write_tokens,
output_tokens, reasoning_tokens and usd, each left out when zero.

The exit code is 0 when every run succeeded, 1 when a run failed or was
cancelled (Ctrl-C cancels cleanly: the log is finished and marked
cancelled), and 2 for a usage or config problem, found before anything
runs.`,
		Example: `  # One task, on the mock provider
  lllm run configs/quickstart.yaml --task "Capital of France?"

  # The same config on a real model
  lllm run configs/quickstart.yaml --task "Capital of France?" --set global.model_name=openai/gpt-4o-mini

  # A sampling seed for every agent's model, recorded with the config (lllm replay reuses it)
  lllm run configs/quickstart.yaml --task "Capital of France?" --set global.model_args.seed=7

  # Many tasks, 8 at a time, as JSON
  lllm run config.yaml --tasks tasks.jsonl --concurrency 8 --keep-going -o json > results.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return usageErrorf(cmd, "run needs a CONFIG: the path of a YAML config (see configs/)")
			case 1:
				return nil
			}
			return usageErrorf(cmd, "run takes one CONFIG, got %d arguments (quote a task with spaces: --task \"...\")", len(args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd, o, args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.task, "task", "", "the `TEXT` of the task to run")
	fs.StringVar(&o.tasksFile, "tasks", "", "a JSONL `FILE` of tasks, one {\"task\": \"...\"} per line")
	fs.StringArrayVar(&o.sets, "set", nil, "override a config value, `KEY.PATH=VALUE` (repeatable)")
	fs.IntVar(&o.concurrency, "concurrency", tactics.DefaultConcurrency, "with --tasks, how many runs go at once")
	fs.BoolVar(&o.keepGoing, "keep-going", false, "with --tasks, run every task even after one fails")
	fs.StringArrayVar(&o.labels, "label", nil, "record `KEY=VALUE` in the run's log, shown by lllm runs (repeatable)")
	_ = cmd.MarkFlagFilename("tasks", "jsonl", "json")
	addFormatFlag(cmd, "output", o.format)
	return cmd
}

// loadConfig loads path and applies each --set in order. A problem is a
// config error, exit code 2.
func loadConfig(cmd *cobra.Command, path string, sets []string) (*config.Config, error) {
	if err := checkSets(cmd, sets); err != nil {
		return nil, err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, configErr(err)
	}
	for _, s := range sets {
		k, v, _ := strings.Cut(s, "=")
		if err := cfg.Set(k, v); err != nil {
			return nil, configErr(err)
		}
	}
	return cfg, nil
}

// checkSets checks the form of --set flags: a usage error names the first
// without a KEY.PATH= part.
func checkSets(cmd *cobra.Command, sets []string) error {
	for _, s := range sets {
		if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
			return usageErrorf(cmd, "--set %q: want KEY.PATH=VALUE, such as global.model_name=openai/gpt-4o-mini", s)
		}
	}
	return nil
}

// configErr is a config problem: each of its problems on a line, exit
// code 2.
func configErr(err error) error {
	return &exitError{code: ExitUsage, errs: problems(err)}
}

// problems splits err into the problems it joins.
func problems(err error) []error {
	var ce *tactics.ConfigError
	var se *sweep.SpecError
	switch {
	case errors.As(err, &ce) && ce.Err != nil:
		err = ce.Err
	case errors.As(err, &se) && se.Err != nil:
		err = se.Err
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, problems(e)...)
		}
		return out
	}
	return []error{err}
}

func runRun(cmd *cobra.Command, o *runCmdOptions, path string) error {
	hasTask, hasTasks := cmd.Flags().Changed("task"), cmd.Flags().Changed("tasks")
	switch {
	case hasTask && hasTasks:
		return usageErrorf(cmd, "give --task or --tasks, not both")
	case !hasTask && !hasTasks:
		return usageErrorf(cmd, "run needs a task: --task TEXT for one, or --tasks FILE.jsonl for many (one {\"task\": \"...\"} per line)")
	case hasTask && strings.TrimSpace(o.task) == "":
		return usageErrorf(cmd, "--task is empty: give the tactic something to do")
	case o.concurrency < 1:
		return usageErrorf(cmd, "--concurrency %d: want 1 or more", o.concurrency)
	}
	if err := wrongKind(cmd, path, "tactic"); err != nil {
		return err
	}
	cfg, err := loadConfig(cmd, path, o.sets)
	if err != nil {
		return err
	}
	var tasks []taskLine
	if hasTasks {
		if tasks, err = readTasks(o.tasksFile); err != nil {
			return &exitError{code: ExitUsage, errs: []error{err}}
		}
	}
	ropts := tactics.RunOptions{}
	for _, l := range o.labels {
		k, v, ok := strings.Cut(l, "=")
		k = strings.TrimSpace(k)
		switch _, twice := ropts.Labels[k]; {
		case !ok || k == "":
			return usageErrorf(cmd, "--label %q: want KEY=VALUE, such as --label variant=b", l)
		case twice:
			return usageErrorf(cmd, "--label %s is given twice: give each key once", k)
		case o.tasksFile != "" && (k == labelTaskID || k == labelTaskLine):
			return usageErrorf(cmd, "--label %s: with --tasks, every run is labelled %s (its line) and %s (its id, if the line has one): choose another key", k, labelTaskLine, labelTaskID)
		}
		if ropts.Labels == nil {
			ropts.Labels = map[string]string{}
		}
		ropts.Labels[k] = v
	}
	if cmd.Flag("log-dir").Changed {
		ropts.LogDir = o.logDir
	}
	root := ropts.LogDir
	if root == "" {
		root = cfg.LogDir
	}
	if root == "" {
		root = logs.DefaultRoot
	}
	if hasTasks {
		return runMany(cmd, o, cfg, tasks, ropts, root)
	}
	return runOne(cmd, o, cfg, ropts)
}

func runOne(cmd *cobra.Command, o *runCmdOptions, cfg *config.Config, ropts tactics.RunOptions) error {
	ctx := cmd.Context()
	ropts.Retrying = retryNotice(cmd.ErrOrStderr())
	res, err := tactics.Run(ctx, cfg, o.task, ropts)
	var ce *tactics.ConfigError
	if errors.As(err, &ce) {
		return configErr(err)
	}
	if res == nil {
		return err
	}
	// err, with a result, is the run's log that could not be finished:
	// the status is the tactic's, and the output says the log is not whole.
	out := newOutput(cmd)
	if o.format.value == "json" {
		if werr := writeJSON(out, toResultJSON(res, "")); werr != nil {
			return werr
		}
	} else {
		if res.Status == logs.StatusOK {
			writeResultText(out, res.Result)
		}
		status := string(res.Status)
		if res.LogError != "" {
			status += " (log unfinished)"
		}
		fmt.Fprintf(out, "run %s  status %s  tokens %d/%d  cost %s\n", res.RunID, status,
			res.Totals.Cost.InputTokens, res.Totals.Cost.OutputTokens, usd(res.Totals.Cost.USD))
	}
	if ferr := out.flush(); ferr != nil {
		return ferr
	}
	if err != nil { // the run ended but its log could not be finished
		return err
	}
	switch res.Status {
	case logs.StatusCancelled:
		return &exitError{code: ExitError, errs: []error{fmt.Errorf("cancelled; log at %s", res.Dir)}}
	case logs.StatusFailed:
		// A panicking tactic's stack stays in the log (run_end.error):
		// joined into one line it would bury what panicked, and where.
		msg, _, stack := strings.Cut(res.Error, "\ngoroutine ")
		if stack {
			msg += " (its stack is run_end.error in the log)"
		}
		return &exitError{code: ExitError, errs: []error{fmt.Errorf("run %s failed: %s; log at %s", res.RunID, msg, res.Dir)}}
	}
	return nil
}

// The labels lllm run --tasks gives each task's run.
const (
	labelTaskLine = "task_line" // the task's line in the tasks file, from 1
	labelTaskID   = "task_id"   // the task's "id", when its line has one
)

func runMany(cmd *cobra.Command, o *runCmdOptions, cfg *config.Config, tasks []taskLine, ropts tactics.RunOptions, root string) error {
	ctx := cmd.Context()
	texts := make([]string, len(tasks))
	labels := make([]map[string]string, len(tasks))
	for i, t := range tasks {
		texts[i] = t.task
		labels[i] = map[string]string{labelTaskLine: strconv.Itoa(t.line)}
		if t.id != "" {
			labels[i][labelTaskID] = t.id
		}
	}
	bopts := tactics.BatchOptions{RunOptions: ropts, Concurrency: o.concurrency, KeepGoing: o.keepGoing, Labels: labels}
	var bar *progressbar.ProgressBar
	if w := cmd.ErrOrStderr(); len(tasks) > 1 && isTerminal(w) {
		bar = progressbar.NewOptions(len(tasks),
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("running"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100_000_000), // 100ms
		)
		bopts.Progress = func(done, total int, last *tactics.Result) { _ = bar.Set(done) }
	}
	results, err := tactics.Batch(ctx, cfg, texts, bopts)
	if bar != nil {
		_ = bar.Finish()
		_ = bar.Clear()
	}
	var ce *tactics.ConfigError
	if errors.As(err, &ce) {
		return configErr(err)
	}
	if results == nil {
		return err
	}

	out := newOutput(cmd)
	count := map[logs.Status]int{}
	var totalIn, totalOut int
	var cost float64
	for _, r := range results {
		count[r.Status]++
		totalIn += r.Totals.Cost.InputTokens
		totalOut += r.Totals.Cost.OutputTokens
		cost += r.Totals.Cost.USD
	}
	if o.format.value == "json" {
		list := make([]resultJSON, len(results))
		for i, r := range results {
			list[i] = toResultJSON(r, tasks[i].id)
		}
		if werr := writeJSON(out, list); werr != nil {
			return werr
		}
	} else {
		width := len(fmt.Sprint(len(results)))
		for i, r := range results {
			id := r.RunID
			if id == "" {
				id = "-"
			}
			status := string(r.Status)
			if r.LogError != "" {
				status += " (log unfinished)"
			}
			fmt.Fprintf(out, "%*d/%d  run %s  status %s  tokens %d/%d  cost %s  ", width, i+1, len(results), id, status,
				r.Totals.Cost.InputTokens, r.Totals.Cost.OutputTokens, usd(r.Totals.Cost.USD))
			if r.Status == logs.StatusOK {
				fmt.Fprintln(out, truncateText(compactJSON(r.Result), 80))
			} else {
				fmt.Fprintln(out, "error: "+truncateText(oneLine(r.Error), 80))
			}
		}
		fmt.Fprintf(out, "%d runs: %s  tokens %d/%d  cost %s  log %s\n", len(results), statusCounts(count), totalIn, totalOut, usd(cost), root)
	}
	if ferr := out.flush(); ferr != nil {
		return ferr
	}
	if err != nil {
		return err
	}
	switch {
	case ctx.Err() != nil:
		return &exitError{code: ExitError, errs: []error{fmt.Errorf("cancelled; log at %s", root)}}
	case count[logs.StatusFailed] > 0 && !o.keepGoing && count[logs.StatusCancelled] > 0:
		return &exitError{code: ExitError, errs: []error{fmt.Errorf("%d of %d runs failed and the other %d were cancelled (--keep-going runs every task); log at %s",
			count[logs.StatusFailed], len(results), count[logs.StatusCancelled], root)}}
	case count[logs.StatusFailed] > 0 || count[logs.StatusCancelled] > 0:
		return &exitError{code: ExitError, errs: []error{fmt.Errorf("%d of %d runs did not succeed (%s); log at %s",
			len(results)-count[logs.StatusOK], len(results), statusCounts(count), root)}}
	}
	return nil
}

func statusCounts(count map[logs.Status]int) string {
	var parts []string
	for _, s := range []logs.Status{logs.StatusOK, logs.StatusFailed, logs.StatusCancelled} {
		if count[s] > 0 || s == logs.StatusOK {
			parts = append(parts, fmt.Sprintf("%d %s", count[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// resultJSON is one run in the output of run -o json, in the run log's
// vocabulary: its cost is the log's cost object (run_end.totals.cost) and
// its duration is in milliseconds.
type resultJSON struct {
	TaskID     string          `json:"task_id,omitempty"` // the task's id in the tasks file
	RunID      string          `json:"run_id"`
	Dir        string          `json:"dir,omitempty"`
	Status     string          `json:"status"`
	Result     json.RawMessage `json:"result"`
	Error      string          `json:"error,omitempty"`
	Cost       dialog.Cost     `json:"cost"`
	DurationMS float64         `json:"duration_ms"`
	// LogError is why the run's log could not be finished (a full disk,
	// a deleted log dir): the run ended, but its log is not whole.
	LogError string `json:"log_error,omitempty"`
}

func toResultJSON(r *tactics.Result, taskID string) resultJSON {
	return resultJSON{TaskID: taskID, RunID: r.RunID, Dir: r.Dir, Status: string(r.Status), Result: r.Result, Error: r.Error,
		Cost: r.Totals.Cost, DurationMS: r.Totals.DurationMS, LogError: r.LogError}
}

// writeResultText prints a result: a JSON string as its text, anything
// else as indented JSON.
func writeResultText(w io.Writer, result json.RawMessage) {
	if len(result) == 0 {
		return
	}
	var s string
	if json.Unmarshal(result, &s) == nil {
		fmt.Fprintln(w, strings.TrimRight(s, "\n"))
		return
	}
	var buf bytes.Buffer
	if json.Indent(&buf, result, "", "  ") != nil {
		buf.Reset()
		buf.Write(result)
	}
	fmt.Fprintln(w, buf.String())
}

func truncateText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// isTerminal reports whether stream (stdin, stdout or stderr) is a
// terminal, which a person reads or types into.
func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// taskLine is one task of a tasks file.
type taskLine struct {
	id   string
	task string
	line int // in the tasks file, from 1
}

// maxTaskLine bounds one line of a tasks file.
const maxTaskLine = 64 << 20

// readTasks reads a JSONL tasks file: each non-blank line an object with
// a string "task" or "input", and optionally an "id". A bad line is an
// error naming the file and line.
func readTasks(path string) ([]taskLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tasks file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxTaskLine)
	var tasks []taskLine
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s (want {\"task\": \"...\"} or {\"id\": ..., \"input\": \"...\"})", path, n, fmt.Sprintf(format, args...))
		}
		if !utf8.Valid(line) {
			// JSON decoding would make it U+FFFD: the tactic would run
			// on another task than the file's, and nothing would say so.
			return nil, bad("not UTF-8 text: save the file as UTF-8")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil || obj == nil {
			if err == nil {
				err = errors.New("null")
			}
			return nil, bad("not a JSON object: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		key := "task"
		raw, hasTask := obj["task"]
		if in, hasInput := obj["input"]; hasInput {
			if hasTask {
				return nil, bad("has both \"task\" and \"input\"")
			}
			key, raw = "input", in
		} else if !hasTask {
			return nil, bad("no \"task\" or \"input\"")
		}
		t := taskLine{line: n}
		if err := json.Unmarshal(raw, &t.task); err != nil {
			return nil, bad("%q is %s, not a string", key, truncateText(string(raw), 40))
		}
		if id, ok := obj["id"]; ok {
			if json.Unmarshal(id, &t.id) != nil {
				t.id = compactJSON(id)
			}
		}
		tasks = append(tasks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tasks file %s: %w", path, err)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("tasks file %s has no tasks (want one {\"task\": \"...\"} per line)", path)
	}
	return tasks, nil
}

// retryNotice returns what tells w of each model call an agent is about
// to make again, so that a run waiting out a rate limit or a server that
// does not answer does not look stuck. Its calls may come from several
// goroutines.
func retryNotice(w io.Writer) func(tactics.Retry) {
	var mu sync.Mutex
	return func(r tactics.Retry) {
		again := "again now"
		if r.Wait > 0 {
			again = "again in " + r.Wait.Round(100*time.Millisecond).String()
		}
		tries := "tries"
		if r.Left == 1 {
			tries = "try"
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "lllm: %s: attempt %d failed: %s; trying %s (%d %s left)\n",
			tactics.AgentLabel(r.Agent), r.Attempt, oneLine(r.Err.Error()), again, r.Left, tries)
	}
}
