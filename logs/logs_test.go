package logs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

func newRun(t testing.TB, root string) (*Writer, *Run) {
	t.Helper()
	w, run, err := Create(root, RunStart{Tactic: "test", Task: json.RawMessage(`"2+2"`), Seed: 7}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return w, run
}

func readAll(t testing.TB, r *Reader) []*Record {
	t.Helper()
	var out []*Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

// A forest three forks deep, grown from many goroutines at once, is
// rebuilt from the log file exactly as it was in memory.
func TestRebuildConcurrentForestFromDisk(t *testing.T) {
	root := t.TempDir()
	w, run := newRun(t, root)
	var live sync.Map
	var wg sync.WaitGroup
	for a := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := fmt.Sprintf("agent%d", a)
			d, err := dialog.New(agent, dialog.WithSink(w), dialog.WithAlias("main"))
			if err != nil {
				t.Error(err)
				return
			}
			live.Store(d.ID(), d)
			d.PutText("system for "+agent, dialog.AsRole(dialog.RoleSystem), dialog.From("system"))
			var inner sync.WaitGroup
			for b := range 3 {
				d.PutText(fmt.Sprintf("%s turn %d", agent, b))
				c1, _ := d.Fork(b, 1, dialog.WithAlias(fmt.Sprintf("try%d", b)))
				live.Store(c1.ID(), c1)
				inner.Add(1)
				go func() {
					defer inner.Done()
					c1.Append(dialog.Message{Role: dialog.RoleAssistant, Content: "draft", Usage: dialog.Usage{InputTokens: 10, OutputTokens: 3}, USD: 0.001,
						FunctionCalls: []dialog.FunctionCall{{ID: "c1", Name: "add", Arguments: json.RawMessage(`{"a":1}`)}}})
					c2, _ := c1.Fork(1, 1)
					live.Store(c2.ID(), c2)
					c2.PutText("critique")
					c3, _ := c2.Fork(0, 0)
					live.Store(c3.ID(), c3)
					c3.PutText("deepest", dialog.Meta("depth", "3"))
					c2.PutText("after grandchild")
				}()
				d.Append(dialog.Message{Role: dialog.RoleAssistant, Content: fmt.Sprintf("reply %d", b), Name: agent})
			}
			inner.Wait()
		}()
	}
	wg.Wait()
	if err := w.Finish(RunEnd{Status: StatusOK}); err != nil {
		t.Fatal(err)
	}

	forest, warnings, err := run.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	n, maxDepth := 0, 0
	live.Range(func(_, v any) bool {
		n++
		d := v.(*dialog.Dialog)
		got := forest.Dialog(d.ID())
		if got == nil {
			t.Fatalf("dialog %s not rebuilt", d.ID())
		}
		if !reflect.DeepEqual(got.Node(), d.Node()) {
			t.Errorf("node of %s:\n got %+v\nwant %+v", d.ID(), got.Node(), d.Node())
		}
		gm, dm := got.Messages(), d.Messages()
		if len(gm) != len(dm) {
			t.Fatalf("dialog %s: %d messages rebuilt, %d live", d.ID(), len(gm), len(dm))
		}
		for i := range gm {
			if !reflect.DeepEqual(*gm[i], *dm[i]) {
				t.Errorf("dialog %s message %d:\n got %+v\nwant %+v", d.ID(), i, *gm[i], *dm[i])
			}
		}
		maxDepth = max(maxDepth, d.Node().Depth)
		return true
	})
	if n != 4*(1+3*3) || forest.Len() != n || maxDepth != 3 {
		t.Fatalf("%d live dialogs, %d rebuilt, depth %d", n, forest.Len(), maxDepth)
	}

	// Sequence numbers are 1..N in file order, timestamps never go back.
	rd, _ := run.Reader()
	defer rd.Close()
	recs := readAll(t, rd)
	for i, r := range recs {
		if r.Seq != int64(i+1) || (i > 0 && r.Time.Before(recs[i-1].Time)) {
			t.Fatalf("record %d has seq %d time %v", i, r.Seq, r.Time)
		}
	}
	if recs[0].Kind != KindRunStart || recs[len(recs)-1].Kind != KindRunEnd {
		t.Fatalf("log starts with %s and ends with %s", recs[0].Kind, recs[len(recs)-1].Kind)
	}
}

