package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/internal/registry"
	"github.com/lllm-go/lllm/internal/suggest"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/tactics"
)

// TacticType is the tactic_type of a serve config.
const TacticType = "serve"

// Config is a loaded serve config: the agents to serve and the server's
// settings.
type Config struct {
	Agents []*conversation.AgentSpec
	// Tokens is the tokenizer the agents share; pass it to the Service
	// (conversation.ServiceOptions.Tokens).
	Tokens *contextmgr.Tokenizer
	// AskUserTimeout is params.ask_user_timeout (zero when unset).
	AskUserTimeout time.Duration
	// MaxContentBytes is params.max_content_bytes, zero when unset
	// (Options.MaxContentBytes: DefaultMaxContentBytes).
	MaxContentBytes int
	// TrashRetention is params.trash_retention, how long deleted
	// conversations stay in the trash (conversation.Options.TrashRetention):
	// conversation.DefaultTrashRetention when unset, 0 for ever.
	TrashRetention time.Duration
	// DataDir is params.data_dir resolved against the config's directory,
	// or "" when unset.
	DataDir string
	// LogDir is the config's log_dir, the root of the run logs of served
	// turns (conversation.ServiceOptions.LogDir), or "" when unset; a
	// relative path is taken from the working directory, as lllm run
	// takes it.
	LogDir string
	// Path is the config file.
	Path string
}

// serveParams is the params section of a serve config.
type serveParams struct {
	AskUserTimeout  any                   `yaml:"ask_user_timeout"` // a duration, as config.ParseDuration reads it
	MaxContentBytes int                   `yaml:"max_content_bytes"`
	DataDir         string                `yaml:"data_dir"`
	TrashRetention  any                   `yaml:"trash_retention"` // a duration, as config.ParseDuration reads it
	Agents          map[string]agentParam `yaml:"agents"`
}

type agentParam struct {
	CompactTokens int       `yaml:"compact_tokens"`
	Guests        *[]string `yaml:"guests"`
}

// LoadConfig loads the serve config at path. It has the shape of a
// tactic config (see runtime/config) with tactic_type "serve": global,
// agent_configs (name, model_name, system_prompt or system_prompt_path,
// model_args, limits, context_manager), mock and prompts_dir mean what
// they mean to lllm run (the agents are built by tactics.Agents), and the
// serving settings are under params:
//
//	params:
//	  ask_user_timeout: 5m       # how long ask_user waits for a reply
//	  max_content_bytes: 65536   # the largest message a client may send
//	  data_dir: conversations    # relative to this file; --data-dir wins
//	  trash_retention: 720h      # how long deleted conversations are kept; 0: for ever
//	  agents:                    # per agent, all optional
//	    assistant: {compact_tokens: 4000, guests: [critic]}
//
// Every model is opened (without touching the network); every problem is
// reported at once.
func LoadConfig(ctx context.Context, path string) (*Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return FromConfig(ctx, cfg)
}

