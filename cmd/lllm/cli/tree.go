package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/inspect"
)

type treeOptions struct {
	*options
	format *enumValue
	dialog string
	depth  int
	flat   bool
}

// deepJSON is how many levels of forks the nested -o json form takes
// before lllm tree suggests --flat: jq 1.6 reads no deeper than 83.
const deepJSON = 80

func newTreeCmd(opts *options) *cobra.Command {
	formats := make([]string, len(inspect.Formats))
	for i, f := range inspect.Formats {
		formats[i] = string(f)
	}
	o := &treeOptions{options: opts, format: newEnum("text", formats...)}
	cmd := &cobra.Command{
		Use:   "tree RUN",
		Short: "Print the dialog tree of a run",
		Long: `Rebuild the dialog forest of a run from its log and print it.

Each line is one dialog: its id (the first 8 hex digits), owner, alias and
number of messages. A fork also shows where it split from its parent: the
message count it started with (split@N) and how it was made (last_n, first_k:
the child kept the parent's first first_k and last last_n messages, or all of
them when last_n is 0). Tokens and dollars show when the dialog's messages
record any. Forks are indented under their parent, roots in the order they
were opened and forks in the order they were made.

Model calls that failed and were made again show as "retried=N", and
replies cut at max_tokens as "max_tokens_cut=N". A failed attempt ends with
"✗ failed:" and the reason. An agent answers on a working copy of its
dialog, "ALIAS#1"; a reply that fails to parse is retried on "ALIAS#2",
forked from the first, and so on. A working copy whose reply was not kept
(it did not parse, or its model call failed) is a failed attempt.

--format (-o) picks the output:
  text     the indented lines above
  json     {"run_id", "dir", "dialogs"}: the same tree as nested objects,
           with full ids, the tokens and dollars of each dialog's own
           messages ("cost"), its model calls ("model_calls", "call_errors",
           "max_tokens_cut": the replies cut at max_tokens, "call_cost")
           and "failed"/"fail_reason"; with --flat the
           dialogs are a flat list instead, one a line, parents first,
           each with its "parent" in the list (none for the ones it starts from)
           and no "children": a chain of forks of any length nests no
           deeper than one dialog (jq 1.6 reads no more than 83 nested
           forks, and the nested form grows with the square of the depth)
  dot      a Graphviz digraph: a box per dialog, an edge per fork labelled
           with its split; failed attempts dashed red (lllm tree RUN -o dot
           | dot -Tsvg > tree.svg)
  mermaid  a Mermaid flowchart, one node line per dialog; failed attempts in
           the class "failed" (paste into a Markdown mermaid block)

--dialog and --depth select a subtree in every format.

A log whose last line was cut off (a crash mid-write) is read up to that
line, with a warning on stderr.

RUN is a run directory (or its events.jsonl), a run id, a unique prefix
or suffix of one, or "latest".`,
		Example: `  # The whole forest of the latest run
  lllm tree latest

  # One dialog and its forks, two levels deep
  lllm tree 4c2769 --dialog a1b2c3d4 --depth 2

  # As JSON, for scripts: the failed attempts
  lllm tree latest -o json --flat | jq -r '.dialogs[] | select(.failed) | .id'

  # As a picture, with Graphviz
  lllm tree latest -o dot | dot -Tsvg > tree.svg

  # As a Mermaid flowchart for a Markdown page
  lllm tree latest -o mermaid`,
		Args:              runArgs("", 0),
		ValidArgsFunction: completeRuns(opts, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.flat && o.format.value != string(inspect.FormatJSON) {
				return usageErrorf(cmd, "--flat lists the dialogs of the JSON form: add -o json")
			}
			return runTree(cmd, o, args[0])
		},
	}
	addFormatFlag(cmd, "format", o.format)
	cmd.Flags().StringVar(&o.dialog, "dialog", "", "print only the subtree of this dialog (a full id, a unique prefix, or OWNER/ALIAS)")
	cmd.Flags().IntVar(&o.depth, "depth", -1, "print at most `N` levels of forks below the start (negative: all)")
	cmd.Flags().BoolVar(&o.flat, "flat", false, "with -o json: list the dialogs flat, one a line, each with its \"parent\"")
	_ = cmd.RegisterFlagCompletionFunc("dialog", completeDialogFlag(opts))
	return cmd
}

func runTree(cmd *cobra.Command, o *treeOptions, ref string) error {
	run, err := openLog(cmd, o.options, ref)
	if err != nil {
		return err
	}
	tree, warnings, err := inspect.Load(cmd.Context(), run, inspect.Options{})
	warn(cmd, warnings)
	if err != nil {
		return err
	}
	noteUnfinished(cmd, run.ID, tree.Status)
	tree.RunID = run.ID
	sel := inspect.Selection{Depth: o.depth}
	if o.dialog != "" {
		n, err := findTreeDialog(cmd, o.options, tree, run.ID, ref, o.dialog)
		if err != nil {
			return err
		}
		sel.Start = []*inspect.Node{n}
	}
	format := inspect.Format(o.format.value)
	if format == inspect.FormatText && len(tree.Roots) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "run %s has no dialogs\n", run.ID)
		return nil
	}
	out := newOutput(cmd)
	switch {
	case o.flat:
		if err := inspect.WriteFlatJSON(out, tree, sel); err != nil {
			return err
		}
	default:
		if format == inspect.FormatJSON {
			if h := sel.Height(tree); h > deepJSON {
				fmt.Fprintf(cmd.ErrOrStderr(), "lllm: this tree nests %d forks deep, deeper than jq 1.6 and some other JSON readers read: --flat lists its dialogs one a line\n", h)
			}
		}
		if err := inspect.Render(out, tree, format, sel); err != nil {
			return err
		}
	}
	return out.flush()
}

// findTreeDialog resolves a full dialog id of tree, a unique prefix of
// one, or an owner/alias (or an alias) that names one dialog. runID names
// the run in messages; runRef is how the user named it.
func findTreeDialog(cmd *cobra.Command, opts *options, tree *inspect.Tree, runID, runRef, ref string) (*inspect.Node, error) {
	named := make([]namedDialog, len(tree.Nodes))
	byID := make(map[string]*inspect.Node, len(tree.Nodes))
	for i, n := range tree.Nodes {
		named[i] = namedDialog{n.ID, n.Owner, n.Alias}
		byID[n.ID] = n
	}
	id, err := pickDialog(cmd, opts, named, runID, runRef, ref)
	if err != nil {
		return nil, err
	}
	return byID[id], nil
}
