// Package cli is the lllm command line: every command of the lllm binary,
// built with cobra.
//
// cmd/lllm is only
//
//	func main() { cli.Main() }
//
// so a program of your own can import this package and get the whole CLI,
// and add commands to it:
//
//	root := cli.NewRootCmd()
//	root.AddCommand(myCmd)
//
// Commands write their results to stdout and their errors to stderr as one
// line, "lllm: <message>". The exit code is 0 on success, 1 on a runtime
// error (a failed or cancelled run, a missing run, an unreadable log) and 2
// on a usage or config error (a bad flag or flag value, a wrong number of
// arguments, an unknown command, a missing or invalid config, a bad --set
// or tasks file).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lllm-go/lllm/internal/suggest"
	"github.com/lllm-go/lllm/logs"
	// The built-in tactics, for lllm run and lllm validate.
	_ "github.com/lllm-go/lllm/tactics/builtin"
)

// The exit codes of Execute and Main.
const (
	ExitOK    = 0 // success
	ExitError = 1 // a runtime error: a failed or cancelled run, a missing run, an unreadable log
	ExitUsage = 2 // a usage or config error: a bad flag or argument, an unknown command, a bad config
)

// Main runs the lllm command line with os.Args and exits with its exit code.
// SIGINT and SIGTERM cancel the command's context; a second signal kills the
// process at once.
func Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default handling so that a
	// second one ends the process even if a command ignores its context.
	context.AfterFunc(ctx, stop)
	// Signals stay caught until the process exits: a Ctrl-C after the
	// command returned, before os.Exit, killed it (exit by signal, not
	// with the command's code).
	os.Exit(Execute(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Execute runs the command line args (without the program name) with
// stdout and stderr, and returns the exit code: ExitOK, ExitError or
// ExitUsage. Errors are written to stderr as "lllm: <message>". It never
// panics.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "lllm: internal error: %v (please report this)\n", v)
			if os.Getenv("LLLM_DEBUG") != "" {
				_, _ = stderr.Write(debug.Stack())
			}
			code = ExitError
		}
	}()
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root := NewRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var xe *exitError
	if errors.As(err, &xe) {
		for _, e := range xe.errs {
			fmt.Fprintf(stderr, "lllm: %s\n", oneLine(e.Error()))
		}
		return xe.code
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "lllm: %s\n", oneLine(ue.Error()))
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", ue.cmd.CommandPath())
		return ExitUsage
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		fmt.Fprintln(stderr, "lllm: interrupted")
		return ExitError
	}
	fmt.Fprintf(stderr, "lllm: %s\n", oneLine(err.Error()))
	return ExitError
}

// oneLine makes an error message fit on one line, without the "logs: "
// prefix of errors from the logs package.
func oneLine(s string) string {
	s = strings.TrimPrefix(s, "logs: ")
	s = strings.TrimSpace(s)
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), " ")
}

// usageError is a mistake in how a command was called; it exits with
// ExitUsage.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// exitError ends a command with an exit code, printing each of errs as
// one "lllm: " line; a command that printed its problems itself leaves
// errs empty.
type exitError struct {
	code int
	errs []error
}

func (e *exitError) Error() string {
	if len(e.errs) == 0 { // its problems were printed already
		return fmt.Sprintf("exit status %d", e.code)
	}
	return errors.Join(e.errs...).Error()
}

func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	return &usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}

// options are the flags every command shares.
type options struct {
	logDir string
}

