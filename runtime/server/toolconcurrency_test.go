package server

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// A served agent runs its tool calls one at a time (ask_user waits for
// one reply at a time): tool_concurrency above one is a config error at
// its line, and a Go program's AgentSpec with it is refused.
func TestServeRefusesToolConcurrency(t *testing.T) {
	for _, c := range []struct{ global, want string }{
		{"{model_name: mock/x, tool_concurrency: 1}", ""},
		{"{model_name: mock/x, tool_concurrency: 4}", "serve.yaml:2:30: agent greeter: tool_concurrency: a conversation runs its tool calls one at a time"},
	} {
		path := writeServeConfig(t, "tactic_type: serve\nglobal: "+c.global+"\nagent_configs:\n  - name: greeter\n    system_prompt: Hi {sender}.\n")
		_, err := LoadConfig(context.Background(), path)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: err %v, want %q", c.global, err, c.want)
		}
	}
	m, err := provider.Open(context.Background(), "mock/x", provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lim := tactics.DefaultLimits()
	lim.ToolConcurrency = 2
	store, err := conversation.Open(t.TempDir(), conversation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = conversation.NewService(store, []*conversation.AgentSpec{{Name: "greeter", Model: m, System: dialog.MustPrompt("greeter/system", "Hi."), Limits: lim}}, conversation.ServiceOptions{})
	if err == nil || !strings.Contains(err.Error(), "agent greeter: tool_concurrency") {
		t.Errorf("NewService: %v", err)
	}
}
