package conversation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
)

// edgeLogRecords returns the end offsets of data's whole lines and the live
// history they hold: the reference a cut log is checked against.
func edgeLogRecords(t *testing.T, data []byte) (lines []int, want []string) {
	t.Helper()
	off := 0
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(l) == 0 || l[len(l)-1] != '\n' {
			break
		}
		var rec struct {
			Kind    string
			Message *struct{ Content string }
			Compact *struct{ Archive int }
		}
		if err := json.Unmarshal(l, &rec); err != nil {
			t.Fatalf("reference parse: %v", err)
		}
		switch rec.Kind {
		case KindMessage:
			want = append(want, rec.Message.Content)
		case KindCompact:
			want = []string{fmt.Sprintf("summary of archive %d", rec.Compact.Archive)}
		}
		off += len(l)
		lines = append(lines, off)
	}
	return lines, want
}

// edgeTexts is texts with the summary entry named by its archive.
func edgeTexts(es []Entry) []string {
	out := texts(es)
	for i, e := range es {
		if e.Message.Name == "summary" {
			out[i] = "summary of archive " + e.Message.Metadata["archive"]
		}
	}
	return out
}

// TestEdgeCrashAtEveryByte cuts a log at every byte: it loads with every whole record (a warning iff a line is torn), and the next append leaves it clean.
func TestEdgeCrashAtEveryByte(t *testing.T) {
	src := t.TempDir()
	s := quietStore(t, src)
	c, _ := s.Get("assistant", "alice")
	if err := c.SetTitle("Crash test"); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, user("one"), reply("assistant", "", "two"))
	if _, err := c.Compact(context.Background(), summarizeWith("Counting. One two.")); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, user("three é 日本"), reply("critic", "critic", "four"))
	if err := c.MarkRead(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, user("five"))
	_ = s.Close()
	data, err := os.ReadFile(filepath.Join(src, "assistant", "alice", LogFile))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "assistant", "alice", LogFile)
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for cut := 0; cut <= len(data); cut++ {
		if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		lines, want := edgeLogRecords(t, data[:cut])
		s1, err := Open(dir, Options{Logger: quiet})
		if err != nil {
			t.Fatalf("cut %d: open: %v", cut, err)
		}
		c1, err := s1.Get("assistant", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if got := edgeTexts(c1.Messages()); !slices.Equal(got, want) {
			t.Fatalf("cut %d: history %q, want %q", cut, got, want)
		}
		torn := len(lines) == 0 && cut > 0 || len(lines) > 0 && lines[len(lines)-1] != cut
		w := s1.Warnings()
		if !torn && len(w) != 0 {
			t.Fatalf("cut %d at a line boundary: warnings %q", cut, w)
		}
		if torn && (len(w) != 1 || !strings.Contains(w[0], fmt.Sprintf("%s:%d", path, len(lines)+1))) {
			t.Fatalf("cut %d: warnings %q, want one naming %s:%d", cut, w, path, len(lines)+1)
		}
		if _, err := c1.Append(user("after")); err != nil {
			t.Fatalf("cut %d: append: %v", cut, err)
		}
		_ = c1.log.f.Close() // the process dies again: no fsync, as a crash
		_ = s1.lock.Close()  // and the OS frees its data dir
		after, _ := os.ReadFile(path)
		var seqs []int64
		for _, l := range bytes.SplitAfter(after, []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			var rec record
			if l[len(l)-1] != '\n' || json.Unmarshal(l, &rec) != nil {
				t.Fatalf("cut %d: the next append left a bad line %q", cut, l)
			}
			seqs = append(seqs, rec.Seq)
		}
		for i, sq := range seqs {
			if sq != int64(i+1) {
				t.Fatalf("cut %d: seqs %v", cut, seqs)
			}
		}
		s2, err := Open(dir, Options{Logger: quiet})
		if err != nil {
			t.Fatalf("cut %d: reopen: %v", cut, err)
		}
		c2, _ := s2.Lookup("assistant", "alice")
		if got := edgeTexts(c2.Messages()); !slices.Equal(got, append(want, "after")) || len(s2.Warnings()) != 0 {
			t.Fatalf("cut %d: after the next append: %q warnings %q", cut, got, s2.Warnings())
		}
		_ = s2.Close()
	}
}

