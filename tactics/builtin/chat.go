// Package builtin holds the tactics that come with lllm-go. Importing it
// registers them:
//
//	import _ "github.com/lllm-go/lllm/tactics/builtin"
//
// Each needs agents of the names below in the config's agent_configs, and
// takes the params shown (under params):
//
//   - chat: assistant; no params. One answer to the task.
//   - react: agent; max_steps (default 5), tools (default all registered
//     tools). Tool rounds, then an answer in <answer></answer>.
//   - best_of_n: solver, judge; n (default 3). The judge picks one of n
//     candidates.
//   - debate: pro, con, judge; rounds (default 2). The judge gives a
//     verdict.
//   - self_refine: solver, critic; iterations (default 2). The critic's
//     critiques, each answered with a revision, until it is satisfied.
//
// The configs/ directory has a ready config for each.
package builtin

import (
	"context"
	"fmt"

	"github.com/lllm-go/lllm/tactics"
)

func init() {
	tactics.Register("chat", newChat)
}

// chat is one agent answering the task in one turn.
//
// Params: none.
//
// Result: the text of the agent's reply, as a JSON string.
type chat struct{}

func newChat(params map[string]any) (tactics.Tactic, error) {
	for k := range params {
		return nil, fmt.Errorf("chat takes no params, got %q", k)
	}
	return chat{}, nil
}

func (chat) Agents() []string { return []string{"assistant"} }

func (chat) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	a, err := s.Agent("assistant")
	if err != nil {
		return nil, err
	}
	if err := a.Open("main", nil); err != nil {
		return nil, err
	}
	if err := a.Receive(task); err != nil {
		return nil, err
	}
	reply, _, err := a.Respond(ctx)
	if err != nil {
		return nil, err
	}
	return reply.Text(), nil
}
