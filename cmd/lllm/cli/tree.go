package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/dialog"
)

type treeOptions struct {
	*options
	format *enumValue
	dialog string
	depth  int
}

func newTreeCmd(opts *options) *cobra.Command {
	o := &treeOptions{options: opts, format: newEnum("text", "text", "json")}
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

--format json prints the same tree as nested objects, with full ids.

RUN is a run directory, a run id, a unique prefix or suffix of one, or
"latest".`,
		Example: `  # The whole forest of the latest run
  lllm tree latest

  # One dialog and its forks, two levels deep
  lllm tree 4c2769 --dialog a1b2c3d4 --depth 2

  # As JSON, for scripts
  lllm tree latest --format json | jq '.dialogs[].id'`,
		Args:              runArgs("", 0),
		ValidArgsFunction: completeRuns(opts, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTree(cmd, o, args[0])
		},
	}
	addFormatFlag(cmd, "format", o.format)
	cmd.Flags().StringVar(&o.dialog, "dialog", "", "print only the subtree of this dialog (a full id or a unique prefix)")
	cmd.Flags().IntVar(&o.depth, "depth", -1, "print at most `N` levels of forks below the start (negative: all)")
	_ = cmd.RegisterFlagCompletionFunc("dialog", completeDialogFlag(opts))
	return cmd
}

func runTree(cmd *cobra.Command, o *treeOptions, ref string) error {
	run, forest, err := openRun(cmd.Context(), cmd, o.options, ref)
	if err != nil {
		return err
	}
	starts := forest.Roots()
	if o.dialog != "" {
		id, err := findDialog(cmd, o.options, forest, run.ID, ref, o.dialog)
		if err != nil {
			return err
		}
		starts = []string{id}
	}
	out := newOutput(cmd)
	if o.format.value == "json" {
		t := treeJSON{RunID: run.ID, Dialogs: []*nodeJSON{}}
		for _, id := range starts {
			t.Dialogs = append(t.Dialogs, buildNodeJSON(forest, id, 0, o.depth))
		}
		if err := writeJSON(out, t); err != nil {
			return err
		}
		return out.flush()
	}
	if len(starts) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "run %s has no dialogs\n", run.ID)
		return nil
	}
	for _, id := range starts {
		walk(forest, id, 0, o.depth, func(d *dialog.Dialog, level int) {
			fmt.Fprintf(out, "%s%s\n", strings.Repeat("  ", level), treeLine(d))
		})
	}
	return out.flush()
}

// treeLine describes one dialog on one line:
//
//	[a1b2c3d4] owner=coder alias=draft msgs=5 split@5 (last_n=2, first_k=1) tokens=120 usd=$0.0012
func treeLine(d *dialog.Dialog) string {
	n := d.Node()
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s", shortID(n.ID), field("owner", n.Owner))
	if n.Alias != "" {
		b.WriteString(" " + field("alias", n.Alias))
	}
	fmt.Fprintf(&b, " msgs=%d", d.Len())
	if !n.IsRoot() {
		fmt.Fprintf(&b, " split@%d (last_n=%d, first_k=%d)", n.SplitPoint, n.LastN, n.FirstK)
	}
	c := d.OwnCost()
	if t := c.Total(); t != 0 {
		fmt.Fprintf(&b, " tokens=%d", t)
	}
	if c.USD != 0 {
		b.WriteString(" usd=" + usd(c.USD))
	}
	return b.String()
}

type treeJSON struct {
	RunID   string      `json:"run_id"`
	Dialogs []*nodeJSON `json:"dialogs"`
}

type nodeJSON struct {
	ID         string      `json:"id"`
	Owner      string      `json:"owner"`
	Alias      string      `json:"alias"`
	ParentID   string      `json:"parent_id"`
	SplitPoint int         `json:"split_point"`
	LastN      int         `json:"last_n"`
	FirstK     int         `json:"first_k"`
	ParentLen  int         `json:"parent_len"`
	Depth      int         `json:"depth"`
	Messages   int         `json:"messages"`
	Children   []*nodeJSON `json:"children"`
	Cost       dialog.Cost `json:"cost"`
}

func buildNodeJSON(forest *dialog.Forest, id string, level, maxDepth int) *nodeJSON {
	d := forest.Dialog(id)
	n := d.Node()
	j := &nodeJSON{
		ID: n.ID, Owner: n.Owner, Alias: n.Alias, ParentID: n.ParentID,
		SplitPoint: n.SplitPoint, LastN: n.LastN, FirstK: n.FirstK, ParentLen: n.ParentLen,
		Depth: n.Depth, Messages: d.Len(), Children: []*nodeJSON{}, Cost: d.OwnCost(),
	}
	if maxDepth < 0 || level < maxDepth {
		for _, c := range n.ChildrenIDs {
			j.Children = append(j.Children, buildNodeJSON(forest, c, level+1, maxDepth))
		}
	}
	return j
}
