package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/prompts"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// TacticType is the tactic_type of a serve config.
const TacticType = "serve"

// Config is a loaded serve config: the agents to serve and the server's
// settings.
type Config struct {
	Agents []*conversation.AgentSpec
	// AskUserTimeout is params.ask_user_timeout (zero when unset).
	AskUserTimeout time.Duration
	// MaxContentBytes is params.max_content_bytes (zero when unset).
	MaxContentBytes int
	// DataDir is params.data_dir resolved against the config's directory,
	// or "" when unset.
	DataDir string
	// Path is the config file.
	Path string
}

// serveParams is the params section of a serve config.
type serveParams struct {
	AskUserTimeout  string                `yaml:"ask_user_timeout"`
	MaxContentBytes int                   `yaml:"max_content_bytes"`
	DataDir         string                `yaml:"data_dir"`
	Agents          map[string]agentParam `yaml:"agents"`
}

type agentParam struct {
	CompactTokens int       `yaml:"compact_tokens"`
	Guests        *[]string `yaml:"guests"`
}

// LoadConfig loads the serve config at path. It has the shape of a
// tactic config (see runtime/config) with tactic_type "serve": global,
// agent_configs (name, model_name, system_prompt or system_prompt_path,
// model_args, limits, context_manager), mock and prompts_dir as usual,
// and the serving settings under params:
//
//	params:
//	  ask_user_timeout: 5m       # how long ask_user waits for a reply
//	  max_content_bytes: 65536   # the largest message a client may send
//	  data_dir: conversations    # relative to this file; --data-dir wins
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

