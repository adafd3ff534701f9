//go:build unix

package logs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/flock"
)

// edgeCompact is raw as every JSON writer puts it on a line.
func edgeCompact(t testing.TB, raw string) json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		t.Fatalf("bad test JSON %q: %v", raw, err)
	}
	return b.Bytes()
}

// edgeRead reads every record of data, failing on any error.
func edgeRead(t testing.TB, data []byte, name string) ([]*Record, []string) {
	t.Helper()
	r := NewReader(bytes.NewReader(data), name)
	recs := readAll(t, r)
	return recs, r.Warnings()
}

// edgeSameRecord compares a record read back with the one written, times by instant.
func edgeSameRecord(t testing.TB, got, want *Record) {
	t.Helper()
	if !got.Time.Equal(want.Time) {
		t.Errorf("record %d: time %v, wrote %v", want.Seq, got.Time, want.Time)
	}
	g, w := *got, *want
	g.Time, w.Time = time.Time{}, time.Time{}
	if !reflect.DeepEqual(g, w) {
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		t.Errorf("record %d (%s) changed on its way through the log:\n got %.600s\nwant %.600s", want.Seq, want.Kind, gj, wj)
	}
}

const edgeSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object", "$defs": {"when": {"type": "string", "format": "date-time"}},
  "properties": {"code": {"type": "string", "pattern": "^\\d{3}(-\\d+)?$"},
    "at": {"$ref": "#/$defs/when"}, "op": {"enum": ["<", ">", "&", "\u2028", "\ud83d\ude00", "é"]},
    "n": {"type": "number", "minimum": -1e-300, "maximum": 1.7976931348623157e308, "multipleOf": 0.01}},
  "required": ["code"], "additionalProperties": false
}`

// Records of every kind, with awkward text, floats, images and schemas, read back exactly.
func TestEdgeRoundTripEveryKind(t *testing.T) {
	root := t.TempDir()
	start := RunStart{Tactic: "edge ✓", Config: json.RawMessage(edgeSchema), Task: json.RawMessage(`{"q": "2+2\u0000?", "big": 12345678901234567890}`),
		Seed: -1, Versions: map[string]string{"go": "go1.x", "lllm": "v0.0.0-dev"}, GitCommit: "8fb6248-dirty", Host: "hôte", Labels: map[string]string{"k\x00": "v\u2029"}}
	w, run, err := Create(root, start, Options{})
	if err != nil {
		t.Fatal(err)
	}
	img := make([]byte, 70_000)
	for i := range img {
		img[i] = byte(i * 7)
	}
	huge := strings.Repeat("abc😀é\u2028\x00\"\\\n", 1<<17) // 2.6 MB, multi-byte runes across every buffer edge
	weird := "nul\x00 bell\a tab\t crlf\r\n ls\u2028 ps\u2029 html <&> bom\ufeff emoji 👩‍💻 rtl \u202e"
	invalid := "bad\xff\xfe utf8 \xc3( \xed\xa0\x80 end"
	node1 := dialog.TreeNode{ID: "d1", Owner: "coder", Alias: "main"}
	node2 := dialog.TreeNode{ID: "d2", Owner: "coder", Alias: "try", ParentID: "d1", SplitPoint: 2, LastN: 1, FirstK: 1, ParentLen: 4, Depth: 1}
	msgs := []*dialog.Message{
		{Role: dialog.RoleSystem, Content: weird, Name: "system", Modality: "text"},
		{Role: dialog.RoleUser, Content: invalid, Name: "user", Metadata: map[string]string{"é": "\x00", "caption": "a\u2028b"}},
		{Role: dialog.RoleAssistant, Name: "coder", Agent: "critic", Model: "openai/gpt-4o-mini", APIType: "completion",
			Parts: []dialog.Part{{Type: dialog.PartText, Text: "look:"}, {Type: dialog.PartImage, Image: &dialog.Image{MIME: "image/png", Data: img}},
				{Type: dialog.PartImage, Image: &dialog.Image{URL: "https://x.test/a.png?q=<&>"}}},
			FunctionCalls: []dialog.FunctionCall{{ID: "call_1", Name: "add", Arguments: json.RawMessage(edgeSchema), Result: "3\x00", Error: "e\u2028"}},
			Usage:         dialog.Usage{InputTokens: -5, CachedInputTokens: 0, CacheWriteTokens: 1 << 40, OutputTokens: 7, ReasoningTokens: -1},
			USD:           1e-300, Vectors: []float64{5e-324, -math.MaxFloat64, 0.1, 1e21, 1e-7, -0.000001},
			Logprobs: []dialog.TokenLogprob{{Token: "\xff4", Logprob: -1e-300, Bytes: []int{0, 255, 52},
				TopLogprobs: []dialog.TokenLogprob{{Token: "5", Logprob: -math.MaxFloat64}}}}},
		{Role: dialog.RoleAssistant, Content: huge, Usage: dialog.Usage{InputTokens: 0, OutputTokens: 0}, USD: 0},
		{Role: dialog.RoleTool, Content: "tool says\x00", ToolCallID: "call_1", Parsed: json.RawMessage(`{"raw":"...", "xml_tags": {"answer": ["4", "<4>"]}}`)},
	}
	recs := []*Record{
		{Kind: KindTacticStart, TacticStart: &TacticStart{Session: "s1", Tactic: "chat", Task: json.RawMessage(edgeSchema)}},
		{Kind: KindDialogOpen, Dialog: "d1", DialogOpen: &node1},
	}
	for i, m := range msgs[:4] {
		recs = append(recs, &Record{Kind: KindMessage, Dialog: "d1", Index: i, Prompt: "prompts/é<1>", Message: m})
	}
	recs = append(recs,
		&Record{Kind: KindFork, Dialog: "d2", Fork: &node2},
		&Record{Kind: KindMessage, Dialog: "d2", Index: 2, Message: msgs[4]},
		&Record{Kind: KindModelCall, Dialog: "d2", ModelCall: &ModelCall{Agent: "coder", Provider: "openai", Model: "gpt-4o-mini", Call: 1, Attempt: 2,
			Alias: "main", Turn: 1, RequestDigest: "sha256:9f2c", Params: json.RawMessage(`{"response_format": {"type": "json_schema", "schema": ` + edgeSchema + `}, "temperature": 0.0}`),
			Reply: &MessageRef{Dialog: "d2", Index: 2}, Usage: dialog.Usage{InputTokens: 21, CachedInputTokens: 16, CacheWriteTokens: 3, OutputTokens: 6, ReasoningTokens: 2},
			USD: 0.0000068, LatencyMS: 1e-7, Error: &CallError{Type: "network", Message: "reset \x00 by peer\xff", Status: 0, RetryAfterMS: 1.5}}},
		&Record{Kind: KindModelCall, Dialog: "d1", ModelCall: &ModelCall{Agent: "coder", Model: "m", Call: 2, Attempt: 1, Usage: dialog.Usage{InputTokens: -3, OutputTokens: math.MaxInt32}, USD: 1e-300, LatencyMS: 0}},
		&Record{Kind: KindToolCall, ToolCall: &ToolCall{Agent: "coder", CallID: "call_1", Name: "add", Arguments: json.RawMessage(`{"a": 1, "b": "é\u0000"}`), Result: "3", Error: "\xfe", Repeated: true}},
		&Record{Kind: KindContext, Dialog: "d1", Context: &ContextAction{Agent: "coder", Manager: "summary", Action: "summary", MessagesBefore: 4, MessagesAfter: 2,
			TokensBefore: 1 << 20, TokensAfter: -1, Note: "kept the summary", Archived: 3, Summary: weird}},
		&Record{Kind: KindTacticEnd, TacticEnd: &TacticEnd{Session: "s1", Tactic: "chat", Status: StatusFailed, Result: json.RawMessage(`[1e-300, -0, "\u00e9"]`),
			Error: "boom\x00", Cost: dialog.Cost{Usage: dialog.Usage{InputTokens: -1}, USD: 1e-300}}},
	)
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatalf("Write %s: %v", rec.Kind, err)
		}
	}
	if err := w.Finish(RunEnd{Status: StatusOK, Result: json.RawMessage(`{"answer": "4"}`)}); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(run.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(data) || !bytes.HasSuffix(data, []byte("\n")) {
		t.Fatalf("the log is not UTF-8 JSON lines (valid UTF-8 %v)", utf8.Valid(data))
	}
	got, warnings := edgeRead(t, data, run.Path())
	if len(warnings) != 0 || len(got) != len(recs)+2 {
		t.Fatalf("read %d records (want %d), warnings %v", len(got), len(recs)+2, warnings)
	}
	// What JSON cannot hold comes back as encoding/json writes it: each invalid byte as U+FFFD, raw JSON compacted.
	fix := func(s string) string { return string([]rune(s)) }
	msgs[1].Content = fix(invalid)
	msgs[2].Logprobs[0].Token = fix("\xff4")
	msgs[2].FunctionCalls[0].Arguments = edgeCompact(t, edgeSchema)
	msgs[4].Parsed = edgeCompact(t, string(msgs[4].Parsed))
	recs[0].TacticStart.Task = edgeCompact(t, edgeSchema)
	for _, r := range recs {
		switch {
		case r.ModelCall != nil:
			if r.ModelCall.Params != nil {
				r.ModelCall.Params = edgeCompact(t, string(r.ModelCall.Params))
			}
			if r.ModelCall.Error != nil {
				r.ModelCall.Error.Message = fix(r.ModelCall.Error.Message)
			}
		case r.ToolCall != nil:
			r.ToolCall.Arguments, r.ToolCall.Error = edgeCompact(t, string(r.ToolCall.Arguments)), fix(r.ToolCall.Error)
		case r.TacticEnd != nil:
			r.TacticEnd.Result = edgeCompact(t, string(r.TacticEnd.Result))
		}
	}
	for i, rec := range recs {
		edgeSameRecord(t, got[i+1], rec)
	}

	wantStart := start
	wantStart.Format, wantStart.Version, wantStart.RunID = FormatName, fmt.Sprintf("%d.%d", VersionMajor, VersionMinor), run.ID
	wantStart.Config, wantStart.Task = edgeCompact(t, edgeSchema), edgeCompact(t, string(start.Task))
	if got[0].Kind != KindRunStart || got[0].Seq != 1 || !reflect.DeepEqual(*got[0].RunStart, wantStart) {
		t.Errorf("run_start read back as %+v\nwant %+v", got[0].RunStart, wantStart)
	}
	end := got[len(got)-1]
	if end.Kind != KindRunEnd || end.Seq != int64(len(got)) || string(end.RunEnd.Result) != `{"answer":"4"}` {
		t.Fatalf("last record = %+v", end)
	}
	wantTotals := Totals{ModelCalls: 2, ToolCalls: 1, Dialogs: 2, Messages: 5,
		Cost: dialog.Cost{Usage: dialog.Usage{InputTokens: 18, CachedInputTokens: 16, CacheWriteTokens: 3, OutputTokens: 6 + math.MaxInt32, ReasoningTokens: 2}, USD: 0.0000068 + 1e-300}}
	gotTotals := end.RunEnd.Totals
	gotTotals.DurationMS = 0
	if gotTotals != wantTotals {
		t.Errorf("run_end totals = %+v\nwant %+v", gotTotals, wantTotals)
	}

	forest, warnings, err := run.Forest(t.Context())
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Forest: %v %v", err, warnings)
	}
	d1, d2 := forest.Dialog("d1"), forest.Dialog("d2")
	if d1 == nil || d2 == nil || d1.Len() != 4 || d2.Len() != 3 {
		t.Fatalf("rebuilt forest: %v %v", d1, d2)
	}
	if !reflect.DeepEqual(d2.Node(), dialog.TreeNode{ID: "d2", Owner: "coder", Alias: "try", ParentID: "d1", SplitPoint: 2, LastN: 1, FirstK: 1, ParentLen: 4, Depth: 1}) {
		t.Errorf("fork node rebuilt as %+v", d2.Node())
	}
	for i, want := range []*dialog.Message{msgs[0], msgs[3], msgs[4]} {
		if got := d2.Messages()[i]; !reflect.DeepEqual(*got, *want) {
			t.Errorf("fork message %d rebuilt as %.300q, want %.300q", i, got.Content, want.Content)
		}
	}
	if d1.Messages()[3].Content != huge || d1.Messages()[2].Parts[1].Image == nil || !bytes.Equal(d1.Messages()[2].Parts[1].Image.Data, img) {
		t.Error("the huge message or the image did not survive Rebuild")
	}
}

// Raw JSON that Write accepts (from a model's tool call, a user's task) must read back; else Write must refuse it.
func TestEdgeRawJSONWrittenIsReadable(t *testing.T) {
	raws := map[string]string{
		"duplicate keys":      `{"path": "a", "path": "b"}`,
		"lone surrogate":      `{"text": "\ud800 half an emoji"}`,
		"invalid UTF-8":       "{\"text\": \"caf\xe9\"}",
		"nested duplicate":    `[{"a": {"x": 1, "x": 1}}]`,
		"reversed surrogates": `"\udc00\ud800"`,
	}
	for name, raw := range raws {
		t.Run(name, func(t *testing.T) {
			records := map[string]*Record{
				"tool_call arguments": {Kind: KindToolCall, ToolCall: &ToolCall{Name: "f", Arguments: json.RawMessage(raw)}},
				"function call":       {Kind: KindMessage, Dialog: "d", Message: &dialog.Message{Role: dialog.RoleAssistant, FunctionCalls: []dialog.FunctionCall{{ID: "c", Name: "f", Arguments: json.RawMessage(raw)}}}},
				"model_call params":   {Kind: KindModelCall, ModelCall: &ModelCall{Agent: "a", Params: json.RawMessage(raw)}},
				"tactic_start task":   {Kind: KindTacticStart, TacticStart: &TacticStart{Session: "s", Tactic: "t", Task: json.RawMessage(raw)}},
			}
			for what, rec := range records {
				var buf bytes.Buffer
				w, err := NewWriter(&buf, RunStart{}, Options{FlushDelay: -1})
				if err != nil {
					t.Fatal(err)
				}
				werr := w.Write(rec)
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if _, rerr := readErr(buf.Bytes()); werr == nil && (rerr != nil || !utf8.Valid(buf.Bytes())) {
					t.Errorf("%s: Write accepted %q but the log it wrote is unreadable (valid UTF-8: %v): %v", what, raw, utf8.Valid(buf.Bytes()), rerr)
				}
			}
			// The run's task is given by the user: a run whose log cannot even be opened is the worst case.
			root := t.TempDir()
			w, run, err := Create(root, RunStart{Task: json.RawMessage(raw)}, Options{})
			if err != nil {
				return // refused: fine
			}
			w.Close()
			if _, err := Open(root, run.ID); err != nil {
				t.Errorf("Create accepted task %q, then Open fails: %v", raw, err)
			}
		})
	}
}

// The writer must refuse a record its own reader would call corrupt (unknown kind, missing payload).
func TestEdgeWriterRefusesRecordsItsReaderRejects(t *testing.T) {
	bad := map[string]*Record{
		"unknown kind":       {Kind: "thought", ToolCall: &ToolCall{Name: "x"}},
		"empty kind":         {ToolCall: &ToolCall{Name: "x"}},
		"missing payload":    {Kind: KindMessage, Dialog: "d"},
		"mismatched payload": {Kind: KindToolCall, ModelCall: &ModelCall{Agent: "a"}},
	}
	for name, rec := range bad {
		for _, delay := range []time.Duration{-1, 0} {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, RunStart{}, Options{FlushDelay: delay})
			if err != nil {
				t.Fatal(err)
			}
			werr := w.Write(rec)
			okErr := w.Write(textRecord("after"))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			recs, rerr := readErr(buf.Bytes())
			if werr == nil && rerr != nil {
				t.Errorf("%s (delay %v): Write accepted the record and the log became unreadable: %v", name, delay, rerr)
			}
			if werr != nil && (okErr != nil || rerr != nil || len(recs) != 2 || recs[1].Seq != 2) {
				t.Errorf("%s (delay %v): after refusing, the log is not usable: %v %v %d records", name, delay, okErr, rerr, len(recs))
			}
		}
	}
}

// Unencodable records of every kind are refused by Write at once, leaving no gap in seq and the log usable.
func TestEdgeUnencodableRecordsRefusedAtOnce(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(-1)
	bad := map[string]*Record{
		"message usd":       {Kind: KindMessage, Dialog: "d", Message: &dialog.Message{Role: "user", USD: nan}},
		"message vector":    {Kind: KindMessage, Dialog: "d", Message: &dialog.Message{Role: "user", Vectors: []float64{1, inf}}},
		"message parsed":    {Kind: KindMessage, Dialog: "d", Message: &dialog.Message{Role: "user", Parsed: json.RawMessage(`{"a":`)}},
		"message logprob":   {Kind: KindMessage, Dialog: "d", Message: &dialog.Message{Role: "user", Logprobs: []dialog.TokenLogprob{{Token: "x", Logprob: nan}}}},
		"function args":     {Kind: KindMessage, Dialog: "d", Message: &dialog.Message{Role: "user", FunctionCalls: []dialog.FunctionCall{{Arguments: json.RawMessage(`[1,]`)}}}},
		"model latency":     {Kind: KindModelCall, ModelCall: &ModelCall{LatencyMS: inf}},
		"model retry after": {Kind: KindModelCall, ModelCall: &ModelCall{Error: &CallError{RetryAfterMS: nan}}},
		"model usd":         {Kind: KindModelCall, ModelCall: &ModelCall{USD: nan}},
		"tool args":         {Kind: KindToolCall, ToolCall: &ToolCall{Arguments: json.RawMessage(`nope`)}},
		"tool latency":      {Kind: KindToolCall, ToolCall: &ToolCall{LatencyMS: nan}},
		"tactic end cost":   {Kind: KindTacticEnd, TacticEnd: &TacticEnd{Cost: dialog.Cost{USD: inf}}},
		"tactic task":       {Kind: KindTacticStart, TacticStart: &TacticStart{Task: json.RawMessage(`{`)}},
	}
	for name, rec := range bad {
		c, w := countingLog(t, Options{})
		if err := w.Write(rec); err == nil {
			t.Errorf("%s: Write accepted an unencodable record", name)
		}
		if err := w.Write(textRecord("next")); err != nil {
			t.Errorf("%s: log unusable after a refused record: %v", name, err)
		}
		if err := w.Close(); err != nil {
			t.Errorf("%s: Close = %v", name, err)
		}
		_, text := c.state()
		if recs, err := readErr([]byte(text)); err != nil || len(recs) != 2 || recs[1].Seq != 2 {
			t.Errorf("%s: log after the refusal: %d records, %v", name, len(recs), err)
		}
	}
}

// edgeCrashLog writes a small finished run with forks, an image and model calls, and returns its bytes.
func edgeCrashLog(t *testing.T) []byte {
	t.Helper()
	w, run := newRun(t, t.TempDir())
	d, _ := dialog.New("coder", dialog.WithSink(w), dialog.WithAlias("main"))
	d.PutText("system é", dialog.AsRole(dialog.RoleSystem))
	d.PutText("question\x00")
	c, _ := d.Fork(1, 1)
	c.Append(dialog.Message{Role: dialog.RoleAssistant, Content: "answer ✓", Usage: dialog.Usage{InputTokens: 3, OutputTokens: 1}, USD: 1e-9,
		Parts: []dialog.Part{{Type: dialog.PartImage, Image: &dialog.Image{MIME: "image/png", Data: []byte("\x89PNG\x00\xff")}}}})
	w.Write(&Record{Kind: KindModelCall, Dialog: c.ID(), ModelCall: &ModelCall{Agent: "coder", Model: "m", Call: 1, Attempt: 1, USD: 1e-9}})
	g, _ := c.Fork(0, 0)
	g.PutText("deeper")
	d.PutText("after the forks")
	if err := w.Finish(RunEnd{Status: StatusOK}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(run.Path())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A process killed at any byte leaves a log whose whole records read back with at most a torn-line warning, and Rebuild, Open and List work.
func TestEdgeCrashAtEveryByte(t *testing.T) {
	data := edgeCrashLog(t)
	first := bytes.IndexByte(data, '\n') + 1 // run_start is fsynced before the run's directory appears
	all, _ := edgeRead(t, data, "full")
	root := t.TempDir()
	wantStatus := map[string]Status{}
	for cut := first; cut <= len(data); cut++ {
		part := data[:cut]
		whole, wantWarn := bytes.Count(part, []byte("\n")), 0
		switch {
		case cut < len(data) && data[cut] == '\n':
			whole++ // only the newline is missing: the record is whole
		case part[len(part)-1] != '\n':
			wantWarn = 1 // torn inside a record
		}
		r := NewReader(bytes.NewReader(part), "cut")
		var got []*Record
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("cut at byte %d of %d: %v", cut, len(data), err)
			}
			got = append(got, rec)
		}
		if len(got) != whole || len(r.Warnings()) != wantWarn {
			t.Fatalf("cut at byte %d: %d records (want %d), warnings %q", cut, len(got), whole, r.Warnings())
		}
		for i, rec := range got {
			if rec.Seq != all[i].Seq || rec.Kind != all[i].Kind {
				t.Fatalf("cut at byte %d: record %d is %s #%d", cut, i, rec.Kind, rec.Seq)
			}
		}
		if near := bytes.IndexByte(data[cut-1:min(cut+1, len(data))], '\n') >= 0; near || cut%5 == 0 { // each Reader costs a 256 KB buffer
			if _, err := Rebuild(t.Context(), NewReader(bytes.NewReader(part), "cut")); err != nil {
				t.Fatalf("Rebuild after a cut at byte %d: %v", cut, err)
			}
		}
		if cut%61 == 0 || cut >= len(data)-2 {
			id := fmt.Sprintf("20260101T000000.%06dZ-c0ffee", cut)
			wantStatus[id] = StatusInterrupted
			if whole == len(all) {
				wantStatus[id] = StatusOK // run_end is whole, if without its newline
			}
			os.MkdirAll(filepath.Join(root, id), 0o755)
			if err := os.WriteFile(filepath.Join(root, id, EventsFile), part, 0o644); err != nil {
				t.Fatal(err)
			}
			if run, err := Open(root, id); err != nil || run.Start == nil {
				t.Fatalf("Open after a cut at byte %d: %v", cut, err)
			}
		}
	}
	list, err := List(root)
	if err != nil || len(list) != len(wantStatus) {
		t.Fatalf("List: %d runs, %v", len(list), err)
	}
	for _, s := range list {
		if s.Err != nil || s.Start == nil || s.Status() != wantStatus[s.ID] {
			t.Errorf("crashed run %s listed as %s (want %s), err %v", s.ID, s.Status(), wantStatus[s.ID], s.Err)
		}
	}
}

// edgeGate is an io.Writer whose second and later writes wait for release, then fail if told to.
type edgeGate struct {
	mu      sync.Mutex
	n       int
	buf     bytes.Buffer
	entered chan struct{}
	release chan struct{}
	fail    bool
}

func newEdgeGate(fail bool) *edgeGate {
	return &edgeGate{entered: make(chan struct{}, 16), release: make(chan struct{}), fail: fail}
}

func (g *edgeGate) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.n++
	n := g.n
	g.mu.Unlock()
	if n > 1 {
		g.entered <- struct{}{}
		<-g.release
		if g.fail {
			return 0, errors.New("no space left on device")
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

// A failed write names every record lost, including those accepted while it was in flight.
func TestEdgeWriteErrorNamesAllLostRecords(t *testing.T) {
	g := newEdgeGate(true)
	w, err := NewWriter(g, RunStart{}, Options{FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(textRecord("two")); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error)
	go func() { flushed <- w.Flush() }()
	<-g.entered // record 2 is being written
	err3 := w.Write(textRecord("three"))
	close(g.release)
	ferr := <-flushed
	err4 := w.Write(textRecord("four"))
	cerr := w.Close()
	if ferr == nil || err4 == nil || cerr == nil {
		t.Fatalf("errors: flush %v, later write %v, close %v", ferr, err4, cerr)
	}
	if err3 == nil {
		// Record 3 was accepted and never written: what is reported after must name it.
		named := regexp.MustCompile(`records 2 to 3\b|record 3\b`)
		if !named.MatchString(err4.Error()) || !named.MatchString(cerr.Error()) {
			t.Errorf("record 3 was accepted, then lost, but the errors do not name it:\n write: %v\n close: %v", err4, cerr)
		}
	}
}

// A write error is reported once in Finish's error, not repeated.
func TestEdgeWriteErrorReportedOnce(t *testing.T) {
	w, err := NewWriter(&brokenWriter{after: 1}, RunStart{}, Options{FlushDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(textRecord("lost")); err == nil {
		t.Fatal("a failed write was not reported")
	}
	ferr := w.Finish(RunEnd{Status: StatusOK})
	if ferr == nil || strings.Count(ferr.Error(), "no space left on device") != 1 {
		t.Errorf("Finish after a failed write = %q, want the failure reported once", ferr)
	}
}

// A second Close, racing the first, returns only once the records are with the OS.
func TestEdgeCloseWaitsForConcurrentClose(t *testing.T) {
	g := newEdgeGate(false)
	w, err := NewWriter(g, RunStart{}, Options{FlushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(textRecord("pending"))
	first := make(chan error)
	go func() { first <- w.Close() }()
	<-g.entered // the first Close is handing the record over
	second := make(chan error)
	go func() { second <- w.Close() }()
	select {
	case <-second:
		t.Error("the second Close returned while the first was still writing the log")
		second = nil
	case <-time.After(100 * time.Millisecond):
	}
	close(g.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if second != nil {
		select {
		case <-second:
		case <-time.After(5 * time.Second):
			t.Fatal("the second Close never returned")
		}
	}
	if recs, err := readErr(g.buf.Bytes()); err != nil || len(recs) != 2 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
}

// Many goroutines writing while others Flush and Close: each accepted record lands once, seqs gap-free in file order.
func TestEdgeConcurrentWriteFlushClose(t *testing.T) {
	for _, delay := range []time.Duration{0, -1, time.Microsecond} {
		t.Run(fmt.Sprint(delay), func(t *testing.T) {
			w, run, err := Create(t.TempDir(), RunStart{Tactic: "race"}, Options{FlushDelay: delay, SyncInterval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			const writers, each = 8, 150
			var mu sync.Mutex
			accepted := map[string]int64{}
			var wg sync.WaitGroup
			for g := range writers {
				wg.Go(func() {
					for i := range each {
						text := fmt.Sprintf("g%d-%d", g, i)
						rec := textRecord(text)
						err := w.Write(rec)
						if errors.Is(err, ErrClosed) {
							continue
						}
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						accepted[text] = rec.Seq
						mu.Unlock()
						if i%25 == 0 {
							if err := w.Flush(); err != nil {
								t.Error(err)
							}
						}
					}
				})
			}
			time.Sleep(2 * time.Millisecond)
			var closers sync.WaitGroup
			for range 2 {
				closers.Go(func() {
					if err := w.Close(); err != nil {
						t.Error(err)
					}
				})
			}
			closers.Wait()
			wg.Wait()
			if err := w.Close(); err != nil {
				t.Errorf("third Close = %v", err)
			}
			if err := w.Write(textRecord("late")); !errors.Is(err, ErrClosed) {
				t.Errorf("Write after Close = %v", err)
			}
			if err := w.Flush(); err != nil {
				t.Errorf("Flush after Close = %v", err)
			}
			data, _ := os.ReadFile(run.Path())
			recs, warnings := edgeRead(t, data, "raced")
			if len(warnings) != 0 || len(recs) != 1+len(accepted) {
				t.Fatalf("%d records in the file, %d accepted, warnings %v", len(recs), len(accepted), warnings)
			}
			for i, rec := range recs {
				if rec.Seq != int64(i+1) || (i > 0 && rec.Time.Before(recs[i-1].Time)) {
					t.Fatalf("record %d has seq %d", i, rec.Seq)
				}
				if i > 0 && accepted[rec.Message.Content] != rec.Seq {
					t.Fatalf("record %q has seq %d, Write gave it %d", rec.Message.Content, rec.Seq, accepted[rec.Message.Content])
				}
			}
			if run.Writing() {
				t.Error("a closed run still reads as being written")
			}
		})
	}
}

// Finish racing writers: run_end is the last record, its totals count exactly the records before it.
func TestEdgeFinishIsLastAndTotalsMatch(t *testing.T) {
	for round := range 10 {
		root := t.TempDir()
		w, run := newRun(t, root)
		var wg sync.WaitGroup
		for g := range 6 {
			wg.Go(func() {
				for i := 0; ; i++ {
					var rec *Record
					switch i % 3 {
					case 0:
						rec = textRecord("m")
					case 1:
						rec = &Record{Kind: KindModelCall, ModelCall: &ModelCall{Agent: "a", Usage: dialog.Usage{InputTokens: g - 2, OutputTokens: 1}, USD: 0.1}}
					default:
						rec = &Record{Kind: KindToolCall, ToolCall: &ToolCall{Name: "t"}}
					}
					if err := w.Write(rec); err != nil {
						if !errors.Is(err, ErrClosed) {
							t.Error(err)
						}
						return
					}
				}
			})
		}
		time.Sleep(time.Millisecond)
		if err := w.Finish(RunEnd{Status: StatusOK}); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		rd, _ := run.Reader()
		recs := readAll(t, rd)
		rd.Close()
		var want Totals
		for _, rec := range recs[:len(recs)-1] {
			switch rec.Kind {
			case KindMessage:
				want.Messages++
			case KindModelCall:
				want.ModelCalls++
				want.Cost = want.Cost.Add(dialog.Cost{Usage: rec.ModelCall.Usage, USD: rec.ModelCall.USD})
			case KindToolCall:
				want.ToolCalls++
			case KindRunEnd:
				t.Fatalf("round %d: run_end at seq %d is followed by %d more records", round, rec.Seq, len(recs)-int(rec.Seq))
			}
		}
		last := recs[len(recs)-1]
		if last.Kind != KindRunEnd {
			t.Fatalf("round %d: the log ends with %s #%d, not run_end", round, last.Kind, last.Seq)
		}
		got := last.RunEnd.Totals
		got.DurationMS = 0
		if got != want {
			t.Fatalf("round %d: run_end totals %+v, the log holds %+v", round, got, want)
		}
		if list, _ := List(root); len(list) != 1 || list[0].Status() != StatusOK {
			t.Fatalf("round %d: finished run listed as %v", round, list)
		}
	}
}

// Create's Run carries the run_start the log holds.
func TestEdgeCreateReturnsTheLoggedRunStart(t *testing.T) {
	root := t.TempDir()
	w, run := newRun(t, root)
	defer w.Close()
	opened, err := Open(root, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(run.Start, opened.Start) {
		t.Errorf("Create returned run_start %+v\nthe log holds %+v", run.Start, opened.Start)
	}
}

// edgeRunDir makes a run directory holding data as its log.
func edgeRunDir(t *testing.T, root, id string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, id), 0o755); err != nil {
		t.Fatal(err)
	}
	if data != nil {
		if err := os.WriteFile(filepath.Join(root, id, EventsFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Open by a prefix or suffix that matches two runs is an error naming both; exact ids, unique parts and latest still work.
func TestEdgeOpenAmbiguous(t *testing.T) {
	root := t.TempDir()
	log := logBytes(t, "1.2", openLine, msgLine)
	a, b, c := "20260101T000000.000001Z-aaaaaa", "20260101T000000.000002Z-aaaaaa", "20260102T000000.000000Z-bbbbbb"
	for _, id := range []string{a, b, c} {
		edgeRunDir(t, root, id, log)
	}
	edgeRunDir(t, root, ".tmp-20270101T000000.000000Z-cccccc", log) // a run still being created
	edgeRunDir(t, root, "20280101T000000.000000Z-dddddd", nil)      // not a run: no log
	for _, ref := range []string{"aaaaaa", "20260101T000000.00000", "-aaaaaa"} {
		_, err := Open(root, ref)
		if err == nil || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) {
			t.Errorf("Open(%q) with two matches = %v, want an error naming %s and %s", ref, err, a, b)
		}
	}
	for ref, want := range map[string]string{a: a, "bbbbbb": c, "20260102": c, "latest": c, b[:len(b)-1]: b} {
		if run, err := Open(root, ref); err != nil || run.ID != want {
			t.Errorf("Open(%q) = %v, %v; want %s", ref, run, err, want)
		}
	}
}

// List copes with run directories that lack a log, have an empty one, only a torn first line, or a newer major version.
func TestEdgeListOddRunDirs(t *testing.T) {
	root := t.TempDir()
	good := logBytes(t, "1.2", openLine, msgLine, `{"seq":4,"ts":"2026-11-22T04:41:03Z","kind":"run_end","run_end":{"status":"ok","totals":{"model_calls":0,"tool_calls":0,"dialogs":1,"messages":1,"cost":{},"duration_ms":3}}}`+"\n")
	first := bytes.IndexByte(good, '\n')
	dirs := map[string][]byte{
		"20260101T000000.000001Z-000001": good,
		"20260101T000000.000002Z-000002": good[:len(good)-40], // crashed while writing run_end
		"20260101T000000.000003Z-000003": {},
		"20260101T000000.000004Z-000004": good[:first/2],
		"20260101T000000.000005Z-000005": logBytes(t, "2.0", openLine),
		"20260101T000000.000006Z-000006": []byte("\n\n"),
	}
	for id, data := range dirs {
		edgeRunDir(t, root, id, data)
	}
	edgeRunDir(t, root, "20260101T000000.000000Z-nolog0", nil)
	os.WriteFile(filepath.Join(root, "stray.txt"), []byte("x"), 0o644)
	list, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Summary{}
	for _, s := range list {
		byID[s.ID] = s
	}
	if len(list) != len(dirs) {
		t.Errorf("List gave %d runs, want the %d with a log", len(list), len(dirs))
	}
	if s := byID["20260101T000000.000001Z-000001"]; s.Err != nil || s.Status() != StatusOK || s.Start == nil {
		t.Errorf("finished run: %+v", s)
	}
	if s := byID["20260101T000000.000002Z-000002"]; s.Err != nil || s.Status() != StatusInterrupted || s.Start == nil {
		t.Errorf("crashed run: status %s, %+v", s.Status(), s)
	}
	for _, id := range []string{"20260101T000000.000003Z-000003", "20260101T000000.000004Z-000004", "20260101T000000.000005Z-000005", "20260101T000000.000006Z-000006"} {
		s := byID[id]
		if s.Err == nil || !strings.Contains(s.Err.Error(), filepath.Join(root, id, EventsFile)) {
			t.Errorf("unreadable run %s: err %v, want one naming its file", id, s.Err)
		}
		if s.Status() == StatusRunning {
			t.Errorf("unreadable run %s listed as running", id)
		}
	}
	if s := byID["20260101T000000.000005Z-000005"]; s.Err == nil || !strings.Contains(s.Err.Error(), "2.0") || !strings.Contains(s.Err.Error(), "1.x") {
		t.Errorf("newer major version: err %v", s.Err)
	}
}

// A newer minor log: each unknown kind is skipped with one warning, unknown fields ignored, and Open, List and Rebuild work.
func TestEdgeNewerMinorVersion(t *testing.T) {
	var lines []string
	lines = append(lines, openLine)
	for i := range 3 {
		for _, k := range []string{"thought", "plan", "budget"} {
			lines = append(lines, fmt.Sprintf(`{"seq":%d,"ts":"2026-11-22T04:41:01Z","kind":%q,"dialog":"d1",%q:{"n":%d},"new_top_field":[1]}`+"\n", 10+i, k, k, i))
		}
	}
	lines = append(lines,
		`{"seq":3,"ts":"2026-11-22T04:41:02Z","kind":"message","dialog":"d1","message":{"role":"user","content":"hello","sentiment":{"x":1},"usage":{"input_tokens":2,"audio_tokens":9}}}`+"\n",
		`{"seq":4,"ts":"2026-11-22T04:41:02Z","kind":"run_end","run_end":{"status":"ok","totals":{"model_calls":0,"tool_calls":0,"dialogs":1,"messages":1,"cost":{},"duration_ms":1},"carbon_g":3}}`+"\n")
	data := logBytes(t, "1.99", lines...)
	data = bytes.Replace(data, []byte(`"run_id":"r"`), []byte(`"run_id":"r","new_start_field":{"a":1}`), 1)
	r := NewReader(bytes.NewReader(data), "minor.jsonl")
	f, err := Rebuild(t.Context(), r)
	if err != nil || f.Dialog("d1") == nil || f.Dialog("d1").Len() != 1 || f.Dialog("d1").Messages()[0].Usage.InputTokens != 2 {
		t.Fatalf("Rebuild of a newer minor log: %v", err)
	}
	if w := r.Warnings(); len(w) != 3 || !strings.Contains(strings.Join(w, "\n"), `"budget"`) || !strings.Contains(w[0], "1.99") {
		t.Errorf("warnings = %q, want one per unknown kind naming the version", w)
	}
	root := t.TempDir()
	edgeRunDir(t, root, "20260101T000000.000000Z-abcdef", data)
	if run, err := Open(root, "abcdef"); err != nil || run.Start.Version != "1.99" {
		t.Errorf("Open of a newer minor log: %v", err)
	}
	if list, err := List(root); err != nil || len(list) != 1 || list[0].Err != nil || list[0].Status() != StatusOK {
		t.Errorf("List of a newer minor log: %+v %v", list, err)
	}
}

// Other major versions are refused by Reader, Rebuild and Open with an error naming the file and both versions.
func TestEdgeOtherMajorVersionRefused(t *testing.T) {
	for _, v := range []string{"2.0", "0.9", "10.1"} {
		data := logBytes(t, v, openLine, msgLine)
		r := NewReader(bytes.NewReader(data), "bad.jsonl")
		rec, err := r.Next()
		var fe *FormatError
		if rec != nil || !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), "bad.jsonl") ||
			!strings.Contains(err.Error(), "version "+v) || !strings.Contains(err.Error(), fmt.Sprintf("reads %d.x", VersionMajor)) {
			t.Errorf("version %s: Next = %v, %v", v, rec, err)
		}
		if _, err := Rebuild(t.Context(), NewReader(bytes.NewReader(data), "bad.jsonl")); !errors.As(err, &fe) {
			t.Errorf("version %s: Rebuild = %v", v, err)
		}
		root := t.TempDir()
		edgeRunDir(t, root, "20260101T000000.000000Z-abcdef", data)
		if _, err := Open(root, "latest"); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "20260101T000000.000000Z-abcdef", EventsFile)) || !strings.Contains(err.Error(), v) {
			t.Errorf("version %s: Open = %v", v, err)
		}
	}
}

// The lock tells a run being written from one whose writer is gone, whoever holds it.
func TestEdgeLockTellsRunningFromDead(t *testing.T) {
	root := t.TempDir()
	w, run := newRun(t, root)
	status := func(id string) Status {
		list, _ := List(root)
		for _, s := range list {
			if s.ID == id {
				return s.Status()
			}
		}
		return ""
	}
	rd, _ := run.Reader() // a reader holding the log open changes nothing
	if !run.Writing() || status(run.ID) != StatusRunning {
		t.Fatalf("open writer: writing %v, status %s", run.Writing(), status(run.ID))
	}
	rd.Close()
	w.Write(textRecord("x"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if run.Writing() || status(run.ID) != StatusInterrupted {
		t.Fatalf("writer gone: writing %v, status %s", run.Writing(), status(run.ID))
	}
	// Another process's writer: its own open file holding the lock, dropped when it closes however it ends.
	f, err := os.OpenFile(run.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := flock.TryLock(f, true); err != nil {
		t.Fatal(err)
	}
	if !run.Writing() || status(run.ID) != StatusRunning {
		t.Errorf("log locked by another writer: writing %v, status %s", run.Writing(), status(run.ID))
	}
	f.Close()
	if run.Writing() || status(run.ID) != StatusInterrupted {
		t.Errorf("lock dropped: writing %v, status %s", run.Writing(), status(run.ID))
	}
}

// edgeDiskFullEnv names the run root of the disk-full child process.
const edgeDiskFullEnv = "LLLM_LOGS_EDGE_DISKFULL"

// TestEdgeDiskFullChild is the child process of TestEdgeDiskFull; run alone, it does nothing.
func TestEdgeDiskFullChild(t *testing.T) {
	root := os.Getenv(edgeDiskFullEnv)
	if root == "" {
		return
	}
	delay, _ := time.ParseDuration(os.Getenv(edgeDiskFullEnv + "_DELAY"))
	w, run, err := Create(root, RunStart{Tactic: "full"}, Options{FlushDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old)
	st, _ := os.Stat(run.Path())
	limit := syscall.Rlimit{Cur: uint64(st.Size()) + 5000, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	out := struct {
		Path     string
		Accepted []int64
		Errors   []string
	}{Path: run.Path()}
	for i := range 60 {
		rec := textRecord(fmt.Sprintf("%03d %s", i, strings.Repeat("x", 150)))
		if err := w.Write(rec); err != nil {
			out.Errors = append(out.Errors, err.Error())
		} else {
			out.Accepted = append(out.Accepted, rec.Seq)
		}
	}
	if err := w.Flush(); err != nil {
		out.Errors = append(out.Errors, err.Error())
	}
	if err := w.Close(); err != nil {
		out.Errors = append(out.Errors, err.Error())
	}
	syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
	b, _ := json.Marshal(out)
	if err := os.WriteFile(filepath.Join(root, "result.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A real file filling up part-way through a write is truncated back to whole records, and the error names the records lost.
func TestEdgeDiskFull(t *testing.T) {
	for _, delay := range []time.Duration{-1, time.Hour} {
		t.Run(delay.String(), func(t *testing.T) {
			root := t.TempDir()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestEdgeDiskFullChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), edgeDiskFullEnv+"="+root, edgeDiskFullEnv+"_DELAY="+delay.String(), "GORACE=atexit_sleep_ms=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var res struct {
				Path     string
				Accepted []int64
				Errors   []string
			}
			b, err := os.ReadFile(filepath.Join(root, "result.json"))
			if err != nil || json.Unmarshal(b, &res) != nil {
				t.Fatalf("child result: %v %s", err, b)
			}
			if len(res.Errors) == 0 {
				t.Fatal("the disk filled up and no error was reported")
			}
			data, err := os.ReadFile(res.Path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasSuffix(data, []byte("\n")) {
				t.Errorf("the log ends inside a record: ...%q", data[max(0, len(data)-30):])
			}
			recs, warnings := edgeRead(t, data, res.Path)
			if len(warnings) != 0 {
				t.Errorf("warnings %v: the partial write was not undone", warnings)
			}
			kept := recs[len(recs)-1].Seq
			lastAccepted := int64(1)
			if n := len(res.Accepted); n > 0 {
				lastAccepted = res.Accepted[n-1]
			}
			lost := max(lastAccepted, kept+1)
			m := regexp.MustCompile(`writing records? (\d+)(?: to (\d+))?`).FindStringSubmatch(res.Errors[0])
			if m == nil {
				t.Fatalf("error %q does not name the records lost", res.Errors[0])
			}
			lo, _ := strconv.ParseInt(m[1], 10, 64)
			hi := lo
			if m[2] != "" {
				hi, _ = strconv.ParseInt(m[2], 10, 64)
			}
			if lo != kept+1 || hi != lost {
				t.Errorf("the file keeps records 1 to %d, %d were accepted; the error names %d to %d: %q", kept, lastAccepted, lo, hi, res.Errors[0])
			}
			for _, e := range res.Errors {
				if !strings.Contains(e, "file too large") {
					t.Errorf("error %q does not carry the OS's reason", e)
				}
			}
			if e := res.Errors[0]; strings.Contains(e, ".tmp-") || !strings.Contains(e, res.Path) {
				t.Errorf("the error names a file that no longer exists, not the run's log %s: %q", res.Path, e)
			}
			if list, err := List(root); err != nil || len(list) != 1 || list[0].Err != nil || list[0].Status() != StatusInterrupted {
				t.Errorf("List of the full run: %+v %v", list, err)
			}
		})
	}
}

// Random cuts inside a large log, at buffer edges too, read back whole records; a corrupt middle line is still an error naming its line.
func TestEdgeTornVersusCorrupt(t *testing.T) {
	var b strings.Builder
	for i := range 16 {
		n := rand.IntN(300)
		if i%5 == 0 {
			n = 150_000 // longer than the reader's buffer
		}
		fmt.Fprintf(&b, `{"seq":%d,"ts":"2026-11-22T04:41:02Z","kind":"message","dialog":"d1","index":%d,"message":{"role":"user","content":%q}}`+"\n",
			i+3, i, strings.Repeat("é", n))
	}
	data := logBytes(t, "1.2", openLine, b.String())
	first := bytes.IndexByte(data, '\n') + 1
	for range 40 {
		cut := first + rand.IntN(len(data)-first)
		recs, warnings := edgeRead(t, data[:cut], "cut")
		if want := bytes.Count(data[:cut], []byte("\n")); len(recs) < want || len(recs) > want+1 || len(warnings) > 1 {
			t.Fatalf("cut at %d: %d records, want %d; warnings %v", cut, len(recs), want, warnings)
		}
	}
	// A cut line followed by more records is not torn but corrupt.
	mid := bytes.Index(data, []byte(`"seq":10,`))
	bad := append(append([]byte{}, data[:mid+20]...), append([]byte("\n"), data[mid:]...)...)
	_, err := readErr(bad)
	assertFormatError(t, err, 10, "corrupt record")
}

// A record copied twice is an error at the copy's line, not a record
// read (and counted) twice.
func TestEdgeDuplicatedRecord(t *testing.T) {
	log := `{"seq":1,"ts":"2026-11-22T05:20:11Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.4","run_id":"r","tactic":"t"}}
{"seq":2,"ts":"2026-11-22T05:20:11Z","kind":"tool_call","tool_call":{"agent":"a","call_id":"c","name":"echo"}}
{"seq":2,"ts":"2026-11-22T05:20:11Z","kind":"tool_call","tool_call":{"agent":"a","call_id":"c","name":"echo"}}
`
	r := NewReader(strings.NewReader(log), "dup.jsonl")
	var err error
	for err == nil {
		_, err = r.Next()
	}
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Line != 3 || !strings.Contains(fe.Msg, "duplicated") {
		t.Fatalf("got %v, want a duplicated record at dup.jsonl:3", err)
	}
}
