package tactics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/internal/registry"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/prompts"
	"github.com/lllm-go/lllm/runtime/provider"
)

// RunOptions adjust Run.
type RunOptions struct {
	// LogDir is the log root; empty uses the config's log_dir, then
	// logs.DefaultRoot.
	LogDir string
	// HTTPClient sends the providers' requests; nil uses the default.
	HTTPClient *http.Client
	// Seed is recorded in the run's log (run_start.seed) for the caller's
	// own use; nothing in the run reads it. The seeds that change replies
	// are the config's: model_args.seed, which the providers get, and the
	// mock section's seed.
	Seed int64
	// Labels are recorded in the run's log (run_start.labels).
	Labels map[string]string
	// Sleep, when set, is every agent's Agent.Sleep: how it waits before
	// retrying a failed model call.
	Sleep func(ctx context.Context, d time.Duration) error
	// Retrying, when set, is every agent's Agent.Retrying.
	Retrying func(r Retry)
	// CallTool, when set, is every agent's Agent.CallTool.
	CallTool func(ctx context.Context, agent string, f *dialog.Function, call dialog.FunctionCall) dialog.FunctionCall
	// Models, when set, opens each agent's model in place of provider.Open,
	// given the agent's config and the provider.Config Run would use. A
	// replay serves recorded replies this way; a sweep wraps each real model
	// (opened with provider.Open) in its cache.
	Models func(ctx context.Context, agent config.Agent, cfg provider.Config) (provider.Model, error)
	// Prompts, when set, are the prompt files to use in place of the
	// config's prompts folder: their texts by prompt path. A replay
	// passes those its log recorded (run_start.prompts).
	Prompts map[string]string
}

// Result is how a run ended.
type Result struct {
	RunID  string
	Dir    string
	Status logs.Status
	// Result is the tactic's output as JSON; nil when it failed.
	Result json.RawMessage
	Error  string
	Totals logs.Totals
	// LogError is why the run's log could not be finished, "" when it
	// was: the run ended as Status says, but its log is not whole.
	// Run returns it as its error too.
	LogError string
}

// ConfigError is a problem with a config or its parts (unknown tactic,
// bad model_args, unknown provider or context manager): the run never
// started and nothing was logged.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Run runs cfg's tactic on task with the agents cfg defines, recording
// everything in a new run log. A config problem is a *ConfigError and
// starts no run. Once the run has started, a failure or cancellation of the
// tactic is reported in the Result (and the log, which is always finished),
// with a nil error; a task that is empty, blank or not UTF-8 fails its run
// so, before any model call.
//
// Run is Prepare followed by one Runner.Run; to run one config on many
// tasks, prepare it once.
func Run(ctx context.Context, cfg *config.Config, task string, opts RunOptions) (*Result, error) {
	r, err := Prepare(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	return r.Run(ctx, task)
}

// A Runner runs one config's tactic on any number of tasks, each in a run
// of its own with its own log. Preparing the config (checking it, loading
// its prompt files, decoding its mock script, opening each agent's model)
// is done once, by Prepare; each run then costs only its log and the
// tactic's own work.
//
// Every run gets a fresh tactic (built from the config's params) and fresh
// agents, as Run gives them: nothing of one run's dialogs, limits or costs
// leaks into another. What the runs share is what Prepare made: the system
// prompts, the context managers, the tokenizer (whose memo is per message)
// and the models. A model's own state is therefore shared too: the mock
// provider's scripted replies list is consumed across the runs, while its
// rules answer each request alike in every run.
//
// A Runner is safe for concurrent use.
type Runner struct {
	cfg      *config.Config
	opts     RunOptions
	root     string
	recorded json.RawMessage // the config the run logs record
	specs    map[string]*agentSpec
	prompts  *promptSource // for Session.Prompt, shared by the runs
	// texts are the prompt files the run logs record (run_start.prompts).
	texts map[string]string
}

// Prepare checks cfg and prepares everything its runs share, as Run would:
// the tactic's params and agents are checked and each agent's model opened
// (through opts.Models if set, without touching the network). A problem is
// reported at once, as a *ConfigError; ctx is the context the models are
// opened with.
func Prepare(ctx context.Context, cfg *config.Config, opts RunOptions) (*Runner, error) {
	ps := newPromptSource(cfg, opts)
	specs, err := prepare(ctx, cfg, opts, ps)
	if err != nil {
		return nil, err
	}
	recorded, err := json.Marshal(recordedConfig(cfg))
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("%s: recording the config: %w", cfg.Path, err)}
	}
	root := opts.LogDir
	if root == "" {
		root = cfg.LogDir
	}
	// What every run needs and the process builds once, built now rather
	// than in the first runs' time (a sweep's latencies and timeouts).
	logs.GitCommit()
	for _, sp := range specs {
		contextmgr.Preload(sp.full)
	}
	return &Runner{cfg: cfg, opts: opts, root: root, recorded: recorded, specs: specs, prompts: ps, texts: ps.texts()}, nil
}