// A fork record names its parent and the kept range; it never copies
// messages, so the log holds each message body once.
func TestForkRecordsReferenceParent(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, RunStart{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := dialog.New("coder", dialog.WithSink(w))
	for i := range 10 {
		d.PutText(fmt.Sprintf("unique-body-%d", i))
	}
	for range 5 {
		d.Fork(0, 0)
		d.Fork(3, 1)
	}
	w.Close()
	for i := range 10 {
		if c := strings.Count(buf.String(), fmt.Sprintf("unique-body-%d\"", i)); c != 1 {
			t.Fatalf("body %d appears %d times in the log", i, c)
		}
	}
	var fork Record
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	json.Unmarshal([]byte(lines[len(lines)-1]), &fork)
	if fork.Kind != KindFork || fork.Fork.ParentID != d.ID() || fork.Fork.ParentLen != 10 || fork.Fork.LastN != 3 || fork.Fork.FirstK != 1 || fork.Fork.SplitPoint != 4 {
		t.Fatalf("fork record = %s", lines[len(lines)-1])
	}
}

func logBytes(t *testing.T, version string, lines ...string) []byte {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"seq":1,"ts":"2026-11-22T04:41:00Z","kind":"run_start","run_start":{"format":%q,"version":%q,"run_id":"r"}}`+"\n", FormatName, version)
	for _, l := range lines {
		b.WriteString(l)
	}
	return []byte(b.String())
}

const (
	openLine = `{"seq":2,"ts":"2026-11-22T04:41:01Z","kind":"dialog_open","dialog":"d1","dialog_open":{"id":"d1","owner":"coder","split_point":0,"last_n":0,"first_k":0,"parent_len":0,"depth":0}}` + "\n"
	msgLine  = `{"seq":3,"ts":"2026-11-22T04:41:02Z","kind":"message","dialog":"d1","message":{"role":"user","content":"hello"}}` + "\n"
)

func TestReaderTornLastLine(t *testing.T) {
	data := logBytes(t, "1.0", openLine, msgLine, `{"seq":4,"ts":"2026-11-22T04:41:03Z","kind":"message","dialog":"d1","index":1,"mess`)
	r := NewReader(bytes.NewReader(data), "events.jsonl")
	recs := readAll(t, r)
	if len(recs) != 3 || recs[2].Message.Content != "hello" {
		t.Fatalf("read %d records", len(recs))
	}
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0], "torn last line 4") {
		t.Fatalf("warnings = %v", w)
	}
	f, err := Rebuild(t.Context(), NewReader(bytes.NewReader(data), "x"))
	if err != nil || f.Dialog("d1").Len() != 1 {
		t.Fatalf("rebuild after a torn line: %v", err)
	}
}

func TestReaderVersions(t *testing.T) {
	future := `{"seq":4,"ts":"2026-11-22T04:41:03Z","kind":"thought","thought":{"text":"hm"}}` + "\n"
	// A newer minor version: unknown kinds are skipped with one warning,
	// unknown fields ignored.
	withField := strings.Replace(msgLine, `"kind":"message"`, `"kind":"message","shiny":true`, 1)
	r := NewReader(bytes.NewReader(logBytes(t, fmt.Sprintf("%d.%d", VersionMajor, VersionMinor+1), openLine, future, withField, future)), "new.jsonl")
	recs := readAll(t, r)
	if len(recs) != 3 || recs[2].Kind != KindMessage {
		t.Fatalf("read %d records from a newer minor log", len(recs))
	}
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0], `"thought"`) {
		t.Fatalf("warnings = %v", w)
	}
	// The same record in a log of our own version is corruption.
	_, err := readErr(logBytes(t, "1.0", openLine, future))
	assertFormatError(t, err, 3, `unknown record kind "thought"`)
	// A newer major version is refused.
	_, err = readErr(logBytes(t, "2.0", openLine))
	assertFormatError(t, err, 0, "log format version 2.0 is not readable")
	_, err = readErr(logBytes(t, "one", openLine))
	assertFormatError(t, err, 1, "malformed format version")
}

func readErr(data []byte) ([]*Record, error) {
	r := NewReader(bytes.NewReader(data), "bad.jsonl")
	var out []*Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

func assertFormatError(t *testing.T, err error, line int, want string) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Line != line || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "bad.jsonl") {
		t.Fatalf("error = %v, want a FormatError at line %d containing %q", err, line, want)
	}
}

