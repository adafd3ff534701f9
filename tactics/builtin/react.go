package builtin

import (
	"context"
	"fmt"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/tactics"
)

func init() {
	tactics.Register("react", newReact)
}

// react has agent "agent" answer the task, reasoning and calling tools
// through the agent's tool loop until it gives <answer>...</answer>.
//
// Params: max_steps, the rounds of tool calls allowed before the agent
// must answer (default 5; it sets the agent's max_interrupt_steps); tools,
// the names of the tools offered (default all of ToolNames: "calculator",
// "echo" and "word_count", plus any added with RegisterTool).
//
// Result: {"answer": the text of the <answer> tag, "tool_calls": how many
// tools were called}.
type react struct {
	maxSteps int
	tools    []*dialog.Function
	prompt   *dialog.Prompt
}

// ReactResult is the result of the react tactic.
type ReactResult struct {
	Answer    string `json:"answer"`
	ToolCalls int    `json:"tool_calls"`
}

// reactTemplate is the task as the agent sees it.
const reactTemplate = `{task}

Think step by step. Call the tools you are given whenever they help; do not guess what a tool would return. When you are done, give your final answer as <answer>...</answer>.`

func newReact(params map[string]any) (tactics.Tactic, error) {
	ps := struct {
		MaxSteps int      `json:"max_steps"`
		Tools    []string `json:"tools"`
	}{MaxSteps: 5}
	if err := tactics.DecodeParams(params, &ps); err != nil {
		return nil, err
	}
	if err := atLeast("max_steps", ps.MaxSteps, 1); err != nil {
		return nil, err
	}
	steps, names := ps.MaxSteps, ps.Tools
	if names == nil {
		names = tactics.ToolNames()
	}
	fns, err := lookupTools(names)
	if err != nil {
		// A ParamError, so that a config places it at the param's line.
		return nil, &tactics.ParamError{Param: "tools", Err: fmt.Errorf("param tools: %w", err)}
	}
	p, err := dialog.NewPrompt("react/task", reactTemplate,
		dialog.WithFunctions(fns...),
		dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
	if err != nil {
		return nil, fmt.Errorf("react: %w", err)
	}
	return &react{maxSteps: steps, tools: fns, prompt: p}, nil
}

func (*react) Agents() []string { return []string{"agent"} }

func (t *react) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	a, err := s.Agent("agent")
	if err != nil {
		return nil, err
	}
	a.Limits.MaxInterruptSteps = t.maxSteps
	if err := a.Open("main", nil); err != nil {
		return nil, err
	}
	if err := a.ReceivePrompt(t.prompt, map[string]any{"task": task}); err != nil {
		return nil, err
	}
	reply, call, err := a.Respond(ctx)
	if err != nil {
		if call != nil && len(call.ToolCalls) > 0 {
			// The tool loop was involved: say which limit it ran into.
			return nil, fmt.Errorf("%w (after %d tool calls; max_steps is %d)", err, len(call.ToolCalls), t.maxSteps)
		}
		return nil, err
	}
	answer, ok := reply.Tag("answer")
	if !ok {
		return nil, fmt.Errorf("%s gave no <answer>", tactics.AgentLabel(a.Name))
	}
	return ReactResult{Answer: answer, ToolCalls: len(call.ToolCalls)}, nil
}