// Run runs the prepared tactic on task in a new run with its own log, as
// the package's Run does. Once the run has started, a failure or
// cancellation of the tactic is reported in the Result (and the log, which
// is always finished), with a nil error; an error means the log could not
// be created or finished.
func (r *Runner) Run(ctx context.Context, task string) (*Result, error) {
	return r.RunLabeled(ctx, task, nil)
}

// RunLabeled is Run with labels for this run's log besides those of the
// RunOptions it was prepared with (which it overrides key by key): a
// sweep labels each sample's run with its sweep, cell, row and repeat.
func (r *Runner) RunLabeled(ctx context.Context, task string, labels map[string]string) (*Result, error) {
	cfg := r.cfg
	// The factory already accepted these params in Prepare; a fresh
	// tactic per run keeps runs apart even for a tactic with state.
	t, err := New(cfg.TacticType, cfg.Params)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("%s: %w", cfg.Path, err)}
	}
	start, err := logs.NewRunStart(ctx, cfg.TacticType, r.recorded, task, r.opts.Seed)
	if err != nil {
		return nil, &ConfigError{err}
	}
	start.Labels, start.Prompts = r.opts.Labels, r.texts
	if len(labels) > 0 {
		start.Labels = maps.Clone(r.opts.Labels)
		if start.Labels == nil {
			start.Labels = map[string]string{}
		}
		maps.Copy(start.Labels, labels)
	}
	w, run, err := logs.Create(r.root, start, logs.Options{})
	if err != nil {
		return nil, err
	}
	s := NewSession(cfg.TacticType, t, agentMakers(r.specs, w), w)
	s.prompts = r.prompts
	var out any
	if err = checkTask(task); err == nil {
		out, err = s.Run(ctx, task)
	}
	res := &Result{RunID: run.ID, Dir: run.Dir, Status: logs.StatusOK}
	end := logs.RunEnd{Status: logs.StatusOK}
	if err == nil {
		res.Result, err = jsontext.Marshal(out)
		end.Result = res.Result
	}
	if err != nil {
		res.Status, res.Error, res.Result = statusOf(ctx, err), err.Error(), nil
		end.Status, end.Error, end.Result = res.Status, res.Error, nil
	}
	ferr := w.Finish(end)
	// What the run did and spent, even when its log could not hold it all.
	res.Totals = w.Totals()
	if ferr != nil {
		err := fmt.Errorf("finishing the run log: %w", ferr)
		res.LogError = err.Error()
		return res, err
	}
	return res, nil
}

// checkTask refuses a task no tactic can work on: one that is empty or
// blank, which would send models an empty prompt, and one that is not
// UTF-8, which the log (JSON) could not record as it is.
func checkTask(task string) error {
	switch {
	case strings.TrimSpace(task) == "":
		return errors.New("the task is empty: give the tactic something to do")
	case !utf8.ValidString(task):
		return errors.New("the task is not valid UTF-8 text")
	}
	return nil
}

// recordedConfig is the config a run log records: the resolved config,
// with the prompts folder as an absolute path when an agent reads a prompt
// file, so that the run can be replayed from anywhere.
func recordedConfig(cfg *config.Config) map[string]any {
	r := cfg.Resolved()
	for _, ac := range cfg.Agents {
		if !localPrompt(ac.SystemPromptPath) {
			continue
		}
		if dir := cfg.PromptsPath(); dir != "" {
			if abs, err := filepath.Abs(dir); err == nil {
				r["prompts_dir"] = abs
			}
		}
		break
	}
	return r
}

