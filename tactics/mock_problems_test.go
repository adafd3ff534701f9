package tactics_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

// Every problem of a config's mock script is reported at once, each at
// the line that wrote it, under its path in the config.
func TestProviderConfigMockProblems(t *testing.T) {
	src := `tactic_type: chat
global: {model_name: mock/m}
agent_configs:
  - {name: assistant, system_prompt: hi}
mock:
  rules:
    - {reply: {text: x}}
    - {match: a, times: -2, reply: {text: y}}
  replies:
    - {error: ratelimit}
    - {tool_calls: [{arguments: {x: 1}}]}
`
	cfg, err := config.Parse("c.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tactics.ProviderConfig(cfg)
	if err == nil {
		t.Fatal("a mock script with four problems was accepted")
	}
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *config.Error
		if !errors.As(e, &ce) || ce.Line == 0 {
			t.Errorf("%v: not placed at a line of c.yaml", e)
		}
		got = append(got, e.Error())
	}
	want := []string{
		"c.yaml:7:7: mock.rules.0: set match",
		"c.yaml:8:18: mock.rules.1.times: -2 is negative",
		"c.yaml:10:8: mock.replies.0.error: unknown error \"ratelimit\"",
		"c.yaml:11:21: mock.replies.1.tool_calls.0",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d: %q, want it to start %q", i, got[i], w)
		}
	}
}
