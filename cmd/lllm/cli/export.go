package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/export"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/internal/atomicfile"
	"github.com/lllm-go/lllm/internal/suggest"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/sweep"
)

type exportOptions struct {
	*options
	runs              bool
	filter            runsOptions // the filters of lllm runs, for --runs
	sweepDir          string
	where             []string
	dialogs           []string
	format            *enumValue
	metadata          bool
	reasoning         bool
	out               string
	includeUnfinished bool
	includeReplays    bool
}

// exportFilterFlags are the flags of lllm runs that select runs for --runs.
var exportFilterFlags = []string{"status", "tactic", "label", "since", "limit"}

func newExportCmd(opts *options) *cobra.Command {
	formats := make([]string, len(export.Formats))
	for i, f := range export.Formats {
		formats[i] = string(f)
	}
	o := &exportOptions{options: opts, format: newEnum(string(export.OpenAI), formats...)}
	o.filter.options = opts
	cmd := &cobra.Command{
		Use:   "export [RUN...]",
		Short: "Write the dialogs of runs as training data, one JSON line each",
		Long: `Write recorded dialogs as training data: one JSON line per dialog, for
supervised fine-tuning, rejection sampling or distillation.

What is read, one of:
  RUN...         runs, as the other commands take them: a run id, a unique
                 prefix or suffix of one, a run directory, or "latest"
  --runs         the runs under the log root that pass the filters of
                 'lllm runs' (--status, --tactic, --label, --since, -n);
                 giving one of those filters implies --runs
  --sweep DIR    the samples of a sweep directory that 'lllm sweep report'
                 counts and whose run succeeded, or with --where only those
                 whose scores pass: SCORER=VALUE, SCORER>=VALUE (also >, <=,
                 < and !=); repeat --where for samples that pass every one

Which dialogs: every dialog of a run that ends with an assistant reply,
except the working copies of an agent's call loop (ALIAS#N: the attempts of
each turn, whose kept reply is in ALIAS, and the failed ones). --dialog
OWNER/ALIAS (repeatable; wildcards as in solver/try*; an ALIAS alone for
any agent's) keeps only the dialogs it names, and names a working copy
when it has '#'. Each line holds the whole dialog, system prompt first,
the messages a fork shares with its parent included, and before each
reply the agent kept, the tool calls and tool results that led to it (the
call loop made them in the working copy). A reply the prompt's parser
refused, and the prompt asking to fix it, are left out.

Formats (--format):
  openai     {"messages": [...], "tools": [...]}, the OpenAI chat
             fine-tuning line: roles system, user, assistant and tool; tool
             calls as {"id", "type": "function", "function": {"name",
             "arguments"}} with the arguments a JSON string, and each tool
             result's "tool_call_id" (a call logged without an id, or with
             one an earlier call has, gets "call_N" by its position, and
             its result the same); images as image_url content parts
             (data URLs); "tools" when the model calls declared some
  sharegpt   {"conversations": [{"from", "value"}]}, from system, human,
             gpt, function_call (the call as JSON text) or observation;
             "tools" as JSON text; images as "<image>" in the human turn
             and their URLs in "images"
  lllm       {"messages", "declarations", "metadata"}: the run log's own
             message objects and declarations records, with the metadata
             below always

--reasoning puts each reply's reasoning (Claude's thinking, Gemini's thought
summaries, reasoning_content), where the provider returned it, in the line:
as the assistant message's "reasoning_content" (openai), or before the gpt
turn's text in <think></think> (sharegpt). The lllm format always has it.

--metadata adds a "metadata" object to each line: run_id, dialog (its id),
owner, alias, tactic, status and labels, and for a sweep's samples the
sweep's name, the cell's hash (cell), its settings, row, repeat and
scores, as samples.jsonl has them.

Lines go to stdout, or with -O FILE into FILE, written whole or not at all
(a temporary file renamed into place). A summary line on stderr says how
many dialogs were exported from how many runs, and what was skipped and
why: runs still running or interrupted (no run_end; --include-unfinished
exports them), with --runs the replays of other runs (lllm replay's runs,
labelled replay_of: their dialogs repeat the run they replay, so they
would be duplicates; --include-replays, or a --label replay_of filter,
exports them), runs whose log cannot be read, samples without a run log,
outdated samples (made before their row, the repeats or the scorers of the
sweep changed), dialogs a format cannot hold (an image whose bytes the log
lacks).`,
		Example: `  # The dialogs of the latest run, as OpenAI fine-tuning lines
  lllm export latest -O train.jsonl

  # Every react run that succeeded in the last week, with where each line comes from
  lllm export --runs --status ok --tactic react --since 7d --metadata -O react.jsonl

  # Rejection sampling: the samples of a sweep whose numeric score is 1
  lllm export --sweep logs/sweeps/example --where numeric=1 -O passed.jsonl

  # Only the judge's dialog, in the ShareGPT format
  lllm export latest --dialog judge/main --format sharegpt

  # The log's own messages of the runs labelled model=gpt-4o
  lllm export --label model=gpt-4o --format lllm | jq .metadata.run_id`,
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeRuns(opts, 1<<30),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(cmd, o, args)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.runs, "runs", false, "export the runs under the log root that pass the filters --status, --tactic, --label, --since and -n")
	fs.StringSliceVar(&o.filter.statuses, "status", nil, "with --runs: only runs with the `STATUS` "+strings.Join(runStatuses[:len(runStatuses)-1], ", ")+" or "+runStatuses[len(runStatuses)-1]+" (repeatable, or comma-separated)")
	fs.StringVar(&o.filter.tactic, "tactic", "", "with --runs: only runs of the tactic `NAME`")
	fs.StringArrayVar(&o.filter.labels, "label", nil, "with --runs: only runs with the label `KEY=VALUE`, or with KEY at all (repeatable)")
	fs.StringVar(&o.filter.since, "since", "", "with --runs: only runs started since `WHEN`: a duration before now (2h, 7d) or a date or time")
	fs.IntVarP(&o.filter.limit, "limit", "n", 0, "with --runs: only the newest `N` runs that pass (0: all)")
	fs.StringVar(&o.sweepDir, "sweep", "", "export the samples of the sweep directory `DIR` (such as logs/sweeps/example)")
	fs.StringArrayVar(&o.where, "where", nil, "with --sweep: only samples whose score passes `SCORER=VALUE`, SCORER>=VALUE, ... (repeatable: all must pass)")
	fs.StringArrayVar(&o.dialogs, "dialog", nil, "only the dialogs named `OWNER/ALIAS` (wildcards allowed; repeatable)")
	fs.Var(o.format, "format", "the training-data `FORMAT`: "+strings.Join(formats, ", "))
	fs.BoolVar(&o.reasoning, "reasoning", false, "put each reply's reasoning in the line: reasoning_content (openai), <think>…</think> before the text (sharegpt)")
	fs.BoolVar(&o.metadata, "metadata", false, "add a metadata object to each line: run_id, dialog, owner, alias, tactic, and a sample's cell, row, repeat and scores")
	fs.StringVarP(&o.out, "out", "O", "", "write the lines into `FILE`, whole or not at all, instead of stdout")
	fs.BoolVar(&o.includeUnfinished, "include-unfinished", false, "also export runs without a run_end (still running, or interrupted)")
	fs.BoolVar(&o.includeReplays, "include-replays", false, "with --runs: also export the runs of lllm replay (labelled replay_of), whose dialogs repeat the runs they replay")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(runStatuses, cobra.ShellCompDirectiveNoFileComp))
	for _, name := range []string{"tactic", "label", "since", "limit", "where", "dialog"} {
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
	_ = cmd.MarkFlagDirname("sweep")
	_ = cmd.MarkFlagFilename("out", "jsonl")
	return cmd
}