// agentSpec is everything needed to make fresh agents of one config entry.
type agentSpec struct {
	name   string
	system *dialog.Prompt
	model  provider.Model
	full   string
	params provider.Params
	limits Limits
	cm     contextmgr.Manager
	cmName string
	tokens *contextmgr.Tokenizer
	sleep  func(ctx context.Context, d time.Duration) error
	retry  func(r Retry)
	// callTool is RunOptions.CallTool.
	callTool func(ctx context.Context, agent string, f *dialog.Function, call dialog.FunctionCall) dialog.FunctionCall
	log      Log
}

func (sp *agentSpec) make() *Agent {
	return &Agent{Name: sp.name, System: sp.system, Model: sp.model, ModelName: sp.full,
		Params: sp.params, Limits: sp.limits, Context: sp.cm, ContextName: sp.cmName,
		Tokens: sp.tokens, Sleep: sp.sleep, Retrying: sp.retry, CallTool: sp.callTool, Log: sp.log}
}

// agentMakers are the makers of agents of specs whose agents write to
// log (nil: none). Each maker has its own copy of its spec, so the makers
// of one run's log never touch another's.
func agentMakers(specs map[string]*agentSpec, log Log) map[string]func() *Agent {
	out := make(map[string]func() *Agent, len(specs))
	for n, sp := range specs {
		own := *sp
		own.log = log
		out[n] = own.make
	}
	return out
}

// prepare checks cfg and builds the specs of its agents, opening each
// agent's model (which touches no network), with system prompt files from
// ps. It builds the tactic only to check its params and the agents and
// prompt variables it needs: each run builds its own. Every problem is
// reported at once, as a *ConfigError.
func prepare(ctx context.Context, cfg *config.Config, opts RunOptions, ps *promptSource) (map[string]*agentSpec, error) {
	// Every problem at once: the tactic's params, the agents it needs,
	// and each agent's own.
	var errs []error
	var needs []string
	var t Tactic
	var err error
	if cfg.TacticType != "" {
		// A missing tactic_type is config.Validate's problem, said once.
		t, err = New(cfg.TacticType, cfg.Params)
	}
	var pe *ParamError
	switch {
	case errors.As(err, &pe):
		errs = append(errs, cfg.Errorf([]string{"params", pe.Param}, "%v", err))
	case err != nil:
		// A problem of the file: placed in it, as the config's own are.
		errs = append(errs, &config.Error{File: cfg.Path, Err: err})
	case t != nil:
		needs = t.Agents()
	}
	var specs map[string]*agentSpec
	if verrs := config.Validate(cfg, needs); len(verrs) > 0 {
		errs = append(errs, verrs...)
	} else {
		specs, err = agentSpecs(ctx, cfg, opts, ps)
		var ce *ConfigError
		switch {
		case errors.As(err, &ce):
			errs = append(errs, unjoin(ce.Err)...)
		case err != nil:
			return nil, err
		}
		// With the agents' other problems: specs holds the system prompt
		// of every agent whose prompt parsed, even when its model did not.
		if t != nil {
			errs = append(errs, unfilledVariables(cfg, t, specs)...)
		}
	}
	if len(errs) > 0 {
		return nil, &ConfigError{errors.Join(errs...)}
	}
	return specs, nil
}

// unjoin is the errors err joins, however deep, or err.
func unjoin(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, unjoin(e)...)
	}
	return out
}

// Agents builds the agents cfg's agent_configs define, without a tactic:
// for each agent name, a function that makes a fresh Agent with its
// system prompt, model (opened as Run opens it, through opts.Models if
// set, without touching the network), params, limits and context manager.
// The agents share one tokenizer and have no Log. Every problem is
// reported at once, as a *ConfigError. A program that runs agents its own
// way, such as lllm serve, uses it so that its configs mean what Run's do.
func Agents(ctx context.Context, cfg *config.Config, opts RunOptions) (map[string]func() *Agent, error) {
	if errs := config.Validate(cfg, nil); len(errs) > 0 {
		return nil, &ConfigError{errors.Join(errs...)}
	}
	specs, err := agentSpecs(ctx, cfg, opts, newPromptSource(cfg, opts))
	if err != nil {
		return nil, err
	}
	return agentMakers(specs, nil), nil
}

