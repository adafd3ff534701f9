package cli

import (
	"context"
	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/logs"
)

// completeRuns completes a RUN argument with "latest" and the run ids
// under the log root, described by tactic and status.
func completeRuns(opts *options, maxArgs int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= maxArgs {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return runCompletions(opts), cobra.ShellCompDirectiveNoFileComp
	}
}

func runCompletions(opts *options) []cobra.Completion {
	out := []cobra.Completion{cobra.CompletionWithDesc("latest", "the newest run")}
	sums, err := logs.List(opts.logDir)
	if err != nil {
		return out
	}
	for i := len(sums) - 1; i >= 0; i-- {
		s := sums[i]
		desc := runStatus(s)
		if s.Start != nil && s.Start.Tactic != "" {
			desc = s.Start.Tactic + ", " + desc
		}
		out = append(out, cobra.CompletionWithDesc(s.ID, desc))
	}
	return out
}

// completeRunThenDialog completes RUN, then the DIALOG_ID of that run.
func completeRunThenDialog(opts *options) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return runCompletions(opts), cobra.ShellCompDirectiveNoFileComp
		case 1:
			return dialogCompletions(opts, args[0]), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeDialogFlag completes --dialog with the dialogs of the RUN given.
func completeDialogFlag(opts *options) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return dialogCompletions(opts, args[0]), cobra.ShellCompDirectiveNoFileComp
	}
}

func dialogCompletions(opts *options, ref string) []cobra.Completion {
	run, err := logs.Open(opts.logDir, ref)
	if err != nil {
		return nil
	}
	forest, _, err := run.Forest(context.Background())
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, id := range forest.IDs() {
		d := forest.Dialog(id)
		desc := d.Owner()
		if d.Alias() != "" {
			desc += "/" + d.Alias()
		}
		out = append(out, cobra.CompletionWithDesc(id, desc))
	}
	return out
}
