package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/sweep"
	"github.com/lllm-go/lllm/tactics"
)

type sweepCmdOptions struct {
	*options
	sets        []string
	dryRun      bool
	rerunFailed bool
	shard       string
	concurrency int
	baseline    []string
	format      *enumValue
}

func newSweepCmd(opts *options) *cobra.Command {
	o := &sweepCmdOptions{options: opts, format: newEnum("text", sweep.Formats...)}
	cmd := &cobra.Command{
		Use:   "sweep SWEEP.yaml",
		Short: "Run a grid of configs over a dataset and print a results table",
		Long: `Run a sweep: every cell of a grid of tactic configs (the spec's base config
with its axes applied) on every row of a dataset, repeats times, each sample
a run with its own log, scored and aggregated into one table row per cell:
its axes, n, each scorer's mean ± standard error, pass@k over the repeats,
tokens in and out, cost, p50 and p95 latency and errors.

Results go to <log root>/sweeps/<name> (--log-dir sets the log root; name is
the spec's name, else its file name). Every finished sample is recorded
there at once, so running the same sweep again runs only what is missing:
after a crash, after adding an axis value (only the new cells run), or after
a budget stop. After adding a scorer or changing a scorer's params, finished
samples are re-scored from their run logs, without running the tactic
again (only the scorers' own calls, such as a judge's, are made). A sample
that failed on the provider runs again; one that failed in its tactic is
final (it scores 0), unless --rerun-failed runs it again, as after a fix to
the tactic's code, which no config setting shows.
With -o json the report has "cells" (one per cell) and "calls" (the model
calls this invocation made: 0 when nothing was left). A cell's cost is the
run log's cost object (input_tokens, output_tokens, usd); a cell with no
finished sample has null means, standard errors and latencies, and "-" for
them in the table.

--set KEY.PATH=VALUE overrides a value of the base config before the axes
apply (it changes every cell). --shard I/N runs a deterministic share of
the samples (I from 0 to N-1), for a Slurm job array or a Kubernetes Indexed
Job over a shared filesystem; 'lllm sweep merge DIR' then consolidates the
shards. --dry-run checks everything and lists the cells, the samples to run
and to re-score and an estimate of the model calls, and spends nothing.

--baseline CELL compares every other cell with one cell, paired by row:
each scorer gets a column "Δ SCORER", the cell's mean minus the baseline's
over the rows both finished, ± its standard error, with * when its 95%
confidence interval excludes 0. CELL is the baseline's axis settings as the
table shows them (NAME=VALUE, comma-separated or repeated) or a prefix of
its hash; one that names no cell or several is a usage error listing the
cells. See docs/sweeps.md for the statistics and the fields -o json adds.

A progress line goes to stderr when it is a terminal. The exit code is 0
when every sample of the grid (or shard) is finished; 1 when the sweep
stopped early (budget, failing provider, Ctrl-C) or left samples to retry:
samples that failed on the provider (a rate limit, a server error, a bad
key, a timeout; after the spec's retries) or could not be re-scored. The
table is printed first either way, and one line on stderr says how many
samples did not finish: the same command run again retries them, as it
resumes. 2 is a problem with the spec, dataset, axes, scorers or config,
found before anything runs. --dry-run exits 0 whatever is left to run, and
so do 'lllm sweep report' and 'merge': they describe the sweep, its
"to_retry" included. See docs/sweeps.md.`,
		Example: `  # The offline example: check it, run it, run it again (no model call)
  lllm sweep configs/sweep-example.yaml --dry-run
  lllm sweep configs/sweep-example.yaml
  lllm sweep configs/sweep-example.yaml -o json

  # On a real provider, as markdown
  lllm sweep my-sweep.yaml --set global.model_name=openai/gpt-4o-mini -o markdown

  # After fixing a bug in a tactic's code: run its failed samples again
  lllm sweep my-sweep.yaml --rerun-failed

  # Shard 2 of 8 (a Slurm array: --shard $SLURM_ARRAY_TASK_ID/8), then merge
  lllm sweep my-sweep.yaml --shard 2/8
  lllm sweep merge logs/sweeps/my-sweep

  # Every cell against one, paired by row
  lllm sweep configs/sweep-example.yaml --baseline temperature=0,model_name=mock/careful

  # The table again, from disk
  lllm sweep report logs/sweeps/example -o csv`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(cmd, "sweep needs a SWEEP.yaml spec (see configs/sweep-example.yaml), or a subcommand: report, merge")
			}
			if _, err := os.Stat(args[0]); err != nil {
				if _, typo := suggestCommand(cmd, args[0]); typo {
					return unknownCommand(cmd, args[0])
				}
			}
			if len(args) > 1 {
				return usageErrorf(cmd, "sweep takes one SWEEP.yaml, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSweep(cmd, o, args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.sets, "set", nil, "override a base config value, `KEY.PATH=VALUE` (repeatable)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "list the cells and the model calls a run would make; run nothing")
	fs.BoolVar(&o.rerunFailed, "rerun-failed", false, "run again the samples that failed in their tactic, which are otherwise final")
	fs.StringVar(&o.shard, "shard", "", "run only shard `I/N` of the samples (I from 0 to N-1)")
	fs.IntVar(&o.concurrency, "concurrency", 0, "samples at once, overriding the spec's concurrency")
	addBaselineFlag(cmd, &o.baseline)
	_ = cmd.MarkFlagFilename("set")
	addFormatFlag(cmd, "output", o.format)
	cmd.AddCommand(newSweepReportCmd(opts), newSweepMergeCmd(opts))
	return cmd
}

// runSweep runs lllm sweep: it checks the flags and the spec, then plans
// (--dry-run) or runs the sweep and reports it.
func runSweep(cmd *cobra.Command, o *sweepCmdOptions, path string) error {
	if err := wrongKind(cmd, path, "sweep"); err != nil {
		return err
	}
	ctx := cmd.Context()
	sopts, err := sweepOptions(cmd, o)
	if err != nil {
		return err
	}
	spec, err := sweep.LoadSpec(path)
	if err != nil {
		return sweepConfigErr(err)
	}
	var bar *progressbar.ProgressBar
	sopts.Progress = func(p sweep.Progress) {
		if bar != nil {
			bar.Describe(progressLine(p))
			_ = bar.Set(p.Done)
		}
	}
	sw, err := sweep.New(ctx, spec, sopts)
	if err != nil {
		return sweepConfigErr(err)
	}
	if len(o.baseline) > 0 {
		// Checked before anything runs, as every other flag is.
		if _, err := sw.FindCell(o.baseline...); err != nil {
			return baselineErr(cmd, o.baseline, err)
		}
	}
	warn(cmd, sw.Warnings())
	out := newOutput(cmd)
	if o.dryRun {
		if err := writePlan(out, sw.Plan(), o.format.value); err != nil {
			return err
		}
		return out.flush()
	}

	bar = sweepBar(cmd.ErrOrStderr(), sw)
	rep, runErr := sw.Run(ctx)
	if bar != nil {
		_ = bar.Finish()
		_ = bar.Clear()
	}
	if rep == nil {
		return runErr
	}
	if len(o.baseline) > 0 {
		if err := rep.Compare(o.baseline...); err != nil {
			return baselineErr(cmd, o.baseline, err)
		}
	}
	if err := writeSweepReport(cmd, out, rep, o.format.value); err != nil {
		return err
	}
	if err := out.flush(); err != nil {
		return err
	}
	return sweepExit(ctx, sw, rep, runErr, o.shard)
}

// writeSweepReport writes the report of a sweep just run in format, with
// a summary line in text, and warns of what it left unscored.
func writeSweepReport(cmd *cobra.Command, w io.Writer, rep *sweep.Report, format string) error {
	if err := rep.Write(w, format); err != nil {
		return err
	}
	if format == "text" {
		rescored := ""
		if rep.Rescored > 0 {
			rescored = fmt.Sprintf(", %d re-scored from their run logs", rep.Rescored)
		}
		fmt.Fprintf(w, "%d/%d samples done%s, %d run now%s, %d model calls, %d cache hits; results in %s\n",
			rep.Done, rep.Samples, toRetry(rep), rep.Ran, rescored, rep.Calls, rep.CacheHits, rep.Dir)
	}
	warn(cmd, unscoredWarnings(rep))
	if rep.RescoreFailed > 0 {
		warn(cmd, []string{fmt.Sprintf("%d samples could not be re-scored (%s); their answers stand, but the table counts them only once they have every scorer's score: run the sweep again to re-score them",
			rep.RescoreFailed, rep.RescoreError)})
	}
	return nil
}

// sweepOptions are the sweep.Options of lllm sweep's flags.
func sweepOptions(cmd *cobra.Command, o *sweepCmdOptions) (sweep.Options, error) {
	sopts := sweep.Options{Sets: o.sets, LogRoot: o.logDir, RerunFailed: o.rerunFailed}
	if o.shard != "" {
		sh, err := sweep.ParseShard(o.shard)
		if err != nil {
			return sopts, usageErrorf(cmd, "--shard: %v", err)
		}
		sopts.Shard = sh
	}
	if o.concurrency < 0 {
		return sopts, usageErrorf(cmd, "--concurrency %d: want 1 or more", o.concurrency)
	}
	sopts.Concurrency = o.concurrency
	if err := checkSets(cmd, o.sets); err != nil {
		return sopts, err
	}
	return sopts, nil
}

// sweepBar is the progress bar of the samples sw runs or re-scores,
// drawn on w; nil when w is not a terminal or nothing is to be done.
func sweepBar(w io.Writer, sw *sweep.Sweep) *progressbar.ProgressBar {
	if !isTerminal(w) {
		return nil
	}
	plan := sw.Plan()
	if plan.ToRun+plan.ToRescore == 0 {
		return nil
	}
	return progressbar.NewOptions(plan.ToRun+plan.ToRescore,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("sweep"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
}

// sweepExit is how lllm sweep ends once its report is written: runErr,
// the error sw.Run returned, said with what to do about it; or the
// samples left unfinished.
func sweepExit(ctx context.Context, sw *sweep.Sweep, rep *sweep.Report, runErr error, shard string) error {
	switch {
	case errors.Is(runErr, sweep.ErrBudget):
		return &exitError{code: ExitError, errs: []error{fmt.Errorf("%v: stopped launching samples; raise the budget and run the sweep again to finish it", runErr)}}
	case runErr != nil && ctx.Err() != nil:
		return &exitError{code: ExitError, errs: []error{fmt.Errorf("interrupted; finished samples are recorded in %s: run the sweep again to finish it", rep.Dir)}}
	case runErr != nil:
		return &exitError{code: ExitError, errs: []error{runErr}}
	}
	if n := sw.Unfinished(); n > 0 {
		return &exitError{code: ExitError, errs: []error{unfinishedErr(n, rep.RescoreFailed, shard)}}
	}
	return nil
}

// unfinishedErr says that n samples (of the shard, if any) did not
// finish, rescoreFailed of them because a scorer's model call failed while
// they were re-scored and the others because they failed on the provider,
// and how to retry them.
func unfinishedErr(n, rescoreFailed int, shard string) error {
	what := count(n, "sample")
	if shard != "" {
		what += " of shard " + shard
	}
	they, them := "they", "them"
	if n == 1 {
		they, them = "it", "it"
	}
	why := they + " failed on the provider"
	switch retry := n - rescoreFailed; {
	case rescoreFailed > 0 && retry <= 0:
		why = "a scorer's model call failed while re-scoring " + them
	case rescoreFailed > 0:
		why = fmt.Sprintf("%d failed on the provider, %d could not be re-scored", retry, rescoreFailed)
	}
	return fmt.Errorf("%s did not finish (%s): run the same command again to retry %s; it resumes, running only the unfinished samples", what, why, them)
}

func progressLine(p sweep.Progress) string {
	rate := 0.0
	if p.Elapsed > 0 {
		rate = float64(p.Done) / p.Elapsed.Seconds()
	}
	line := fmt.Sprintf("sweep %.1f/s  errors %d  calls %d  hits %d  spent %s", rate, p.Failed, p.Calls, p.CacheHits, usd(p.SpentUSD))
	if p.Rescored > 0 {
		line += fmt.Sprintf("  re-scored %d", p.Rescored)
	}
	return line
}

// sweepConfigErr makes a problem found before running exit with code 2.
func sweepConfigErr(err error) error {
	var se *sweep.SpecError
	var ce *tactics.ConfigError
	if errors.As(err, &se) || errors.As(err, &ce) {
		return configErr(err)
	}
	return err
}

func writePlan(w io.Writer, p *sweep.Plan, format string) error {
	if format == "json" {
		return writeJSON(w, p)
	}
	fmt.Fprintf(w, "sweep %s: %d cells, %d samples", p.Name, len(p.Cells), p.Samples)
	if p.Shard != "" {
		fmt.Fprintf(w, " in shard %s", p.Shard)
	}
	fmt.Fprintf(w, ", %d done, %d to run, ", p.Done, p.ToRun)
	if p.ToRescore > 0 {
		// Their answers stand; only their missing or changed scorers run.
		fmt.Fprintf(w, "%d to re-score from their run logs, ", p.ToRescore)
	}
	fmt.Fprintf(w, "about %d model calls (cache hits are free)\n", p.Calls)
	if len(p.Guessed) > 0 {
		fmt.Fprintf(w, "  a guess of one call per agent for tactic %s, which is not built in: once some samples have finished, a dry run estimates from them\n", strings.Join(p.Guessed, ", "))
	}
	for _, c := range p.Cells {
		var parts []string
		for _, s := range c.Settings {
			parts = append(parts, s.Path+"="+s.Text())
		}
		label := strings.Join(parts, " ")
		if label == "" {
			label = "(base config)"
		}
		rescore := ""
		if p.ToRescore > 0 {
			rescore = fmt.Sprintf("  re-score %d", c.ToRescore)
		}
		fmt.Fprintf(w, "  %s  %-40s  samples %d  done %d  to run %d%s  calls ~%d\n", c.Hash, label, c.Samples, c.Done, c.ToRun, rescore, c.Calls)
	}
	fmt.Fprintf(w, "results would go to %s; nothing was run\n", p.Dir)
	return nil
}

func newSweepReportCmd(opts *options) *cobra.Command {
	format := newEnum("text", sweep.Formats...)
	var baseline []string
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Print a sweep's results table again, from its directory",
		Long: `Print the results table of a sweep directory (such as logs/sweeps/example)
from what it holds on disk: its manifest and every samples file, shards
included. It runs nothing; "calls" is 0.

--baseline CELL compares every other cell with one cell, paired by row, as
lllm sweep --baseline does: a column "Δ SCORER" per scorer with the mean
difference over the rows both cells finished ± its standard error, and *
when its 95% confidence interval excludes 0. CELL is NAME=VALUE settings as
the table shows them (comma-separated or repeated) or a prefix of the
cell's hash. See docs/sweeps.md.`,
		Example: `  lllm sweep report logs/sweeps/example
  lllm sweep report logs/sweeps/example -o markdown > results.md
  lllm sweep report logs/sweeps/example --baseline temperature=0,model_name=mock/careful
  lllm sweep report logs/sweeps/example --baseline temperature=0 --baseline model_name=mock/sloppy -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf(cmd, "report takes one sweep DIR, such as logs/sweeps/example; got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, warnings, err := sweep.LoadReport(args[0])
			return printReport(cmd, rep, warnings, err, format.value, "", baseline)
		},
	}
	addBaselineFlag(cmd, &baseline)
	addFormatFlag(cmd, "output", format)
	return cmd
}

// printReport prints what sweep report and sweep merge read from disk:
// the warnings, then the table (compared with the cell baseline names, if
// any), and in text a line saying how much is done.
func printReport(cmd *cobra.Command, rep *sweep.Report, warnings []string, err error, format, prefix string, baseline []string) error {
	warn(cmd, warnings)
	if err != nil {
		return err
	}
	if len(baseline) > 0 {
		if err := rep.Compare(baseline...); err != nil {
			return baselineErr(cmd, baseline, err)
		}
	}
	out := newOutput(cmd)
	if err := rep.Write(out, format); err != nil {
		return err
	}
	if format == "text" {
		fmt.Fprintf(out, "%s%d/%d samples done%s; results in %s\n", prefix, rep.Done, rep.Samples, toRetry(rep), rep.Dir)
	}
	if err := out.flush(); err != nil {
		return err
	}
	warn(cmd, unscoredWarnings(rep))
	return nil
}

// unscoredWarnings says, for each scorer that could not score some
// samples whose run succeeded (a judge whose reply had no verdict), how
// many of the table's, and why one of them: each scores 0, which the table
// cannot tell from a wrong answer.
func unscoredWarnings(rep *sweep.Report) []string {
	unscored, why, ok := map[string]int{}, map[string]string{}, 0
	for _, c := range rep.Cells {
		ok += c.N - c.Errors
		for _, s := range c.Scores {
			if s.Unscored > 0 && why[s.Name] == "" {
				why[s.Name] = s.UnscoredError
			}
			unscored[s.Name] += s.Unscored
		}
	}
	var out []string
	for _, name := range rep.Scorers {
		if n := unscored[name]; n > 0 {
			out = append(out, fmt.Sprintf("scorer %s could not score %d of the %d samples in the table whose run succeeded, which score 0 on it (%s, for one; score_errors in the samples files of %s say why for each)", name, n, ok, why[name], rep.Dir))
		}
	}
	return out
}

func newSweepMergeCmd(opts *options) *cobra.Command {
	format := newEnum("text", sweep.Formats...)
	cmd := &cobra.Command{
		Use:   "merge DIR [OTHER_DIR...]",
		Short: "Combine a sweep's shards into one result",
		Long: `Consolidate the shards of a sweep into DIR: the samples of every
samples.shard-I-of-N.jsonl in DIR (shards that shared a filesystem) and of
each OTHER_DIR (copies of the sweep directory from other machines, whose run
logs are copied too) go into DIR/samples.jsonl, and the table is printed.
The result is what one process running the whole sweep would have produced.
Nothing is deleted; merging twice is harmless.`,
		Example: `  # Shards that wrote to one shared directory
  lllm sweep merge logs/sweeps/my-sweep

  # Shards that each wrote their own copy
  lllm sweep merge results/my-sweep node1/logs/sweeps/my-sweep node2/logs/sweeps/my-sweep`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf(cmd, "merge needs the sweep DIR to merge into, then any other copies of it")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, warnings, err := sweep.Merge(args[0], args[1:]...)
			return printReport(cmd, rep, warnings, err, format.value, "merged: ", nil)
		},
	}
	addFormatFlag(cmd, "output", format)
	return cmd
}

// addBaselineFlag adds --baseline, the cell the others are compared with.
func addBaselineFlag(cmd *cobra.Command, baseline *[]string) {
	cmd.Flags().StringArrayVar(baseline, "baseline", nil,
		"compare every cell with the `CELL` named by NAME=VALUE[,...] axis settings as the table shows them or a prefix of its hash, paired by row (repeatable)")
}

// baselineErr is the usage error of a --baseline that names no cell or
// several.
func baselineErr(cmd *cobra.Command, baseline []string, err error) error {
	return usageErrorf(cmd, "--baseline %s: %v", strings.Join(baseline, ","), err)
}

// toRetry says, after the count of samples done, how many failed on the
// provider and run again in the next run.
func toRetry(rep *sweep.Report) string {
	if rep.ToRetry == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d more failed on the provider: the next run tries them again)", rep.ToRetry)
}
