package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// With --reasoning, each tool round's reasoning is marked "[thinking]"
// on a line of its own, the tool call on the next, and after an
// ask_user answer the reasoning that follows is marked again: it is
// never printed as if it were the reply.
func TestChatReasoningRounds(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	yaml := "tactic_type: serve\nglobal: {model_name: mock/serve, tool_timeout: 1m}\nagent_configs:\n  - name: thinker\n    system_prompt: You think.\n" +
		"params: {ask_user_timeout: 10s}\n" +
		"mock:\n  rules:\n" +
		"    - {match: search, times: 1, reply: {reasoning: I should search., tool_calls: [{name: recall, arguments: {query: foo}}]}}\n" +
		"    - {match: search, reply: {text: Found nothing., reasoning: Nothing there.}}\n" +
		"    - {match: ask me, times: 1, reply: {reasoning: I need to ask., tool_calls: [{name: ask_user, arguments: {question: \"Which?\"}}]}}\n" +
		"    - {match: ask me, reply: {text: Thanks., reasoning: Got the answer.}}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _ := serveConfigAt(t, cfg, filepath.Join(dir, "data"), 10*time.Second)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct{ in, want string }{
		{"search please\n", "thinker: [thinking] I should search.\n[tool recall {\"query\":\"foo\"}] [thinking] Nothing there.\nFound nothing.\n"},
		{"ask me\nblue\n", "thinker: [thinking] I need to ask.\n[tool ask_user {\"question\":\"Which?\"}] \n[thinker asks] Which?\nthinker: [thinking] Got the answer.\nThanks.\n"},
	} {
		code, out, errs := chatRun(t, tc.in, "thinker", "--addr", addr, "--sender", "alice", "--reasoning")
		if code != ExitOK || !strings.Contains(out, tc.want) {
			t.Errorf("%q: exit %d, output\n%q\nwant it to hold\n%q\nstderr %q", tc.in, code, out, tc.want, errs)
		}
	}
}
