package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/jsontext"
)

type showOptions struct {
	*options
	format *enumValue
}

func newShowCmd(opts *options) *cobra.Command {
	o := &showOptions{options: opts, format: newEnum("text", "text", "json")}
	cmd := &cobra.Command{
		Use:   "show RUN [DIALOG_ID]",
		Short: "Print the transcripts of a run's dialogs",
		Long: `Print the messages of a run's dialogs, rebuilt from its log.

Without DIALOG_ID, every dialog is printed in tree order (depth first from
each root, as 'lllm tree' lists them), each under a header naming it and,
for a fork, its parent and split point. A fork's transcript is complete: it
starts with the messages it shares with its parent.

A failed attempt's header ends with "✗ failed:" and the reason, as in
'lllm tree'. Each message is one entry, "[index] role name: content", with multi-line
content indented below it. Images show as "[image MIME, N bytes]", tool calls
as "→ name(arguments)" with their result ("←") or error ("✗"), and a
message's parsed output, model and usage when it has them.

DIALOG_ID is a full dialog id or a unique prefix of one, such as the 8
digits 'lllm tree' shows, or OWNER/ALIAS (judge/main) or an ALIAS that
names one dialog, as 'lllm diff' names them.

-o json prints an array of {"run_id", "node", "messages"} objects, one per
dialog printed, with the messages as the log records them.`,
		Example: `  # Every transcript of the latest run
  lllm show latest

  # One dialog, by the id prefix 'lllm tree' shows, or by owner/alias
  lllm show latest a1b2c3d4
  lllm show latest judge/main

  # As JSON: the last message of one dialog
  lllm show latest a1b2c3d4 -o json | jq '.[0].messages[-1]'`,
		Args:              runArgs("DIALOG_ID", 1),
		ValidArgsFunction: completeRunThenDialog(opts),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShow(cmd, o, args)
		},
	}
	addFormatFlag(cmd, "output", o.format)
	return cmd
}

func runShow(cmd *cobra.Command, o *showOptions, args []string) error {
	run, tree, err := openRun(cmd.Context(), cmd, o.options, args[0])
	if err != nil {
		return err
	}
	forest := tree.Forest
	failed := map[string]string{} // failed attempts: dialog id -> why
	for _, n := range tree.Nodes {
		if n.Failed {
			failed[n.ID] = n.FailReason
		}
	}
	var dialogs []*dialog.Dialog
	if len(args) > 1 {
		n, err := findTreeDialog(cmd, o.options, tree, run.ID, args[0], args[1])
		if err != nil {
			return err
		}
		dialogs = append(dialogs, forest.Dialog(n.ID))
	} else {
		for _, root := range forest.Roots() {
			walk(forest, root, 0, -1, func(d *dialog.Dialog, _ int) { dialogs = append(dialogs, d) })
		}
	}
	out := newOutput(cmd)
	if o.format.value == "json" {
		docs := make([]showJSON, len(dialogs))
		for i, d := range dialogs {
			docs[i] = showJSON{RunID: run.ID, Node: d.Node(), Messages: d.Messages()}
		}
		if err := writeJSON(out, docs); err != nil {
			return err
		}
		return out.flush()
	}
	if len(dialogs) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "run %s has no dialogs\n", run.ID)
		return nil
	}
	for i, d := range dialogs {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintln(out, dialogHeader(d, failed[d.ID()]))
		for j, m := range d.Messages() {
			writeMessage(out, j, m)
		}
	}
	return out.flush()
}

// showJSON is one dialog of show -o json: the run's id, then the dialog
// as its own JSON has it (dialog.Dialog.MarshalJSON).
type showJSON struct {
	RunID    string            `json:"run_id"`
	Node     dialog.TreeNode   `json:"node"`
	Messages []*dialog.Message `json:"messages"`
}

// dialogHeader is the line above a transcript, marked as tree marks a
// failed attempt (failed is why, empty when it did not fail):
//
//	── dialog a1b2c3d4 owner=coder alias=main (fork of 9f8e7d6c at 4) ──
func dialogHeader(d *dialog.Dialog, failed string) string {
	n := d.Node()
	s := "── dialog " + shortID(n.ID) + " " + field("owner", n.Owner)
	if n.Alias != "" {
		s += " " + field("alias", n.Alias)
	}
	if !n.IsRoot() {
		s += fmt.Sprintf(" (fork of %s at %d", shortID(n.ParentID), n.SplitPoint)
		if n.LastN > 0 {
			s += fmt.Sprintf(": first %d + last %d of %d", n.FirstK, n.LastN, n.ParentLen)
		}
		s += ")"
	}
	if failed != "" {
		s += " ✗ failed: " + failed
	}
	return s + " ──"
}

