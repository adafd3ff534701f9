package cli

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/inspect"
)

type diffOptions struct {
	*options
	format *enumValue
	max    int
}

// defaultDiffMax is how many divergences the text output shows unless
// --max says otherwise.
const defaultDiffMax = 10

func newDiffCmd(opts *options) *cobra.Command {
	o := &diffOptions{options: opts, format: newEnum("text", "text", "json")}
	cmd := &cobra.Command{
		Use:   "diff RUN_A RUN_B",
		Short: "Show where two runs differ",
		Long: `Compare two runs from their logs: their task and resolved config, their
dialogs and messages, and what each dialog cost.

Dialogs are matched by agent (owner), alias and turn: the Nth dialog an agent
opened or forked under an alias in A is matched with the Nth one under the
same alias in B. The working copies an agent answers on ("main#1", and
"main#2" for a retry) match by their alias too, so the Nth "main#1" is the
agent's Nth turn on "main".

The text output shows, in order:
  - the two runs, and "identical: ..." when nothing below differs;
  - "task:" and "config:" lines for the settings that differ (a --set shows
    here);
  - every divergence, in the order A's log wrote them: for each matched
    pair of dialogs whose messages differ, the first message whose content
    (sender, text, images, tool calls) differs from its match in B, with a
    short line diff ("- " only in A, "+ " only in B), and how many later
    messages differ too or only one dialog has. A fork's inherited messages
    count in the dialog that wrote them. --max N shows the first N (0: all);
    a last line says how many more there are;
  - the dialogs only in A and only in B;
  - the messages, tokens and dollars of each matched dialog whose size or
    cost differs (A→B and B minus A), and the total of the model calls.

-o json prints the whole comparison: every divergence, in order, under
"divergences", and every matched dialog; each run is named by its run_id
and its directory dir, and each cost is the run log's cost object: token counts and usd.

Unlike diff(1), lllm diff exits 0 when it could compare the runs, whether
or not they differ: read "identical" in the text output, or
"identical": true in JSON. It exits 1 when a run cannot be found or read.`,
		Example: `  # The latest run against an earlier one
  lllm diff 4c2769 latest

  # Every divergence, however many
  lllm diff 4c2769 latest --max 0

  # What a changed system prompt changes
  lllm run configs/best_of_n.yaml --task "Name a prime between 10 and 20."
  lllm run configs/best_of_n.yaml --task "Name a prime between 10 and 20." --set 'agent_configs.judge.system_prompt=You are lenient.'
  lllm diff <first run id> latest

  # In a script: are the two runs the same? Where do they diverge?
  lllm diff RUN_A RUN_B -o json | jq .identical
  lllm diff RUN_A RUN_B -o json | jq '.divergences[] | {key, index, diff}'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf(cmd, "diff takes two runs, RUN_A and RUN_B, got %d arguments", len(args))
			}
			if err := runGiven(cmd, args[0], "A"); err != nil {
				return err
			}
			return runGiven(cmd, args[1], "B")
		},
		ValidArgsFunction: completeRuns(opts, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd, o, args[0], args[1])
		},
	}
	addFormatFlag(cmd, "output", o.format)
	cmd.Flags().IntVar(&o.max, "max", defaultDiffMax, "show at most `N` divergences in the text output (0: all; -o json has all)")
	return cmd
}

func runDiff(cmd *cobra.Command, o *diffOptions, refA, refB string) error {
	if o.max < 0 {
		return usageErrorf(cmd, "--max %d: want a number of divergences, 1 or more, or 0 for all", o.max)
	}
	a, err := loadForDiff(cmd, o.options, "A", refA)
	if err != nil {
		return err
	}
	b, err := loadForDiff(cmd, o.options, "B", refB)
	if err != nil {
		return err
	}
	d, err := inspect.Compare(a, b)
	if err != nil {
		return err
	}
	out := newOutput(cmd)
	if o.format.value == "json" {
		if err := writeJSON(out, d); err != nil {
			return err
		}
	} else if err := d.WriteText(out, inspect.TextOptions{Max: o.max, MoreHint: "--max 0 shows all"}); err != nil {
		return err
	}
	return out.flush()
}

// loadForDiff reads the tree and messages of the run ref; which ("A" or
// "B") names it in errors.
func loadForDiff(cmd *cobra.Command, opts *options, which, ref string) (*inspect.Tree, error) {
	run, err := openLog(cmd, opts, ref)
	if err != nil {
		return nil, &sideError{which, err}
	}
	t, warnings, err := inspect.Load(cmd.Context(), run, inspect.Options{Messages: true})
	warn(cmd, warnings)
	if err != nil {
		return nil, &sideError{which, err}
	}
	t.RunID = run.ID
	return t, nil
}

// sideError says which run of a diff an error is about: "run B: ...".
type sideError struct {
	which string
	err   error
}

func (e *sideError) Error() string {
	return "run " + e.which + ": " + strings.TrimPrefix(e.err.Error(), "logs: ")
}

func (e *sideError) Unwrap() error { return e.err }
