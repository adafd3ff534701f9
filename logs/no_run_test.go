package logs_test

import (
	"errors"
	"testing"

	"github.com/lllm-go/lllm/logs"
)

// An empty run reference is ErrNoRun, whatever the root holds.
func TestOpenEmptyRefIsErrNoRun(t *testing.T) {
	root := t.TempDir()
	if _, _, err := logs.Create(root, logs.RunStart{Tactic: "t"}, logs.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := logs.Open(root, ""); !errors.Is(err, logs.ErrNoRun) {
		t.Fatalf("Open(root, \"\"): %v, want ErrNoRun", err)
	}
	if _, err := logs.Open(root, "latest"); err != nil {
		t.Fatalf("Open(root, latest): %v", err)
	}
}