const indent = "    "

// writeMessage prints one message: "[i] role name: content" when the
// content is one line, else the header and the content indented below;
// then reasoning, tool calls, parsed output and usage, indented.
func writeMessage(w io.Writer, i int, m *dialog.Message) {
	head := fmt.Sprintf("[%d] %s", i, m.Role)
	if m.Name != "" && m.Name != string(m.Role) {
		head += " " + m.Name
	}
	if m.Agent != "" && m.Agent != m.Name {
		head += " (agent " + m.Agent + ")"
	}
	if m.ToolCallID != "" {
		head += " (call " + m.ToolCallID + ")"
	}

	var body []string
	if m.Content != "" {
		body = append(body, lines(m.Content)...)
	}
	for _, p := range m.Parts {
		switch {
		case p.Type == dialog.PartText:
			if p.Text != "" {
				body = append(body, lines(p.Text)...)
			}
		case p.Type == dialog.PartImage && p.Image != nil:
			body = append(body, imageLine(p.Image))
		default:
			body = append(body, fmt.Sprintf("[%s part]", p.Type))
		}
	}

	var extra []string
	for _, r := range m.Reasoning {
		switch {
		case r.Text != "":
			extra = append(extra, prefixed("reasoning: ", "           ", r.Text)...)
		case r.Redacted != "":
			extra = append(extra, "reasoning: [redacted by the provider]")
		}
	}
	for _, fc := range m.FunctionCalls {
		call := "→ " + fc.Name + "(" + compactJSON(fc.Arguments) + ")"
		if fc.ID != "" {
			call += " [" + fc.ID + "]"
		}
		extra = append(extra, call)
		if fc.Result != "" && (m.Role != dialog.RoleTool || fc.Result != m.Text()) {
			// (a tool message's text is its result: shown once, above)
			extra = append(extra, prefixed("  ← ", "    ", fc.Result)...)
		}
		if fc.Error != "" {
			extra = append(extra, prefixed("  ✗ ", "    ", fc.Error)...)
		}
	}
	if len(m.Parsed) > 0 {
		extra = append(extra, "parsed: "+compactJSON(m.Parsed))
	}
	if u := usageLine(m); u != "" {
		extra = append(extra, u)
	}

	switch len(body) {
	case 0:
		fmt.Fprintf(w, "%s:\n", head)
	case 1:
		fmt.Fprintf(w, "%s: %s\n", head, body[0])
	default:
		fmt.Fprintf(w, "%s:\n", head)
		for _, l := range body {
			fmt.Fprintf(w, "%s%s\n", indent, l)
		}
	}
	for _, l := range extra {
		fmt.Fprintf(w, "%s%s\n", indent, l)
	}
}

func lines(s string) []string {
	return strings.Split(strings.TrimRight(s, "\n"), "\n")
}

// prefixed puts first before the first line of s and rest before the others.
func prefixed(first, rest, s string) []string {
	ls := lines(s)
	for i := range ls {
		if i == 0 {
			ls[i] = first + ls[i]
		} else {
			ls[i] = rest + ls[i]
		}
	}
	return ls
}

func imageLine(img *dialog.Image) string {
	switch {
	case img.URL != "" && len(img.Data) == 0:
		return "[image " + img.URL + "]"
	case img.MIME == "":
		return fmt.Sprintf("[image, %d bytes]", len(img.Data))
	}
	return fmt.Sprintf("[image %s, %d bytes]", img.MIME, len(img.Data))
}

// compactJSON is raw JSON on one line, or the raw text if it is not JSON.
func compactJSON(raw json.RawMessage) string {
	if c, ok := jsontext.Compact(raw); ok {
		return c
	}
	return strings.Join(lines(string(raw)), " ")
}

func usageLine(m *dialog.Message) string {
	var parts []string
	if m.Model != "" {
		parts = append(parts, field("model", m.Model))
	}
	u := m.Usage
	for _, f := range []struct {
		name string
		n    int
	}{{"in", u.InputTokens}, {"cached", u.CachedInputTokens}, {"cache-write", u.CacheWriteTokens}, {"out", u.OutputTokens}, {"reasoning", u.ReasoningTokens}} {
		if f.n != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", f.name, f.n))
		}
	}
	if m.USD != 0 {
		parts = append(parts, "usd="+usd(m.USD))
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, " ") + ")"
}
