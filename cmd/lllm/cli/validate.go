package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/server"
	"github.com/lllm-go/lllm/sweep"
	"github.com/lllm-go/lllm/tactics"
)

type validateOptions struct {
	*options
	sets   []string
	format *enumValue
}

func newValidateCmd(opts *options) *cobra.Command {
	o := &validateOptions{options: opts, format: newEnum("text", "text", "json")}
	cmd := &cobra.Command{
		Use:   "validate CONFIG",
		Short: "Check a config and report every problem in it",
		Long: `Check a YAML config without running it, and report every problem at once,
one per line as FILE:LINE:COL: MESSAGE: unknown keys, values of the wrong
type, a base cycle, an unknown tactic, agents the tactic needs that the
config lacks, agents without a model or a system prompt, and, once those
are fixed, unknown model_args, providers and context managers.

CONFIG may also be a serve config (tactic_type: serve), checked as lllm
serve loads it, or a sweep spec (a file with a dataset), checked with
everything it names as lllm sweep checks it before running.

--set KEY.PATH=VALUE applies overrides first, as lllm run does.

-o json prints one object on stdout, {config, kind, valid, problems},
whether the config is valid or not: kind is tactic, serve or sweep, and
problems a list, empty when valid. A problem is {where, file, line, column,
path, message}, each part left out when unknown: where is FILE:LINE:COL as
the text shows it, or --set KEY.PATH for an override, whose KEY.PATH is
then its path. A sweep spec's problems are placed as a config's are: in
the spec, in its dataset or in its base config. A valid config also has
its tactic and agents, a valid sweep spec its cells and samples.

The exit code is 0 when the config is valid, printing the tactic and its
agents, and 2 when it is not.`,
		Example: `  lllm validate configs/quickstart.yaml

  # With the override you mean to run with
  lllm validate config.yaml --set global.model_name=openai/gpt-4o-mini

  # A sweep spec: its base config, dataset, axes and scorers
  lllm validate configs/sweep-example.yaml

  # The problems as JSON, for an editor or a script
  lllm validate config.yaml -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return usageErrorf(cmd, "validate needs a CONFIG: the path of a YAML config")
			case 1:
				return nil
			}
			return usageErrorf(cmd, "validate takes one CONFIG, got %d arguments", len(args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(cmd, o, args[0])
		},
	}
	cmd.Flags().StringArrayVar(&o.sets, "set", nil, "override a config value, `KEY.PATH=VALUE` (repeatable)")
	addFormatFlag(cmd, "output", o.format)
	return cmd
}

// validationJSON is the output of validate -o json.
type validationJSON struct {
	Config string `json:"config"` // the file checked, as given
	Kind   string `json:"kind"`   // tactic, serve or sweep
	Valid  bool   `json:"valid"`
	// Tactic and Agents are a valid config's; Cells and Samples a valid
	// sweep spec's.
	Tactic   string        `json:"tactic,omitempty"`
	Agents   []string      `json:"agents,omitempty"`
	Cells    int           `json:"cells,omitempty"`
	Samples  int           `json:"samples,omitempty"`
	Problems []problemJSON `json:"problems"`
}

// problemJSON is one problem of a config: where it is, as far as the
// validator knows, and what it is.
type problemJSON struct {
	// Where is the place as the text output gives it: FILE:LINE:COL,
	// FILE, or --set KEY.PATH.
	Where  string `json:"where,omitempty"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	// Path is the config key a --set names.
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// toProblem takes a problem apart. A *config.Error, as the problems of
// configs and of sweep specs are, gives its place and message from its
// fields: a file, a line and a column, or "--set KEY.PATH" and its path.
// Another problem has no place, except that one whose text starts with
// "FILE: " for a file that exists names that file (a tactic's problems
// name their config so).
func toProblem(err error) problemJSON {
	text := oneLine(err.Error())
	var pe *config.Error
	if !errors.As(err, &pe) || pe.Error() != err.Error() {
		if at, msg, ok := strings.Cut(text, ": "); ok {
			if fi, err := os.Stat(at); err == nil && fi.Mode().IsRegular() {
				return problemJSON{Where: at, File: at, Message: msg}
			}
		}
		return problemJSON{Message: text}
	}
	p := problemJSON{Message: oneLine((&config.Error{Msg: pe.Msg, Err: pe.Err}).Error())}
	if key, isSet := strings.CutPrefix(pe.File, "--set "); isSet {
		p.Where, p.Path = pe.File, key
		return p
	}
	p.File, p.Line, p.Column = pe.File, pe.Line, pe.Column
	if pe.File != "" {
		// As the text gives it: FILE, FILE:LINE or FILE:LINE:COL.
		p.Where = strings.TrimSuffix((&config.Error{File: pe.File, Line: pe.Line, Column: pe.Column}).Error(), ": ")
	}
	return p
}

func runValidate(cmd *cobra.Command, o *validateOptions, path string) error {
	if isSweepSpec(path) {
		return validateSweep(cmd, o, path)
	}
	kind := "tactic"
	if kindOf(path) == "serve" {
		kind = "serve"
	}
	cfg, err := loadConfig(cmd, path, o.sets)
	var xe *exitError
	if errors.As(err, &xe) {
		return reportProblems(cmd, o, path, kind, xe.errs)
	}
	if err != nil {
		return err
	}
	var errs []error
	var agents []string
	if cfg.TacticType == server.TacticType {
		// lllm serve's agents: checked as lllm serve loads them.
		kind = "serve"
		if _, err := server.FromConfig(cmd.Context(), cfg); err != nil {
			return reportProblems(cmd, o, path, kind, problems(err))
		}
	} else if cfg.TacticType != "" {
		// Everything Run checks, every problem at once: the tactic's
		// params, the agents it needs, each agent's model_args, provider,
		// context manager, and the mock script.
		if err := tactics.Check(cmd.Context(), cfg, tactics.RunOptions{}); err != nil {
			errs = problems(err)
		}
	} else {
		errs = append(errs, config.Validate(cfg, agents)...)
	}
	if len(errs) > 0 {
		return reportProblems(cmd, o, path, kind, errs)
	}
	names := make([]string, 0, len(cfg.Agents))
	for _, a := range cfg.Agents {
		names = append(names, a.Name)
	}
	out := newOutput(cmd)
	if o.format.value == "json" {
		if err := writeJSON(out, validationJSON{Config: path, Kind: kind, Valid: true, Tactic: cfg.TacticType, Agents: names,
			Problems: []problemJSON{}}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "%s: ok (tactic %s, agents %s)\n", path, cfg.TacticType, strings.Join(names, ", "))
	}
	return out.flush()
}

// isSweepSpec reports whether path holds a sweep spec rather than a tactic
// config: a dataset and no tactic_type.
func isSweepSpec(path string) bool { return kindOf(path) == "sweep" }

// kindOf says what the YAML file at path is, by its top-level keys:
// "sweep" (a dataset and no tactic_type), "serve" (tactic_type: serve),
// "tactic" (another tactic_type), or "" when it cannot tell.
func kindOf(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	// The top-level keys of the document as written: a key given twice
	// (a problem the file's own check reports) does not hide its kind.
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return ""
	}
	top := map[string]*yaml.Node{}
	for m, i := root.Content[0], 0; i+1 < len(m.Content); i += 2 {
		if _, ok := top[m.Content[i].Value]; !ok {
			top[m.Content[i].Value] = m.Content[i+1]
		}
	}
	_, dataset := top["dataset"]
	tacticNode, hasTactic := top["tactic_type"]
	var tactic string
	if hasTactic {
		if tacticNode.Kind == yaml.AliasNode && tacticNode.Alias != nil {
			tacticNode = tacticNode.Alias
		}
		tactic = tacticNode.Value
	}
	switch {
	case dataset && !hasTactic:
		return "sweep"
	case tactic == "serve":
		return "serve"
	case hasTactic:
		return "tactic"
	}
	return ""
}

// wrongKind is the usage error for giving cmd a file of another kind, or
// nil.
func wrongKind(cmd *cobra.Command, path, want string) error {
	switch kind := kindOf(path); {
	case kind == "" || kind == want:
		return nil
	case kind == "sweep":
		return usageErrorf(cmd, "%s is a sweep spec: run it with lllm sweep %s", path, path)
	case kind == "serve":
		return usageErrorf(cmd, "%s is a serve config: serve it with lllm serve --config %s", path, path)
	case want == "sweep":
		return usageErrorf(cmd, "%s is a tactic config: run it with lllm run %s --task ...; lllm sweep takes a sweep spec (see configs/sweep-example.yaml)", path, path)
	}
	return nil
}

// validateSweep checks a sweep spec and everything it names, as lllm sweep
// does before it runs anything.
func validateSweep(cmd *cobra.Command, o *validateOptions, path string) error {
	if err := checkSets(cmd, o.sets); err != nil {
		return err
	}
	spec, err := sweep.LoadSpec(path)
	if err == nil {
		var sw *sweep.Sweep
		if sw, err = sweep.New(cmd.Context(), spec, sweep.Options{Sets: o.sets, LogRoot: o.logDir}); err == nil {
			plan := sw.Plan()
			out := newOutput(cmd)
			if o.format.value == "json" {
				if err := writeJSON(out, validationJSON{Config: path, Kind: "sweep", Valid: true, Cells: len(plan.Cells), Samples: plan.Samples,
					Problems: []problemJSON{}}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(out, "%s: ok (sweep spec: %d cells, %d samples)\n", path, len(plan.Cells), plan.Samples)
			}
			return out.flush()
		}
	}
	if errors.As(err, new(*sweep.SpecError)) || errors.As(err, new(*tactics.ConfigError)) {
		return reportProblems(cmd, o, path, "sweep", problems(err))
	}
	return err
}

// reportProblems prints each problem on a line of stderr, or with -o json
// all of them as a validationJSON on stdout; then a count on stderr, and
// exits with code 2.
func reportProblems(cmd *cobra.Command, o *validateOptions, path, kind string, errs []error) error {
	w := cmd.ErrOrStderr()
	if o.format.value == "json" {
		v := validationJSON{Config: path, Kind: kind, Problems: make([]problemJSON, len(errs))}
		for i, e := range errs {
			v.Problems[i] = toProblem(e)
		}
		out := newOutput(cmd)
		if err := writeJSON(out, v); err != nil {
			return err
		}
		if err := out.flush(); err != nil {
			return err
		}
	} else {
		for _, e := range errs {
			fmt.Fprintln(w, oneLine(e.Error()))
		}
	}
	s := "s"
	if len(errs) == 1 {
		s = ""
	}
	fmt.Fprintf(w, "lllm: %s: %d problem%s\n", path, len(errs), s)
	return &exitError{code: ExitUsage}
}
