// Package builtin holds the tactics that come with lllm-go. Importing it
// registers them:
//
//	import _ "github.com/lllm-go/lllm/tactics/builtin"
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
