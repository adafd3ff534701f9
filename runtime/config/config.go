// Package config loads lllm tactic configurations from YAML.
//
// A config names a registered tactic, the agents it drives and the
// tactic's parameters:
//
//	tactic_type: best_of_n
//	base: common            # optional: inherit from common.yaml
//	global:                 # defaults for every agent
//	  model_name: openai/gpt-4o-mini
//	  model_args: {temperature: 0.1}
//	agent_configs:
//	  - name: solver
//	    system_prompt: "You are ..."
//	    model_args: {max_tokens: 1000}
//	  - name: judge
//	    system_prompt_path: research/judge  # prompts/research/judge.md
//	params: {n: 4}
//	prompts_dir: prompts    # optional; the default is prompts/ beside the file
//
// Loading resolves the base chain (each base path is relative to the file
// that names it; maps merge recursively, lists and scalars replace, a
// cycle is an error), rejects unknown keys with their file, line, column
// and a suggestion, and checks the type of every known field. Each agent
// is the deep merge of global and its entry. Overrides (Config.Set) apply
// to the resolved tree afterwards, and Validate reports every semantic
// problem at once.
//
// Unlike the Python reference, unknown keys are errors rather than being
// moved into model_args, and merging copies, so one agent's settings never
// leak into another's.
package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is a resolved tactic config: the base chain merged and any
// overrides applied. Its fields are derived from the resolved tree (see
// Resolved); change it with Set, not by editing the tree.
type Config struct {
	// TacticType names the registered tactic to run.
	TacticType string `yaml:"tactic_type,omitempty"`
	// Base is the base path as written in the loaded file, if any.
	Base string `yaml:"base,omitempty"`
	// Global holds the defaults every agent inherits.
	Global Agent `yaml:"global,omitempty"`
	// Agents holds each entry of agent_configs, deep-merged over Global,
	// in file order.
	Agents []Agent `yaml:"agent_configs,omitempty"`
	// ContextManager is the run-wide default context manager config.
	ContextManager map[string]any `yaml:"context_manager,omitempty"`
	// Params are the tactic's parameters, passed through unchecked.
	Params map[string]any `yaml:"params,omitempty"`
	// LogDir is where run logs are written. A relative path is taken from
	// the working directory, as lllm's --log-dir is (unlike PromptsDir).
	LogDir string `yaml:"log_dir,omitempty"`
	// PromptsDir is the prompts folder as written, relative to the file
	// that sets it; see PromptsPath.
	PromptsDir string `yaml:"prompts_dir,omitempty"`
	// Mock scripts the mock provider; the provider's type checks it, with
	// DecodeSection.
	Mock map[string]any `yaml:"mock,omitempty"`
	// Prices override the built-in price table, by model name.
	Prices map[string]Price `yaml:"prices,omitempty"`

	// Path is the file the config was loaded from.
	Path string `yaml:"-"`
	// Files is the base chain, Path first, then its base, and so on.
	Files []string `yaml:"-"`

	tree map[string]any // resolved generic config
	pos  *posTree       // where each part of tree was written
}

