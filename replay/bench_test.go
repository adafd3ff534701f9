package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

// loop is a tactic of n turns of one agent on one dialog.
type loop struct{ n int }

func (loop) Agents() []string { return []string{"assistant"} }

func (l loop) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	a, err := s.Agent("assistant")
	if err != nil {
		return nil, err
	}
	if err := a.Open("main", nil); err != nil {
		return nil, err
	}
	var last string
	for i := range l.n {
		if err := a.Receive(fmt.Sprintf("%s, turn %d", task, i)); err != nil {
			return nil, err
		}
		reply, _, err := a.Respond(ctx)
		if err != nil {
			return nil, err
		}
		last = reply.Text()
	}
	return last, nil
}

func init() {
	tactics.Register("bench_loop", func(p map[string]any) (tactics.Tactic, error) {
		return loop{n: p["n"].(int)}, nil
	})
}

const loopYAML = `
tactic_type: bench_loop
params: {n: 1000}
global:
  model_name: mock/demo
  context_manager: {type: window, n: 40}
agent_configs:
  - name: assistant
    system_prompt: You count.
mock:
  replies: [{text: "one"}, {text: "two"}, {text: "three"}]
`

// BenchmarkReplay1000Calls replays a recorded 1,000-call run (load the
// log, run the tactic again, every call served from the recording) beside
// running the same tactic on the mock provider.
func BenchmarkReplay1000Calls(b *testing.B) {
	cfg, err := config.Parse("loop.yaml", []byte(loopYAML), nil)
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	res, err := tactics.Run(b.Context(), cfg, "count", tactics.RunOptions{LogDir: root})
	if err != nil || res.Status != logs.StatusOK || res.Totals.ModelCalls != 1000 {
		b.Fatalf("recording: %v %+v", err, res)
	}
	run, err := logs.Open(root, res.RunID)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("record-on-mock", func(b *testing.B) {
		for b.Loop() {
			if _, err := tactics.Run(b.Context(), cfg, "count", tactics.RunOptions{LogDir: b.TempDir()}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		for b.Loop() {
			rec, err := replay.Load(b.Context(), run)
			if err != nil {
				b.Fatal(err)
			}
			rep, err := replay.Run(b.Context(), rec, replay.Options{LogDir: b.TempDir()})
			if err != nil || rep.Divergence != nil || rep.Calls != 1000 {
				b.Fatalf("%v %v", err, rep.Divergence)
			}
		}
	})
}