// PromptFiles returns the text of every prompt file of cfg's prompts
// folder, by prompt path, as Run's logs record them (run_start.prompts) so
// that a replay renders the prompts the run rendered. It returns nil when
// the config has no folder or it does not load.
func PromptFiles(cfg *config.Config) map[string]string {
	return newPromptSource(cfg, RunOptions{}).texts()
}

// agentSpecs opens the model and builds the spec of every agent of cfg,
// with system prompt files from ps. With a *ConfigError it returns the
// specs it could start: an agent with a problem other than its system
// prompt has a spec holding only that prompt.
func agentSpecs(ctx context.Context, cfg *config.Config, opts RunOptions, ps *promptSource) (map[string]*agentSpec, error) {
	shared, err := ProviderConfig(cfg)
	if err != nil {
		return nil, &ConfigError{err}
	}
	shared.HTTPClient = opts.HTTPClient
	reg, err := loadPrompts(cfg, ps)
	if err != nil {
		return nil, &ConfigError{err}
	}
	tokens := contextmgr.NewTokenizer()
	specs := map[string]*agentSpec{}
	var errs []error
	// Agents that fail alike (no API key for their shared model, a typo
	// in global's model_args) make one problem naming them all.
	same := map[string]int{}    // problem text and place -> index in errs
	alike := map[int][]string{} // index in errs -> the agents with that problem
	for i, ac := range cfg.Agents {
		sp, err := newSpec(ctx, cfg, ac, reg, shared, opts, tokens)
		if sp != nil {
			specs[ac.Name] = sp
		}
		if err == nil {
			continue
		}
		for _, err := range unjoin(err) {
			// problem is err for the agents named, at the place the
			// setting was written (as the config's other problems),
			// else in the file.
			problem := func(agents string) error {
				if se, ok := err.(*settingError); ok {
					return cfg.AgentErrorf(i, se.path, "%s: %s", agents, se)
				}
				return &config.Error{File: cfg.Path, Msg: agents, Err: err}
			}
			key := problem("").Error()
			if j, ok := same[key]; ok {
				alike[j] = append(alike[j], ac.Name)
				errs[j] = problem("agents " + strings.Join(alike[j], ", "))
				continue
			}
			same[key] = len(errs)
			alike[len(errs)] = []string{ac.Name}
			errs = append(errs, problem(AgentLabel(ac.Name)))
		}
	}
	if len(errs) > 0 {
		// The specs that failed hold only their system prompt, for
		// prepare's check of its variables.
		return specs, &ConfigError{errors.Join(errs...)}
	}
	return specs, nil
}

// loadPrompts returns the prompt files of cfg's prompts folder, ps, when an
// agent names one with system_prompt_path; otherwise it returns nil.
func loadPrompts(cfg *config.Config, ps *promptSource) (*prompts.Registry, error) {
	var first string
	for _, ac := range cfg.Agents {
		if localPrompt(ac.SystemPromptPath) {
			first = ac.SystemPromptPath
			break
		}
	}
	if first == "" {
		return nil, nil
	}
	if ps.dir == "" && ps.recorded == nil {
		return nil, &config.Error{File: cfg.Path, Msg: fmt.Sprintf("system_prompt_path %q needs a prompts folder: create %s or set prompts_dir",
			first, filepath.Join(filepath.Dir(cfg.Path), "prompts"))}
	}
	reg, err := ps.registry()
	if err != nil {
		return nil, &config.Error{File: cfg.Path, Err: err}
	}
	return reg, nil
}

// promptSource is the prompts folder of a config, loaded on first use, or
// the prompt files a run recorded, which stand in for it.
type promptSource struct {
	dir      string            // "" when the config has none
	recorded map[string]string // prompt path -> file text (RunOptions.Prompts)
	once     sync.Once
	reg      *prompts.Registry
	err      error
}

func newPromptSource(cfg *config.Config, opts RunOptions) *promptSource {
	return &promptSource{dir: cfg.PromptsPath(), recorded: opts.Prompts}
}

