package conversation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A conversation whose folder is deleted while the server holds it must
// not go on storing turns that no restart will find: the next write (or,
// when the log was open, the turn's fsync) says so, and so does every
// write after it.
func TestSyncReportsDeletedLog(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	c, err := s.Get("assistant", "alice")
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, user("one"), reply("assistant", "", "two"))
	if err := c.Sync(); err != nil {
		t.Fatalf("Sync of an intact log: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "assistant")); err != nil {
		t.Fatal(err)
	}
	if _, err = c.Append(user("three")); err == nil {
		err = c.Sync()
	}
	if err == nil {
		t.Fatal("Append and Sync succeeded although the conversation's log was deleted")
	}
	path := filepath.Join(dir, "assistant", "alice", "conversation.jsonl")
	for _, want := range []string{path, "deleted or moved"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := c.Append(reply("assistant", "", "four")); err == nil {
		t.Error("Append after the deleted log was found succeeded")
	}
}
