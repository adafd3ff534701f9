package conversation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lllm-go/lllm/dialog"
)

func user(s string) dialog.Message {
	return dialog.Message{Role: dialog.RoleUser, Name: "alice", Content: s}
}

func reply(agent, guest, s string) dialog.Message {
	return dialog.Message{Role: dialog.RoleAssistant, Name: agent, Agent: guest, Content: s}
}

func mustAppend(t *testing.T, c *Conversation, ms ...dialog.Message) {
	t.Helper()
	for _, m := range ms {
		if _, err := c.Append(m); err != nil {
			t.Fatal(err)
		}
	}
}

func texts(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Message.Text())
	}
	return out
}

func TestStoreRestartRestoresEverything(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	c, err := s.Get("assistant", "alice")
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, user("one"), reply("assistant", "", "two"))
	if err := c.SetTitle("First chat"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetCWD("/work/a"); err != nil {
		t.Fatal(err)
	}
	a, err := c.Compact(context.Background(), summarizeWith("We counted to two. Then stopped."))
	if err != nil {
		t.Fatal(err)
	}
	if a.Title != "We counted to two." || a.Archived != 2 {
		t.Fatalf("archive %+v", a)
	}
	mustAppend(t, c, user("three"), reply("critic", "critic", "four"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := quietStore(t, dir)
	c2, ok := s2.Lookup("assistant", "alice")
	if !ok {
		t.Fatal("conversation not restored")
	}
	got := texts(c2.Messages())
	if len(got) != 3 || !strings.Contains(got[0], "We counted to two.") || got[1] != "three" || got[2] != "four" {
		t.Fatalf("live history after restart: %q", got)
	}
	if c2.Title() != "First chat" || c2.CWD() != "/work/a" {
		t.Fatalf("title %q cwd %q", c2.Title(), c2.CWD())
	}
	if as := c2.Archives(); len(as) != 1 || as[0].Title != a.Title || as[0].Summary != a.Summary || !as[0].Created.Equal(a.Created) {
		t.Fatalf("archives %+v, want %+v", as, a)
	}
	if p := c2.Participants(); strings.Join(p, ",") != "alice,assistant,critic" {
		t.Fatalf("participants %v", p)
	}
	if g := c2.Messages()[2].Message; g.Agent != "critic" {
		t.Fatalf("guest attribution lost: %+v", g)
	}
	af, err := c2.ReadArchive(1)
	if err != nil || af.Missing || len(af.Messages) != 2 || af.Messages[0].Message.Content != "one" {
		t.Fatalf("archive 1: %+v, %v", af, err)
	}
	// Appending after a restart continues the sequence.
	mustAppend(t, c2, user("five"))
	_ = s2.Close()
	s3 := quietStore(t, dir)
	c3, _ := s3.Lookup("assistant", "alice")
	if got := texts(c3.Messages()); len(got) != 4 || got[3] != "five" {
		t.Fatalf("after a second restart: %q", got)
	}
	if w := s3.Warnings(); len(w) != 0 {
		t.Fatalf("warnings: %v", w)
	}
}

func TestNoEmptyFiles(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	if _, err := s.Get("assistant", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents := stored(dir); len(ents) != 0 {
		t.Fatalf("a conversation with nothing stored left files: %v", ents)
	}
	if l := quietStore(t, dir).List(); len(l) != 0 {
		t.Fatalf("listed %v", l)
	}
}

func TestBadNames(t *testing.T) {
	s := quietStore(t, t.TempDir())
	for _, n := range []string{"", "../x", ".hidden", "a/b", strings.Repeat("x", 65), "sp ace"} {
		if _, err := s.Get("assistant", n); !errors.Is(err, ErrBadName) {
			t.Errorf("sender %q: %v", n, err)
		}
	}
}

func TestTornLastLine(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	c, _ := s.Get("assistant", "alice")
	mustAppend(t, c, user("hello"), reply("assistant", "", "hi"))
	_ = s.Close()
	path := filepath.Join(dir, "assistant", "alice", LogFile)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"seq":4,"ts":"2026-01-01T00:00:00Z","kind":"message","message":{"role":"us`)
	f.Close()

	s2 := quietStore(t, dir)
	c2, _ := s2.Lookup("assistant", "alice")
	if got := texts(c2.Messages()); strings.Join(got, "|") != "hello|hi" {
		t.Fatalf("history %q", got)
	}
	if w := s2.Warnings(); len(w) != 1 || !strings.Contains(w[0], "torn last line") || !strings.Contains(w[0], path) {
		t.Fatalf("warnings %q", w)
	}
	// The torn tail is overwritten by the next record.
	mustAppend(t, c2, user("again"))
	_ = s2.Close()
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte(`"role":"us`+"{")) || !bytes.HasSuffix(data, []byte("\n")) {
		t.Fatalf("log not clean:\n%s", data)
	}
	s3 := quietStore(t, dir)
	c3, _ := s3.Lookup("assistant", "alice")
	if got := texts(c3.Messages()); strings.Join(got, "|") != "hello|hi|again" || len(s3.Warnings()) != 0 {
		t.Fatalf("history %q warnings %q", got, s3.Warnings())
	}
}

func TestMalformedMiddleLineIsAnError(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	c, _ := s.Get("assistant", "alice")
	mustAppend(t, c, user("a"), user("b"))
	_ = s.Close()
	path := filepath.Join(dir, "assistant", "alice", LogFile)
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	lines[1] = "garbage\n"
	_ = os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
	_, err := Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), path+":2") {
		t.Fatalf("want an error naming %s:2, got %v", path, err)
	}
}

func TestCompactWritesArchiveBeforeMarker(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	c, _ := s.Get("assistant", "alice")
	mustAppend(t, c, user("hi"), reply("assistant", "", "hello"))
	called := false
	s.beforeMarker = func(c *Conversation, archive string) {
		called = true
		if _, err := os.Stat(archive); err != nil {
			t.Errorf("archive not written before the marker: %v", err)
		}
		log, _ := os.ReadFile(filepath.Join(c.Dir(), LogFile))
		if bytes.Contains(log, []byte(`"kind":"compact"`)) {
			t.Error("marker written before the archive")
		}
	}
	long := strings.Repeat("日本語", 10) + "です。Second sentence."
	a, err := c.Compact(context.Background(), summarizeWith(long))
	if err != nil {
		t.Fatal(err)
	}
	if !called {
		t.Fatal("hook not called")
	}
	if len(a.Title) > TitleMaxBytes || !utf8.ValidString(a.Title) || !strings.HasPrefix(long, a.Title) || len(a.Title) != 60 {
		t.Fatalf("title %q (%d bytes)", a.Title, len(a.Title))
	}
	log, _ := os.ReadFile(filepath.Join(c.Dir(), LogFile))
	if !bytes.Contains(log, []byte(`"kind":"compact"`)) {
		t.Fatal("no marker")
	}
	if _, err := c.Compact(context.Background(), summarizeWith("x")); !errors.Is(err, ErrNothingToCompact) {
		t.Fatalf("compacting only a summary: %v", err)
	}
}

func TestTitleOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Hello world. More text.", "Hello world."},
		{"What now? Later.", "What now?"},
		{"Version 1.2 is out. Yes", "Version 1.2 is out."},
		{"line one\nline two", "line one"},
		{"  spaced  ", "spaced"},
		{"", ""},
		{"東京は晴れ。明日は雨。", "東京は晴れ。"},
		{strings.Repeat("é", 40), strings.Repeat("é", 30)},
		{"a" + strings.Repeat("é", 40), "a" + strings.Repeat("é", 29)},
		{strings.Repeat("🙂", 20), strings.Repeat("🙂", 15)},
	} {
		got := TitleOf(tc.in)
		if got != tc.want || len(got) > TitleMaxBytes || !utf8.ValidString(got) {
			t.Errorf("TitleOf(%q) = %q (%d bytes), want %q", tc.in, got, len(got), tc.want)
		}
	}
}

