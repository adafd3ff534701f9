package conversation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/provider"
)

// openFiles counts the file descriptors of this process (Linux only).
func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to count open files with")
	}
	return len(ents)
}

// A conversation between turns holds no open file: a server with
// thousands of idle conversations must not run out of descriptors.
func TestIdleConversationsHoldNoFile(t *testing.T) {
	const n = 50
	s := quietStore(t, t.TempDir())
	before := openFiles(t)
	for i := range n {
		c, err := s.Get("assistant", fmt.Sprintf("user%d", i))
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, c, user("hi"), reply("assistant", "", "hello"))
		if err := c.Sync(); err != nil { // the end of a turn
			t.Fatal(err)
		}
	}
	if got := openFiles(t) - before; got > n/10 {
		t.Errorf("%d conversations between turns hold %d more open files", n, got)
	}
	// A later write opens the log again and appends to it.
	c, _ := s.Lookup("assistant", "user0")
	mustAppend(t, c, user("again"))
	if err := c.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := texts(c.Messages()); strings.Join(got, ",") != "hi,hello,again" {
		t.Fatalf("history %q", got)
	}
}

// Every turn a Service runs, failed or not, leaves its conversation with
// no open file.
func TestServiceTurnsLeaveNoOpenFile(t *testing.T) {
	const n = 50
	calls := 0
	m := &recorder{next: func(ctx context.Context, _ int, _ *provider.Request) (*provider.Response, error) {
		calls++
		if calls%2 == 0 {
			return nil, errors.New("the model failed")
		}
		return text("hello"), nil
	}}
	svc := twoAgents(t, t.TempDir(), m, m, ServiceOptions{})
	before := openFiles(t)
	for i := range n {
		_, _ = svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: fmt.Sprintf("user%d", i), Content: "hi"}, newEvents().emit)
	}
	if got := openFiles(t) - before; got > n/10 {
		t.Errorf("%d conversations after their turn hold %d more open files", n, got)
	}
}

// A log deleted while its conversation is idle is not written again from
// scratch: the next write fails naming it, rather than leave a file that
// starts with zeros where the deleted records were.
func TestWriteToDeletedRestoredLog(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	c, _ := s.Get("assistant", "alice")
	mustAppend(t, c, user("one"), reply("assistant", "", "two"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = quietStore(t, dir)
	c, _ = s.Lookup("assistant", "alice")
	if err := os.RemoveAll(filepath.Join(dir, "assistant")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "assistant", "alice", LogFile)
	_, err := c.Append(user("three"))
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "deleted or moved") {
		t.Errorf("append to a deleted log: %v, want an error naming %s that says it was deleted or moved", err, path)
	}
	if data, err := os.ReadFile(path); err == nil {
		t.Errorf("the append made the log again: %d bytes (zeros: %v)", len(data), bytes.Contains(data, []byte{0}))
	}
}
