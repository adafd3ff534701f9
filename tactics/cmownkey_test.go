package tactics_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
)

func init() {
	// A manager of a user's own that checks a bound of its key n itself.
	contextmgr.Register("lab:lastn", func(cfg map[string]any) (contextmgr.Manager, error) {
		c := struct {
			N int `json:"n"`
		}{N: 6}
		if err := contextmgr.DecodeConfig(cfg, &c); err != nil {
			return nil, err
		}
		if c.N < 1 {
			return nil, &contextmgr.ConfigError{Key: "n", Err: fmt.Errorf("key n must be at least 1, not %d", c.N)}
		}
		return nil, fmt.Errorf("n %d: not built in this test", c.N)
	})
}

// A custom manager's own bound is placed at the key it names, as a
// built-in manager's is: at the --set that gave it, or at its line.
func TestContextManagerOwnBoundAtItsKey(t *testing.T) {
	const head = "tactic_type: chat\nagent_configs:\n  - name: assistant\n    system_prompt: x\nglobal:\n  model_name: mock/m\n  context_manager:\n    type: lastn\n"
	for _, c := range []struct {
		name, text string
		sets       []string
		want       string
	}{
		{"a --set", head, []string{"global.context_manager.n=0"},
			"--set global.context_manager.n: agent assistant: context_manager: lab:lastn: key n must be at least 1, not 0"},
		{"a line", head + "    n: -2\n", nil,
			"cm.yaml:9:5: agent assistant: context_manager: lab:lastn: key n must be at least 1, not -2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := prepareProblem(t, c.text, c.sets...); !strings.Contains(got, c.want) {
				t.Errorf("Prepare: %s\nwant %s", got, c.want)
			}
		})
	}
}
