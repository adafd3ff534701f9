package conversation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// The tactics the run logs of a Service record (run_start.tactic), so
// that lllm runs tells a served turn from a compaction and from the runs
// of lllm run.
const (
	// RunTactic is the tactic of a turn's run log: one Service.Run.
	RunTactic = "conversation"
	// CompactTactic is the tactic of a compaction's run log: the model
	// call that summarises a conversation, explicit (Service.Compact) or
	// automatic after a turn.
	CompactTactic = "conversation-compact"
)

// The labels (run_start.labels) of a Service's run logs.
const (
	// LabelConversation names the conversation a run belongs to, as
	// "AGENT/SENDER" (the conversation's agent, not a guest).
	LabelConversation = "conversation"
	// LabelAgent names the agent that answered: the conversation's agent,
	// or the guest.
	LabelAgent = "agent"
)

// RecordedConfig is the config a Service's run log records
// (run_start.config), in the shape of a tactic config (see runtime/config)
// so that the tools reading recorded configs (lllm replay, lllm diff)
// read it: tactic_type is RunTactic or CompactTactic, agent_configs the
// agent that answered as it ran, params which conversation and how.
type RecordedConfig struct {
	TacticType string          `json:"tactic_type"`
	Agents     []RecordedAgent `json:"agent_configs"`
	Params     RunParams       `json:"params"`
	// PromptsDir is the prompts folder (an absolute path) of an agent's
	// system_prompt_path, when it names a file there.
	PromptsDir string `json:"prompts_dir,omitempty"`
}

// RecordedAgent is the answering agent in a RecordedConfig, under the
// keys of a config's agent_configs.
type RecordedAgent struct {
	Name      string `json:"name"`
	ModelName string `json:"model_name"`
	// SystemPrompt is the template of the system prompt the run used,
	// unless the prompt came from SystemPromptPath.
	SystemPrompt string `json:"system_prompt,omitempty"`
	// SystemPromptPath names the prompt file (or packaged prompt) the
	// system prompt, with its tools, parser and format, came from (see
	// AgentSpec.SystemPromptPath).
	SystemPromptPath string `json:"system_prompt_path,omitempty"`
	// ContextManager is the config of the context manager that shaped the
	// turn's requests (AgentSpec.ContextConfig), if the agent had one.
	ContextManager map[string]any `json:"context_manager,omitempty"`
	// ModelArgs are the sampling options, when any is set.
	ModelArgs *provider.Params `json:"model_args,omitempty"`
	// The limits of the run's call loop (see tactics.Limits), under their
	// config keys; a duration as time.Duration.String writes it ("10m0s",
	// "0s" for none). Logs written before the durations and
	// max_tool_output were recorded lack them (empty, nil), and a replay
	// of one takes their defaults.
	MaxExceptionRetry int    `json:"max_exception_retry"`
	MaxInterruptSteps int    `json:"max_interrupt_steps"`
	MaxLLMRecall      int    `json:"max_llm_recall"`
	CallTimeout       string `json:"call_timeout,omitempty"`
	MaxRetryWait      string `json:"max_retry_wait,omitempty"`
	ToolTimeout       string `json:"tool_timeout,omitempty"`
	MaxToolOutput     *int   `json:"max_tool_output,omitempty"`
}

// RunParams are the params of a RecordedConfig: which conversation, which
// agent answered and how.
type RunParams struct {
	// Agent and Sender name the conversation.
	Agent  string `json:"agent"`
	Sender string `json:"sender"`
	// Answering is the agent that answered: Agent, or a guest.
	Answering string `json:"answering"`
	// Role is "primary" when Answering is the conversation's agent,
	// "guest" otherwise.
	Role string `json:"role"`
	// ContextManager names the context manager that shaped the requests,
	// if any.
	ContextManager string `json:"context_manager,omitempty"`
	// MaxRetries is how often a model call was retried after a rate limit
	// or server error (tactics.Limits.MaxRetries).
	MaxRetries int `json:"max_retries"`
	// CWD is the run's working directory, if any.
	CWD string `json:"cwd,omitempty"`
	// CompactTokens is the conversation agent's automatic compaction
	// threshold (zero: never).
	CompactTokens int `json:"compact_tokens,omitempty"`
	// History is how many messages the run's dialog starts with after
	// the system prompt: for a turn, the conversation as BuildRequest
	// shows it, the sender's new message and the framing included; for a
	// compaction, the history it summarises, before the request to
	// summarise it. The log's dialog holds them, so that lllm replay
	// starts the run again from them. Runs logged before it was recorded
	// have none (zero), and cannot be replayed.
	History int `json:"history,omitempty"`
}

// runLog is the run log of one turn or compaction; nil when the Service
// writes none. It is finished exactly once.
type runLog struct {
	w    *logs.Writer
	run  *logs.Run
	done bool
}

