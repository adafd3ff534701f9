package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// DefaultJudgePrompt is the judge's message when its spec gives no prompt.
const DefaultJudgePrompt = `Grade an answer against the reference answer.

Question:
{input}

Reference answer:
{expected}

Answer to grade:
{answer}

Is the answer correct? Reply with <score>1</score> if it is, <score>0</score> if it is not, or a score between 0 and 1 for partial credit.`

var scoreTag = regexp.MustCompile(`(?is)<score>\s*([-+]?[0-9]*\.?[0-9]+)\s*</score>`)

// newJudge is the model-graded scorer: an agent of a tactic config (config:
// PATH relative to the spec, default the sweep's base config; agent: NAME,
// default "judge") reads prompt (default DefaultJudgePrompt; {input},
// {expected} and {answer} are replaced) and answers with <score>X</score>,
// X from 0 to 1, or with yes/no, correct/incorrect, pass/fail.
func newJudge(params map[string]any, env Env) (Scorer, error) {
	if err := paramsErr("judge", params, "config", "agent", "prompt"); err != nil {
		return nil, err
	}
	path, err := stringParam("judge", params, "config")
	if err != nil {
		return nil, err
	}
	name, err := stringParam("judge", params, "agent")
	if err != nil {
		return nil, err
	}
	name = orDefault(name, "judge")
	prompt, err := stringParam("judge", params, "prompt")
	if err != nil {
		return nil, err
	}
	prompt = orDefault(prompt, DefaultJudgePrompt)
	cfg := env.Config
	if path != "" {
		if env.Dir != "" && !strings.HasPrefix(path, "/") {
			path = env.Dir + "/" + path
		}
		if cfg, err = config.Load(path); err != nil {
			return nil, fmt.Errorf("scorer judge: %w", err)
		}
	}
	if cfg == nil {
		return nil, fmt.Errorf("scorer judge needs config: a tactic config with the judge agent")
	}
	ac, err := cfg.Agent(name)
	if err != nil {
		return nil, fmt.Errorf("scorer judge: %s: %w", cfg.Path, err)
	}
	if ac.ModelName == "" {
		return nil, fmt.Errorf("scorer judge: %s: %s has no model_name", cfg.Path, tactics.AgentLabel(name))
	}
	if ac.SystemPromptPath != "" && ac.SystemPrompt == "" {
		return nil, fmt.Errorf("scorer judge: %s: %s: give the judge a system_prompt (system_prompt_path is not supported here)", cfg.Path, tactics.AgentLabel(name))
	}
	var params2 provider.Params
	if b, err := json.Marshal(ac.ModelArgs); err == nil {
		if err := json.Unmarshal(b, &params2); err != nil {
			return nil, fmt.Errorf("scorer judge: %s: %s: model_args: %w", cfg.Path, tactics.AgentLabel(name), err)
		}
	}
	pcfg, err := tactics.ProviderConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("scorer judge: %w", err)
	}
	if env.Open == nil {
		return nil, fmt.Errorf("scorer judge: no model opener")
	}
	pcfg.APIKeyEnv, pcfg.BaseURL = ac.APIKeyEnv, ac.BaseURL
	return &judge{agent: ac, params: params2, prompt: prompt, open: func(ctx context.Context) (provider.Model, error) {
		return env.Open(ctx, ac.ModelName, pcfg)
	}}, nil
}

type judge struct {
	agent  config.Agent
	params provider.Params
	prompt string
	open   func(ctx context.Context) (provider.Model, error)
}

func (j *judge) Score(ctx context.Context, s *Sample) (float64, error) {
	m, err := j.open(ctx)
	if err != nil {
		return 0, fmt.Errorf("judge: %w", err)
	}
	text := strings.NewReplacer("{input}", s.Row.Task, "{expected}", s.Row.Expected, "{answer}", s.Answer).Replace(j.prompt)
	var msgs []*dialog.Message
	if j.agent.SystemPrompt != "" {
		msgs = append(msgs, &dialog.Message{Role: dialog.RoleSystem, Content: j.agent.SystemPrompt})
	}
	msgs = append(msgs, &dialog.Message{Role: dialog.RoleUser, Content: text, Name: "user"})
	req := &provider.Request{Messages: msgs, Params: j.params}
	ctx = provider.WithCallInfo(ctx, provider.CallInfo{Agent: "judge:" + j.agent.Name, Dialog: "score", Turn: 1, Attempt: 1})
	resp, err := m.Generate(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("judge %s: %w", j.agent.Name, err)
	}
	return ParseGrade(resp.Message.Text())
}

// ParseGrade reads a judge's reply: the last <score>X</score> with X from
// 0 to 1, or else a first word of yes, correct, pass or right (1) or no,
// incorrect, fail or wrong (0).
func ParseGrade(reply string) (float64, error) {
	if m := scoreTag.FindAllStringSubmatch(reply, -1); len(m) > 0 {
		f, err := strconv.ParseFloat(m[len(m)-1][1], 64)
		if err == nil && f >= 0 && f <= 1 {
			return f, nil
		}
		return 0, fmt.Errorf("judge: score %q is not between 0 and 1", m[len(m)-1][1])
	}
	first := strings.ToLower(strings.Trim(strings.SplitN(strings.TrimSpace(reply)+" ", " ", 2)[0], ".,:;!*"))
	switch first {
	case "yes", "correct", "pass", "right", "true":
		return 1, nil
	case "no", "incorrect", "fail", "wrong", "false":
		return 0, nil
	}
	cut := reply
	if len(cut) > 60 {
		cut = cut[:60] + "..."
	}
	return 0, fmt.Errorf("judge: no <score>X</score> and no yes/no in the reply %q", cut)
}
