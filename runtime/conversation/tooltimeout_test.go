package conversation

import (
	"testing"
	"time"

	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// An agent whose tool timeout is shorter than ask_user's own timeout is
// refused: the user would lose the time they were given. One as long or
// longer, none, or no tool rounds are fine.
func TestAskTimeoutWithinToolTimeout(t *testing.T) {
	m := mockModel(t, provider.MockConfig{})
	limits := func(tool time.Duration, steps int) tactics.Limits {
		l := tactics.DefaultLimits()
		l.ToolTimeout, l.MaxInterruptSteps = tool, steps
		return l
	}
	for _, c := range []struct {
		name   string
		limits tactics.Limits
		ask    time.Duration
		want   string // "" when the service is made
	}{
		{"defaults", tactics.Limits{}, 0, ""},
		{"default tool timeout, as long as ask", tactics.Limits{}, 10 * time.Minute, ""},
		{"default tool timeout, longer ask", tactics.Limits{}, 20 * time.Minute,
			"conversation: agent assistant: its tool timeout (tool_timeout, 10m0s) is shorter than ask_user's timeout (ask_user_timeout, 20m0s), so ask_user would stop waiting for the user before its time: raise tool_timeout or lower ask_user_timeout"},
		{"longer tool timeout", limits(time.Hour, 5), 30 * time.Minute, ""},
		{"no tool timeout", limits(-1, 5), 30 * time.Minute, ""},
		{"no tool rounds", limits(time.Minute, -1), 30 * time.Minute, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewService(quietStore(t, t.TempDir()), []*AgentSpec{
				{Name: "assistant", System: prompt(t, "assistant", "You help."), Model: m, ModelName: "mock/a", Limits: c.limits},
			}, ServiceOptions{AskTimeout: c.ask})
			if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}