func runExport(cmd *cobra.Command, o *exportOptions, args []string) error {
	var filters []string
	for _, name := range exportFilterFlags {
		if cmd.Flags().Changed(name) {
			filters = append(filters, "--"+name)
		}
	}
	runsMode := o.runs || len(filters) > 0
	switch {
	case len(args) == 0 && !runsMode && o.sweepDir == "":
		return usageErrorf(cmd, "export needs what to export: RUNs (a run id, a unique prefix or suffix of one, a run directory, or \"latest\"), --runs (with the filters of 'lllm runs') or --sweep DIR")
	case len(args) > 0 && len(filters) > 0:
		return usageErrorf(cmd, "%s selects runs for --runs, not among the RUNs given: give RUNs or filters, not both", filters[0])
	case len(args) > 0 && o.runs:
		return usageErrorf(cmd, "give RUNs or --runs, not both")
	case o.sweepDir != "" && (len(args) > 0 || runsMode):
		return usageErrorf(cmd, "--sweep exports the runs of a sweep's samples: give RUNs, --runs or --sweep, one of them")
	case len(o.where) > 0 && o.sweepDir == "":
		return usageErrorf(cmd, "--where filters the samples of a sweep by their scores: add --sweep DIR")
	}
	for _, ref := range args {
		if err := runGiven(cmd, ref, ""); err != nil {
			return err
		}
	}
	var patterns []export.Pattern
	for _, s := range o.dialogs {
		p, err := export.ParsePattern(s)
		if err != nil {
			return usageErrorf(cmd, "--dialog: %v", err)
		}
		patterns = append(patterns, p)
	}
	var where []scoreCond
	for _, s := range o.where {
		c, err := parseScoreCond(s)
		if err != nil {
			return usageErrorf(cmd, "--where %q: %v", s, err)
		}
		where = append(where, c)
	}
	e := &exporter{cmd: cmd, ctx: cmd.Context(), format: export.Format(o.format.value), patterns: patterns,
		metadata: o.metadata || o.format.value == string(export.LLLM), include: o.includeUnfinished, seen: map[string]bool{},
		opts: export.Options{Reasoning: o.reasoning}}
	// A filter on the replay label asks for replays.
	e.replaysToo = o.includeReplays || slices.ContainsFunc(o.filter.labels, func(l string) bool {
		k, _, _ := strings.Cut(l, "=")
		return k == replay.LabelReplayOf
	})

	// Everything that can be refused is, before anything is written.
	var runs []*logs.Run
	var filter *runsFilter
	var manifest *sweep.Manifest
	switch {
	case len(args) > 0:
		e.named = true
		for _, ref := range args {
			run, err := openLog(cmd, o.options, ref)
			if err != nil {
				return err
			}
			runs = append(runs, run)
		}
	case runsMode:
		var err error
		if filter, err = parseRunsFilter(cmd, &o.filter, time.Now()); err != nil {
			return err
		}
	default:
		var err error
		if manifest, err = sweep.ReadManifest(o.sweepDir); err != nil {
			return err
		}
		for _, c := range where {
			if !slices.Contains(manifest.Scorers, c.scorer) {
				msg := fmt.Sprintf("--where %q: the sweep %s has no scorer %q", c.text, manifest.Name, c.scorer)
				if s, ok := suggest.Closest(c.scorer, manifest.Scorers); ok {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				}
				if len(manifest.Scorers) == 0 {
					return usageErrorf(cmd, "%s: it has none", msg)
				}
				return usageErrorf(cmd, "%s; its scorers are %s", msg, strings.Join(manifest.Scorers, ", "))
			}
		}
	}

	dst, err := openDestination(cmd, o.out)
	if err != nil {
		return err
	}
	e.w = dst.w
	switch {
	case runs != nil:
		for _, run := range runs {
			if err = e.run(run, run.Summary(), nil); err != nil {
				break
			}
		}
	case filter != nil:
		err = e.filteredRuns(o.logDir, filter)
	default:
		err = e.sweep(o.sweepDir, manifest, where)
	}
	if err == nil {
		err = dst.commit()
	} else {
		dst.abort()
	}
	if err != nil {
		return err
	}
	e.warnUnmatched()
	fmt.Fprintln(cmd.ErrOrStderr(), e.summary(o.out))
	return nil
}

