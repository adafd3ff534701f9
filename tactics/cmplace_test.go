package tactics_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

func init() {
	// A manager of a user's own, which reads its keys with DecodeConfig
	// and wraps its errors.
	contextmgr.Register("lab:keeps", func(cfg map[string]any) (contextmgr.Manager, error) {
		c := struct {
			Keep int `json:"keep"`
		}{Keep: 4}
		if err := contextmgr.DecodeConfig(cfg, &c); err != nil {
			return nil, fmt.Errorf("keeping the last turns: %w", err)
		}
		return nil, fmt.Errorf("keep %d: not built in this test", c.Keep)
	})
	// One that checks a bound of its key n itself.
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

// prepareProblem is the config problem Prepare reports for the config
// text, after the --set overrides ("path=value").
func prepareProblem(t *testing.T, text string, sets ...string) string {
	t.Helper()
	cfg, err := config.Parse("cm.yaml", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		path, value, _ := strings.Cut(s, "=")
		if err := cfg.Set(path, value); err != nil {
			t.Fatal(err)
		}
	}
	if _, err = tactics.Prepare(t.Context(), cfg, tactics.RunOptions{LogDir: t.TempDir()}); err == nil {
		t.Fatal("Prepare: no error")
	}
	return err.Error()
}

// A context manager's problem with one of its keys is placed where that
// key was written: at the --set that gave it, or at its line in the
// file (in the agent's own context_manager, in global's, or in the
// top-level one every agent inherits); a problem with the whole config,
// such as its type, at the context_manager line. A custom manager's own
// bound is placed at the key it names, as a built-in manager's is.
func TestContextManagerProblemAtItsKey(t *testing.T) {
	const head = "tactic_type: chat\nagent_configs:\n  - name: assistant\n    system_prompt: x\n"
	const lastn = head + "global:\n  model_name: mock/m\n  context_manager:\n    type: lastn\n"
	for _, c := range []struct {
		name, text string
		sets       []string
		want       string
	}{
		{"a --set under global's", head + "global:\n  model_name: mock/m\n  context_manager: {type: default}\n",
			[]string{"global.context_manager.buffer=-5"},
			"--set global.context_manager.buffer: agent assistant: context_manager: default: key buffer must be at least 0, not -5"},
		{"the agent's own", head + "    context_manager:\n      type: window\n      m: 3\nglobal: {model_name: mock/m}\n", nil,
			`cm.yaml:7:7: agent assistant: context_manager: window: unknown key "m" (accepted: type, n)`},
		{"global's", head + "global:\n  model_name: mock/m\n  context_manager:\n    type: summary\n    max_tokens: lots\n", nil,
			`cm.yaml:9:5: agent assistant: context_manager: summary: key max_tokens must be an integer, not "lots"`},
		{"the top-level one", head + "global: {model_name: mock/m}\ncontext_manager:\n  type: window\n  n: 0\n", nil,
			"cm.yaml:8:3: agent assistant: context_manager: window: key n must be at least 1, not 0"},
		{"a custom manager's, through DecodeConfig", head + "global: {model_name: mock/m}\ncontext_manager:\n  type: lab:keeps\n  kep: 2\n", nil,
			`cm.yaml:8:3: agent assistant: context_manager: lab:keeps: keeping the last turns: unknown key "kep" (did you mean "keep"?)`},
		{"the type", head + "global: {model_name: mock/m}\ncontext_manager:\n  type: windw\n  n: 2\n", nil,
			`cm.yaml:6:1: agent assistant: context_manager: unknown context manager type "windw"`},
		{"a custom manager's own, of no key", head + "global: {model_name: mock/m}\ncontext_manager:\n  type: lab:keeps\n  keep: 2\n", nil,
			"cm.yaml:6:1: agent assistant: context_manager: lab:keeps: keep 2: not built in this test"},
		{"a custom manager's own bound, at a --set", lastn, []string{"global.context_manager.n=0"},
			"--set global.context_manager.n: agent assistant: context_manager: lab:lastn: key n must be at least 1, not 0"},
		{"a custom manager's own bound, at its line", lastn + "    n: -2\n", nil,
			"cm.yaml:9:5: agent assistant: context_manager: lab:lastn: key n must be at least 1, not -2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := prepareProblem(t, c.text, c.sets...); !strings.Contains(got, c.want) {
				t.Errorf("Prepare: %s\nwant %s", got, c.want)
			}
		})
	}
}
