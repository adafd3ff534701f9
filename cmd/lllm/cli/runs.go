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

// statusUnreadable is the status of a run whose log cannot be read.
const statusUnreadable = "unreadable"

type runsOptions struct {
	*options
	format *enumValue
}

func newRunsCmd(opts *options) *cobra.Command {
	o := &runsOptions{options: opts, format: newEnum("table", "table", "json")}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List the runs under the log root",
		Long: `List every run under the log root (--log-dir), oldest first, newest last.

For each run: its id, tactic and status (ok, failed or cancelled from its
run_end record; without one, running while a process still writes its log,
or interrupted when none does: the process was killed or crashed),
when it started (local time), how long it took, and, once it has ended, the
dialogs, model calls, tokens and dollars it spent. A run whose log cannot be
read is listed as "unreadable"; -o json gives the reason.

Only the first and last records of each log are read, so listing is fast
whatever the size of the runs.`,
		Example: `  # The runs under ./logs
  lllm runs

  # Under another log root, as JSON
  lllm runs --log-dir /data/logs -o json | jq -r '.[] | select(.status == "failed") | .id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRuns(cmd, o)
		},
	}
	addFormatFlag(cmd, "output", o.format)
	return cmd
}

// runJSON is one run in the output of runs -o json.
type runJSON struct {
	ID         string       `json:"id"`
	Dir        string       `json:"dir"`
	Tactic     string       `json:"tactic,omitempty"`
	Status     string       `json:"status"`
	Started    *time.Time   `json:"started,omitempty"`
	Ended      *time.Time   `json:"ended,omitempty"`
	DurationMS *float64     `json:"duration_ms,omitempty"`
	Totals     *logs.Totals `json:"totals,omitempty"`
	// Failure is the error the run ended with, if it failed.
	Failure string `json:"failure,omitempty"`
	// Error is why the run's log could not be read, if it could not.
	Error  string            `json:"error,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

func runRuns(cmd *cobra.Command, o *runsOptions) error {
	sums, err := logs.List(o.logDir)
	if err != nil {
		return err
	}
	out := newOutput(cmd)
	if len(sums) == 0 {
		why := ""
		if _, err := os.Stat(o.logDir); errors.Is(err, fs.ErrNotExist) {
			why = " (it does not exist; runs go under --log-dir, ./logs by default)"
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "no runs under %s%s\n", o.logDir, why)
		if o.format.value == "json" {
			fmt.Fprintln(out, "[]")
		}
		return out.flush()
	}
	if o.format.value == "json" {
		runs := make([]runJSON, 0, len(sums))
		for _, s := range sums {
			runs = append(runs, toRunJSON(s))
		}
		if err := writeJSON(out, runs); err != nil {
			return err
		}
		return out.flush()
	}
	for _, s := range sums {
		if s.Err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "lllm: warning: run %s is unreadable: %s\n", s.ID, oneLine(s.Err.Error()))
		}
	}
	if err := writeRunsTable(out, sums); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return out.flush()
}

func toRunJSON(s logs.Summary) runJSON {
	r := runJSON{ID: s.ID, Dir: s.Dir, Status: runStatus(s)}
	if s.Err != nil {
		r.Error = oneLine(s.Err.Error())
	}
	if s.Start != nil {
		r.Tactic, r.Labels = s.Start.Tactic, s.Start.Labels
	}
	if !s.Started.IsZero() {
		t := s.Started
		r.Started = &t
	}
	if s.End != nil {
		t, ms := s.Ended, float64(s.Ended.Sub(s.Started))/float64(time.Millisecond)
		totals := s.End.Totals
		r.Ended, r.DurationMS, r.Totals, r.Failure = &t, &ms, &totals, s.End.Error
	}
	return r
}

func runStatus(s logs.Summary) string {
	if s.Err != nil {
		return statusUnreadable
	}
	return string(s.Status())
}

func writeRunsTable(w io.Writer, sums []logs.Summary) error {
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
		if s.Start != nil {
			row[9] = taskCell(s.Start)
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
	task := string(st.Task)
	var text string
	if json.Unmarshal(st.Task, &text) == nil {
		task = text
	}
	if task = strings.Join(strings.Fields(task), " "); task != "" {
		if r := []rune(task); len(r) > 40 {
			task = string(r[:39]) + "…"
		}
		parts = append(parts, task)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
