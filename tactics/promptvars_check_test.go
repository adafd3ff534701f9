package tactics

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/config"
)

// fillsUser opens its agent with {user} filled.
type fillsUser struct{}

func (fillsUser) Agents() []string { return []string{"a"} }
func (fillsUser) Call(ctx context.Context, s *Session, task string) (any, error) {
	a, err := s.Agent("a")
	if err != nil {
		return nil, err
	}
	return nil, a.Open("main", map[string]any{"user": "Ada"})
}
func (fillsUser) PromptVariables(string) []string { return []string{"user"} }

// fillsAny says nothing of the variables it fills: it is not checked.
type fillsAny struct{}

func (fillsAny) Agents() []string { return []string{"a"} }
func (fillsAny) Call(ctx context.Context, s *Session, task string) (any, error) {
	return fillsUser{}.Call(ctx, s, task)
}

func init() {
	Register("promptvars_test_user", func(map[string]any) (Tactic, error) { return fillsUser{}, nil })
	Register("promptvars_test_any", func(map[string]any) (Tactic, error) { return fillsAny{}, nil })
}

func TestPromptVariablesOfATactic(t *testing.T) {
	check := func(tactic, prompt string) error {
		t.Helper()
		cfg, err := config.Parse("c.yaml", []byte("tactic_type: "+tactic+"\nglobal: {model_name: mock/m}\nagent_configs:\n  - name: a\n    system_prompt: \""+prompt+"\"\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return Check(context.Background(), cfg, RunOptions{})
	}
	if err := check("promptvars_test_user", "Hello {user}."); err != nil {
		t.Errorf("a variable the tactic fills: %v", err)
	}
	err := check("promptvars_test_user", "Hello {user} at {place}.")
	if want := "c.yaml:5:5: agent a: system_prompt uses {place}, but tactic promptvars_test_user fills only {user}, so"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%v\nwant %s...", err, want)
	}
	if err := check("promptvars_test_any", "Hello {user} at {place}."); err != nil {
		t.Errorf("a tactic that does not say which variables it fills: %v", err)
	}
}
