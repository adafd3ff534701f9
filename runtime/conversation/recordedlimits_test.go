package conversation

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// replayedLimits are the limits the agent of the run under root that
// answered gets in a replay of its recorded config, config changed by
// edit first when it is not nil.
func replayedLimits(t *testing.T, root string, edit func(agent map[string]any)) tactics.Limits {
	t.Helper()
	rec, err := replay.Load(context.Background(), latestRun(t, root))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		var cfg map[string]any
		if err := json.Unmarshal(rec.Start.Config, &cfg); err != nil {
			t.Fatal(err)
		}
		edit(cfg["agent_configs"].([]any)[0].(map[string]any))
		if rec.Start.Config, err = json.Marshal(cfg); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := replay.Config(rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	makers, err := tactics.Agents(context.Background(), cfg, tactics.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return makers[cfg.Agents[0].Name]().Limits
}

// Every limit of the call loop a config sets is in a served run's
// recorded config, so that its log shows it and a replay runs with it; a
// log written before the durations and max_tool_output were recorded
// replays with their defaults.
func TestRecordedLimits(t *testing.T) {
	lim := tactics.DefaultLimits()
	lim.CallTimeout, lim.MaxRetryWait, lim.ToolTimeout, lim.MaxToolOutput = 90*time.Second, -1, 45*time.Minute, 4096
	lim.MaxExceptionRetry, lim.MaxLLMRecall = 1, 2
	m := mockModel(t, provider.MockConfig{})
	root := filepath.Join(t.TempDir(), "runs")
	svc, err := NewService(quietStore(t, t.TempDir()), []*AgentSpec{
		{Name: "assistant", System: prompt(t, "assistant", "You help."), Model: m, ModelName: "mock/a", Limits: lim},
	}, ServiceOptions{LogDir: root})
	if err != nil {
		t.Fatal(err)
	}
	run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "hi"})

	var recorded RecordedConfig
	if err := json.Unmarshal(runsUnder(t, root)[0].Start.Config, &recorded); err != nil {
		t.Fatal(err)
	}
	ag := recorded.Agents[0]
	if ag.CallTimeout != "1m30s" || ag.MaxRetryWait != "0s" || ag.ToolTimeout != "45m0s" || ag.MaxToolOutput == nil || *ag.MaxToolOutput != 4096 {
		t.Errorf("recorded call_timeout %q, max_retry_wait %q, tool_timeout %q, max_tool_output %v", ag.CallTimeout, ag.MaxRetryWait, ag.ToolTimeout, ag.MaxToolOutput)
	}

	got := replayedLimits(t, root, nil)
	got.MaxRetries = lim.MaxRetries // params.max_retries, which the tactic applies
	if got != lim {
		t.Errorf("replayed limits %+v, want %+v", got, lim)
	}

	old := replayedLimits(t, root, func(agent map[string]any) {
		for _, k := range []string{"call_timeout", "max_retry_wait", "tool_timeout", "max_tool_output"} {
			delete(agent, k)
		}
	})
	def := tactics.DefaultLimits()
	if old.CallTimeout != def.CallTimeout || old.MaxRetryWait != def.MaxRetryWait || old.ToolTimeout != def.ToolTimeout || old.MaxToolOutput != def.MaxToolOutput ||
		old.MaxExceptionRetry != 1 || old.MaxLLMRecall != 2 {
		t.Errorf("limits of an older log %+v", old)
	}
}