// exporter writes the lines of the runs it is given and counts what it
// exported and skipped.
type exporter struct {
	cmd      *cobra.Command
	ctx      context.Context
	format   export.Format
	patterns []export.Pattern
	metadata bool
	opts     export.Options
	include  bool
	w        io.Writer
	seen     map[string]bool // the runs exported, by absolute directory

	dialogs, runs int
	// Runs skipped: without a run_end, or whose log cannot be read.
	unfinished, unreadable int
	// named: the runs were named on the command line, so one whose log
	// cannot be read fails the export, as it fails every other command,
	// where --runs and --sweep skip it and go on with the rest.
	named bool
	// For --runs: whether replays are exported, and how many were not.
	replaysToo bool
	replays    int
	// Dialogs a format cannot hold, and the first one's reason.
	unexportable int
	why          string
	// For --dialog: the patterns that matched a dialog, and the names
	// (OWNER/ALIAS) of the dialogs seen, to say what a pattern that
	// matched none could have been.
	matched map[string]bool
	names   []string
	// For --runs: the log root, the runs under it, and those filtered out.
	root             string
	listed, filtered int
	// For --sweep: the samples a report counts, those of them that failed,
	// did not pass --where, or have no run log, and the standing records
	// a report does not count (outdated).
	samples, failed, rejected, noLog, outdated int
}