// NewRootCmd returns the lllm command with all its subcommands. Each call
// returns a fresh tree of commands, so it can be run more than once.
func NewRootCmd() *cobra.Command {
	opts := &options{}
	root := &cobra.Command{
		Use:   "lllm",
		Short: "Run lllm-go experiments and look at their runs",
		Long: `lllm runs lllm-go experiments from YAML configs and looks at their runs.

Every run writes a log under a log root (./logs unless --log-dir says
otherwise; from inside a log root, pass --log-dir .), one directory per
run. lllm lists those runs, rebuilds the dialog tree of a run from its log
alone, and prints its transcripts.

A RUN argument is a run directory (or its events.jsonl), a run id, a
unique prefix or suffix of one, or "latest".`,
		Example: `  # Run a config on one task, then list the runs under ./logs
  lllm run configs/quickstart.yaml --task "Capital of France?"
  lllm runs

  # The dialog tree of the latest run, then its transcripts
  lllm tree latest
  lllm show latest

  # Runs under another log root
  lllm runs --log-dir /data/experiments/logs`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// Runnable so that an unknown command is a usage error (see Args)
		// rather than cobra's help; bare "lllm" prints the help.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return unknownCommand(cmd, args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
		switch {
		case ok && name == "seed" && cmd.Flags().Lookup("set") != nil:
			// The seed a researcher means is the model's: a config value.
			err = fmt.Errorf("%w (a run's seed is in its config: --set global.model_args.seed=N sends N to every agent's model, the mock's included)", err)
		case ok:
			var names []string
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					names = append(names, f.Name)
				}
			})
			if s, ok := suggest.Closest(name, names); ok {
				err = fmt.Errorf("%w (did you mean \"--%s\"?)", err, s)
			}
		}
		return &usageError{cmd: cmd, err: err}
	})
	root.PersistentFlags().StringVar(&opts.logDir, "log-dir", logs.DefaultRoot, "the log root: the `DIR` holding one directory per run")
	_ = root.MarkPersistentFlagDirname("log-dir")

	root.AddCommand(
		newRunCmd(opts),
		newValidateCmd(opts),
		newTreeCmd(opts),
		newShowCmd(opts),
		newRunsCmd(opts),
		newReplayCmd(opts),
		newDiffCmd(opts),
		newExportCmd(opts),
		newServeCmd(opts),
		newChatCmd(),
		newSweepCmd(opts),
		newViewCmd(opts),
		newVersionCmd(),
	)
	decorateBuiltins(root)
	return root
}

// decorateBuiltins gives cobra's own help and completion commands examples
// and makes their argument errors usage errors, like every other command.
func decorateBuiltins(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Example = "  lllm help tree"
			c.Run = nil
			c.RunE = func(c *cobra.Command, args []string) error {
				target, rest, err := root.Find(args)
				if err != nil {
					return &usageError{cmd: c, err: err}
				}
				if len(rest) > 0 {
					return unknownCommand(target, rest[0])
				}
				target.InitDefaultHelpFlag()
				target.InitDefaultVersionFlag()
				return target.Help()
			}
		case "completion":
			c.Example = `  # Load completions into the current bash session
  source <(lllm completion bash)`
			for _, sh := range c.Commands() {
				if sh.Example == "" {
					sh.Example = fmt.Sprintf("  lllm completion %s", sh.Name())
				}
				sh.Args = asUsage(sh.Args)
			}
			c.Args = func(c *cobra.Command, args []string) error {
				if len(args) > 0 {
					return unknownCommand(c, args[0])
				}
				return nil
			}
			c.RunE = func(c *cobra.Command, args []string) error { return c.Help() }
		}
	}
}

// unknownCommand is the usage error for arg, which names no subcommand of
// cmd, with the nearest one as a suggestion.
func unknownCommand(cmd *cobra.Command, arg string) error {
	msg := fmt.Sprintf("unknown command %q for %q", arg, cmd.CommandPath())
	if s, ok := suggestCommand(cmd, arg); ok {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return &usageError{cmd: cmd, err: errors.New(msg)}
}

// suggestCommand returns the subcommand of cmd that arg is likely a typo
// of, if any.
func suggestCommand(cmd *cobra.Command, arg string) (string, bool) {
	var names []string
	for _, c := range cmd.Commands() {
		if !c.Hidden && c.Name() != "help" {
			names = append(names, c.Name())
		}
	}
	return suggest.Closest(arg, names)
}

// asUsage makes the errors of an argument check usage errors.
func asUsage(check cobra.PositionalArgs) cobra.PositionalArgs {
	if check == nil {
		return nil
	}
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &usageError{cmd: cmd, err: err}
		}
		return nil
	}
}