// Agent is the configuration of one agent. Pointer fields are nil when
// the config leaves them unset, so a tactic can apply its own defaults.
type Agent struct {
	// Name identifies the agent within its tactic.
	Name string `yaml:"name,omitempty"`
	// ModelName is "provider/model", such as "openai/gpt-4o-mini".
	ModelName string `yaml:"model_name,omitempty"`
	// SystemPrompt is the system prompt text.
	SystemPrompt string `yaml:"system_prompt,omitempty"`
	// SystemPromptPath names a registered prompt used as system prompt.
	SystemPromptPath string `yaml:"system_prompt_path,omitempty"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `yaml:"api_key_env,omitempty"`
	// BaseURL overrides the provider's endpoint.
	BaseURL string `yaml:"base_url,omitempty"`
	// ModelArgs holds exactly what was written under model_args.
	ModelArgs map[string]any `yaml:"model_args,omitempty"`
	// MaxExceptionRetry bounds parse-error retries per response.
	MaxExceptionRetry *int `yaml:"max_exception_retry,omitempty"`
	// MaxInterruptSteps bounds tool-call rounds per response.
	MaxInterruptSteps *int `yaml:"max_interrupt_steps,omitempty"`
	// MaxLLMRecall bounds provider-error retries per call.
	MaxLLMRecall *int `yaml:"max_llm_recall,omitempty"`
	// MaxRetries bounds the retries of a call after a rate limit, a
	// timeout or a server error.
	MaxRetries *int `yaml:"max_retries,omitempty"`
	// CallTimeout bounds one attempt of a model call; zero leaves it
	// unbounded.
	CallTimeout *time.Duration `yaml:"call_timeout,omitempty"`
	// MaxRetryWait is the longest wait before a retry the agent takes;
	// zero takes any.
	MaxRetryWait *time.Duration `yaml:"max_retry_wait,omitempty"`
	// ToolTimeout bounds one tool call; zero leaves it unbounded.
	ToolTimeout *time.Duration `yaml:"tool_timeout,omitempty"`
	// MaxToolOutput is the most bytes of a tool's result the model is
	// sent and the log keeps; zero means no cap.
	MaxToolOutput *int `yaml:"max_tool_output,omitempty"`
	// ToolConcurrency is how many tool calls of one reply run at once;
	// zero and one run them one after another.
	ToolConcurrency *int `yaml:"tool_concurrency,omitempty"`
	// ContextManager configures the agent's context manager.
	ContextManager map[string]any `yaml:"context_manager,omitempty"`
}

// Price is what a model's tokens cost, in US dollars per million tokens;
// it converts to provider.Price, whose fields it mirrors.
type Price struct {
	Input       float64 `yaml:"input"`
	CachedInput float64 `yaml:"cached_input,omitempty"`
	CacheWrite  float64 `yaml:"cache_write,omitempty"`
	Output      float64 `yaml:"output"`
}

// Error is a problem at a place in a config. Line and Column are 1-based
// and zero when unknown; File is "--set PATH" for an override.
type Error struct {
	File   string
	Line   int
	Column int
	Msg    string
	// Err is the underlying error, if any.
	Err error
}

// Error formats the problem as "file:line:col: msg".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Column > 0 {
				b.WriteString(":" + strconv.Itoa(e.Column))
			}
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		if e.Msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Load reads the config at path and resolves its base chain.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return Parse(path, data, os.ReadFile)
}

// Parse parses data as the config file name and resolves its base chain,
// reading base files with readFile (os.ReadFile if nil). readFile should
// report a missing file with an error matching fs.ErrNotExist.
func Parse(name string, data []byte, readFile func(string) ([]byte, error)) (*Config, error) {
	if readFile == nil {
		readFile = os.ReadFile
	}
	l := &loader{readFile: readFile}
	d, err := l.resolve(name, data, nil)
	if err != nil {
		return nil, l.join(err)
	}
	c := &Config{Path: name, Files: l.files, Base: d.base, tree: d.tree, pos: d.pos}
	l.errs = append(l.errs, c.problems()...)
	if len(l.errs) > 0 {
		return nil, l.join(nil)
	}
	return c, nil
}

// Resolved returns a deep copy of the fully resolved config: the base
// chain merged, overrides applied, base removed. It is what a run log
// records, and parsing it back yields the same config.
func (c *Config) Resolved() map[string]any {
	if c == nil || c.tree == nil {
		return map[string]any{}
	}
	return deepCopy(c.tree).(map[string]any)
}

// Clone returns a deep copy of c: setting or changing the copy leaves c
// as it was.
func (c *Config) Clone() *Config {
	if c == nil {
		return nil
	}
	next := *c
	next.Files = slices.Clone(c.Files)
	next.tree = deepCopy(c.tree).(map[string]any)
	next.Global = c.Global.clone()
	next.Agents = make([]Agent, len(c.Agents))
	for i, a := range c.Agents {
		next.Agents[i] = a.clone()
	}
	next.ContextManager = copyMap(c.ContextManager)
	next.Params = copyMap(c.Params)
	next.Mock = copyMap(c.Mock)
	next.Prices = maps.Clone(c.Prices)
	return &next
}

// Agent returns a copy of the named agent, merged over Global.
func (c *Config) Agent(name string) (Agent, error) {
	if c == nil {
		return Agent{}, errors.New("config: nil config")
	}
	names := make([]string, 0, len(c.Agents))
	for _, a := range c.Agents {
		if a.Name == name {
			return a.clone(), nil
		}
		names = append(names, a.Name)
	}
	if len(names) == 0 {
		return Agent{}, fmt.Errorf("config %s: unknown agent %q: agent_configs is empty", c.Path, name)
	}
	return Agent{}, fmt.Errorf("config %s: unknown agent %q%s", c.Path, name, hint(name, names))
}

// clone returns a deep copy of a.
func (a Agent) clone() Agent {
	b := a
	b.ModelArgs = copyMap(a.ModelArgs)
	b.ContextManager = copyMap(a.ContextManager)
	b.MaxExceptionRetry = copyPtr(a.MaxExceptionRetry)
	b.MaxInterruptSteps = copyPtr(a.MaxInterruptSteps)
	b.MaxLLMRecall = copyPtr(a.MaxLLMRecall)
	b.MaxRetries = copyPtr(a.MaxRetries)
	b.CallTimeout = copyPtr(a.CallTimeout)
	b.MaxRetryWait = copyPtr(a.MaxRetryWait)
	b.ToolTimeout = copyPtr(a.ToolTimeout)
	b.MaxToolOutput = copyPtr(a.MaxToolOutput)
	b.ToolConcurrency = copyPtr(a.ToolConcurrency)
	return b
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// hint returns " (did you mean "x"?)" for the candidate closest to s, or
// a list of the candidates when none is close.
func hint(s string, candidates []string) string {
	if best, ok := suggest(s, candidates); ok {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(candidates) == 0 {
		return ""
	}
	c := slices.Clone(candidates)
	slices.Sort(c)
	return " (one of: " + strings.Join(c, ", ") + ")"
}

// PromptsPath returns the folder of prompt files that system_prompt_path
// names resolve in: prompts_dir resolved against the directory of the
// file that sets it (of c.Path when it comes from --set), or else the
// folder "prompts" beside c.Path when it exists. It returns "" when there
// is none. An explicit prompts_dir is returned whether or not it exists.
func (c *Config) PromptsPath() string {
	if c == nil {
		return ""
	}
	if c.PromptsDir != "" {
		if filepath.IsAbs(c.PromptsDir) {
			return c.PromptsDir
		}
		from := c.pos.lookup("prompts_dir").file
		if from == "" || strings.HasPrefix(from, "--set ") {
			from = c.Path
		}
		return filepath.Join(filepath.Dir(from), c.PromptsDir)
	}
	if c.Path == "" {
		return ""
	}
	dir := filepath.Join(filepath.Dir(c.Path), "prompts")
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir
	}
	return ""
}