// TestEdgeWriteFailureRefusesFurtherWrites makes a write fail: the error names the file, memory and disk keep only whole records, and later writes are refused.
func TestEdgeWriteFailureRefusesFurtherWrites(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	c, _ := s.Get("assistant", "alice")
	mustAppend(t, c, user("one"))
	_ = c.log.f.Close() // the next write fails
	_, err := c.Append(user("two"))
	if err == nil || !strings.Contains(err.Error(), c.log.path) {
		t.Fatalf("failed write: %v", err)
	}
	if _, err2 := c.Append(user("three")); err2 == nil {
		t.Fatal("a write after a failed one was accepted")
	}
	if got := texts(c.Messages()); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("in memory after a failed write: %q", got)
	}
	_ = s.lock.Close() // the process gives up: the OS frees its data dir
	c2, _ := quietStore(t, dir).Lookup("assistant", "alice")
	if got := texts(c2.Messages()); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("on disk after a failed write: %q", got)
	}
}

// TestEdgeVersions reads a newer 1.x log (unknown kinds and fields skipped) and refuses 2.0 with an error naming the file.
func TestEdgeVersions(t *testing.T) {
	write := func(version string) (string, string) {
		dir := t.TempDir()
		path := filepath.Join(dir, "assistant", "alice", LogFile)
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		log := `{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"open","open":{"format":"lllm-go/conversation","version":"` + version + `","agent":"assistant","sender":"alice","host":"x"},"extra":1}
{"seq":2,"ts":"2026-01-01T00:00:01Z","kind":"reaction","reaction":{"emoji":"👍","seq":9}}
{"seq":3,"ts":"2026-01-01T00:00:02Z","kind":"message","message":{"role":"user","content":"hi","name":"alice","future":[1,{"a":2}]},"extra":"y"}
`
		if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir, path
	}
	dir, _ := write("1.9")
	s := quietStore(t, dir)
	c, ok := s.Lookup("assistant", "alice")
	if !ok || !slices.Equal(texts(c.Messages()), []string{"hi"}) {
		t.Fatalf("1.9 log: %v", ok)
	}
	if e, err := c.Append(user("more")); err != nil || e.Seq != 4 {
		t.Fatalf("append to a 1.9 log: %+v %v", e, err)
	}
	dir, path := write("2.0")
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "2.0") {
		t.Fatalf("2.0 log: %v", err)
	}
}