// runArgs checks for a RUN argument followed by at most maxExtra others.
func runArgs(extra string, maxExtra int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usageErrorf(cmd, "%s needs a RUN: a run id, a unique prefix or suffix of one, a run directory, or \"latest\" (see 'lllm runs')", cmd.Name())
		}
		if len(args) > 1+maxExtra {
			if maxExtra == 0 {
				return usageErrorf(cmd, "%s takes one RUN, got %d arguments", cmd.Name(), len(args))
			}
			return usageErrorf(cmd, "%s takes a RUN and at most one %s, got %d arguments", cmd.Name(), extra, len(args))
		}
		if err := runGiven(cmd, args[0], ""); err != nil {
			return err
		}
		if len(args) > 1 && strings.TrimSpace(args[1]) == "" {
			return usageErrorf(cmd, "the %s given is empty: give one, or leave it out", extra)
		}
		return nil
	}
}

// runGiven refuses an empty RUN argument ("") as a usage mistake, with the
// error logs.Open would return for it; which, when set, names the run in
// the message as 'lllm diff' does ("A", "B").
func runGiven(cmd *cobra.Command, ref, which string) error {
	if ref != "" {
		return nil
	}
	if which != "" {
		return &usageError{cmd: cmd, err: &sideError{which, logs.ErrNoRun}}
	}
	return &usageError{cmd: cmd, err: logs.ErrNoRun}
}

// noArgs refuses positional arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf(cmd, "%s takes no arguments, got %q", cmd.Name(), args[0])
	}
	return nil
}

// noLogDir takes --log-dir away from cmd, which reads and writes no run
// logs: its help does not show the flag, and giving it is a usage error
// that says why (why, such as "the server writes the logs of the turns").
func noLogDir(cmd *cobra.Command, why string) {
	cmd.Flags().String("log-dir", "", "") // hides the root's persistent flag
	_ = cmd.Flags().MarkHidden("log-dir")
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if cmd.Flags().Changed("log-dir") {
			return usageErrorf(cmd, "%s takes no --log-dir: %s", cmd.Name(), why)
		}
		return nil
	}
}

// logDirHint is the --log-dir flag to repeat in a suggested command, if
// the user gave one.
func logDirHint(cmd *cobra.Command, opts *options) string {
	if f := cmd.Flag("log-dir"); f != nil && f.Changed {
		return " --log-dir " + shellQuote(opts.logDir)
	}
	return ""
}

// openLog is logs.Open under the log root; when the run is not found
// there, its error says so if the current directory is a log root itself
// (see insideLogRoot).
func openLog(cmd *cobra.Command, opts *options, ref string) (*logs.Run, error) {
	run, err := logs.Open(opts.logDir, ref)
	if err != nil && !errors.Is(err, logs.ErrNoRun) {
		if hint := insideLogRoot(cmd, opts); hint != "" {
			err = fmt.Errorf("%w; %s", err, hint)
		}
	}
	return run, err
}

// insideLogRoot is a hint for lllm used from inside a log root (cd logs):
// --log-dir is not given, the default root does not exist, and the
// current directory holds a run. It is "" otherwise.
func insideLogRoot(cmd *cobra.Command, opts *options) string {
	if f := cmd.Flag("log-dir"); f == nil || f.Changed {
		return ""
	}
	if _, err := os.Stat(opts.logDir); !errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	entries, _ := os.ReadDir(".")
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if st, err := os.Stat(filepath.Join(e.Name(), logs.EventsFile)); err == nil && st.Mode().IsRegular() {
			return "the current directory holds runs itself: pass --log-dir ."
		}
	}
	return ""
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
