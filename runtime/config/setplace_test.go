package config

import (
	"strings"
	"testing"
)

// A problem with a top-level setting every agent inherits is placed where
// it was written: at the --set that wrote it, whose map it created.
func TestAgentErrorAtTopLevelSet(t *testing.T) {
	c, err := Parse("c.yaml", []byte("tactic_type: chat\nglobal: {model_name: mock/m}\nagent_configs:\n  - name: a\n    system_prompt: x\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set("context_manager.n", "abc"); err != nil {
		t.Fatal(err)
	}
	got := c.AgentErrorf(0, []string{"context_manager"}, "bad").Error()
	if !strings.HasPrefix(got, "--set context_manager.n: ") {
		t.Errorf("error %q, want it at --set context_manager.n", got)
	}
	// Written in the file, it is placed at its line.
	c, err = Parse("c.yaml", []byte("tactic_type: chat\nglobal: {model_name: mock/m}\ncontext_manager: {n: abc}\nagent_configs:\n  - name: a\n    system_prompt: x\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.AgentErrorf(0, []string{"context_manager"}, "bad").Error(); !strings.HasPrefix(got, "c.yaml:3:") {
		t.Errorf("error %q, want it at c.yaml:3", got)
	}
}
