package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lllm chat --reasoning prints a reply's reasoning after "[thinking]",
// then the reply on its own line; without it, the reply alone. /history
// shows the reasoning the server kept the same way.
func TestChatReasoning(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	yaml := "tactic_type: serve\nglobal: {model_name: mock/serve}\nagent_configs:\n  - name: thinker\n    system_prompt: You think.\n" +
		"mock:\n  rules:\n    - {match: capital, reply: {text: Paris., reasoning: \"France's capital is Paris.\"}}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _ := serveConfigAt(t, cfg, filepath.Join(dir, "data"), 10*time.Second)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		flag, want string
	}{
		{"--reasoning", "thinker: [thinking] France's capital is Paris.\nParis.\n"},
		{"--no-history", "thinker: Paris.\n"},
	} {
		code, out, errs := chatRun(t, "capital of France?\n", "thinker", "--addr", addr, tc.flag)
		if code != ExitOK || !strings.Contains(out, tc.want) || tc.flag != "--reasoning" && strings.Contains(out, "thinking") {
			t.Errorf("%s: exit %d, output %q (want %q), stderr %q", tc.flag, code, out, tc.want, errs)
		}
	}
	if code, out, errs := chatRun(t, "capital of France?\n", "thinker", "--addr", addr, "--sender", "alice"); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, tc := range []struct {
		flag, want string
	}{
		{"--reasoning", "alice: capital of France?\nthinker: [thinking] France's capital is Paris.\nParis.\n"},
		{"--no-history", "alice: capital of France?\nthinker: Paris.\n"},
	} {
		code, out, errs := chatRun(t, "/history\n", "thinker", "--addr", addr, "--sender", "alice", tc.flag)
		if code != ExitOK || !strings.Contains(out, tc.want) || tc.flag != "--reasoning" && strings.Contains(out, "thinking") {
			t.Errorf("/history %s: exit %d, output %q (want %q), stderr %q", tc.flag, code, out, tc.want, errs)
		}
	}
}
