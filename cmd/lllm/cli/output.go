package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
)

// enumValue is a flag that takes one of a fixed set of values; any other
// value is a flag error, hence a usage error.
type enumValue struct {
	value   string
	allowed []string
	// aliases map other accepted spellings to the allowed value they
	// stand for; they are not listed in help or completions.
	aliases map[string]string
}

func newEnum(def string, allowed ...string) *enumValue {
	return &enumValue{value: def, allowed: allowed}
}

// alias makes e accept name as another spelling of value, one of its
// allowed values, so that an old name keeps working without being listed.
func (e *enumValue) alias(name, value string) *enumValue {
	if e.aliases == nil {
		e.aliases = map[string]string{}
	}
	e.aliases[name] = value
	return e
}

func (e *enumValue) String() string { return e.value }
func (e *enumValue) Type() string   { return "string" }

func (e *enumValue) Set(s string) error {
	if v, ok := e.aliases[s]; ok {
		s = v
	}
	for _, a := range e.allowed {
		if s == a {
			e.value = s
			return nil
		}
	}
	return fmt.Errorf("want %s", strings.Join(e.allowed, " or "))
}

// addFormatFlag adds the output format flag, -o/--output with --format as
// another name, or --format with -o as its shorthand when primary is
// "format".
func addFormatFlag(cmd *cobra.Command, primary string, v *enumValue) {
	usage := "output format: " + strings.Join(v.allowed, " or ")
	fs := cmd.Flags()
	if primary == "format" {
		fs.VarP(v, "format", "o", usage)
		fs.Var(v, "output", usage)
		_ = fs.MarkHidden("output")
	} else {
		fs.VarP(v, "output", "o", usage)
		fs.Var(v, "format", usage)
		_ = fs.MarkHidden("format")
	}
	_ = cmd.RegisterFlagCompletionFunc(primary, cobra.FixedCompletions(v.allowed, cobra.ShellCompDirectiveNoFileComp))
}

// output buffers a command's stdout, through termSafe; flush reports a
// failed write.
type output struct {
	*bufio.Writer
	safe *termSafe
}

func newOutput(cmd *cobra.Command) output {
	safe := &termSafe{w: cmd.OutOrStdout()}
	return output{bufio.NewWriterSize(safe, 64<<10), safe}
}

// termSafe writes to w with the control characters a terminal acts on
// spelled out as \u escapes, such as \u001b: the C0 controls but tab and
// newline, DEL, and the C1 controls (U+0080 to U+009F, which xterm takes
// for ESC sequences). The text of a log (a task, a reply, a label, an
// alias) then cannot clear the screen, move the cursor, retitle the window,
// set the clipboard or overwrite a line (a carriage return) of the terminal
// it is printed on. The escapes are Go's and JSON's alike: in JSON, where
// encoding/json writes DEL and the C1 controls as they are, they stand for
// the same text.
type termSafe struct {
	w io.Writer
	// held is set when the last byte given was 0xC2, which may begin a C1
	// control in the next write: it is written with that write, or by
	// flush.
	held bool
}

func (t *termSafe) Write(p []byte) (int, error) {
	n := len(p)
	if t.held {
		p = append([]byte{0xC2}, p...)
		t.held = false
	}
	if len(p) > 0 && p[len(p)-1] == 0xC2 {
		p, t.held = p[:len(p)-1], true
	}
	if unsafeAt(p) < 0 {
		if _, err := t.w.Write(p); err != nil {
			return 0, err
		}
		return n, nil
	}
	if _, err := t.w.Write(appendEscaped(make([]byte, 0, len(p)+16), p)); err != nil {
		return 0, err
	}
	return n, nil
}

// flush writes a held byte.
func (t *termSafe) flush() error {
	if !t.held {
		return nil
	}
	t.held = false
	_, err := t.w.Write([]byte{0xC2})
	return err
}

// unsafeAt is the index in p of the first control character that termSafe
// escapes, or -1.
func unsafeAt(p []byte) int {
	for i, c := range p {
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f || c == 0xC2 && i+1 < len(p) && p[i+1] >= 0x80 && p[i+1] <= 0x9f {
			return i
		}
	}
	return -1
}

// appendEscaped appends p to b, its control characters (see termSafe) as
// \u escapes.
func appendEscaped(b, p []byte) []byte {
	const hex = "0123456789abcdef"
	for len(p) > 0 {
		i := unsafeAt(p)
		if i < 0 {
			return append(b, p...)
		}
		b = append(b, p[:i]...)
		c, size := p[i], 1
		if c == 0xC2 {
			c, size = p[i+1], 2
		}
		b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		p = p[i+size:]
	}
	return b
}