func TestReaderRejectsForeignAndBrokenLogs(t *testing.T) {
	cases := []struct {
		name string
		data string
		line int
		want string
	}{
		{"empty", "", 0, "empty log"},
		{"blank", "\n\n", 0, "empty log"},
		{"text", "hello world\nsecond line\n", 1, "not an lllm-go run log"},
		{"one unterminated line", "hello world", 1, "not an lllm-go run log"},
		{"other json", `{"level":"info","msg":"hi"}` + "\n", 1, "not an lllm-go run log"},
		{"other format", `{"seq":1,"kind":"run_start","run_start":{"format":"x","version":"1.0"}}` + "\n", 1, "not an lllm-go run log"},
		{"corrupt middle", string(logBytes(t, "1.0", "{nope\n", msgLine)), 2, "corrupt record"},
		{"payload missing", string(logBytes(t, "1.0", `{"seq":2,"kind":"fork","dialog":"x"}`+"\n")), 2, `fork record without its "fork" payload`},
		{"fork of nothing", string(logBytes(t, "1.0", `{"seq":2,"kind":"fork","dialog":"x","fork":{"id":"x","parent_id":"y"}}`+"\n")), 2, "inconsistent dialog record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Rebuild(t.Context(), NewReader(strings.NewReader(c.data), "bad.jsonl"))
			assertFormatError(t, err, c.line, c.want)
		})
	}
}

func TestRebuildStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Rebuild(ctx, NewReader(bytes.NewReader(logBytes(t, "1.0", openLine, msgLine)), "x"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Rebuild with a cancelled context = %v", err)
	}
}

type brokenWriter struct{ after int }

func (b *brokenWriter) Write(p []byte) (int, error) {
	if b.after == 0 {
		return 0, errors.New("no space left on device")
	}
	b.after--
	return len(p), nil
}

func TestWriterErrorsAreSticky(t *testing.T) {
	for _, delay := range []time.Duration{-1, 0, time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			w, err := NewWriter(&brokenWriter{after: 1}, RunStart{}, Options{FlushDelay: delay})
			if err != nil {
				t.Fatal(err)
			}
			err1 := w.Emit(dialog.Event{Kind: dialog.EventOpen, Node: dialog.TreeNode{ID: "x"}})
			if delay >= 0 {
				// The record was queued; its write fails in the background
				// and Flush reports it.
				if err1 != nil {
					t.Fatalf("queued write = %v", err1)
				}
				err1 = w.Flush()
			}
			err2 := w.Write(&Record{Kind: KindRunEnd, RunEnd: &RunEnd{}})
			if err1 == nil || err2 == nil || !strings.Contains(err2.Error(), "no space left") ||
				!strings.Contains(err1.Error(), "record 2") {
				t.Fatalf("errors = %v, %v", err1, err2)
			}
			if err := w.Close(); err == nil {
				t.Fatal("Close after a failed write = nil")
			}
			if err := w.Write(&Record{Kind: KindRunEnd, RunEnd: &RunEnd{}}); !errors.Is(err, ErrClosed) {
				t.Fatalf("write after close = %v", err)
			}
		})
	}
}

// countingWriter counts the writes it is handed and keeps what they held.
type countingWriter struct {
	mu     sync.Mutex
	writes int
	buf    bytes.Buffer
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	return c.buf.Write(p)
}

func (c *countingWriter) state() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes, c.buf.String()
}

