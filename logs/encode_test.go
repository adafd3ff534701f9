package logs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// stdEncode encodes rec as the reference does: encoding/json's Encoder
// without HTML escaping.
func stdEncode(rec *Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(rec)
	return bytes.ToValidUTF8(buf.Bytes(), []byte("\ufffd")), err
}

// checkEncode compares encodeRecord with encoding/json on rec, appending
// to a non-empty buffer: the same bytes, or the same error and the buffer
// unchanged.
func checkEncode(t testing.TB, rec *Record, extraCap int) {
	t.Helper()
	want, wantErr := stdEncode(rec)
	const prefix = "prefix:"
	b := append(make([]byte, 0, len(prefix)+extraCap), prefix...)
	got, err := encodeRecord(b, rec)
	switch {
	case wantErr != nil && err == nil:
		t.Fatalf("encoding/json fails with %v, encodeRecord does not:\n%s", wantErr, got)
	case wantErr == nil && err != nil:
		t.Fatalf("encodeRecord: %v\nencoding/json: %s", err, want)
	case err != nil:
		if err.Error() != wantErr.Error() {
			t.Errorf("encodeRecord error %q, encoding/json error %q", err, wantErr)
		}
		if string(got) != prefix {
			t.Fatalf("encodeRecord returned %q on error, want the buffer unchanged", got)
		}
	case string(got[len(prefix):]) != string(want) || string(got[:len(prefix)]) != prefix:
		t.Fatalf("encodeRecord differs from encoding/json\n got: %s\nwant: %s", got, want)
	}
}

var (
	fillStrings = []string{
		"", "a", "plain ascii text", "solver", "0123456789abcdef",
		`<a href="x">&amp;</a>`, `say "hi" \ bye \\`, "tab\there\nnewline\r\n",
		"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f" +
			"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f",
		"\u2028\u2029", "line\u2028sep", "héllo 世界 🎉", "\ufffd",
		"\xff\xfe", "a\xc3", "\xed\xa0\x80 surrogate", "\xf0\x9f\x8e",
		"exactly8", "sixteen bytes!!!", strings.Repeat("long safe run ", 20) + `"` + strings.Repeat("x", 9),
	}
	fillRunes  = []rune{'a', 'é', '世', '🎉', '\u2028', '\u2029', '\ufffd', '"', '\\', '<', '&', '\n', 0, 0x1f, 0x7f}
	fillFloats = []float64{
		0, math.Copysign(0, -1), 1e-7, 1e-6, math.Nextafter(1e-6, 0), 123.456, 1e20, 1e21,
		math.Nextafter(1e21, 0), -1e21, -2.5e-10, 0.1, 1 / 3.0, 1 << 53, float64(math.MaxInt64),
		-42, 5e-324, math.MaxFloat64, 1234.5, 0.000213,
	}
	fillInts = []int64{0, 1, -1, 42, -123456789, 1 << 53, math.MaxInt64, math.MinInt64}
	fillRaws = []string{
		`{ "a" : [1, 2] , "b":"<x>" }`, ` 1 `, "[ ]", "null", "true", `-0.5e+10`,
		"{\n\t\"k\": \"v \\\" \\u00e9\",\n\t\"n\": {}\n}", "\"a\u2028b & é\"", "\"bad \xff utf8\"",
	}
	badRaws   = []string{"{", `{"a":}`, "  ", "[1,]", `"open`, "1 2"}
	fillZones = []*time.Location{
		time.UTC, time.FixedZone("", 0), time.FixedZone("IST", 5*3600+1800),
		time.FixedZone("PST", -8*3600), time.FixedZone("odd", 3600+61),
	}
	fillNanos = []int{0, 1, 10, 100_000_000, 123_456_789, 999_999_999}
)