// escapeControls is s with its control characters (see termSafe) as \u
// escapes.
func escapeControls(s string) string {
	if unsafeAt([]byte(s)) < 0 {
		return s
	}
	return string(appendEscaped(nil, []byte(s)))
}

func (o output) flush() error {
	err := o.Flush()
	if err == nil {
		err = o.safe.flush()
	}
	if err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func warn(cmd *cobra.Command, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "lllm: warning: %s\n", oneLine(w))
	}
}

// openRun resolves ref under the log root and rebuilds its dialog tree,
// with every dialog's messages in its Forest. Reader warnings, such as a
// skipped torn last line, go to stderr. Reading stops when ctx is
// cancelled.
func openRun(ctx context.Context, cmd *cobra.Command, opts *options, ref string) (*logs.Run, *inspect.Tree, error) {
	run, err := openLog(cmd, opts, ref)
	if err != nil {
		return nil, nil, err
	}
	tree, warnings, err := inspect.Load(ctx, run, inspect.Options{Messages: true})
	warn(cmd, warnings)
	if err != nil {
		return nil, nil, err
	}
	noteUnfinished(cmd, run.ID, tree.Status)
	return run, tree, nil
}

// noteUnfinished says on stderr that a run has not ended, so that what is
// shown of it is not taken for the whole run.
func noteUnfinished(cmd *cobra.Command, id string, status logs.Status) {
	switch status {
	case logs.StatusRunning:
		fmt.Fprintf(cmd.ErrOrStderr(), "lllm: run %s is still running: this is its log so far\n", id)
	case logs.StatusInterrupted:
		fmt.Fprintf(cmd.ErrOrStderr(), "lllm: run %s was interrupted: its log ends without a run_end record\n", id)
	}
}

// shortID is the first 8 characters of a dialog id, as the tree shows it.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// namedDialog is a dialog's id and names, for pickDialog.
type namedDialog struct{ id, owner, alias string }

// pickDialog is the dialog of ds that ref names: by a unique id prefix,
// else by owner/alias or alias when one dialog has it.
func pickDialog(cmd *cobra.Command, opts *options, ds []namedDialog, runID, runRef, ref string) (string, error) {
	var byID, byName []string
	for _, d := range ds {
		switch {
		case ref == "":
		case strings.HasPrefix(d.id, ref):
			byID = append(byID, d.id)
		case ref == d.owner+"/"+d.alias, ref == d.alias:
			byName = append(byName, d.id)
		}
	}
	matches, what := byID, "dialog id prefix"
	if len(byID) == 0 {
		matches, what = byName, "name"
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fmt.Errorf("no dialog %q in run %s: give a dialog id, or OWNER/ALIAS; see them with 'lllm tree %s%s'",
			ref, runID, shellQuote(runRef), logDirHint(cmd, opts))
	}
	shown := strings.Join(matches[:min(len(matches), 3)], ", ")
	if len(matches) > 3 {
		shown += ", ..."
	}
	return "", fmt.Errorf("%s %q matches %d dialogs in run %s (%s): give more of an id",
		what, ref, len(matches), runID, shown)
}

// walk calls fn for id and its descendants, depth first, children in fork
// order, down to maxDepth levels below id (all of them when maxDepth < 0).
func walk(forest *dialog.Forest, id string, level, maxDepth int, fn func(d *dialog.Dialog, level int)) {
	d := forest.Dialog(id)
	if d == nil {
		return
	}
	fn(d, level)
	if maxDepth >= 0 && level >= maxDepth {
		return
	}
	for _, c := range d.Node().ChildrenIDs {
		walk(forest, c, level+1, maxDepth, fn)
	}
}

// usd formats dollars: four decimals, more for amounts below a cent's
// hundredth so that they do not print as zero.
func usd(v float64) string {
	if v != 0 && math.Abs(v) < 0.0001 {
		// Two significant digits: $0.000012.
		return fmt.Sprintf("$%.*f", 1-int(math.Floor(math.Log10(math.Abs(v)))), v)
	}
	return fmt.Sprintf("$%.4f", v)
}

// duration formats a run's duration to a useful precision.
func duration(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// field formats key=value, quoting values that would not read as one word.
func field(key, value string) string {
	if value == "" || strings.ContainsAny(value, " \t\n\"=") {
		value = fmt.Sprintf("%q", value)
	}
	return key + "=" + value
}