// FromConfig builds a serve Config from a loaded config.
func FromConfig(ctx context.Context, cfg *config.Config) (*Config, error) {
	errs := config.Validate(cfg, nil)
	if cfg.TacticType != "" && cfg.TacticType != TacticType {
		errs = append(errs, fmt.Errorf("%s: tactic_type is %q: a serve config has tactic_type: %s", cfg.Path, cfg.TacticType, TacticType))
	}
	if len(cfg.Agents) == 0 {
		errs = append(errs, fmt.Errorf("%s: agent_configs is empty: define the agents to serve", cfg.Path))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var p serveParams
	if err := strictDecode(cfg.Params, &p); err != nil {
		return nil, fmt.Errorf("%s: params: %w", cfg.Path, err)
	}
	out := &Config{MaxContentBytes: p.MaxContentBytes, Path: cfg.Path}
	if p.AskUserTimeout != "" {
		d, err := time.ParseDuration(p.AskUserTimeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s: params.ask_user_timeout %q: want a positive duration such as 5m", cfg.Path, p.AskUserTimeout)
		}
		out.AskUserTimeout = d
	}
	if p.DataDir != "" {
		out.DataDir = p.DataDir
		if !filepath.IsAbs(p.DataDir) && cfg.Path != "" {
			out.DataDir = filepath.Join(filepath.Dir(cfg.Path), p.DataDir)
		}
	}
	var mock *provider.MockConfig
	if cfg.Mock != nil {
		mock = &provider.MockConfig{}
		if err := strictDecode(cfg.Mock, mock); err != nil {
			return nil, fmt.Errorf("%s: mock: %w", cfg.Path, err)
		}
	}
	var reg *prompts.Registry
	for _, ac := range cfg.Agents {
		if ac.SystemPromptPath != "" && reg == nil {
			dir := cfg.PromptsPath()
			if dir == "" {
				return nil, fmt.Errorf("%s: system_prompt_path %q needs a prompts folder: create prompts/ beside the config or set prompts_dir", cfg.Path, ac.SystemPromptPath)
			}
			var err error
			if reg, err = prompts.LoadDir(dir, prompts.WithTools(tactics.LookupTool)); err != nil {
				return nil, fmt.Errorf("%s: prompts_dir %s: %w", cfg.Path, dir, err)
			}
		}
	}
	names := make([]string, 0, len(cfg.Agents))
	for _, ac := range cfg.Agents {
		names = append(names, ac.Name)
	}
	for n := range p.Agents {
		if !slices.Contains(names, n) {
			errs = append(errs, fmt.Errorf("%s: params.agents.%s: no such agent in agent_configs (%s)", cfg.Path, n, strings.Join(names, ", ")))
		}
	}
	for _, ac := range cfg.Agents {
		sp, err := agentSpec(ctx, cfg, ac, reg, mock, p.Agents[ac.Name])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: agent %s: %w", cfg.Path, ac.Name, err))
			continue
		}
		out.Agents = append(out.Agents, sp)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func agentSpec(ctx context.Context, cfg *config.Config, ac config.Agent, reg *prompts.Registry, mock *provider.MockConfig, ap agentParam) (*conversation.AgentSpec, error) {
	var system *dialog.Prompt
	var err error
	if ac.SystemPromptPath != "" {
		if system, err = reg.Get(ac.SystemPromptPath); err != nil {
			return nil, fmt.Errorf("system_prompt_path: %w", err)
		}
	} else if system, err = dialog.NewPrompt(ac.Name+"/system", ac.SystemPrompt); err != nil {
		return nil, fmt.Errorf("system_prompt: %w", err)
	}
	params, err := paramsOf(ac.ModelArgs)
	if err != nil {
		return nil, err
	}
	model, err := provider.Open(ctx, ac.ModelName, provider.Config{APIKeyEnv: ac.APIKeyEnv, BaseURL: ac.BaseURL, Mock: mock})
	if err != nil {
		return nil, err
	}
	lim := tactics.DefaultLimits()
	for _, f := range []struct{ v, dst *int }{{ac.MaxExceptionRetry, &lim.MaxExceptionRetry}, {ac.MaxInterruptSteps, &lim.MaxInterruptSteps}, {ac.MaxLLMRecall, &lim.MaxLLMRecall}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if ap.CompactTokens < 0 {
		return nil, fmt.Errorf("params.agents.%s.compact_tokens is %d: want 0 (never) or more", ac.Name, ap.CompactTokens)
	}
	sp := &conversation.AgentSpec{Name: ac.Name, System: system, Model: model, ModelName: ac.ModelName, Params: params,
		Limits: lim, CompactTokens: ap.CompactTokens}
	if ap.Guests != nil {
		sp.Guests = append([]string{}, (*ap.Guests)...)
	}
	cm := ac.ContextManager
	if cm == nil {
		cm = cfg.ContextManager
	}
	if cm != nil {
		if sp.Context, err = contextmgr.New(cm); err != nil {
			return nil, fmt.Errorf("context_manager: %w", err)
		}
		sp.ContextName = "default"
		if t, ok := cm["type"].(string); ok {
			sp.ContextName = t
		}
	}
	return sp, nil
}

// paramsOf reads model_args into Params; an unknown key is an error.
func paramsOf(args map[string]any) (provider.Params, error) {
	var p provider.Params
	if err := strictDecode(args, &p); err != nil {
		return p, fmt.Errorf("model_args: %w (accepted: max_tokens, seed, stop, temperature, top_k, top_p)", err)
	}
	return p, nil
}

// strictDecode decodes a free-form map into v through YAML, rejecting
// unknown keys. Params has json tags only, so keys are matched on them.
func strictDecode(m map[string]any, v any) error {
	if m == nil {
		return nil
	}
	if p, ok := v.(*provider.Params); ok {
		return decodeParams(m, p)
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	return dec.Decode(v)
}

func decodeParams(m map[string]any, p *provider.Params) error {
	type params struct {
		Temperature *float64 `yaml:"temperature"`
		TopP        *float64 `yaml:"top_p"`
		TopK        *int     `yaml:"top_k"`
		MaxTokens   *int     `yaml:"max_tokens"`
		Stop        []string `yaml:"stop"`
		Seed        *int     `yaml:"seed"`
	}
	var q params
	if err := strictDecode(m, &q); err != nil {
		return err
	}
	*p = provider.Params{Temperature: q.Temperature, TopP: q.TopP, TopK: q.TopK, MaxTokens: q.MaxTokens, Stop: q.Stop, Seed: q.Seed}
	return nil
}