// A filler fills values of any type with random contents. It walks the
// types by reflection, so a field added later to a record type (or to
// the dialog types in it) is filled too, and an encoder that forgets it
// fails TestEncodeRecordMatchesEncodingJSON.
type filler struct {
	t   testing.TB
	r   *rand.Rand
	bad bool // now and then produce values encoding/json rejects
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// fill sets v to its zero value or to a random one.
func (f *filler) fill(v reflect.Value, depth int) {
	if f.r.IntN(4) == 0 || depth > 6 {
		v.SetZero()
		return
	}
	f.fillValue(v, depth)
}

// fillValue sets v to a random value; its parts may still be zero.
func (f *filler) fillValue(v reflect.Value, depth int) {
	t := v.Type()
	switch t {
	case timeType:
		v.Set(reflect.ValueOf(f.time()))
		return
	case rawType:
		v.Set(reflect.ValueOf(f.raw()))
		return
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(f.string())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := f.int()
		if v.OverflowInt(n) {
			n = int64(int8(n))
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := uint64(f.int())
		if v.OverflowUint(n) {
			n = uint64(uint8(n))
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		x := f.float()
		if v.OverflowFloat(x) {
			x = float64(float32(x))
		}
		v.SetFloat(x)
	case reflect.Slice:
		n := f.r.IntN(4)
		v.Set(reflect.MakeSlice(t, n, n))
		for i := range n {
			f.fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		n := f.r.IntN(6)
		if f.r.IntN(10) == 0 {
			n = 20 + f.r.IntN(10)
		}
		v.Set(reflect.MakeMapWithSize(t, n))
		for range n {
			k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
			f.fill(k, depth+1)
			f.fill(e, depth+1)
			v.SetMapIndex(k, e)
		}
	case reflect.Pointer:
		v.Set(reflect.New(t.Elem()))
		f.fillValue(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				f.fill(v.Field(i), depth+1)
			}
		}
	default:
		f.t.Fatalf("filler: no way to fill a %s", t)
	}
}

func (f *filler) string() string {
	if f.r.IntN(2) == 0 {
		return fillStrings[f.r.IntN(len(fillStrings))]
	}
	var s strings.Builder
	for range 1 + f.r.IntN(5) {
		switch f.r.IntN(4) {
		case 0:
			s.WriteString(fillStrings[f.r.IntN(len(fillStrings))])
		case 1:
			for range f.r.IntN(20) {
				s.WriteByte(byte(' ' + f.r.IntN(0x7f-' ')))
			}
		case 2:
			s.WriteByte(byte(f.r.IntN(256)))
		case 3:
			s.WriteRune(fillRunes[f.r.IntN(len(fillRunes))])
		}
	}
	return s.String()
}

func (f *filler) int() int64 {
	if f.r.IntN(2) == 0 {
		return fillInts[f.r.IntN(len(fillInts))]
	}
	return f.r.Int64N(1<<20) - 1<<10
}

func (f *filler) float() float64 {
	if f.bad && f.r.IntN(100) == 0 {
		return []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[f.r.IntN(3)]
	}
	if f.r.IntN(2) == 0 {
		return fillFloats[f.r.IntN(len(fillFloats))]
	}
	return f.r.NormFloat64() * math.Pow(10, float64(f.r.IntN(60)-30))
}

func (f *filler) raw() json.RawMessage {
	switch n := f.r.IntN(12); {
	case f.bad && n == 0:
		return json.RawMessage(badRaws[f.r.IntN(len(badRaws))])
	case n == 1:
		return nil
	case n == 2:
		return json.RawMessage{}
	}
	return json.RawMessage(fillRaws[f.r.IntN(len(fillRaws))])
}

func (f *filler) time() time.Time {
	if f.bad && f.r.IntN(50) == 0 {
		return []time.Time{
			time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC),
			time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600)),
		}[f.r.IntN(3)]
	}
	if f.r.IntN(10) == 0 {
		return time.Now() // with a monotonic reading
	}
	year := 1970 + f.r.IntN(130)
	if f.r.IntN(10) == 0 {
		year = f.r.IntN(10000)
	}
	return time.Date(year, time.Month(1+f.r.IntN(12)), 1+f.r.IntN(28),
		f.r.IntN(24), f.r.IntN(60), f.r.IntN(60), fillNanos[f.r.IntN(len(fillNanos))]+f.r.IntN(2)*f.r.IntN(1e9),
		fillZones[f.r.IntN(len(fillZones))])
}

var allKinds = []Kind{
	KindRunStart, KindRunEnd, KindDialogOpen, KindFork, KindMessage,
	KindModelCall, KindToolCall, KindContext, KindTacticStart, KindTacticEnd,
	KindDeclarations,
}

// record returns a random record of the given kind with its payload set
// (but now and then missing) and now and then other payloads too.
func (f *filler) record(kind Kind) *Record {
	rec := new(Record)
	v := reflect.ValueOf(rec).Elem()
	f.fillValue(v, 0)
	rec.Kind = kind
	if f.r.IntN(20) == 0 {
		rec.Kind = Kind(f.string())
	}
	t := v.Type()
	for i := range t.NumField() {
		fv := v.Field(i)
		if fv.Kind() != reflect.Pointer {
			continue
		}
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		switch {
		case name == string(kind) && f.r.IntN(50) != 0:
			fv.Set(reflect.New(fv.Type().Elem()))
			f.fillValue(fv.Elem(), 1)
		case f.r.IntN(10) != 0:
			fv.SetZero()
		}
	}
	return rec
}