// countingLog is a Writer with opts over a countingWriter, closed when
// the test ends.
func countingLog(t *testing.T, opts Options) (*countingWriter, *Writer) {
	t.Helper()
	c := &countingWriter{}
	w, err := NewWriter(c, RunStart{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return c, w
}

func textRecord(text string) *Record {
	return &Record{Kind: KindMessage, Dialog: "d", Message: &dialog.Message{Role: dialog.RoleUser, Content: text}}
}

// With a flush delay, the records of the window share one write, in order,
// and Flush hands them over at once.
func TestFlushDelayBatchesRecords(t *testing.T) {
	c, w := countingLog(t, Options{FlushDelay: time.Hour})
	if n, _ := c.state(); n != 1 {
		t.Fatalf("run_start took %d writes, want 1 before NewWriter returns", n)
	}
	for i := range 100 {
		if err := w.Write(textRecord(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := c.state(); n != 1 {
		t.Fatalf("%d writes before the delay ended, want 1", n)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	n, text := c.state()
	recs := readAll(t, NewReader(strings.NewReader(text), "batched"))
	if n != 2 || len(recs) != 101 {
		t.Fatalf("after Flush: %d writes, %d records; want 2 and 101", n, len(recs))
	}
	for i, rec := range recs {
		if rec.Seq != int64(i+1) || i > 0 && rec.Message.Content != fmt.Sprint(i-1) {
			t.Fatalf("record %d: seq %d %+v", i, rec.Seq, rec.Message)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A writer whose delay has not ended still hands its records over once it
// holds maxQueued of them, so memory stays bounded; a batch of large
// records is written a megabyte or so at a time.
func TestFlushDelayBoundsMemory(t *testing.T) {
	c, w := countingLog(t, Options{FlushDelay: time.Hour})
	for i := range 2*maxQueued + 10 {
		if err := w.Write(textRecord(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := c.state(); n != 3 {
		t.Fatalf("%d writes after %d records, want 3: queued records are not bounded", n, 2*maxQueued+10)
	}
	big := strings.Repeat("x", 100_000)
	for range 25 {
		if err := w.Write(textRecord(big)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	n, text := c.state()
	if n < 5 || len(text) < 2_500_000 {
		t.Fatalf("the 2.5 MB batch took %d writes in all, %d bytes: want it written in pieces", n, len(text))
	}
	if recs := readAll(t, NewReader(strings.NewReader(text), "bounded")); len(recs) != 1+2*maxQueued+10+25 {
		t.Fatalf("%d records in the log", len(recs))
	}
	w.Close()
}

// By default a record reaches the file without Flush, from the background,
// and the file only ever holds whole records.
func TestWriterHandsRecordsOverInTheBackground(t *testing.T) {
	w, run, err := Create(t.TempDir(), RunStart{Tactic: "bg"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 50 {
		if err := w.Write(textRecord(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(run.Path())
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Fatalf("the log ends inside a record: %q", b[max(0, len(b)-40):])
		}
		if n := bytes.Count(b, []byte("\n")); n == 51 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("records not handed over within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// By default a steady stream of records is handed over in one write per
// flushGap, not one per record, and a record after a quiet spell at once.
func TestSteadyStreamIsBatched(t *testing.T) {
	c, w := countingLog(t, Options{})
	const records, every = 400, 50 * time.Microsecond
	for i := range records {
		if err := w.Write(textRecord(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		for start := time.Now(); time.Since(start) < every; {
			runtime.Gosched() // sleeps are a millisecond long on some machines
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// 400 records over at least 20ms: a few gaps of 10ms, with room for a
	// slow machine's sleeps, which only make batches bigger.
	if n, _ := c.state(); n > records/4 {
		t.Errorf("%d writes for %d records written every %v: the stream is not batched", n, records, every)
	}
	time.Sleep(5 * flushGap)
	before, _ := c.state()
	if err := w.Write(textRecord("alone")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		if n, _ := c.state(); n > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a record after a quiet spell was not handed over")
		}
	}
}

// Every record reaches the OS within about a flushGap of its Write,
// without anyone calling Flush: that gap is all a process killed outright
// can lose.
func TestLossWindow(t *testing.T) {
	c, w := countingLog(t, Options{})
	var waits []time.Duration
	for i := range 30 {
		text := fmt.Sprintf("record %03d", i)
		if err := w.Write(textRecord(text)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for _, got := c.state(); !strings.Contains(got, text); _, got = c.state() {
			if time.Since(start) > 5*time.Second {
				t.Fatalf("%s not handed to the OS within 5s", text)
			}
			runtime.Gosched()
		}
		waits = append(waits, time.Since(start))
	}
	// The median wait: a busy machine stalls a timer now and then (one
	// record waited 299 ms at a load of 8), but not most of them.
	slices.Sort(waits)
	if median := waits[len(waits)/2]; median > 5*flushGap {
		t.Errorf("records waited %v for the OS in the median (longest %v); the gap is %v", median, waits[len(waits)-1], flushGap)
	}
}

// Writers racing with flushes of every kind (the background one, Flush,
// and Write's own when a megabyte waits) neither deadlock nor lose or
// reorder records.
func TestWriterFlushRaces(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Microsecond} {
		t.Run(delay.String(), func(t *testing.T) {
			c, w := countingLog(t, Options{FlushDelay: delay})
			const writers, each = 4, 300
			big := strings.Repeat("y", 20_000)
			done := make(chan struct{})
			go func() {
				defer close(done)
				var wg sync.WaitGroup
				for g := range writers {
					wg.Go(func() {
						for i := range each {
							if err := w.Write(textRecord(fmt.Sprint(g, " ", i, big))); err != nil {
								t.Error(err)
								return
							}
							if i%50 == 0 {
								if err := w.Flush(); err != nil {
									t.Error(err)
									return
								}
							}
						}
					})
				}
				wg.Wait()
			}()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("writers still blocked after 60s: deadlock")
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			_, text := c.state()
			recs := readAll(t, NewReader(strings.NewReader(text), "raced"))
			if len(recs) != 1+writers*each {
				t.Fatalf("%d records, want %d", len(recs), 1+writers*each)
			}
			for i, rec := range recs {
				if rec.Seq != int64(i+1) {
					t.Fatalf("record %d has seq %d", i, rec.Seq)
				}
			}
		})
	}
}

// A record that cannot be encoded is refused without touching the log.
func TestWriterUnencodableRecord(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, RunStart{}, Options{})
	before := buf.Len()
	err := w.Write(&Record{Kind: KindModelCall, ModelCall: &ModelCall{Params: json.RawMessage(`{bad`)}})
	if err == nil || buf.Len() != before {
		t.Fatalf("err = %v, log grew by %d bytes", err, buf.Len()-before)
	}
	if err := w.Write(&Record{Kind: KindRunEnd, RunEnd: &RunEnd{Status: StatusOK}}); err != nil {
		t.Fatalf("log unusable after a refused record: %v", err)
	}
}

// A record whose payload changes after Write, against its contract, so that
// it no longer encodes, stops the log at the flush with an error naming what
// was lost, and the log still ends on a whole record.
func TestWriterRecordChangedAfterWrite(t *testing.T) {
	c, w := countingLog(t, Options{FlushDelay: time.Hour})
	rec := &Record{Kind: KindModelCall, ModelCall: &ModelCall{Agent: "a"}}
	for _, r := range []*Record{textRecord("before"), rec, textRecord("after")} {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	rec.ModelCall.LatencyMS = math.NaN()
	err := w.Flush()
	if err == nil || !strings.Contains(err.Error(), "writing records 2 to 4: encoding record 3 (model_call)") {
		t.Fatalf("Flush = %v, want the record and the records lost named", err)
	}
	if werr := w.Write(textRecord("later")); werr == nil || werr.Error() != err.Error() {
		t.Fatalf("Write after the failure = %v, want %v", werr, err)
	}
	_, text := c.state()
	if recs := readAll(t, NewReader(strings.NewReader(text), "stopped")); len(recs) != 1 {
		t.Fatalf("%d records in the log, want run_start alone", len(recs))
	}
}

func TestCreateOpenList(t *testing.T) {
	root := t.TempDir()
	w1, r1 := newRun(t, root)
	d, _ := dialog.New("coder", dialog.WithSink(w1))
	d.PutText("hi")
	for range 2 {
		w1.Write(&Record{Kind: KindModelCall, Dialog: d.ID(), ModelCall: &ModelCall{Agent: "coder", Usage: dialog.Usage{InputTokens: 10, OutputTokens: 4}, USD: 0.25}})
	}
	w1.Write(&Record{Kind: KindToolCall, ToolCall: &ToolCall{Name: "add"}})
	w1.Finish(RunEnd{Status: StatusFailed, Error: "boom", Totals: Totals{ModelCalls: 99}})
	time.Sleep(2 * time.Millisecond)
	w2, r2 := newRun(t, root)
	defer w2.Close()
	if !(r1.ID < r2.ID) {
		t.Fatalf("run ids do not sort by start time: %s, %s", r1.ID, r2.ID)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 2 {
		t.Fatalf("log root holds %d entries, want 2 run dirs (no temp dirs)", len(entries))
	}
	for _, ref := range []string{r1.ID, r1.Dir, r1.ID[:len(r1.ID)-1], r1.ID[len(r1.ID)-6:]} {
		got, err := Open(root, ref)
		if err != nil || got.ID != r1.ID || got.Start.Tactic != "test" || got.Start.Format != FormatName || string(got.Start.Task) != `"2+2"` || got.Start.Seed != 7 {
			t.Fatalf("Open(%q) = %+v, %v", ref, got, err)
		}
	}
	if got, err := Open(root, "latest"); err != nil || got.ID != r2.ID {
		t.Fatalf("Open(latest) = %v, %v", got, err)
	}
	if _, err := Open(root, "nope"); err == nil || !strings.Contains(err.Error(), `no run "nope"`) {
		t.Fatalf("Open(nope) = %v", err)
	}
	if _, err := Open(root, "2"); err == nil || !strings.Contains(err.Error(), "matches 2 runs") {
		t.Fatalf("ambiguous Open = %v", err)
	}
	list, err := List(root)
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %v, %v", list, err)
	}
	wantTotals := Totals{ModelCalls: 2, ToolCalls: 1, Dialogs: 1, Messages: 1, Cost: dialog.Cost{Usage: dialog.Usage{InputTokens: 20, OutputTokens: 8}, USD: 0.5}}
	got := list[0].End.Totals
	if got.DurationMS <= 0 {
		t.Fatalf("duration = %v", got.DurationMS)
	}
	got.DurationMS = 0
	if list[0].Status() != StatusFailed || got != wantTotals || list[0].Ended.Before(list[0].Started) {
		t.Fatalf("first run summary = %+v", list[0])
	}
	if list[1].Status() != StatusRunning || list[1].End != nil {
		t.Fatalf("second run summary = %+v", list[1])
	}
	if got, err := List(filepath.Join(root, "missing")); err != nil || len(got) != 0 {
		t.Fatalf("List of a missing root = %v, %v", got, err)
	}
}

// A run's model calls are its model_call records in log order, whatever
// is between them; a torn last line is skipped with a warning, and a
// corrupt line or a done context ends them with the calls read before.
func TestRunModelCalls(t *testing.T) {
	w, run := newRun(t, t.TempDir())
	d, _ := dialog.New("coder", dialog.WithSink(w), dialog.WithAlias("main"))
	d.PutText("hi")
	work, _ := d.Fork(0, 0)
	for turn := 1; turn <= 2; turn++ {
		work.Append(dialog.Message{Role: dialog.RoleAssistant, Content: "reply", Name: "coder"})
		w.Write(&Record{Kind: KindModelCall, Dialog: work.ID(), ModelCall: &ModelCall{Agent: "coder", Model: "mock/m", Call: turn, Attempt: 1,
			Alias: "main", Turn: turn, Reply: &MessageRef{Dialog: work.ID(), Index: work.Len() - 1}}})
		w.Write(&Record{Kind: KindToolCall, ToolCall: &ToolCall{Agent: "coder", Name: "add"}})
	}
	if err := w.Finish(RunEnd{Status: StatusOK}); err != nil {
		t.Fatal(err)
	}
	wantCalls := func(calls []*Record, what string) {
		t.Helper()
		if len(calls) != 2 {
			t.Fatalf("%s: %d model calls, want 2", what, len(calls))
		}
		for i, rec := range calls {
			if mc := rec.ModelCall; rec.Kind != KindModelCall || mc == nil || mc.Turn != i+1 || rec.Dialog != work.ID() || mc.Reply == nil || work.At(mc.Reply.Index).Content != "reply" {
				t.Errorf("%s: model call %d is %+v", what, i, rec)
			}
		}
	}
	calls, warnings, err := run.ModelCalls(t.Context())
	if err != nil || len(warnings) != 0 {
		t.Fatalf("ModelCalls: %v, warnings %q", err, warnings)
	}
	wantCalls(calls, "a whole log")

	appendLine := func(line string) {
		f, err := os.OpenFile(run.Path(), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
	}
	appendLine(`{"seq":99,"kind":"model_call","model_call":{"agent":"co`)
	calls, warnings, err = run.ModelCalls(t.Context())
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "torn last line") {
		t.Fatalf("ModelCalls of a torn log: %v, warnings %q", err, warnings)
	}
	wantCalls(calls, "a torn log")

	appendLine("\n" + `{"seq":100,"kind":"model_call","model_call":{"agent":"coder","call":3}}` + "\n")
	calls, _, err = run.ModelCalls(t.Context())
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Name != run.Path() || fe.Msg != "corrupt record" {
		t.Fatalf("ModelCalls of a corrupt log: %v, want the corrupt line named", err)
	}
	wantCalls(calls, "a corrupt log")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if calls, _, err := run.ModelCalls(ctx); !errors.Is(err, context.Canceled) || len(calls) != 0 {
		t.Fatalf("ModelCalls with a done context: %d calls, %v", len(calls), err)
	}
	if _, _, err := (&Run{ID: "gone", Dir: filepath.Join(t.TempDir(), "gone")}).ModelCalls(t.Context()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ModelCalls of a missing log: %v", err)
	}
}

// A reply is cut at max_tokens by each provider's spelling of it, and by
// no other finish reason.
func TestModelCallCutAtMaxTokens(t *testing.T) {
	for reason, want := range map[string]bool{
		"length": true, "max_tokens": true, "MAX_TOKENS": true,
		"": false, "stop": false, "end_turn": false, "tool_calls": false, "STOP": false,
		"LENGTH": false, "max_tokens ": false, "content_filter": false,
	} {
		if got := (&ModelCall{FinishReason: reason}).CutAtMaxTokens(); got != want {
			t.Errorf("finish_reason %q: cut %v, want %v", reason, got, want)
		}
	}
	if (*ModelCall)(nil).CutAtMaxTokens() {
		t.Error("a nil call is cut")
	}
}

// lastRecord finds the run_end even when it is longer than the first window.
func TestListLargeRunEnd(t *testing.T) {
	root := t.TempDir()
	w, _ := newRun(t, root)
	big, _ := json.Marshal(strings.Repeat("r", 300<<10))
	w.Finish(RunEnd{Status: StatusOK, Result: big})
	list, _ := List(root)
	if len(list) != 1 || list[0].Status() != StatusOK || len(list[0].End.Result) != len(big) {
		t.Fatalf("summary of a run with a large result: %+v", list)
	}
}

func TestNewRunStart(t *testing.T) {
	s, err := NewRunStart(t.Context(), "chat", map[string]any{"tactic_type": "chat"}, "task", 3)
	if err != nil {
		t.Fatal(err)
	}
	if s.Tactic != "chat" || string(s.Config) != `{"tactic_type":"chat"}` || string(s.Task) != `"task"` || s.Versions["go"] == "" {
		t.Fatalf("run start = %+v", s)
	}
	if _, err := NewRunStart(t.Context(), "chat", func() {}, nil, 0); err == nil {
		t.Fatal("an unencodable config was accepted")
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte(openLine + msgLine))
	f.Add([]byte(msgLine))
	f.Add([]byte(`{"seq":2,"kind":"fork","dialog":"x","fork":{"id":"x","parent_id":"d1","parent_len":1,"split_point":1}}` + "\n"))
	f.Add([]byte(`{"seq":2,"kind":"fork","dialog":"x","fork":{"id":"x","parent_id":"d1","parent_len":1,"last_n":1,"first_k":-4,"split_point":1}}` + "\n"))
	f.Add([]byte("\x00\xff{\n"))
	f.Add([]byte(`{"kind":"message","dialog":"d1","index":-1,"message":{}}`))
	f.Fuzz(func(t *testing.T, tail []byte) {
		for _, data := range [][]byte{tail, append([]byte(string(logBytesF("1.0"))+openLine), tail...)} {
			r := NewReader(bytes.NewReader(data), "fuzz")
			f, err := Rebuild(context.Background(), r)
			if err == nil && f == nil {
				t.Fatal("nil forest without an error")
			}
			var fe *FormatError
			if err != nil && !errors.As(err, &fe) {
				t.Fatalf("error is not a FormatError: %v", err)
			}
		}
	})
}

func logBytesF(version string) string {
	return fmt.Sprintf(`{"seq":1,"kind":"run_start","run_start":{"format":%q,"version":%q}}`+"\n", FormatName, version)
}

// A run without a run_end is running while a Writer holds its log, and
// interrupted once none does: the process ended without finishing it.
func TestRunningOrInterrupted(t *testing.T) {
	root := t.TempDir()
	w, run, err := Create(root, RunStart{Tactic: "t"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	status := func() Status {
		sums, err := List(root)
		if err != nil || len(sums) != 1 {
			t.Fatalf("List: %v %v", sums, err)
		}
		return sums[0].Status()
	}
	if !run.Writing() || status() != StatusRunning {
		t.Fatalf("open log: writing %v, status %s", run.Writing(), status())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if run.Writing() || status() != StatusInterrupted {
		t.Fatalf("closed without run_end: writing %v, status %s", run.Writing(), status())
	}

	w, run, err = Create(t.TempDir(), RunStart{Tactic: "t"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(RunEnd{Status: StatusOK}); err != nil || run.Writing() {
		t.Fatalf("finished: %v, writing %v", err, run.Writing())
	}
}
