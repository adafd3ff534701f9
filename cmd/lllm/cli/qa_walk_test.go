package cli

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/server"
)

// servedTurn runs one turn of configs/serve.yaml's assistant, with run
// logs under root, and returns root.
func servedTurn(t *testing.T) string {
	t.Helper()
	cfg, err := server.LoadConfig(context.Background(), "../../../configs/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	store, err := conversation.Open(t.TempDir(), conversation.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	root := filepath.Join(t.TempDir(), "runs")
	svc, err := conversation.NewService(store, cfg.Agents, conversation.ServiceOptions{AskTimeout: 10 * time.Second, LogDir: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Run(context.Background(), conversation.RunRequest{Agent: "assistant", Sender: "alice", Content: "hello there"},
		func(conversation.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestQAReplayOfAServedTurnSaysWhy: lllm replay refuses a served turn's
// run (docs/conversations.md: "conversation" is not a registered tactic),
// but its message tells the user to "replay it with the program that ran
// it, which imports the package registering "conversation"": the program
// that ran it is this very lllm (lllm serve), and no package registers
// that tactic. The message should say it is a served conversation turn,
// which replay does not handle, and point to what does read it.
func TestQAReplayOfAServedTurnSaysWhy(t *testing.T) {
	root := servedTurn(t)
	r := lllm(t, "replay", "latest", "--log-dir", root)
	if r.code == 0 {
		t.Fatalf("a served turn was replayed: %v", r)
	}
	if strings.Contains(r.stderr, "replay it with the program that ran it") {
		t.Errorf("the refusal sends the user to \"the program that ran it\", which is lllm serve itself:\n%s", r.stderr)
	}
	for _, want := range []string{"lllm serve", "assistant/alice"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not say the run is a turn of a served conversation (%q):\n%s", want, r.stderr)
		}
	}
}