func TestEncodeRecordMatchesEncodingJSON(t *testing.T) {
	checkEncode(t, nil, 0)
	for _, bad := range []bool{false, true} {
		t.Run(fmt.Sprintf("bad=%v", bad), func(t *testing.T) {
			f := &filler{t: t, r: rand.New(rand.NewPCG(1, 2)), bad: bad}
			n, failed := 6000, 0
			if bad {
				n = 3000
			}
			deferred, frequent := 0, 0
			for i := range n {
				rec := f.record(allKinds[i%len(allKinds)])
				if _, err := stdEncode(rec); err != nil {
					failed++
				}
				checkEncode(t, rec, f.r.IntN(2)*4096)
				switch rec.Kind {
				case KindDialogOpen, KindFork, KindMessage, KindModelCall, KindToolCall, KindContext:
					frequent++
					deferred += checkEncodable(t, rec)
				default:
					checkEncodable(t, rec)
				}
			}
			// Most records of the frequent kinds are left to the flush.
			if !bad && deferred < frequent/2 {
				t.Errorf("only %d of %d records of the frequent kinds are encodable later", deferred, frequent)
			}
			// Both the error and the success paths must be exercised.
			if bad && (failed < n/20 || failed > n/2) || !bad && failed > 0 {
				t.Errorf("%d of %d records fail to encode", failed, n)
			}
		})
	}
}

// checkEncodable checks that a record encodable leaves to the flush does
// encode, with the time Write gives it, and returns 1 if it is one.
func checkEncodable(t testing.TB, rec *Record) int {
	t.Helper()
	if rec == nil || !encodable(rec) {
		return 0
	}
	r := *rec
	r.Time = time.Now().UTC()
	if _, err := encodeRecord(nil, &r); err != nil {
		t.Fatalf("encodable, yet encoding fails: %v\n%+v", err, r)
	}
	return 1
}

func TestEncodeRecordErrors(t *testing.T) {
	msg := func(m dialog.Message) *Record { return &Record{Kind: KindMessage, Message: &m} }
	bad := json.RawMessage("{")
	tests := []struct {
		name string
		rec  *Record
	}{
		{"NaN latency", &Record{Kind: KindModelCall, ModelCall: &ModelCall{LatencyMS: math.NaN()}}},
		{"Inf usd", msg(dialog.Message{USD: math.Inf(1)})},
		{"-Inf vector", msg(dialog.Message{Vectors: []float64{1, math.Inf(-1)}})},
		{"NaN logprob", msg(dialog.Message{Logprobs: []dialog.TokenLogprob{{TopLogprobs: []dialog.TokenLogprob{{Logprob: math.NaN()}}}}})},
		{"NaN retry", &Record{Kind: KindModelCall, ModelCall: &ModelCall{Error: &CallError{RetryAfterMS: math.NaN()}}}},
		{"NaN tool latency", &Record{Kind: KindToolCall, ToolCall: &ToolCall{LatencyMS: math.NaN()}}},
		{"bad parsed", msg(dialog.Message{Parsed: bad})},
		{"bad arguments", msg(dialog.Message{FunctionCalls: []dialog.FunctionCall{{Arguments: bad}}})},
		{"bad params", &Record{Kind: KindModelCall, ModelCall: &ModelCall{Params: bad}}},
		{"bad tool arguments", &Record{Kind: KindToolCall, ToolCall: &ToolCall{Arguments: bad}}},
		{"bad config", &Record{Kind: KindRunStart, RunStart: &RunStart{Config: bad}}},
		{"NaN tactic cost", &Record{Kind: KindTacticEnd, TacticEnd: &TacticEnd{Cost: dialog.Cost{USD: math.NaN()}}}},
		{"year 10000", &Record{Kind: KindFork, Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Fork: &dialog.TreeNode{}}},
		{"zone +25h", &Record{Kind: KindFork, Time: time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("", 25*3600))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := stdEncode(tt.rec); err == nil {
				t.Fatal("encoding/json encodes the record")
			}
			// Write sets the time, so only the other failures matter to it.
			if encodable(tt.rec) && tt.rec.Time.IsZero() {
				t.Error("encodable leaves the record to the flush")
			}
			for _, capacity := range []int{4, 4096} {
				b := append(make([]byte, 0, capacity), "keep"...)
				got, err := encodeRecord(b, tt.rec)
				if err == nil {
					t.Fatalf("no error; encoded %s", got)
				}
				if string(got) != "keep" {
					t.Errorf("got %q on error, want %q", got, "keep")
				}
				if string(b) != "keep" {
					t.Errorf("buffer changed to %q", b)
				}
			}
			checkEncode(t, tt.rec, 0)
		})
	}
}

// A cycle through TopLogprobs fails as it does in encoding/json instead of
// overflowing the stack.
func TestEncodeRecordLogprobCycle(t *testing.T) {
	lps := make([]dialog.TokenLogprob, 1)
	lps[0].TopLogprobs = lps
	got, err := encodeRecord(nil, &Record{Kind: KindMessage, Message: &dialog.Message{Logprobs: lps}})
	if err == nil || len(got) != 0 {
		t.Fatalf("encodeRecord = %q, %v; want an error", got, err)
	}
}