// TestEdgeCorruptOrMissingArchive: a corrupt and a missing archive never fail a load, both are flagged missing, read as placeholders, and recall still finds them.
func TestEdgeCorruptOrMissingArchive(t *testing.T) {
	dir := t.TempDir()
	s := quietStore(t, dir)
	c, _ := s.Get("assistant", "alice")
	for _, sum := range []string{"Gardening with tomatoes. Basil too.", "Trains to Lyon. Hotel booked."} {
		mustAppend(t, c, user("x"), reply("assistant", "", "y"))
		if _, err := c.Compact(context.Background(), summarizeWith(sum)); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Close()
	arch := filepath.Join(dir, "assistant", "alice", "archives")
	if err := os.WriteFile(filepath.Join(arch, "000001.json"), []byte(`{"format":"lllm-go/conversation-arch`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(arch, "000002.json")); err != nil {
		t.Fatal(err)
	}
	c2, _ := quietStore(t, dir).Lookup("assistant", "alice")
	as := c2.Archives()
	if len(as) != 2 {
		t.Fatalf("archives %+v", as)
	}
	for _, a := range as {
		if !c2.ArchiveMissing(a) {
			t.Errorf("archive %d (%s) is unreadable but not flagged missing", a.ID, a.File)
		}
		af, err := c2.ReadArchive(a.ID)
		if err != nil || !af.Missing || len(af.Messages) != 1 || af.Title != a.Title ||
			!strings.Contains(af.Messages[0].Message.Content, fmt.Sprintf("[archive %d (%d messages) is missing", a.ID, a.Archived)) {
			t.Errorf("archive %d: %+v %v", a.ID, af, err)
		}
	}
	if h := c2.Recall("tomatoes", 0); len(h) != 1 || h[0].ID != 1 {
		t.Errorf("recall over a corrupt archive: %+v", h)
	}
	if h := c2.Recall("lyon", 0); len(h) != 1 || h[0].ID != 2 {
		t.Errorf("recall over a missing archive: %+v", h)
	}
}

// TestEdgeRecallUnicodeAndEmpty: recall folds case across scripts, keeps accents and CJK, and an empty or symbol-only query finds nothing.
func TestEdgeRecallUnicodeAndEmpty(t *testing.T) {
	s := quietStore(t, t.TempDir())
	c, _ := s.Get("assistant", "alice")
	if h := c.Recall("anything", 0); len(h) != 0 {
		t.Fatalf("recall without archives: %+v", h)
	}
	for _, sum := range []string{
		"Café in Zürich 🙂. Müsli and crème brûlée were ordered.",
		"東京 の 天気。 雨 でした。",
		"ΟΔΟΣ ΑΘΗΝΑΣ. Η ΔΙΕΥΘΥΝΣΗ ΤΟΥ ΓΡΑΦΕΙΟΥ.",
	} {
		mustAppend(t, c, user("x"))
		if _, err := c.Compact(context.Background(), summarizeWith(sum)); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]int{"ZÜRICH": 1, "crème": 1, "東京": 2, "天気 雨": 2, "οδος": 3, "Αθηνας": 3} {
		if h := c.Recall(q, 0); len(h) == 0 || h[0].ID != want {
			t.Errorf("Recall(%q) = %+v, want archive %d first", q, h, want)
		}
	}
	for _, q := range []string{"", "   ", "?!…", "🙂"} {
		if h := c.Recall(q, 0); len(h) != 0 {
			t.Errorf("Recall(%q) = %+v, want nothing", q, h)
		}
	}
	if h := c.Recall("zürich 東京 οδοσ", 1); len(h) != 1 {
		t.Errorf("limit 1: %+v", h)
	}
}

// TestEdgeUnreadSurvivesCompaction: a reply no client received stays unread through a compaction and a restart; one streamed to its end is read.
func TestEdgeUnreadSurvivesCompaction(t *testing.T) {
	dir := t.TempDir()
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		return text("Answer. Done."), nil
	}}
	svc := twoAgents(t, dir, a, a, ServiceOptions{})
	run(t, svc, RunRequest{Agent: "assistant", Sender: "bob", Content: "question"})
	if c, _ := svc.Store().Lookup("assistant", "bob"); c.Summary().Unread != 0 {
		t.Errorf("a reply streamed to its end counts as unread: %d", c.Summary().Unread)
	}
	// The client is gone when the end comes: the reply waits, unread.
	gone := func(ev Event) error {
		if ev.Type == "end" {
			return errors.New("connection reset")
		}
		return nil
	}
	if _, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "question"}, gone); err != nil {
		t.Fatal(err)
	}
	conv, _ := svc.Store().Lookup("assistant", "alice")
	if u := conv.Summary().Unread; u != 1 {
		t.Fatalf("unread after a turn: %d", u)
	}
	if _, err := svc.Compact(context.Background(), "assistant", "alice"); err != nil {
		t.Fatal(err)
	}
	if u := conv.Summary().Unread; u != 1 {
		t.Errorf("unread after compaction: %d, want 1", u)
	}
	_ = svc.Store().Close()
	c2, _ := quietStore(t, dir).Lookup("assistant", "alice")
	if u := c2.Summary().Unread; u != 1 {
		t.Errorf("unread after compaction and restart: %d, want 1", u)
	}
}

// TestEdgeOneSenderConcurrentRuns: runs racing on one conversation are each finished or refused busy, and the log holds whole, paired turns.
func TestEdgeOneSenderConcurrentRuns(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		time.Sleep(time.Millisecond)
		return text("re: " + req.Messages[len(req.Messages)-1].Content), nil
	}}
	dir := t.TempDir()
	svc := twoAgents(t, dir, a, a, ServiceOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: fmt.Sprint("m", i)}, nil)
			if err != nil && !errors.Is(err, ErrBusy) {
				t.Errorf("run %d: %v", i, err)
			}
			mu.Lock()
			ok += map[bool]int{true: 1}[err == nil]
			mu.Unlock()
		}()
	}
	wg.Wait()
	_ = svc.Store().Close()
	c, _ := quietStore(t, dir).Lookup("assistant", "alice")
	ms := c.Messages()
	if ok == 0 || len(ms) != 2*ok {
		t.Fatalf("%d runs finished, %d messages stored", ok, len(ms))
	}
	for i := 0; i < len(ms); i += 2 {
		u, r := ms[i].Message, ms[i+1].Message
		if u.Role != dialog.RoleUser || r.Role != dialog.RoleAssistant || r.Content != "re: "+u.Content {
			t.Fatalf("turn %d interleaved: %+v / %+v", i/2, u, r)
		}
	}
}

