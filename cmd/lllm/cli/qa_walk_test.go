package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/conversation"
)

// servedTurn runs one turn of configs/serve.yaml's assistant, with run
// logs under root, and returns root.
func servedTurn(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "runs")
	svc := servedService(t, root)
	if _, err := svc.Run(context.Background(), conversation.RunRequest{Agent: "assistant", Sender: "alice", Content: "hello there"},
		func(conversation.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestQAReplayOfAnOldServedTurnSaysWhy: lllm replay re-executes served
// turns from their logs (replay_served_test.go), but a turn logged before
// served runs recorded params.history cannot be: the refusal says it is a
// turn of a served conversation, and why, rather than sending the user to
// "the program that ran it", which is lllm itself.
func TestQAReplayOfAnOldServedTurnSaysWhy(t *testing.T) {
	root := servedTurn(t)
	run, err := logs.Open(root, "latest")
	if err != nil {
		t.Fatal(err)
	}
	// The log as lllm serve wrote it before: no params.history.
	data, err := os.ReadFile(run.Path())
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	var rec map[string]any
	if err := json.Unmarshal(first, &rec); err != nil {
		t.Fatal(err)
	}
	delete(rec["run_start"].(map[string]any)["config"].(map[string]any)["params"].(map[string]any), "history")
	first, _ = json.Marshal(rec)
	if err := os.WriteFile(run.Path(), append(append(first, '\n'), rest...), 0o644); err != nil {
		t.Fatal(err)
	}
	r := lllm(t, "replay", "latest", "--log-dir", root)
	if r.code == 0 {
		t.Fatalf("an old served turn was replayed: %v", r)
	}
	if strings.Contains(r.stderr, "replay it with the program that ran it") {
		t.Errorf("the refusal sends the user to \"the program that ran it\", which is lllm serve itself:\n%s", r.stderr)
	}
	for _, want := range []string{"lllm serve", "assistant/alice", "params.history", "lllm show, tree and diff read its log"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not say the run is an old turn of a served conversation (%q):\n%s", want, r.stderr)
		}
	}
}