// startRunLog creates the run log of a turn or compaction of conv,
// answered by the agent of sp, whose dialog starts with history messages
// after the system prompt, under ServiceOptions.LogDir; with no LogDir it
// returns nil and nothing is written.
func (s *Service) startRunLog(ctx context.Context, tactic string, conv *Conversation, sp *AgentSpec, guest bool, cwd, task string, history int) (*runLog, error) {
	if s.opts.LogDir == "" {
		return nil, nil
	}
	lim := sp.Limits
	system := sp.System
	if guest || tactic == CompactTactic {
		lim = textOnly(lim) // as respond and summarize run it
	}
	// Recorded as a config writes them: 0 for none.
	lim = lim.Resolved()
	none := func(n int) int { return max(n, 0) }
	dur := func(d time.Duration) string { return max(d, 0).String() }
	maxOutput := none(lim.MaxToolOutput)
	if tactic == CompactTactic {
		system = s.summary
	}
	ag := RecordedAgent{Name: sp.Name, ModelName: sp.ModelName, SystemPrompt: system.Template,
		MaxExceptionRetry: none(lim.MaxExceptionRetry), MaxInterruptSteps: none(lim.MaxInterruptSteps), MaxLLMRecall: none(lim.MaxLLMRecall),
		CallTimeout: dur(lim.CallTimeout), MaxRetryWait: dur(lim.MaxRetryWait), ToolTimeout: dur(lim.ToolTimeout),
		MaxToolOutput: &maxOutput}
	if !sp.Params.IsZero() {
		ag.ModelArgs = &sp.Params
	}
	var promptsDir string
	if tactic == RunTactic {
		// The summary call of a compaction has neither.
		if sp.SystemPromptPath != "" {
			ag.SystemPrompt, ag.SystemPromptPath = "", sp.SystemPromptPath
			if promptsDir = sp.PromptsDir; promptsDir != "" {
				if abs, err := filepath.Abs(promptsDir); err == nil {
					promptsDir = abs
				}
			}
		}
		if sp.Context != nil {
			ag.ContextManager = maps.Clone(sp.ContextConfig)
		}
	}
	cfg := RecordedConfig{TacticType: tactic, Agents: []RecordedAgent{ag}, Params: RunParams{Agent: conv.agent, Sender: conv.sender,
		Answering: sp.Name, Role: "primary", ContextManager: sp.ContextName, MaxRetries: none(lim.MaxRetries), CWD: cwd,
		CompactTokens: s.agents[conv.agent].spec.CompactTokens, History: history}, PromptsDir: promptsDir}
	if guest {
		cfg.Params.Role = "guest"
	}
	if tactic == CompactTactic {
		cfg.Params.ContextManager = "" // the summary call sends the history whole
	}
	start, err := logs.NewRunStart(ctx, tactic, cfg, task, 0)
	if err != nil {
		return nil, fmt.Errorf("conversation %s/%s: starting the run log: %w", conv.agent, conv.sender, err)
	}
	start.Labels = map[string]string{LabelConversation: conv.agent + "/" + conv.sender, LabelAgent: sp.Name}
	if promptsDir != "" {
		start.Prompts = sp.Prompts
	}
	w, run, err := logs.Create(s.opts.LogDir, start, logs.Options{})
	if err != nil {
		return nil, fmt.Errorf("conversation %s/%s: creating the run log under %s (make it writable, or choose another log root): %w",
			conv.agent, conv.sender, s.opts.LogDir, err)
	}
	return &runLog{w: w, run: run}, nil
}

// log is where the agent of the run records its work: nil (no log) when
// there is no run log.
func (l *runLog) log() tactics.Log {
	if l == nil {
		return nil
	}
	return l.w
}

// finish writes the run_end (with the totals of the log) and closes the
// log. A run that failed with err is cancelled when ctx, the run's
// context, was cancelled (a Kill, a client that went away, shutdown),
// and failed otherwise, as tactics' runner decides; result is the run's
// output when it succeeded. Only the first call writes anything.
func (l *runLog) finish(ctx context.Context, result any, err error) error {
	if l == nil || l.done {
		return nil
	}
	l.done = true
	end := logs.RunEnd{Status: logs.StatusOK}
	if err != nil {
		end.Status, end.Error = logs.StatusFailed, err.Error()
		if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrKilled) {
			end.Status = logs.StatusCancelled
		}
	} else if result != nil {
		if end.Result, err = jsontext.Marshal(result); err != nil {
			end.Status, end.Error = logs.StatusFailed, "encoding the result: "+err.Error()
			end.Result = nil
		}
	}
	if ferr := l.w.Finish(end); ferr != nil {
		return fmt.Errorf("finishing the run log %s: %w", l.run.Dir, ferr)
	}
	return nil
}

// finishOnPanic is deferred by whoever starts a run log: if the run
// panics before it finishes its log, the log ends as failed with the
// panic's value, and the panic goes on.
func (l *runLog) finishOnPanic() {
	if l == nil || l.done {
		return
	}
	v := recover()
	err := errors.New("the run ended without finishing its log")
	if v != nil {
		err = fmt.Errorf("panic: %v", v)
	}
	_ = l.finish(context.Background(), nil, err)
	if v != nil {
		panic(v)
	}
}