// TestEdgeAskUserAnsweredTwiceAtOnce: of two simultaneous answers exactly one is taken, and the run sees it once.
func TestEdgeAskUserAnsweredTwiceAtOnce(t *testing.T) {
	a := &recorder{next: askThenEcho}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{})
	ev := newEvents()
	done := make(chan *Entry, 1)
	go func() {
		e, err := svc.Run(context.Background(), RunRequest{Agent: "assistant", Sender: "alice", Content: "pick"}, ev.emit)
		if err != nil {
			t.Error(err)
		}
		done <- e
	}()
	<-ev.ask
	errs := make(chan error, 2)
	for _, ans := range []string{"red", "blue"} {
		go func() { errs <- svc.Reply("assistant", "alice", ans) }()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) || !errors.Is(errors.Join(e1, e2), ErrNothingPending) {
		t.Fatalf("two answers: %v, %v", e1, e2)
	}
	e := <-done
	if e == nil || strings.Count(e.Message.Content, "The user answered") != 1 {
		t.Fatalf("reply %+v", e)
	}
	if err := svc.Reply("assistant", "alice", "late"); !errors.Is(err, ErrNothingPending) {
		t.Fatalf("answer after the run: %v", err)
	}
}

// TestEdgeEndEventFreesTheConversation: when a run's end event is sent (ok or killed) the conversation is no longer running, so a client may send its next message at once.
func TestEdgeEndEventFreesTheConversation(t *testing.T) {
	a := &recorder{next: func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error) {
		if strings.Contains(req.Messages[len(req.Messages)-1].Content, "hang") {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		return text("ok"), nil
	}}
	svc := twoAgents(t, t.TempDir(), a, a, ServiceOptions{})
	for _, content := range []string{"hello", "hang"} {
		started := make(chan struct{})
		var runningAtEnd []bool
		emit := func(ev Event) error {
			switch ev.Type {
			case "start":
				close(started)
			case "end":
				runningAtEnd = append(runningAtEnd, svc.Running("assistant", "alice"))
			}
			return nil
		}
		done := runAsync(context.Background(), svc, RunRequest{Agent: "assistant", Sender: "alice", Content: content}, emit)
		<-started
		if content == "hang" {
			for svc.Kill("assistant", "alice") != nil {
				time.Sleep(time.Millisecond)
			}
		}
		<-done
		if !slices.Equal(runningAtEnd, []bool{false}) {
			t.Errorf("%s: running when the end event was sent: %v", content, runningAtEnd)
		}
	}
}

// TestEdgeCrashBetweenArchiveAndMarker: a crash after the archive is written and before its marker leaves the history whole, and the next compaction reuses the number.
func TestEdgeCrashBetweenArchiveAndMarker(t *testing.T) {
	dir, crashed := t.TempDir(), t.TempDir()
	s := quietStore(t, dir)
	c, _ := s.Get("assistant", "alice")
	mustAppend(t, c, user("one"), reply("assistant", "", "two"))
	s.beforeMarker = func(c *Conversation, archive string) {
		for _, p := range []string{filepath.Join(c.Dir(), LogFile), archive} {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			_ = os.MkdirAll(filepath.Dir(filepath.Join(crashed, rel)), 0o755)
			_ = os.WriteFile(filepath.Join(crashed, rel), data, 0o644)
		}
	}
	if _, err := c.Compact(context.Background(), summarizeWith("First. Lost marker.")); err != nil {
		t.Fatal(err)
	}
	s2 := quietStore(t, crashed)
	c2, _ := s2.Lookup("assistant", "alice")
	if got := texts(c2.Messages()); !slices.Equal(got, []string{"one", "two"}) || len(c2.Archives()) != 0 || len(s2.Warnings()) != 0 {
		t.Fatalf("after the crash: %q archives %+v warnings %q", got, c2.Archives(), s2.Warnings())
	}
	a, err := c2.Compact(context.Background(), summarizeWith("Second try. Kept."))
	if err != nil || a.ID != 1 {
		t.Fatalf("next compaction: %+v %v", a, err)
	}
	if af, err := c2.ReadArchive(1); err != nil || af.Missing || af.Summary != "Second try. Kept." || len(af.Messages) != 2 {
		t.Fatalf("archive 1: %+v %v", af, err)
	}
}