// FromConfig builds a serve Config from a loaded config, its agents
// built by tactics.Agents so that they mean what they mean to lllm run.
// Every problem found is reported at once, as a *tactics.ConfigError
// joining them (the agents' in tactics' words).
func FromConfig(ctx context.Context, cfg *config.Config) (*Config, error) {
	var errs []error
	if cfg.TacticType != "" && cfg.TacticType != TacticType {
		errs = append(errs, fmt.Errorf("%s: tactic_type is %q: a serve config has tactic_type: %s", cfg.Path, cfg.TacticType, TacticType))
	}
	if len(cfg.Agents) == 0 {
		errs = append(errs, fmt.Errorf("%s: agent_configs is empty: define the agents to serve", cfg.Path))
	}
	out := &Config{Path: cfg.Path, LogDir: cfg.LogDir}
	p, perrs := serveParamsOf(cfg, out)
	errs = append(errs, perrs...)
	makers, err := tactics.Agents(ctx, cfg, tactics.RunOptions{})
	if err != nil {
		var ce *tactics.ConfigError
		if errors.As(err, &ce) && ce.Err != nil {
			err = ce.Err
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, &tactics.ConfigError{Err: errors.Join(errs...)}
	}
	var prompts map[string]string // the prompt files, read once
	for i, ac := range cfg.Agents {
		a := makers[ac.Name]()
		// Any variable a turn does not give would fail every turn, after
		// the server started.
		var unknown []string
		for _, v := range a.System.Variables() {
			if !conversation.PromptVariable(v) {
				unknown = append(unknown, "{"+v+"}")
			}
		}
		if len(unknown) > 0 {
			key := "system_prompt"
			if ac.SystemPromptPath != "" {
				key = "system_prompt_path"
			}
			errs = append(errs, cfg.AgentErrorf(i, []string{key}, "agent %s: %s uses %s: a served agent's prompt may use only {agent}, {sender} and {cwd} (write {{ and }} for a literal brace)",
				ac.Name, key, strings.Join(unknown, ", ")))
		}
		if ask := cmp.Or(out.AskUserTimeout, conversation.DefaultAskTimeout); a.Limits.ToolTimeout > 0 && a.Limits.MaxInterruptSteps > 0 && a.Limits.ToolTimeout < ask {
			errs = append(errs, cfg.AgentErrorf(i, []string{"tool_timeout"}, "agent %s: tool_timeout (%v) is shorter than params.ask_user_timeout (%v), so ask_user would stop waiting for the user before its time: raise tool_timeout or lower ask_user_timeout",
				ac.Name, a.Limits.ToolTimeout, ask))
		}
		if a.Limits.ToolConcurrency > 1 {
			errs = append(errs, cfg.AgentErrorf(i, []string{"tool_concurrency"}, "agent %s: %s", ac.Name, conversation.ToolConcurrencyProblem))
		}
		ap := p.Agents[ac.Name]
		sp := &conversation.AgentSpec{Name: a.Name, System: a.System, Model: a.Model, ModelName: a.ModelName,
			Params: a.Params, Limits: a.Limits, Context: a.Context, ContextName: a.ContextName, CompactTokens: ap.CompactTokens,
			SystemPromptPath: ac.SystemPromptPath}
		// What the run logs record, for lllm replay to build the agent
		// again as tactics.Agents built it.
		if a.Context != nil {
			sp.ContextConfig = ac.ContextManager
			if sp.ContextConfig == nil {
				sp.ContextConfig = cfg.ContextManager
			}
		}
		if pkg, _ := registry.Split(ac.SystemPromptPath); ac.SystemPromptPath != "" && pkg == "" {
			sp.PromptsDir = cfg.PromptsPath()
			if prompts == nil {
				prompts = tactics.PromptFiles(cfg)
			}
			sp.Prompts = prompts
		}
		if ap.Guests != nil {
			sp.Guests = append([]string{}, (*ap.Guests)...)
		}
		out.Tokens = a.Tokens
		out.Agents = append(out.Agents, sp)
	}
	if len(errs) > 0 {
		return nil, &tactics.ConfigError{Err: errors.Join(errs...)}
	}
	return out, nil
}

// durationText is v, a duration's value as YAML decoded it, as an error
// quotes it: text quoted, anything else as it is.
func durationText(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// serveParamsOf reads cfg's params into out and returns them with every
// problem found.
func serveParamsOf(cfg *config.Config, out *Config) (serveParams, []error) {
	var p serveParams
	if err := cfg.DecodeSection("params", &p); err != nil {
		return p, []error{err} // every unknown key and wrong type, at its place
	}
	var errs []error
	if p.MaxContentBytes < 0 || p.MaxContentBytes > MaxMaxContentBytes {
		errs = append(errs, cfg.Errorf([]string{"params", "max_content_bytes"}, "params.max_content_bytes is %d: want a number of bytes such as 65536, at most %d (1 GiB), or 0 for the default (%d)", p.MaxContentBytes, MaxMaxContentBytes, DefaultMaxContentBytes))
	}
	out.MaxContentBytes = p.MaxContentBytes
	if p.AskUserTimeout != nil && p.AskUserTimeout != "" { // "" leaves it unset
		d, err := config.ParseDuration(p.AskUserTimeout)
		if err != nil || d <= 0 {
			errs = append(errs, cfg.Errorf([]string{"params", "ask_user_timeout"}, "params.ask_user_timeout %s: want a positive duration such as 5m", durationText(p.AskUserTimeout)))
		}
		out.AskUserTimeout = d
	}
	out.TrashRetention = conversation.DefaultTrashRetention
	if p.TrashRetention != nil && p.TrashRetention != "" {
		d, err := config.ParseDuration(p.TrashRetention)
		if err != nil {
			errs = append(errs, cfg.Errorf([]string{"params", "trash_retention"}, "params.trash_retention %s: want a duration such as 720h (30 days), or 0 to keep deleted conversations for ever", durationText(p.TrashRetention)))
		}
		out.TrashRetention = d
	}
	if p.DataDir != "" {
		out.DataDir = p.DataDir
		if !filepath.IsAbs(p.DataDir) && cfg.Path != "" {
			out.DataDir = filepath.Join(filepath.Dir(cfg.Path), p.DataDir)
		}
	}
	names := make([]string, 0, len(cfg.Agents))
	for i, ac := range cfg.Agents {
		names = append(names, ac.Name)
		// An agent names a folder of the data dir: the store refuses
		// any other name, so lllm validate must too.
		if err := conversation.CheckName("agent", ac.Name); err != nil && ac.Name != "" {
			errs = append(errs, cfg.Errorf([]string{"agent_configs", strconv.Itoa(i), "name"}, "agent_configs[%d].name: %v", i, err))
		}
	}
	// notAgent says that name is no agent of agent_configs.
	notAgent := func(name string) string {
		msg := fmt.Sprintf("no such agent in agent_configs (%s)", strings.Join(names, ", "))
		if c, ok := suggest.Closest(name, names); ok {
			msg = fmt.Sprintf("no such agent in agent_configs (did you mean %q?)", c)
		}
		return msg
	}
	for _, n := range slices.Sorted(maps.Keys(p.Agents)) {
		at := []string{"params", "agents", n}
		if !slices.Contains(names, n) {
			errs = append(errs, cfg.Errorf(at, "params.agents.%s: %s", n, notAgent(n)))
			continue
		}
		ap := p.Agents[n]
		if ap.CompactTokens < 0 {
			errs = append(errs, cfg.Errorf(append(at, "compact_tokens"), "params.agents.%s.compact_tokens is %d: want 0 (never) or more", n, ap.CompactTokens))
		}
		if ap.Guests != nil {
			for i, g := range *ap.Guests {
				if !slices.Contains(names, g) {
					errs = append(errs, cfg.Errorf(append(at, "guests", strconv.Itoa(i)), "params.agents.%s.guests: %q: %s", n, g, notAgent(g)))
				}
			}
		}
	}
	return p, errs
}
