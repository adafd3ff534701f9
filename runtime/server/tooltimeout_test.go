package server

import (
	"context"
	"strings"
	"testing"
)

// A served agent whose tool_timeout is shorter than
// params.ask_user_timeout (ask_user would stop waiting early) is a config error at the tool_timeout it
// has (or at the agent when it takes the default), so lllm validate
// reports it; a longer tool_timeout is fine.
func TestAskUserTimeoutWithinToolTimeout(t *testing.T) {
	for _, c := range []struct{ name, global, ask, want string }{
		{"default", "{model_name: mock/x}", "5m", ""},
		{"as long as the default", "{model_name: mock/x}", "10m", ""},
		{"ask longer than the default", "{model_name: mock/x}", "20m", "serve.yaml:4:5: agent greeter: tool_timeout (10m0s) is shorter than params.ask_user_timeout (20m0s), so ask_user would stop waiting for the user before its time: raise tool_timeout or lower ask_user_timeout"},
		{"tool_timeout shorter", "{model_name: mock/x, tool_timeout: 1m}", "5m", "serve.yaml:2:30: agent greeter: tool_timeout (1m0s) is shorter than params.ask_user_timeout (5m0s)"},
		{"tool_timeout longer", "{model_name: mock/x, tool_timeout: 1h}", "20m", ""},
		{"no tool_timeout", "{model_name: mock/x, tool_timeout: 0}", "20m", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeServeConfig(t, "tactic_type: serve\nglobal: "+c.global+"\nagent_configs:\n  - name: greeter\n    system_prompt: Hi {sender}.\nparams: {ask_user_timeout: "+c.ask+"}\n")
			_, err := LoadConfig(context.Background(), path)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}
