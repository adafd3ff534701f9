// Command mybinary is your own lllm: the whole CLI (run, validate, runs,
// tree, show) with a tactic of your own registered beside the built-ins.
// It takes these few lines:
//
//	package main
//
//	import (
//		"github.com/lllm-go/lllm/cmd/lllm/cli"
//		"github.com/lllm-go/lllm/tactics"
//	)
//
//	func init() { tactics.Register("shout", newShout) }
//
//	func main() { cli.Main() }
//
// Try it offline:
//
//	go run ./examples/mybinary run examples/mybinary/shout.yaml --task "hello"
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/lllm-go/lllm/cmd/lllm/cli"
	"github.com/lllm-go/lllm/tactics"
)

func init() { tactics.Register("shout", newShout) }

func main() { cli.Main() }

// shout asks its agent to answer, then returns the answer in capitals,
// with marks exclamation marks (its one param, 0 unless set).
type shout struct{ marks int }

func newShout(params map[string]any) (tactics.Tactic, error) {
	var p struct {
		Marks int `json:"marks"`
	}
	if err := tactics.DecodeParams(params, &p); err != nil {
		return nil, err // placed at the param in the config
	}
	if p.Marks < 0 {
		return nil, &tactics.ParamError{Param: "marks", Err: fmt.Errorf("param marks must be at least 0, not %d", p.Marks)}
	}
	return shout{marks: p.Marks}, nil
}

func (shout) Agents() []string { return []string{"speaker"} }

func (t shout) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	a, err := s.Agent("speaker")
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
	return strings.ToUpper(reply.Text()) + strings.Repeat("!", t.marks), nil
}
