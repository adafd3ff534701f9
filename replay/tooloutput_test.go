package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/tactics"
)

func init() {
	type none struct{}
	tactics.RegisterTool(dialog.MustFunction("replay_test_flood", "Returns 512 KiB of text.",
		func(context.Context, none) (string, error) { return flood, nil }))
}

var flood = strings.Repeat("flood ", 512<<10/6)

// A tool's result beyond max_tool_output is cut before the log records
// it: the log holds the cut text, not the flood (three times over, as it
// did: the tool_call record, the tool message and its call), and the run
// replays exactly, the served result sent as recorded, not cut again.
func TestMaxToolOutputReplays(t *testing.T) {
	cfg := edgeConfig(t, `tactic_type: react
params: {max_steps: 3, tools: [replay_test_flood]}
global: {model_name: mock/flood, max_tool_output: 1000}
agent_configs: [{name: agent, system_prompt: You read.}]
mock:
  replies:
    - tool_calls: [{name: replay_test_flood, arguments: {}}]
    - text: "<answer>read</answer>"
`)
	res, run := recordRun(t, cfg, "Read.", logs.StatusOK)
	calls := mustLoad(t, run).ToolCalls()
	whole := "Return of calling function replay_test_flood with arguments {}:\n" + flood
	if len(calls) != 1 || calls[0].Result != whole[:1000]+fmt.Sprintf("\n[output cut to the first 1000 of %d bytes]", len(whole)) {
		t.Fatalf("tool calls %+v", calls)
	}
	if fi, err := os.Stat(filepath.Join(run.Dir, logs.EventsFile)); err != nil || fi.Size() > 64<<10 {
		t.Fatalf("the log is %d bytes (%v)", fi.Size(), err)
	}
	rep := assertExact(t, run, res)
	if rep.Tools != 1 || rep.ToolsRun != 0 {
		t.Errorf("the replay served %d tool calls and ran %d", rep.Tools, rep.ToolsRun)
	}
	rep = replayRun(t, run, replay.Options{RunTools: true})
	if rep.Divergence != nil || rep.ToolsRun != 1 {
		t.Errorf("with RunTools: divergence %v, %d tools run", rep.Divergence, rep.ToolsRun)
	}
}
