package replay_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/tactics"
)

// ticks counts the calls of the tick tool, whose result is new each time,
// as a clock's or a search engine's would be.
var ticks atomic.Int64

func init() {
	type none struct{}
	tactics.RegisterTool(dialog.MustFunction("replay_test_tick", "Returns a new number each call.",
		func(context.Context, none) (string, error) { return fmt.Sprint("tick ", ticks.Add(1)), nil }))
}

// A replay serves the tool results its recording holds: a tool whose
// result changes does not make an unchanged run diverge, and does not run
// again; --run-tools runs it, and the run diverges at the next call.
func TestReplayServesToolResults(t *testing.T) {
	run, _ := recordYAML(t, filepath.Join(t.TempDir(), "tick.yaml"), `tactic_type: react
params: {max_steps: 3, tools: [replay_test_tick]}
global: {model_name: mock/tick}
agent_configs: [{name: agent, system_prompt: You tick.}]
mock:
  replies:
    - tool_calls: [{name: replay_test_tick, arguments: {}}]
    - text: "<answer>ticked</answer>"
`, "Tick once.")
	before := ticks.Load()
	rep := replayRun(t, run, replay.Options{LogDir: t.TempDir()})
	if rep.Divergence != nil || rep.Run.Status != logs.StatusOK || rep.Tools != 1 || rep.ToolsRun != 0 {
		t.Fatalf("divergence %v, %s %s, tools %d served %d run", rep.Divergence, rep.Run.Status, rep.Run.Error, rep.Tools, rep.ToolsRun)
	}
	if ticks.Load() != before {
		t.Fatal("the replay ran the tool")
	}
	rep = replayRun(t, run, replay.Options{LogDir: t.TempDir(), RunTools: true})
	if d := rep.Divergence; d == nil || !strings.Contains(d.Diff, fmt.Sprint("tick ", before+1)) || rep.Tools != 0 || rep.ToolsRun != 1 {
		t.Fatalf("with RunTools: divergence %v, tools %d served %d run", d, rep.Tools, rep.ToolsRun)
	}
	if ticks.Load() != before+1 {
		t.Fatalf("with RunTools the tool ran %d times, want once", ticks.Load()-before)
	}
}
