package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/logs"
)

// runStatuses are the values of lllm runs --status: a run's statuses, and
// unreadable.
var runStatuses = []string{
	string(logs.StatusOK), string(logs.StatusFailed), string(logs.StatusCancelled),
	string(logs.StatusRunning), string(logs.StatusInterrupted), string(logs.StatusUnreadable),
}

type runsOptions struct {
	*options
	format   *enumValue
	statuses []string
	tactic   string
	labels   []string
	since    string
	limit    int
}

func newRunsCmd(opts *options) *cobra.Command {
	// table is what -o text was called before it matched the other commands.
	o := &runsOptions{options: opts, format: newEnum("text", "text", "json").alias("table", "text")}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the runs under the log root",
		Long: `List the runs under the log root (--log-dir), oldest first, newest last.

For each run: its id, tactic and status (ok, failed or cancelled from its
run_end record; without one, running while a process still writes its log,
or interrupted when none does: the process was killed or crashed),
when it started (local time), how long it took, and, once it has ended, the
dialogs, model calls, tokens and dollars it spent. A run whose log cannot be
read is listed as "unreadable"; -o json gives the reason.

Filters narrow the list to the runs that pass every one given:
  --status S     its status is S: ok, failed, cancelled, running,
                 interrupted or unreadable (repeat the flag, or separate
                 with commas, for any of several)
  --tactic NAME  its tactic is NAME (a bare NAME also matches PKG:NAME)
  --label K=V    it has the label K with the value V; a bare K, with any
                 value (repeatable: it must have them all)
  --since WHEN   it started at or after WHEN: a duration before now (2h,
                 90m, 7d), or a date or time: 2026-11-20 or
                 2026-11-20 15:04 in local time, or RFC 3339
                 (2026-11-20T15:04:05Z)
  -n, --limit N  only the newest N runs that pass, still listed oldest
                 first, newest last
A run whose log cannot be read passes only --status unreadable and -n.
When no run passes, nothing is listed and a note on stderr says how many
runs were filtered out; with -o json, an empty array and no note.

-o text, the default (table is another name for it), prints a table;
-o json prints an array of runs, each {run_id, dir, tactic, status,
started, ended, duration_ms, totals} as far as its log tells: started and
ended in RFC 3339, totals those of its run_end record, with their cost
object. A run also has its labels when it has some, and error when it
failed (the error it ended with, run_end.error) or is unreadable (why its
log could not be read).

Only the first and last records of each log are read, the last only for
runs that pass --tactic, --label and --since, so listing is fast whatever
the size of the runs.`,
		Example: `  # The runs under ./logs
  lllm runs

  # The last 10 runs
  lllm runs -n 10

  # The runs that failed or were interrupted in the last two days
  lllm runs --status failed,interrupted --since 48h

  # The runs of one tactic on one model since a date
  lllm runs --tactic best_of_n --label model=gpt-4o --since 2026-11-20

  # The runs of batches (lllm run --tasks labels each with its task_line), as JSON
  lllm runs --label task_line -o json

  # The ids of the failed runs under another log root
  lllm runs --log-dir /data/logs --status failed -o json | jq -r '.[].run_id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRuns(cmd, o)
		},
	}
	addFormatFlag(cmd, "output", o.format)
	fs := cmd.Flags()
	fs.StringSliceVar(&o.statuses, "status", nil,
		"only runs with the `STATUS` "+strings.Join(runStatuses[:len(runStatuses)-1], ", ")+" or "+runStatuses[len(runStatuses)-1]+" (repeatable, or comma-separated, for any of several)")
	fs.StringVar(&o.tactic, "tactic", "", "only runs of the tactic `NAME` (a bare NAME also matches PKG:NAME)")
	fs.StringArrayVar(&o.labels, "label", nil, "only runs with the label `KEY=VALUE`, or with KEY at all (repeatable: all must match)")
	fs.StringVar(&o.since, "since", "", "only runs started since `WHEN`: a duration before now (2h, 7d) or a date or time (2026-11-20, 2026-11-20 15:04, RFC 3339)")
	fs.IntVarP(&o.limit, "limit", "n", 0, "only the newest `N` runs that match, still listed oldest first (0: all)")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(runStatuses, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("tactic", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("label", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("since", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("limit", cobra.NoFileCompletions)
	return cmd
}

// runsFilter is what the filter flags of lllm runs ask for; its zero
// value lets every run through.
type runsFilter struct {
	statuses map[string]bool // nil: any status
	tactic   string          // "": any tactic
	labels   []labelMatch    // all must match
	since    time.Time       // zero: any start
	limit    int             // 0: all
}

// labelMatch is one --label: a key, and the value it must have if any.
type labelMatch struct {
	key, value string
	anyValue   bool
}

// matchStart reports whether a run passes the filters that its first
// record decides: tactic, labels and start time.
func (f *runsFilter) matchStart(s logs.Summary) bool {
	if f.tactic == "" && len(f.labels) == 0 && f.since.IsZero() {
		return true
	}
	if s.Err != nil || s.Start == nil {
		return false // nothing known to match on
	}
	if f.tactic != "" && !tacticMatches(s.Start.Tactic, f.tactic) {
		return false
	}
	for _, l := range f.labels {
		v, ok := s.Start.Labels[l.key]
		if !ok || !l.anyValue && v != l.value {
			return false
		}
	}
	return f.since.IsZero() || !s.Started.IsZero() && !s.Started.Before(f.since)
}

// matchStatus reports whether a whole summary passes --status.
func (f *runsFilter) matchStatus(s logs.Summary) bool {
	return f.statuses == nil || f.statuses[runStatus(s)]
}

// tacticMatches reports whether the tactic a run recorded is want: the
// same name, or want without a package and got that name in a package
// (want probe, got mylab:probe).
func tacticMatches(got, want string) bool {
	return got == want || !strings.Contains(want, ":") && strings.HasSuffix(got, ":"+want)
}

// parseRunsFilter checks the filter flags, as usage errors naming the flag
// and what it accepts.
func parseRunsFilter(cmd *cobra.Command, o *runsOptions, now time.Time) (*runsFilter, error) {
	f := &runsFilter{tactic: o.tactic, limit: o.limit}
	for _, st := range o.statuses {
		st = strings.TrimSpace(st)
		if !slices.Contains(runStatuses, st) {
			return nil, usageErrorf(cmd, "--status %q: want %s or %s (repeatable, or comma-separated)",
				st, strings.Join(runStatuses[:len(runStatuses)-1], ", "), runStatuses[len(runStatuses)-1])
		}
		if f.statuses == nil {
			f.statuses = map[string]bool{}
		}
		f.statuses[st] = true
	}
	for _, l := range o.labels {
		k, v, hasValue := strings.Cut(l, "=")
		if k = strings.TrimSpace(k); k == "" {
			return nil, usageErrorf(cmd, "--label %q: want KEY=VALUE, or KEY for runs with that label at all, such as --label model=gpt-4o", l)
		}
		f.labels = append(f.labels, labelMatch{key: k, value: v, anyValue: !hasValue})
	}
	if o.since != "" {
		t, err := parseSince(o.since, now)
		if err != nil {
			return nil, usageErrorf(cmd, "--since %q: %v", o.since, err)
		}
		f.since = t
	}
	if o.limit < 0 {
		return nil, usageErrorf(cmd, "--limit %d: want a number of runs, 1 or more (0, the default, lists them all)", o.limit)
	}
	return f, nil
}

// sinceLayouts are the dates and times --since takes besides durations;
// those without a zone are local time, as lllm runs shows them.
var sinceLayouts = []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"}

// parseSince is the time --since means: now less a duration, or a date or
// time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.ParseFloat(n, 64); err == nil && days < 1e5 {
			if days < 0 {
				return time.Time{}, errors.New("want a duration before now, such as 2h or 7d, not a negative one")
			}
			return now.Add(-time.Duration(days * 24 * float64(time.Hour))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, errors.New("want a duration before now, such as 2h or 7d, not a negative one")
		}
		return now.Add(-d), nil
	}
	for _, layout := range sinceLayouts {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("want a duration before now (2h, 90m, 7d), or a date or time: " +
		"2026-11-20 or 2026-11-20 15:04 in local time, or RFC 3339 (2026-11-20T15:04:05Z)")
}

func runRuns(cmd *cobra.Command, o *runsOptions) error {
	filter, err := parseRunsFilter(cmd, o, time.Now())
	if err != nil {
		return err
	}
	total := 0
	tasks := map[string]string{} // the TASK cell of each run, for -o text
	sums, err := logs.ListFunc(o.logDir, func(s logs.Summary) bool {
		total++
		if !filter.matchStart(s) {
			return false
		}
		if st := s.Start; st != nil {
			// A sweep's runs/ holds a run per sample: keep of each
			// run_start only what the listing shows, not its config,
			// prompts and task (100 KB each in some sweeps).
			if o.format.value != "json" {
				tasks[s.ID] = taskCell(st)
			}
			*st = logs.RunStart{Tactic: st.Tactic, Labels: st.Labels}
		}
		return true
	})
	if err != nil {
		return err
	}
	out := newOutput(cmd)
	if total == 0 {
		why := ""
		if _, err := os.Stat(o.logDir); errors.Is(err, fs.ErrNotExist) {
			why = "it does not exist; runs go under --log-dir, ./logs by default"
			if hint := insideLogRoot(cmd, o.options); hint != "" {
				why += "; " + hint
			}
			why = " (" + why + ")"
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "no runs under %s%s\n", o.logDir, why)
		if o.format.value == "json" {
			fmt.Fprintln(out, "[]")
		}
		return out.flush()
	}
	if filter.statuses != nil {
		sums = slices.DeleteFunc(sums, func(s logs.Summary) bool { return !filter.matchStatus(s) })
	}
	if filter.limit > 0 && len(sums) > filter.limit {
		sums = sums[len(sums)-filter.limit:]
	}
	if o.format.value == "json" {
		runs := make([]logs.RunInfo, 0, len(sums))
		for _, s := range sums {
			runs = append(runs, runInfo(s))
		}
		if err := writeJSON(out, runs); err != nil {
			return err
		}
		return out.flush()
	}
	if len(sums) == 0 {
		what := fmt.Sprintf("all %d runs", total)
		if total == 1 {
			what = "the one run"
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "no runs match the filters: %s under %s filtered out\n", what, o.logDir)
		return out.flush()
	}
	for _, s := range sums {
		if s.Err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "lllm: warning: run %s is unreadable: %s\n", s.ID, oneLine(s.Err.Error()))
		}
	}
	if err := writeRunsTable(out, sums, tasks); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return out.flush()
}

// runInfo is s as runs -o json shows it: its RunInfo, the reason an
// unreadable log cannot be read on one line.
func runInfo(s logs.Summary) logs.RunInfo {
	info := s.Info()
	if s.Err != nil {
		info.Error = oneLine(info.Error)
	}
	return info
}

func runStatus(s logs.Summary) string { return string(s.Status()) }

// writeRunsTable writes the table of sums, with tasks as their TASK cells
// by run id.
func writeRunsTable(w io.Writer, sums []logs.Summary, tasks map[string]string) error {
	var buf bytes.Buffer
	table := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Lines:      tw.LinesNone,
				Separators: tw.SeparatorsNone,
			},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "   ", Overwrite: true}),
		tablewriter.WithTrimSpace(tw.Off),
	)
	table.Header("ID", "TACTIC", "STATUS", "STARTED", "DURATION", "DIALOGS", "MODEL CALLS", "TOKENS", "COST", "TASK")
	rows := make([][]string, 0, len(sums))
	for _, s := range sums {
		row := []string{s.ID, "-", runStatus(s), "-", "-", "-", "-", "-", "-", "-"}
		if s.Start != nil && s.Start.Tactic != "" {
			row[1] = s.Start.Tactic
		}
		if task, ok := tasks[s.ID]; ok {
			row[9] = task
		}
		if !s.Started.IsZero() {
			row[3] = s.Started.Local().Format("2006-01-02 15:04")
		}
		if s.End != nil {
			t := s.End.Totals
			row[4] = duration(s.Ended.Sub(s.Started))
			row[5] = strconv.Itoa(t.Dialogs)
			row[6] = strconv.Itoa(t.ModelCalls)
			row[7] = strconv.Itoa(t.Cost.Total())
			row[8] = usd(t.Cost.USD)
		}
		// The table measures its cells, reading escape sequences as
		// colours: escape them first (termSafe would, after the layout).
		for i := range row {
			row[i] = escapeControls(row[i])
		}
		rows = append(rows, row)
	}
	if err := table.Bulk(rows); err != nil {
		return err
	}
	if err := table.Render(); err != nil {
		return err
	}
	// The padding that separates columns trails every line: drop it.
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// taskCell is a run's labels, sorted, then the start of its task, on one
// line: what tells runs of one config apart.
func taskCell(st *logs.RunStart) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(st.Labels)) {
		parts = append(parts, k+"="+st.Labels[k])
	}
	if task := taskPreview(st.Task); task != "" {
		parts = append(parts, task)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// previewRunes is how much of a task the TASK column shows.
const previewRunes = 40

// taskPreview is the start of a task on one line: its text if it is a
// JSON string, else its JSON, with every run of white space made one
// space, cut to previewRunes runes ending in "…" when longer. A long
// task (100 KB in some sweeps) is previewed from its start only: from a
// growing prefix, until the prefix decides the preview.
func taskPreview(task json.RawMessage) string {
	// A prefix decides the first previewRunes+1 runes of the preview when
	// it gives more than that: only its last few runes may differ from
	// the whole task's (a rune or an escape cut in two, a space that ends
	// it), and a few more than needed are asked for.
	const enough = previewRunes + 8
	for n := 4 << 10; ; n *= 4 {
		if n >= len(task) {
			return preview(taskText(task, len(task)))
		}
		if r := []rune(taskText(task, n)); len(r) >= enough {
			return preview(string(r))
		}
	}
}

// taskText is the start of task's text, from its first n bytes, on one
// line.
func taskText(task json.RawMessage, n int) string {
	text := string(task[:n])
	if n == len(task) {
		var s string
		if json.Unmarshal(task, &s) == nil {
			text = s
		}
	} else if bytes.HasPrefix(bytes.TrimLeft(task, " \t\r\n"), []byte{'"'}) {
		// Close the string where it is cut, backing off an escape cut in
		// two.
		for i := n; i > max(n-12, 1); i-- {
			var s string
			if json.Unmarshal(append(task[:i:i], '"'), &s) == nil {
				text = s
				break
			}
		}
	}
	return strings.Join(strings.Fields(text), " ")
}

// preview cuts a task on one line to previewRunes runes.
func preview(task string) string {
	if r := []rune(task); len(r) > previewRunes {
		return string(r[:previewRunes-1]) + "…"
	}
	return task
}