// run exports the dialogs of run, which sum summarises; meta adds a
// sample's fields to the metadata.
func (e *exporter) run(run *logs.Run, sum logs.Summary, meta func(*export.Metadata)) error {
	key := run.Dir
	if abs, err := filepath.Abs(run.Dir); err == nil {
		key = abs
	}
	if e.seen[key] {
		return nil
	}
	e.seen[key] = true
	if sum.Err != nil {
		return e.unreadableRun(run.ID, sum.Err)
	}
	if sum.End == nil && !e.include {
		e.unfinished++
		return nil
	}
	l, warnings, err := inspect.LoadLog(e.ctx, run)
	warn(e.cmd, warnings)
	if err != nil {
		if ctxErr := e.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return e.unreadableRun(run.ID, err)
	}
	e.runs++
	e.noteNames(l.Tree)
	for _, n := range export.Select(l.Tree, e.patterns) {
		tr := l.Transcript(n)
		d := &export.Dialog{Messages: tr.Messages, Declarations: tr.Declarations}
		if e.metadata {
			d.Metadata = &export.Metadata{RunID: l.RunID, Dialog: n.ID, Owner: n.Owner, Alias: n.Alias,
				Tactic: l.Tactic, Status: string(l.Status)}
			if l.Start != nil {
				d.Metadata.Labels = l.Start.Labels
			}
			if meta != nil {
				meta(d.Metadata)
			}
		}
		line, err := export.Encode(e.format, d, e.opts)
		if errors.Is(err, export.ErrUnexportable) {
			if e.unexportable++; e.why == "" {
				e.why = fmt.Sprintf("run %s, dialog %s/%s: %v", l.RunID, n.Owner, n.Alias, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("run %s, dialog %s: %w", l.RunID, n.ID, err)
		}
		if _, err := e.w.Write(line); err != nil {
			return fmt.Errorf("writing the export: %w", err)
		}
		e.dialogs++
	}
	return nil
}

// noteNames records which --dialog patterns match a dialog of t, and the
// names of t's dialogs that are not working copies.
func (e *exporter) noteNames(t *inspect.Tree) {
	if len(e.patterns) == 0 {
		return
	}
	if e.matched == nil {
		e.matched = map[string]bool{}
	}
	var walk func(n *inspect.Node)
	walk = func(n *inspect.Node) {
		name := n.Owner + "/" + n.Alias
		for _, p := range e.patterns {
			if p.Match(n.Owner, n.Alias) {
				e.matched[p.String()] = true
			}
		}
		if _, _, attempt := n.IsWorkingCopy(); !attempt && !slices.Contains(e.names, name) {
			e.names = append(e.names, name)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	for _, r := range t.Roots {
		walk(r)
	}
}

// warnUnmatched warns of each --dialog pattern that matched no dialog of
// the runs read: a typo would otherwise export nothing, silently.
func (e *exporter) warnUnmatched() {
	if e.runs == 0 {
		return
	}
	for _, p := range e.patterns {
		if e.matched[p.String()] {
			continue
		}
		msg := fmt.Sprintf("lllm: warning: --dialog %s matches no dialog of the runs read", p)
		if c, ok := suggest.Closest(p.String(), e.names); ok {
			msg += fmt.Sprintf(" (did you mean %s?)", c)
		}
		names := e.names
		if len(names) > 8 {
			names = append(slices.Clone(names[:8]), "...")
		}
		fmt.Fprintf(e.cmd.ErrOrStderr(), "%s; they have %s\n", msg, strings.Join(names, ", "))
	}
}

// unreadableRun skips the run id, whose log cannot be read because of
// err, with a warning; for a run named on the command line it returns err.
func (e *exporter) unreadableRun(id string, err error) error {
	if e.named {
		return fmt.Errorf("run %s cannot be exported: %w", id, err)
	}
	e.unreadable++
	fmt.Fprintf(e.cmd.ErrOrStderr(), "lllm: warning: run %s is unreadable, skipped: %s\n", id, oneLine(err.Error()))
	return nil
}

// filteredRuns exports the runs under root that pass f, as lllm runs
// lists them.
func (e *exporter) filteredRuns(root string, f *runsFilter) error {
	e.root = root
	sums, err := logs.ListFunc(root, func(s logs.Summary) bool {
		e.listed++
		return f.matchStart(s)
	})
	if err != nil {
		return err
	}
	if f.statuses != nil {
		sums = slices.DeleteFunc(sums, func(s logs.Summary) bool { return !f.matchStatus(s) })
	}
	if f.limit > 0 && len(sums) > f.limit {
		sums = sums[len(sums)-f.limit:]
	}
	e.filtered = e.listed - len(sums)
	for _, s := range sums {
		if s.Start != nil && s.Start.Labels[replay.LabelReplayOf] != "" && !e.replaysToo {
			e.replays++
			continue
		}
		if err := e.run(s.Run(), s, nil); err != nil {
			return err
		}
	}
	return nil
}

// sweep exports the runs of the samples of the sweep directory dir that
// lllm sweep report counts, succeeded and pass where.
func (e *exporter) sweep(dir string, m *sweep.Manifest, where []scoreCond) error {
	warnings, err := sweep.EachRecord(dir, func(r *sweep.Record) error {
		if !m.Counts(r) {
			e.outdated++
			return nil
		}
		e.samples++
		switch {
		case r.Status != "ok":
			e.failed++
			return nil
		case !passes(where, r.Scores):
			e.rejected++
			return nil
		}
		runDir, err := r.LogDir(dir)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if _, err := os.Stat(filepath.Join(runDir, logs.EventsFile)); runDir == "" || err != nil {
			e.noLog++
			return nil
		}
		run, err := logs.Open(dir, runDir)
		if err != nil {
			return e.unreadableRun(filepath.Base(runDir), err)
		}
		var settings map[string]any // none when the sweep has no axes
		for _, s := range r.Settings {
			if settings == nil {
				settings = map[string]any{}
			}
			settings[s.Path] = s.Value
		}
		return e.run(run, run.Summary(), func(md *export.Metadata) {
			md.Sweep, md.Cell, md.Settings, md.Row, md.Scores = m.Name, r.Cell, settings, r.Row, r.Scores
			repeat := r.Repeat
			md.Repeat = &repeat
		})
	})
	warn(e.cmd, warnings)
	return err
}

// summary is the line on stderr: what was exported, and what was
// skipped and why.
func (e *exporter) summary(out string) string {
	s := fmt.Sprintf("exported %s from %s", count(e.dialogs, "dialog"), count(e.runs, "run"))
	if out != "" && out != "-" {
		s += " to " + out
	}
	var notes []string
	if e.root != "" && e.listed == 0 {
		notes = append(notes, "no runs under "+e.root)
	}
	if e.listed > 0 && e.filtered > 0 {
		notes = append(notes, fmt.Sprintf("%s of %d under the log root did not pass the filters", count(e.filtered, "run"), e.listed))
	}
	if e.samples > 0 {
		note := fmt.Sprintf("%d of %s selected", e.samples-e.failed-e.rejected, count(e.samples, "sample"))
		var why []string
		if e.failed > 0 {
			why = append(why, fmt.Sprintf("%d failed", e.failed))
		}
		if e.rejected > 0 {
			why = append(why, fmt.Sprintf("%d did not pass --where", e.rejected))
		}
		if len(why) > 0 {
			note += " (" + strings.Join(why, ", ") + ")"
		}
		notes = append(notes, note)
	}
	var skipped []string
	if e.unfinished > 0 {
		them := "them"
		if e.unfinished == 1 {
			them = "it"
		}
		skipped = append(skipped, fmt.Sprintf("%s without a run_end (still running or interrupted; --include-unfinished exports %s)", count(e.unfinished, "run"), them))
	}
	if e.replays > 0 {
		skipped = append(skipped, fmt.Sprintf("%s of other runs (their dialogs would be duplicates; --include-replays exports them)", count(e.replays, "replay")))
	}
	if e.unreadable > 0 {
		skipped = append(skipped, count(e.unreadable, "unreadable run"))
	}
	if e.noLog > 0 {
		skipped = append(skipped, count(e.noLog, "sample")+" without a run log")
	}
	if e.outdated > 0 {
		skipped = append(skipped, count(e.outdated, "outdated sample")+" (made before their row, the repeats or the scorers changed; lllm sweep report does not count them)")
	}
	if e.unexportable > 0 {
		skipped = append(skipped, fmt.Sprintf("%s the %s format cannot hold (%s)", count(e.unexportable, "dialog"), e.format, e.why))
	}
	if len(skipped) > 0 {
		notes = append(notes, "skipped "+strings.Join(skipped, ", "))
	}
	if len(notes) > 0 {
		s += "; " + strings.Join(notes, "; ")
	}
	return s
}

// count is "1 run", "2 runs".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// scoreCond is one --where: a scorer, a comparison and a value.
type scoreCond struct {
	scorer, op string
	value      float64
	text       string
}

// scoreOps are the comparisons of --where, the two-character ones first.
var scoreOps = []string{">=", "<=", "!=", "==", "=", ">", "<"}

func parseScoreCond(s string) (scoreCond, error) {
	i := strings.IndexAny(s, "<>=!")
	if i <= 0 {
		return scoreCond{}, errors.New("want SCORER=VALUE or SCORER>=VALUE (also >, <=, < and !=), such as mentions=1 or judge>=0.5")
	}
	c := scoreCond{scorer: strings.TrimSpace(s[:i]), text: s}
	rest := s[i:]
	for _, op := range scoreOps {
		if strings.HasPrefix(rest, op) {
			c.op, rest = op, rest[len(op):]
			break
		}
	}
	if c.op == "" || c.scorer == "" {
		return scoreCond{}, errors.New("want SCORER=VALUE or SCORER>=VALUE (also >, <=, < and !=), such as mentions=1 or judge>=0.5")
	}
	if c.op == "==" {
		c.op = "="
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
	if err != nil {
		return scoreCond{}, fmt.Errorf("the value %q is not a number: scores are numbers, such as 1 or 0.5", strings.TrimSpace(rest))
	}
	c.value = v
	return c, nil
}

// pass reports whether scores has c's scorer with a value that passes.
func (c scoreCond) pass(scores map[string]float64) bool {
	v, ok := scores[c.scorer]
	if !ok {
		return false
	}
	switch c.op {
	case "=":
		return v == c.value
	case "!=":
		return v != c.value
	case ">=":
		return v >= c.value
	case "<=":
		return v <= c.value
	case ">":
		return v > c.value
	}
	return v < c.value
}

// passes reports whether scores pass every condition.
func passes(conds []scoreCond, scores map[string]float64) bool {
	for _, c := range conds {
		if !c.pass(scores) {
			return false
		}
	}
	return true
}

// destination is where the lines go: stdout, or a temporary file beside
// FILE that commit renames into place.
type destination struct {
	w    *bufio.Writer
	tmp  *os.File // nil for stdout
	path string
}

func openDestination(cmd *cobra.Command, path string) (*destination, error) {
	if path == "" || path == "-" {
		return &destination{w: bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)}, nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("-O %s: %w", path, err)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("-O %s is a directory: give a file to write, such as %s", path, filepath.Join(path, "train.jsonl"))
	}
	tmp, err := atomicfile.CreateBeside(path)
	if err != nil {
		return nil, fmt.Errorf("-O %s: %w", path, err)
	}
	return &destination{w: bufio.NewWriterSize(tmp, 1<<20), tmp: tmp, path: path}, nil
}

// commit flushes the lines and, for a file, renames it into place.
func (d *destination) commit() error {
	err := d.w.Flush()
	if d.tmp == nil {
		if err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
		return nil
	}
	if err == nil {
		err = d.tmp.Sync()
	}
	if cerr := d.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(d.tmp.Name(), d.path)
	}
	if err == nil {
		err = atomicfile.SyncDir(filepath.Dir(d.path))
	}
	if err != nil {
		_ = os.Remove(d.tmp.Name())
		return fmt.Errorf("writing %s: %w", d.path, err)
	}
	return nil
}

// abort leaves FILE as it was.
func (d *destination) abort() {
	if d.tmp != nil {
		_ = d.tmp.Close()
		_ = os.Remove(d.tmp.Name())
		return
	}
	_ = d.w.Flush() // what was exported before the error
}