// registry returns the folder's prompts (or the recorded ones); nil
// without either.
func (ps *promptSource) registry() (*prompts.Registry, error) {
	if ps == nil || ps.dir == "" && ps.recorded == nil {
		return nil, nil
	}
	ps.once.Do(func() {
		if ps.recorded == nil {
			ps.reg, ps.err = prompts.LoadDir(ps.dir, prompts.WithTools(LookupTool))
			if ps.err != nil {
				ps.err = fmt.Errorf("prompts_dir %s: %w", ps.dir, ps.err)
			}
			return
		}
		reg := &prompts.Registry{}
		var errs []error
		for _, path := range slices.Sorted(maps.Keys(ps.recorded)) {
			file := "the recorded prompt file " + path
			errs = append(errs, reg.AddFile(file, path, []byte(ps.recorded[path]), prompts.WithTools(LookupTool)))
		}
		if ps.err = errors.Join(errs...); ps.err == nil {
			ps.reg = reg
		}
	})
	return ps.reg, ps.err
}

// texts returns the text of every prompt file of the folder (or of those
// recorded), by prompt path, for a run log to record; nil when there is
// no folder or it does not load (Session.Prompt then reports why).
func (ps *promptSource) texts() map[string]string {
	reg, err := ps.registry()
	if reg == nil || err != nil {
		return nil
	}
	out := map[string]string{}
	for _, path := range reg.Paths() {
		if text, ok := reg.Source(path); ok {
			out[path] = text
		}
	}
	return out
}

// localPrompt reports whether a system_prompt_path names a file of the
// config's own prompts folder, rather than a prompt package's "pkg:path".
func localPrompt(ref string) bool {
	pkg, _ := registry.Split(ref)
	return ref != "" && pkg == ""
}

func newSpec(ctx context.Context, cfg *config.Config, ac config.Agent, reg *prompts.Registry, pcfg provider.Config, opts RunOptions, tokens *contextmgr.Tokenizer) (*agentSpec, error) {
	var system *dialog.Prompt
	var err error
	if ac.SystemPromptPath != "" {
		if system, err = prompts.Lookup(ac.SystemPromptPath, reg, prompts.WithTools(LookupTool)); err != nil {
			switch {
			case localPrompt(ac.SystemPromptPath) && opts.Prompts != nil:
				return nil, fmt.Errorf("system_prompt_path: %w (in the prompt files the run recorded)", err)
			case localPrompt(ac.SystemPromptPath):
				return nil, fmt.Errorf("system_prompt_path: %w (in %s)", err, cfg.PromptsPath())
			}
			return nil, fmt.Errorf("system_prompt_path: %w", err)
		}
	} else if system, err = dialog.NewPrompt(ac.Name+"/system", ac.SystemPrompt); err != nil {
		return nil, fmt.Errorf("system_prompt: %w", err)
	}
	// Every problem of the agent at once: its model_args, its model, its
	// context manager.
	var errs []error
	params, perr := paramsOf(ac.ModelArgs)
	if perr != nil {
		errs = append(errs, perr)
	} else if err := params.CheckFor(ac.ModelName); err != nil {
		errs = append(errs, &settingError{[]string{"model_args", "extra_body"}, err})
	}
	pcfg.APIKeyEnv, pcfg.BaseURL = ac.APIKeyEnv, ac.BaseURL
	var model provider.Model
	if opts.Models != nil {
		model, err = opts.Models(ctx, ac, pcfg)
	} else {
		model, err = provider.Open(ctx, ac.ModelName, pcfg)
	}
	if err != nil {
		// Placed where the model was named (the agent's entry, else
		// global), as its model_args' problems are.
		errs = append(errs, &settingError{[]string{"model_name"}, err})
	}
	lim := Limits{
		MaxExceptionRetry: given(ac.MaxExceptionRetry), MaxInterruptSteps: given(ac.MaxInterruptSteps),
		MaxLLMRecall: given(ac.MaxLLMRecall), MaxRetries: given(ac.MaxRetries), MaxToolOutput: given(ac.MaxToolOutput),
		ToolConcurrency: given(ac.ToolConcurrency), CallTimeout: given(ac.CallTimeout),
		MaxRetryWait: given(ac.MaxRetryWait), ToolTimeout: given(ac.ToolTimeout),
	}.Resolved()
	cmCfg := ac.ContextManager
	if cmCfg == nil {
		cmCfg = cfg.ContextManager
	}
	sp := &agentSpec{name: ac.Name, system: system, model: model, full: ac.ModelName, params: params, limits: lim, tokens: tokens,
		sleep: opts.Sleep, retry: opts.Retrying, callTool: opts.CallTool}
	if cmCfg != nil {
		if sp.cm, err = contextmgr.New(cmCfg); err != nil {
			errs = append(errs, managerProblem(err))
		}
		sp.cmName = contextmgr.TypeOf(cmCfg)
	}
	if len(errs) > 0 {
		// Only the system prompt, whose variables the caller checks too.
		return &agentSpec{name: ac.Name, system: system}, errors.Join(errs...)
	}
	return sp, nil
}