func TestMissingArchivePlaceholder(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	c, _ := s.Get("assistant", "alice")
	mustAppend(t, c, user("hi"))
	a, err := c.Compact(context.Background(), summarizeWith("Greetings only."))
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if err := os.Remove(filepath.Join(c.Dir(), filepath.FromSlash(a.File))); err != nil {
		t.Fatal(err)
	}
	s2 := quietStore(t, dir)
	c2, _ := s2.Lookup("assistant", "alice")
	if !c2.ArchiveMissing(c2.Archives()[0]) {
		t.Fatal("ArchiveMissing is false")
	}
	af, err := c2.ReadArchive(1)
	if err != nil {
		t.Fatal(err)
	}
	if !af.Missing || len(af.Messages) != 1 || !strings.Contains(af.Messages[0].Message.Content, "archive 1 (1 messages) is missing") || af.Title != "Greetings only." {
		t.Fatalf("placeholder %+v %q", af, af.Messages[0].Message.Content)
	}
	if _, err := c2.ReadArchive(7); !errors.Is(err, ErrNoArchive) {
		t.Fatalf("unknown archive: %v", err)
	}
}

func TestRecallRanksTheRightArchiveFirst(t *testing.T) {
	s := quietStore(t, t.TempDir())
	c, _ := s.Get("assistant", "alice")
	for _, sum := range []string{
		"Planning the garden. Tomatoes, basil and a raised bed were discussed.",
		"Debugging the Go server. A data race in the HTTP handler was fixed with a mutex.",
		"Holiday plans. Trains to Lyon, a hotel near the river, and the budget.",
	} {
		mustAppend(t, c, user("x"))
		if _, err := c.Compact(context.Background(), summarizeWith(sum)); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]int{"race condition in the server": 2, "tomatoes": 1, "hotel Lyon budget": 3} {
		hits := c.Recall(q, 0)
		if len(hits) == 0 || hits[0].ID != want {
			t.Errorf("Recall(%q) = %+v, want archive %d first", q, hits, want)
		}
	}
	if hits := c.Recall("zebra", 0); len(hits) != 0 {
		t.Errorf("unrelated query found %+v", hits)
	}
}

// quiet is a logger for stores whose warnings a test does not read.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// A data dir is one server's: a second store on it is refused, naming
// the process that holds it, until the first closes.
func TestDataDirLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("in use by process %d", os.Getpid())) {
		t.Fatalf("a second store on the data dir: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	_ = s2.Close()
}

// Every unreadable conversation is named at once, with what to do.
func TestEveryBadConversationAtOnce(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	for _, sender := range []string{"carol", "dave", "erin"} {
		c, _ := s.Get("assistant", sender)
		mustAppend(t, c, user("hi"))
		mustAppend(t, c, user("again"))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, sender := range []string{"carol", "erin"} {
		path := filepath.Join(dir, "assistant", sender, "conversation.jsonl")
		data, _ := os.ReadFile(path)
		lines := strings.SplitAfter(string(data), "\n")
		lines[1] = "GARBAGE\n"
		if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Open(dir, Options{Logger: quiet})
	if err == nil {
		t.Fatal("a store with bad conversations opened")
	}
	for _, want := range []string{filepath.Join("carol", "conversation.jsonl") + ":2", filepath.Join("erin", "conversation.jsonl") + ":2", "move its folder out of " + dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
