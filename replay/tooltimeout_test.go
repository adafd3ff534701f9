package replay_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/tactics"
)

// stuckCalls counts the calls of the stuck tool, which never returns and
// ignores its context; stuckStarted receives once each time it starts.
var (
	stuckCalls   atomic.Int64
	stuckStarted = make(chan struct{}, 16)
)

func init() {
	type none struct{}
	tactics.RegisterTool(dialog.MustFunction("replay_test_stuck", "Never returns.",
		func(context.Context, none) (string, error) {
			stuckCalls.Add(1)
			stuckStarted <- struct{}{}
			select {} // a tool stuck for good, deaf to its context
		}))
}

const stuckConfig = `tactic_type: react
params: {max_steps: 3, tools: [replay_test_stuck]}
global: {model_name: mock/stuck, tool_timeout: 50ms}
agent_configs: [{name: agent, system_prompt: You wait.}]
mock:
  replies:
    - tool_calls: [{name: replay_test_stuck, arguments: {}}]
    - text: "<answer>gave up</answer>"
`

// A run whose tool did not return within tool_timeout goes on, with the
// timeout as the tool's result, and replays exactly: the replay serves
// the recorded timeout without running the tool or waiting for it.
func TestToolTimeoutReplays(t *testing.T) {
	cfg := edgeConfig(t, stuckConfig)
	res, run := recordRun(t, cfg, "Wait.", logs.StatusOK)
	if !strings.Contains(string(res.Result), "gave up") {
		t.Fatalf("recording: %s", res.Result)
	}
	rec := mustLoad(t, run)
	calls := rec.ToolCalls()
	if len(calls) != 1 || calls[0].Error != "tool replay_test_stuck did not return within the tool timeout of 50ms (tool_timeout)" {
		t.Fatalf("tool calls %+v", calls)
	}
	before := stuckCalls.Load()
	start := time.Now()
	rep := assertExact(t, run, res)
	if rep.Tools != 1 || rep.ToolsRun != 0 || stuckCalls.Load() != before {
		t.Errorf("the replay served %d tool calls and ran %d (the tool ran %d times)", rep.Tools, rep.ToolsRun, stuckCalls.Load()-before)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the replay took %v", took)
	}
}

// A run cancelled while its tool, deaf to the cancellation, runs ends at
// once, cancelled, with a whole log; its replay serves what it recorded
// (the call answered with the cancellation) without running the tool, and
// stops where the run stopped.
func TestToolCancelledReplays(t *testing.T) {
	cfg := edgeConfig(t, strings.Replace(stuckConfig, "tool_timeout: 50ms", "tool_timeout: 0", 1))
	root := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for len(stuckStarted) > 0 {
		<-stuckStarted
	}
	var cancelled atomic.Int64
	go func() {
		<-stuckStarted
		cancelled.Store(time.Now().UnixNano())
		cancel()
	}()
	res, err := tactics.Run(ctx, cfg, "Wait.", tactics.RunOptions{LogDir: root})
	if err != nil || res.Status != logs.StatusCancelled {
		t.Fatalf("recording: %v %+v", err, res)
	}
	if took := time.Since(time.Unix(0, cancelled.Load())); took > time.Second {
		t.Fatalf("the run ended %v after it was cancelled", took)
	}
	run, err := logs.Open(root, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if s := run.Summary().Status(); s != logs.StatusCancelled {
		t.Fatalf("the log says %s", s)
	}
	before := stuckCalls.Load()
	rep := replayRun(t, run, replay.Options{})
	if rep.Run.Status != logs.StatusCancelled || rep.Tools != 1 || rep.ToolsRun != 0 || stuckCalls.Load() != before {
		t.Fatalf("replay ended %s %q, served %d tool calls, ran %d", rep.Run.Status, rep.Run.Error, rep.Tools, rep.ToolsRun)
	}
	if d := rep.Divergence; d == nil || !d.CutShort || !strings.Contains(d.Error(), "cancelled") {
		t.Errorf("replay divergence %v: want the end of the recording, where the run was cancelled", d)
	}
}