func benchRecords() map[string]*Record {
	ts := time.Date(2025, 6, 1, 12, 30, 45, 123456789, time.UTC)
	return map[string]*Record{
		"model_call": {Seq: 42, Time: ts, Kind: KindModelCall, Dialog: "0123456789abcdef", ModelCall: &ModelCall{
			Agent: "solver", Provider: "openai", Model: "openai/gpt-4o-mini", Call: 3, Attempt: 1,
			Alias: "main", Turn: 2, RequestDigest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			Params: json.RawMessage(`{"temperature":0.2,"max_tokens":512}`),
			Reply:  &MessageRef{Dialog: "0123456789abcdef", Index: 4},
			Usage:  dialog.Usage{InputTokens: 1200, OutputTokens: 40}, USD: 0.000213, LatencyMS: 834.25,
		}},
		"message": {Seq: 43, Time: ts, Kind: KindMessage, Dialog: "0123456789abcdef", Index: 4, Prompt: "prompts/solve", Message: &dialog.Message{
			Role: dialog.RoleAssistant, Name: "solver", Content: "The answer is 4, since 2 + 2 = 4.\nAnything else?",
			Usage: dialog.Usage{InputTokens: 1200, OutputTokens: 40}, USD: 0.000213, Model: "openai/gpt-4o-mini",
		}},
		"fork": {Seq: 44, Time: ts, Kind: KindFork, Dialog: "fedcba9876543210", Fork: &dialog.TreeNode{
			ID: "fedcba9876543210", Owner: "solver", Alias: "branch", ParentID: "0123456789abcdef",
			SplitPoint: 5, ParentLen: 5, Depth: 1,
		}},
	}
}

func TestEncodeRecordAllocs(t *testing.T) {
	recs := benchRecords()
	recs["message"].Message.Metadata = map[string]string{"finish_reason": "stop", "id": "resp_1"}
	for name, rec := range recs {
		checkEncode(t, rec, 0)
		buf := make([]byte, 0, 4096)
		var err error
		allocs := testing.AllocsPerRun(100, func() {
			buf, err = encodeRecord(buf[:0], rec)
		})
		if err != nil {
			t.Fatal(err)
		}
		if allocs != 0 {
			t.Errorf("%s: %v allocations per record, want 0", name, allocs)
		}
	}
}

func FuzzEncodeRecordString(f *testing.F) {
	f.Add("hello", 0.25)
	f.Add(`<a href="x">&amp;</a>`, 1e21)
	f.Add("\x00\x1f\"\\\u2028\u2029\xff", -2.5e-10)
	f.Add(`{ "a" : [1, 2] }`, math.Copysign(0, -1))
	f.Add("héllo 世界 🎉 "+strings.Repeat("abcdefgh", 3), 1e-7)
	ts := time.Date(2025, 6, 1, 12, 30, 45, 123456789, time.FixedZone("IST", 5*3600+1800))
	f.Fuzz(func(t *testing.T, s string, usd float64) {
		recs := []*Record{
			{Seq: 1, Time: ts, Kind: KindMessage, Dialog: s, Index: 2, Prompt: s, Message: &dialog.Message{
				Role: dialog.Role(s), Content: s, Name: s, Parts: []dialog.Part{{Type: dialog.PartText, Text: s}},
				Metadata: map[string]string{s: s, "k": s}, USD: usd, Vectors: []float64{usd, -usd},
				Logprobs: []dialog.TokenLogprob{{Token: s, Logprob: usd}},
			}},
			{Seq: 2, Time: ts, Kind: KindModelCall, ModelCall: &ModelCall{
				Agent: s, Model: s, RequestDigest: s, USD: usd, LatencyMS: usd,
				Error: &CallError{Type: s, Message: s, RetryAfterMS: usd},
			}},
			{Seq: 3, Time: ts, Kind: KindFork, Fork: &dialog.TreeNode{ID: s, Owner: s, ChildrenIDs: []string{s, s}}},
			// s as JSON: usually invalid, and then both must fail.
			{Seq: 4, Time: ts, Kind: KindToolCall, ToolCall: &ToolCall{Agent: s, Arguments: json.RawMessage(s), Result: s}},
			{Seq: 5, Time: ts, Kind: KindMessage, Message: &dialog.Message{Parsed: json.RawMessage(s)}},
		}
		for _, rec := range recs {
			checkEncode(t, rec, 0)
		}
	})
}

func BenchmarkEncodeRecord(b *testing.B) {
	recs := benchRecords()
	for _, name := range []string{"model_call", "message", "fork"} {
		rec := recs[name]
		b.Run(name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 4096)
			for b.Loop() {
				var err error
				if buf, err = encodeRecord(buf[:0], rec); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
		b.Run(name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			for b.Loop() {
				buf.Reset()
				if err := enc.Encode(rec); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}
