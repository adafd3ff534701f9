package tactics_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

// loopTactic is n turns of one agent on one dialog, without a context
// manager: every request carries the whole dialog. With tools, each turn
// offers a tool the mock calls once before it answers.
type loopTactic struct {
	n     int
	tools bool
}

func (loopTactic) Agents() []string { return []string{"assistant"} }

var loopTool, _ = dialog.NewFunction("lookup", "Looks a word up.", func(_ context.Context, in struct {
	Word string `json:"word"`
}) (string, error) {
	return "a definition of the word " + in.Word, nil
})

var loopTurn = dialog.MustPrompt("loop/turn", "{task}, turn {i}: look it up.", dialog.WithFunctions(loopTool))

func (l loopTactic) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	a, err := s.Agent("assistant")
	if err != nil {
		return nil, err
	}
	if err := a.Open("main", nil); err != nil {
		return nil, err
	}
	for i := range l.n {
		if l.tools {
			err = a.ReceivePrompt(loopTurn, map[string]any{"task": task, "i": i})
		} else {
			err = a.Receive(fmt.Sprintf("%s, turn %d: some words to make the message a little longer", task, i))
		}
		if err != nil {
			return nil, err
		}
		if _, _, err := a.Respond(ctx); err != nil {
			return nil, err
		}
	}
	return "done", nil
}

func init() {
	tactics.Register("bench_loop", func(p map[string]any) (tactics.Tactic, error) {
		n, _ := p["n"].(int)
		tools, _ := p["tools"].(bool)
		return loopTactic{n: n, tools: tools}, nil
	})
}

// BenchmarkMockLoop is a whole run of a loop of 100 and of 400 turns on
// the mock, with its log: the mock's usage counts each request's tokens,
// so a loop whose counts are not remembered is quadratic in tokenization.
// ns/turn at 400 turns against 100 shows how the loop grows.
func BenchmarkMockLoop(b *testing.B) {
	for _, tools := range []bool{false, true} {
		for _, n := range []int{100, 400} {
			b.Run(fmt.Sprintf("tools=%v/turns=%d", tools, n), func(b *testing.B) {
				mock := `{replies: [{text: "one"}]}`
				if tools {
					mock = `{rules: [{match: "look it up", reply: {tool_calls: [{name: lookup, arguments: {word: w}}]}}]}`
				}
				src := fmt.Sprintf("tactic_type: bench_loop\nparams: {n: %d, tools: %v}\nglobal: {model_name: mock/demo, max_interrupt_steps: 1}\n"+
					"agent_configs: [{name: assistant, system_prompt: You count.}]\nmock: %s\n", n, tools, mock)
				cfg, err := config.Parse("loop.yaml", []byte(src), nil)
				if err != nil {
					b.Fatal(err)
				}
				run := func() {
					res, err := tactics.Run(context.Background(), cfg, "count", tactics.RunOptions{LogDir: b.TempDir()})
					if err != nil || res.Status != logs.StatusOK {
						b.Fatalf("%v %+v", err, res)
					}
				}
				run() // the process's one-time work (encodings, git) outside the timing
				for b.Loop() {
					run()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/turn")
			})
		}
	}
}
