package cli

import (
	"bytes"
	"context"
	"regexp"
	"sync"
	"testing"
	"time"
)

// Helpers shared by the tests of commands that keep running: lllm serve
// and lllm view, in this process or as a built binary.

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cmdConfig is an assistant on the mock: "ask me" asks a question,
// "slow" streams a bit and then waits (ten minutes) on ask_user, so that
// a run is in progress for as long as the test wants, "break" fails
// (HTTP 401), anything else is echoed.
const cmdConfig = `tactic_type: serve
global: {model_name: mock/cmds}
agent_configs:
  - name: assistant
    system_prompt: You help {sender}.
    max_interrupt_steps: 1
params:
  ask_user_timeout: 10m
mock:
  latency: 5ms
  rules:
    - match: slow
      reply:
        text: "thinking it over"
        tool_calls:
          - name: ask_user
            arguments: {question: "Shall I go on?"}
    - match: "ask me"
      reply:
        tool_calls:
          - name: ask_user
            arguments: {question: "Which colour?"}
    - match: "reaching the limit of tool calls"
      reply: {text: "Thank you, I have noted that."}
    - match: break
      reply: {error: auth}
`

// serveListening matches the line where lllm serve says its URL.
var serveListening = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// liveCmd is an lllm command that Execute runs in this process until the
// test stops it, as Ctrl-C does.
type liveCmd struct {
	name     string // "lllm serve", for the messages
	out, err syncBuffer
	cancel   context.CancelFunc
	done     chan int
	code     int
	stopped  bool
}

// startLive runs lllm args and waits up to 20s for its output to match
// ready; it returns the command and the match's first group (the whole
// match when ready has none). The command is stopped when the test ends.
func startLive(t *testing.T, ready *regexp.Regexp, args ...string) (*liveCmd, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &liveCmd{name: "lllm " + args[0], cancel: cancel, done: make(chan int, 1)}
	go func() { c.done <- Execute(ctx, args, &c.out, &c.err) }()
	t.Cleanup(func() { c.stop(t) })
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := ready.FindStringSubmatch(c.out.String()); m != nil {
			return c, m[len(m)-1]
		}
		select {
		case c.code = <-c.done:
			c.stopped = true
			t.Fatalf("%s exited %d before it was ready:\n%s\n%s", c.name, c.code, c.out.String(), c.err.String())
		default:
		}
	}
	t.Fatalf("%s printed no %q within 20s:\n%s\n%s", c.name, ready, c.out.String(), c.err.String())
	return nil, ""
}

// stop cancels the command's context, as Ctrl-C does, and returns its
// exit code. Stopping it again returns the same code.
func (c *liveCmd) stop(t *testing.T) int {
	t.Helper()
	if !c.stopped {
		c.cancel()
		select {
		case c.code = <-c.done:
			c.stopped = true
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not stop within 20s of Ctrl-C", c.name)
		}
	}
	return c.code
}

// serveInProcess runs lllm serve with args on 127.0.0.1:0 and returns its
// URL and a function that stops it (Ctrl-C) and returns its exit code
// and stdout.
func serveInProcess(t *testing.T, args ...string) (string, func() (int, string)) {
	t.Helper()
	c, url := startLive(t, serveListening, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	return url, func() (int, string) {
		t.Helper()
		return c.stop(t), c.out.String()
	}
}