// given is a config's limit as a Limits field: unset (nil) is zero, the
// default, and a config's 0, none, is -1.
func given[T int | time.Duration](v *T) T {
	switch {
	case v == nil:
		return 0
	case *v == 0:
		return -1
	}
	return *v
}

// settingError is a problem with an agent's setting at path (a model_args
// key, the context manager or one of its keys), which the config places
// where it was written.
type settingError struct {
	path []string
	err  error
}

func (e *settingError) Error() string { return e.path[0] + ": " + e.err.Error() }

func (e *settingError) Unwrap() error { return e.err }

// managerProblem is an error of contextmgr.New as a problem with the
// context_manager setting, placed at the key at fault when it names one,
// and told as that setting's, which already says what it is about:
// "window: key n must be an integer", not "contextmgr: window: key n must
// be an integer".
func managerProblem(err error) *settingError {
	path := []string{"context_manager"}
	var ce *contextmgr.ConfigError
	if errors.As(err, &ce) {
		if ce.Key != "" {
			path = append(path, ce.Key)
		}
		err = ce.Err
		if ce.Type != "" {
			err = fmt.Errorf("%s: %w", ce.Type, ce.Err)
		}
	}
	return &settingError{path, err}
}

// paramsOf reads model_args into Params; an unknown key or a value of the
// wrong type is a *settingError.
func paramsOf(args map[string]any) (provider.Params, error) {
	var p provider.Params
	known := map[string]string{"extra_body": "a map of request fields", "max_tokens": "a whole number", "seed": "a whole number",
		"stop": "a list of text", "temperature": "a number", "top_k": "a whole number", "top_p": "a number"}
	names := slices.Sorted(maps.Keys(known))
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(args)) {
		want, ok := known[k]
		if !ok {
			msg := fmt.Sprintf("unknown key %q", k)
			if s := closest(k, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			errs = append(errs, &settingError{[]string{"model_args", k}, fmt.Errorf("%s; accepted: %s", msg, strings.Join(names, ", "))})
			continue
		}
		b, err := json.Marshal(map[string]any{k: args[k]})
		if err == nil {
			err = json.Unmarshal(b, &p)
		}
		if err != nil {
			v, _ := json.Marshal(args[k])
			errs = append(errs, &settingError{[]string{"model_args", k}, fmt.Errorf("%s must be %s, not %s", k, want, v)})
		}
	}
	// What every provider refuses fails the first call of a run: refuse
	// it here, where lllm validate and a sweep's checks see it.
	if p.MaxTokens != nil && *p.MaxTokens < 0 {
		errs = append(errs, &settingError{[]string{"model_args", "max_tokens"}, fmt.Errorf("max_tokens must be 0 or more, not %d", *p.MaxTokens)})
	}
	if err := p.Check(); err != nil {
		// Each member's problem at its own line.
		for _, err := range unjoin(err) {
			path := []string{"model_args", "extra_body"}
			var xe *provider.ExtraBodyError
			if errors.As(err, &xe) {
				path = append(path, xe.Path...)
			}
			errs = append(errs, &settingError{path, err})
		}
	}
	return p, errors.Join(errs...)
}

// ProviderConfig is what every model of cfg is opened with: the mock
// script of its mock section and the prices of its prices section. The
// caller adds each agent's api_key_env and base_url.
func ProviderConfig(cfg *config.Config) (provider.Config, error) {
	var pc provider.Config
	if cfg.Mock != nil {
		var err error
		if pc.Mock, err = mockConfig(cfg); err != nil {
			return pc, err
		}
	}
	if cfg.Prices != nil {
		pc.Prices = make(map[string]provider.Price, len(cfg.Prices))
		for model, p := range cfg.Prices {
			pc.Prices[model] = provider.Price(p)
		}
	}
	return pc, nil
}
