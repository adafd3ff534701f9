package tactics

import (
	"strings"
	"testing"
)

// An error listing what there is says so when there is nothing, rather
// than printing an empty list.
func TestNoDialogOpenError(t *testing.T) {
	a := &Agent{Name: "solver"}
	err := a.Switch("main")
	if err == nil || !strings.Contains(err.Error(), `no dialog "main" (no dialog is open: Open one first)`) {
		t.Errorf("Switch with no dialog open: %v", err)
	}
}

func TestNoAgentsConfiguredError(t *testing.T) {
	s := NewSession("lab:x", nil, nil, nil)
	_, err := s.Agent("solver")
	if err == nil || !strings.Contains(err.Error(), `no agent "solver" (no agents are configured)`) {
		t.Errorf("Agent with none configured: %v", err)
	}
	s = NewSession("lab:x", nil, map[string]func() *Agent{"judge": func() *Agent { return &Agent{} }}, nil)
	if _, err := s.Agent("solver"); err == nil || !strings.Contains(err.Error(), `(configured: judge)`) {
		t.Errorf("Agent not configured: %v", err)
	}
}
