package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/tactics"
)

type replayOptions struct {
	*options
	sets     []string
	runTools bool
	format   *enumValue
}

func newReplayCmd(opts *options) *cobra.Command {
	o := &replayOptions{options: opts, format: newEnum("text", "text", "json")}
	cmd := &cobra.Command{
		Use:   "replay RUN",
		Short: "Re-execute a run, serving every model call from its log",
		Long: `Run a recorded run's tactic again, with the config and task its log
recorded, serving every model call from the recorded replies and every
tool call from the recorded results: no network, no API key, no tool side
effects, and the same result. --run-tools runs the tools again instead,
except those that cannot run again (a served turn's ask_user and recall).

Calls are matched by position (agent, dialog alias, call number, attempt)
and checked against the recorded request digest, so samples at a
temperature above 0 replay exactly. When the tactic sends a request that
differs from the recorded one, or one the recording does not have, the
replay stops and prints where (agent, dialog, call) and a diff of the two
requests. With --set, the changed config is replayed against the
recording: the first divergence is where the change first takes effect.
A run that was cut short (cancelled or killed, or interrupted with no
run_end in its log) replays up to where it stopped: when the replay matched
every recorded call and goes on past the end, it says so ("replay reached
the end of the recording") rather than that it diverged.

A replay writes a run log of its own, labelled replay_of, under the same
log root (see 'lllm runs'); replaying a replay gives the same log content.
The tactic must be registered in this binary.

-o json prints {run_id, dir, replay_of, status, calls, recorded, tools,
tools_run, divergence, result, cost, duration_ms}, cost being the run log's cost
object as in lllm run -o json; divergence.cut_short is true for a
recording that ended where the run was cut short.
The exit code is 0 when the replay matched the recording, 1 when it
diverged, failed or went past the end of a run cut short, 2 for a usage
or config problem.`,
		Example: `  # Reproduce the latest run exactly, offline
  lllm replay latest

  # Where does a new judge prompt first change what the model is sent?
  lllm replay 4c2769 --set agent_configs.judge.system_prompt="You are lenient."

  # Does a changed tool change the run? Run the tools instead of serving them
  lllm replay latest --run-tools

  # As JSON, for scripts
  lllm replay latest -o json | jq .divergence`,
		Args:              runArgs("", 0),
		ValidArgsFunction: completeRuns(opts, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd, o, args[0])
		},
	}
	cmd.Flags().StringArrayVar(&o.sets, "set", nil, "override a recorded config value, `KEY.PATH=VALUE` (repeatable)")
	cmd.Flags().BoolVar(&o.runTools, "run-tools", false, "run the tactic's tools again instead of serving their recorded results")
	addFormatFlag(cmd, "output", o.format)
	return cmd
}

type divergenceJSON struct {
	Agent   string `json:"agent"`
	Dialog  string `json:"dialog"`
	Call    int    `json:"call"`
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason"`
	Diff    string `json:"diff,omitempty"`
	// CutShort: the recorded run stopped here, after the replay had
	// matched every call it holds (replay.Divergence.CutShort).
	CutShort bool `json:"cut_short"`
}

// replayJSON is the output of replay -o json.
type replayJSON struct {
	RunID      string          `json:"run_id"`
	Dir        string          `json:"dir"`
	ReplayOf   string          `json:"replay_of"`
	Status     logs.Status     `json:"status"`
	Error      string          `json:"error,omitempty"`
	Calls      int             `json:"calls"`
	Recorded   int             `json:"recorded"`
	Tools      int             `json:"tools"`     // tool calls served from the recording
	ToolsRun   int             `json:"tools_run"` // tool calls that ran their tool
	Divergence *divergenceJSON `json:"divergence"`
	// As lllm run -o json has them: the replay's result, its calls' cost
	// (the log's cost object), which for calls served from the recording
	// is the recorded one (the replay itself spends nothing), and its
	// duration.
	Result     json.RawMessage `json:"result"`
	Cost       dialog.Cost     `json:"cost"`
	DurationMS float64         `json:"duration_ms"`
}

func runReplay(cmd *cobra.Command, o *replayOptions, ref string) error {
	if err := checkSets(cmd, o.sets); err != nil {
		return err
	}
	run, err := openLog(cmd, o.options, ref)
	if err != nil {
		return err
	}
	rec, err := replay.Load(cmd.Context(), run)
	if err != nil {
		return err
	}
	warn(cmd, rec.Warnings)
	ropts := replay.Options{Set: o.sets, RunTools: o.runTools}
	if cmd.Flag("log-dir").Changed {
		// Else the replay's log goes under the recorded run's log root,
		// wherever RUN named it.
		ropts.LogDir = o.logDir
	}
	rep, err := replay.Run(cmd.Context(), rec, ropts)
	if errors.As(err, new(*tactics.ConfigError)) {
		return configErr(err)
	}
	if err != nil {
		return err
	}
	res, d := rep.Run, rep.Divergence
	out := newOutput(cmd)
	if o.format.value == "json" {
		j := replayJSON{RunID: res.RunID, Dir: res.Dir, ReplayOf: run.ID, Status: res.Status, Error: res.Error, Calls: rep.Calls, Recorded: rep.Recorded,
			Tools: rep.Tools, ToolsRun: rep.ToolsRun, Result: res.Result, Cost: res.Totals.Cost, DurationMS: res.Totals.DurationMS}
		if d != nil {
			j.Divergence = &divergenceJSON{Agent: d.Agent, Dialog: d.Dialog, Call: d.Turn, Attempt: d.Attempt, Reason: d.Reason, Diff: d.Diff, CutShort: d.CutShort}
		}
		if err := writeJSON(out, j); err != nil {
			return err
		}
	} else {
		if d != nil {
			fmt.Fprintf(out, "%s\n", d.Error())
			if d.Diff != "" {
				fmt.Fprintf(out, "%s\n", d.Diff)
			}
		} else if res.Status == logs.StatusOK {
			writeResultText(out, res.Result)
		}
		fmt.Fprintf(out, "replay %s of run %s  status %s  calls %d/%d from the recording", res.RunID, run.ID, res.Status, rep.Calls, rep.Recorded)
		if rep.Tools+rep.ToolsRun > 0 {
			fmt.Fprintf(out, "  tools %d served, %d run", rep.Tools, rep.ToolsRun)
		}
		fmt.Fprintln(out)
	}
	if err := out.flush(); err != nil {
		return err
	}
	switch {
	case d != nil && d.CutShort:
		return &exitError{code: ExitError, errs: []error{fmt.Errorf("run %s was cut short, and the replay matched it up to where it stopped; the replay's log is at %s", run.ID, res.Dir)}}
	case d != nil:
		return &exitError{code: ExitError, errs: []error{fmt.Errorf("the replay diverged from run %s; its log is at %s", run.ID, res.Dir)}}
	case res.Status != logs.StatusOK:
		return &exitError{code: ExitError, errs: []error{fmt.Errorf("the replay %s: %s; log at %s", res.Status, res.Error, res.Dir)}}
	}
	return nil
}
