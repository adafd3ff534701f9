package contextmgr

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

func TestEncodingFor(t *testing.T) {
	tests := []struct{ model, want string }{
		{"gpt-4o", EncodingO200k},
		{"openai/gpt-4o-mini", EncodingO200k},
		{"chatgpt-4o-latest", EncodingO200k},
		{"gpt-4.1-mini", EncodingO200k},
		{"gpt-4.5-preview", EncodingO200k},
		{"o1", EncodingO200k},
		{"o3-mini", EncodingO200k},
		{"openai/o4-mini", EncodingO200k},
		{"gpt-5", EncodingO200k},
		{"gpt-5-nano", EncodingO200k},
		{"ft:gpt-4o-mini:acme::abc", EncodingO200k},
		{"gpt-4", EncodingCL100k},
		{"gpt-4-turbo", EncodingCL100k},
		{"azure/gpt-4-32k", EncodingCL100k},
		{"gpt-3.5-turbo", EncodingCL100k},
		{"OpenAI/GPT-3.5-Turbo", EncodingCL100k},
		{"claude-3-5-sonnet", FallbackEncoding},
		{"anthropic/claude-sonnet-4", FallbackEncoding},
		{"meta-llama/Llama-3.1-8B-Instruct", FallbackEncoding},
		{"ollama/llama3.1", FallbackEncoding},
		{"", FallbackEncoding},
	}
	for _, tt := range tests {
		if got := EncodingFor(tt.model); got != tt.want {
			t.Errorf("EncodingFor(%q) = %q, want %q", tt.model, got, tt.want)
		}
	}
	if FallbackEncoding != EncodingO200k {
		t.Errorf("FallbackEncoding = %q, want o200k_base as documented", FallbackEncoding)
	}
}

func TestCountKnownStrings(t *testing.T) {
	tok := NewTokenizer()
	tests := []struct {
		model, text string
		want        int
	}{
		{"gpt-4", "hello world", 2},
		{"gpt-4o", "hello world", 2},
		{"gpt-4", "tiktoken is great!", 6}, // [83 1609 5963 374 2294 0] in cl100k_base
		{"gpt-4", "", 0},
		{"gpt-4", "<|endoftext|>", 7}, // ordinary text, not the special token
		{"gpt-4o", "<|endoftext|>", 7},
	}
	for _, tt := range tests {
		if got := tok.Count(tt.model, tt.text); got != tt.want {
			t.Errorf("Count(%q, %q) = %d, want %d", tt.model, tt.text, got, tt.want)
		}
	}
	// The two encodings really differ on CJK text.
	text := strings.Repeat("日本語のテキスト", 20)
	if a, b := tok.Count("gpt-4", text), tok.Count("gpt-4o", text); a == b {
		t.Errorf("cl100k and o200k gave the same count %d for CJK text; is the encoding chosen per model?", a)
	}
}

func TestCountSpecialTokensDoNotPanic(t *testing.T) {
	tok := NewTokenizer()
	m := &dialog.Message{Role: dialog.RoleUser, Content: "a <|endoftext|> b <|fim_prefix|><|im_start|>"}
	if n := tok.CountMessage("gpt-4o", m); n <= MessageOverhead {
		t.Errorf("CountMessage = %d, want more than the overhead", n)
	}
}

func TestCharTokenizer(t *testing.T) {
	tok := NewCharTokenizer(4)
	for _, tt := range []struct {
		text string
		want int
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"héllo wö", 2}, {"日本語日本", 2}} {
		if got := tok.Count("any", tt.text); got != tt.want {
			t.Errorf("Count(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
	if got := NewCharTokenizer(0).Count("any", "abc"); got != 3 {
		t.Errorf("NewCharTokenizer(0).Count(abc) = %d, want 3 (n < 1 counts as 1)", got)
	}
}

func TestCountMessageParts(t *testing.T) {
	tok := NewCharTokenizer(1)
	m := &dialog.Message{
		Role:    dialog.RoleAssistant,
		Content: "hello", // 5
		FunctionCalls: []dialog.FunctionCall{
			{ID: "1", Name: "search", Arguments: []byte(`{"q":"x"}`)},           // 6 + 9
			{ID: "2", Name: "fetch", Result: "ignored: sent as a tool message"}, // 5
		},
	}
	if got, want := tok.CountMessage("gpt-4o", m), MessageOverhead+5+6+9+5; got != want {
		t.Errorf("CountMessage = %d, want %d", got, want)
	}
	parts := &dialog.Message{Role: dialog.RoleUser, Parts: []dialog.Part{
		{Type: dialog.PartText, Text: "ab"},
		{Type: dialog.PartText, Text: "cd"},
	}}
	if got, want := tok.CountMessage("gpt-4o", parts), MessageOverhead+5; got != want { // "ab\ncd"
		t.Errorf("CountMessage(parts) = %d, want %d", got, want)
	}
	if got := tok.CountMessage("gpt-4o", nil); got != 0 {
		t.Errorf("CountMessage(nil) = %d, want 0", got)
	}
}

func TestMemoSameMessage(t *testing.T) {
	tok := NewTokenizer()
	m := &dialog.Message{Role: dialog.RoleUser, Content: "The quick brown fox jumps over the lazy dog."}
	first := tok.CountMessage("gpt-4o", m)
	s1 := tok.Stats()
	second := tok.CountMessage("openai/gpt-4o-mini", m) // same encoding
	s2 := tok.Stats()
	if first != second {
		t.Fatalf("counts differ: %d then %d", first, second)
	}
	if s1.Texts != 1 || s1.Tokenized != int64(first-MessageOverhead) {
		t.Errorf("after the first count: %+v, want 1 text of %d tokens", s1, first-MessageOverhead)
	}
	if s2.Texts != s1.Texts || s2.Tokenized != s1.Tokenized || s2.MemoHits != 1 || s2.Calls != 2 {
		t.Errorf("after the second count: %+v, want no new work, 1 memo hit, 2 calls", s2)
	}
	// Another encoding is another entry.
	tok.CountMessage("gpt-4", m)
	if s := tok.Stats(); s.Texts != 2 {
		t.Errorf("after counting for cl100k: Texts = %d, want 2", s.Texts)
	}
	// An equal but distinct message is a memo entry of its own (the key
	// is the pointer), whose text is not tokenized again.
	c := *m
	s3 := tok.Stats()
	if got := tok.CountMessage("gpt-4o", &c); got != first {
		t.Errorf("a copy counts %d, want %d", got, first)
	}
	if s := tok.Stats(); s.Texts != s3.Texts || s.Tokenized != s3.Tokenized || s.MemoHits != s3.MemoHits {
		t.Errorf("after counting a copy: %+v, want no new work and no memo hit (before: %+v)", s, s3)
	}
}

func TestMemoSharedAcrossForks(t *testing.T) {
	d, err := dialog.New("agent")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := d.PutText(strings.Repeat("word ", 10+i)); err != nil {
			t.Fatal(err)
		}
	}
	a, err := d.Fork(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Fork(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	tok := NewTokenizer()
	want := 0
	for _, m := range d.Messages() {
		want += tok.CountMessage("gpt-4o", m) - MessageOverhead
	}
	work := tok.Stats().Tokenized
	if work != int64(want) {
		t.Fatalf("Tokenized = %d, want %d", work, want)
	}
	for _, f := range []*dialog.Dialog{a, b} {
		for _, m := range f.Messages() {
			tok.CountMessage("gpt-4o", m)
		}
	}
	if s := tok.Stats(); s.Tokenized != work || s.MemoHits != int64(a.Len()+b.Len()) {
		t.Errorf("counting the forks: %+v, want no new work and %d memo hits", s, a.Len()+b.Len())
	}
}

func TestMemoConcurrent(t *testing.T) {
	tok := NewTokenizer()
	msgs := make([]*dialog.Message, 50)
	for i := range msgs {
		msgs[i] = &dialog.Message{Role: dialog.RoleUser, Content: strconv.Itoa(i) + strings.Repeat(" concurrent counting", 1+i%7)}
	}
	want := make([]int, len(msgs))
	for i, m := range msgs {
		want[i] = NewTokenizer().CountMessage("gpt-4o", m)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 16*len(msgs))
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range msgs {
				i := (k + g) % len(msgs)
				if got := tok.CountMessage("gpt-4o", msgs[i]); got != want[i] {
					errs <- "wrong count"
				}
				tok.Count("gpt-4", "side work "+strconv.Itoa(g*len(msgs)+k)) // each its own text
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	s := tok.Stats()
	if texts := s.Texts - 16*int64(len(msgs)); texts != int64(len(msgs)) {
		t.Errorf("messages tokenized %d times, want %d (once each)", texts, len(msgs))
	}
	if s.MemoHits != 15*int64(len(msgs)) {
		t.Errorf("MemoHits = %d, want %d", s.MemoHits, 15*len(msgs))
	}
}

func TestMemoDropsCollectedMessages(t *testing.T) {
	tok := NewCharTokenizer(1)
	func() {
		for i := range 100 {
			tok.CountMessage("gpt-4o", &dialog.Message{Content: strings.Repeat("x", i+1)})
		}
	}()
	if n := tok.memoLen(); n != 100 {
		t.Fatalf("memo has %d entries, want 100", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for tok.memoLen() > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := tok.memoLen(); n != 0 {
		t.Errorf("memo still has %d entries after their messages were collected", n)
	}
}

func TestNoMemoRecounts(t *testing.T) {
	tok := NewCharTokenizer(1)
	tok.noMemo = true
	m := &dialog.Message{Content: "abc"}
	tok.CountMessage("gpt-4o", m)
	tok.CountMessage("gpt-4o", m)
	if s := tok.Stats(); s.Texts != 2 || s.MemoHits != 0 || tok.memoLen() != 0 {
		t.Errorf("noMemo: %+v, memo %d; want 2 texts, no hits, empty memo", s, tok.memoLen())
	}
}

func TestImageTokens(t *testing.T) {
	tests := []struct{ w, h, want int }{
		{1, 1, 85 + 170},
		{512, 512, 85 + 170},
		{513, 512, 85 + 2*170},
		{1024, 1024, 85 + 4*170}, // scaled to 768x768: 2x2 tiles
		{2048, 4096, 1105},       // OpenAI's example: 768x1536, 6 tiles
		{4096, 2048, 1105},
		{1, 10000, 85 + 4*170}, // 1x2048 then 1x2048 (short side < 768): 1x4 tiles
		{0, 0, 765},
		{-5, 10, 765},
	}
	for _, tt := range tests {
		if got := ImageTokens(tt.w, tt.h); got != tt.want {
			t.Errorf("ImageTokens(%d, %d) = %d, want %d", tt.w, tt.h, got, tt.want)
		}
	}
}

func encodePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func webpVP8L(w, h int) []byte {
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f")
	b = binary.LittleEndian.AppendUint32(b, uint32(w-1)|uint32(h-1)<<14)
	return append(b, make([]byte, 16)...)
}

func webpVP8X(w, h int) []byte {
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00")
	b = append(b, byte(w-1), byte((w-1)>>8), byte((w-1)>>16), byte(h-1), byte((h-1)>>8), byte((h-1)>>16))
	return append(b, make([]byte, 8)...)
}

func TestCountMessageImages(t *testing.T) {
	var jpg, gf bytes.Buffer
	if err := jpeg.Encode(&jpg, image.NewGray(image.Rect(0, 0, 1000, 1000)), nil); err != nil {
		t.Fatal(err)
	}
	if err := gif.Encode(&gf, image.NewPaletted(image.Rect(0, 0, 600, 400), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	onePx := encodePNG(t, 1, 1)
	big := encodePNG(t, 2048, 4096)
	tests := []struct {
		name string
		img  dialog.Image
		want int
	}{
		{"png 1x1", dialog.Image{MIME: "image/png", Data: onePx}, 85 + 170},
		{"png 2048x4096", dialog.Image{MIME: "image/png", Data: big}, 1105},
		{"jpeg 1000x1000", dialog.Image{MIME: "image/jpeg", Data: jpg.Bytes()}, 765},
		{"gif 600x400", dialog.Image{MIME: "image/gif", Data: gf.Bytes()}, 85 + 2*170},
		{"webp lossless 1000x300", dialog.Image{MIME: "image/webp", Data: webpVP8L(1000, 300)}, 85 + 2*170},
		{"webp extended 3000x100", dialog.Image{MIME: "image/webp", Data: webpVP8X(3000, 100)}, 85 + 4*170},
		{"data URL 1x1", dialog.Image{URL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(onePx)}, 85 + 170},
		{"remote URL", dialog.Image{URL: "https://example.com/cat.png"}, 765},
		{"damaged", dialog.Image{MIME: "image/png", Data: onePx[:12]}, 765},
		{"not an image", dialog.Image{Data: []byte("hello")}, 765},
	}
	tok := NewCharTokenizer(1)
	for _, tt := range tests {
		m := &dialog.Message{Role: dialog.RoleUser, Modality: dialog.ModalityImage, Parts: []dialog.Part{
			{Type: dialog.PartText, Text: "look"},
			{Type: dialog.PartImage, Image: &tt.img},
		}}
		if got, want := tok.CountMessage("gpt-4o", m), MessageOverhead+4+tt.want; got != want {
			t.Errorf("%s: CountMessage = %d, want %d", tt.name, got, want)
		}
	}
}

// A long run of letters (DNA, base64) is counted in linear time, to
// within a token per kilobyte of the run; text without such runs is
// counted exactly as tiktoken counts it.
func TestLongLetterRuns(t *testing.T) {
	e, err := encoding(EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	dna := strings.Repeat("ACGTTGCAAGCTTAGC", 1024) // 16 KB, one piece
	for _, text := range []string{
		"plain words, " + strings.Repeat("x", maxRun) + " and more",
		strings.Repeat("Grüße aus Köln ", 500),
		"id: " + strings.Repeat("é", maxRun/2) + "!",
	} {
		if got, want := len(encode(e, text)), len(e.EncodeOrdinary(text)); got != want {
			t.Errorf("%.20q...: %d tokens, tiktoken %d", text, got, want)
		}
	}
	for _, text := range []string{dna, "Sequence: " + dna + " (end)", strings.Repeat("ü", 6000)} {
		got, want := len(encode(e, text)), len(e.EncodeOrdinary(text))
		if slack := len(text)/maxRun + 1; got < want || got > want+slack {
			t.Errorf("%.20q... (%d bytes): %d tokens, tiktoken %d: want within %d above", text, len(text), got, want, slack)
		}
	}
	// A cut is a suffix of the text within its budget.
	tok := NewTokenizer()
	if kept := tok.tail(EncodingO200k, dna, 100); !strings.HasSuffix(dna, kept) || tok.count(EncodingO200k, kept) > 101 || kept == "" {
		t.Errorf("tail of a long run: %d bytes", len(kept))
	}
}

// Preload builds the encoding a model's counts use, so that the first
// count does not.
func TestPreload(t *testing.T) {
	built := func(name string) bool {
		encodingsMu.Lock()
		e := encodings[name]
		encodingsMu.Unlock()
		if e == nil {
			return false
		}
		done := make(chan struct{})
		go func() { e.once.Do(func() {}); close(done) }() // returns at once only when built
		<-done
		return e.enc != nil
	}
	enc := EncodingFor("openai/o3-mini")
	Preload("openai/o3-mini")
	if !built(enc) {
		t.Fatalf("the encoding %s is not built after Preload", enc)
	}
}

// TestCopiesCountedOnce checks that a copy of a counted message (a new
// pointer, as a conversation's rebuilt history holds) is counted the same
// without being tokenized again.
func TestCopiesCountedOnce(t *testing.T) {
	tok := NewTokenizer()
	var msgs []*dialog.Message
	for i := range 50 {
		msgs = append(msgs, &dialog.Message{Role: dialog.RoleUser, Content: fmt.Sprintf("message %d: %s", i, strings.Repeat("some words ", i))})
	}
	want := make([]int, len(msgs))
	for i, m := range msgs {
		want[i] = tok.CountMessage("openai/gpt-4o", m)
	}
	texts := tok.Stats().Texts
	for i, m := range msgs {
		c := *m
		if got := tok.CountMessage("openai/gpt-4o", &c); got != want[i] {
			t.Fatalf("copy of message %d counts %d, want %d", i, got, want[i])
		}
	}
	if n := tok.Stats().Texts - texts; n != 0 {
		t.Errorf("%d texts tokenized again for copies", n)
	}
	// Another encoding is counted afresh, and right.
	fresh := NewTokenizer()
	for i, m := range msgs {
		c := *m
		if got, want := tok.CountMessage("openai/gpt-4", &c), fresh.CountMessage("openai/gpt-4", msgs[i]); got != want {
			t.Fatalf("message %d in cl100k: %d, want %d", i, got, want)
		}
	}
}

// TestTextCountsBounded checks that the texts remembered stay within two
// generations of maxTextBytes, the newest found and the oldest dropped.
func TestTextCountsBounded(t *testing.T) {
	var c textCounts
	text := strings.Repeat("x", 1<<20)
	key := func(i int) textKey { return textKey{EncodingO200k, fmt.Sprintf("%d%s", i, text)} }
	for i := range 60 {
		c.put(key(i), i)
		if n, ok := c.get(key(i)); !ok || n != i {
			t.Fatalf("text %d: got %d, %v", i, n, ok)
		}
		held := 0
		for k := range c.cur {
			held += len(k.text)
		}
		for k := range c.old {
			held += len(k.text)
		}
		if held > 2*maxTextBytes {
			t.Fatalf("after %d texts: %d bytes held, more than %d", i+1, held, 2*maxTextBytes)
		}
	}
	if _, ok := c.get(key(0)); ok {
		t.Error("the oldest text is still held")
	}
	big := textKey{EncodingO200k, strings.Repeat("y", maxTextBytes+1)}
	c.put(big, 1)
	if _, ok := c.get(big); ok {
		t.Error("a text larger than a generation is held")
	}
}

// TestTextCountsShortTextsBounded checks that many short texts stay
// within the bound too: their entries, not their bytes, are what a
// textCounts holds.
func TestTextCountsShortTextsBounded(t *testing.T) {
	var c textCounts
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 1_500_000 {
		c.put(textKey{EncodingO200k, strconv.Itoa(i)}, i)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Two generations of maxTextBytes, with room for the maps' growth.
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 3*maxTextBytes {
		t.Errorf("%d entries hold %d MB, more than %d MB", len(c.cur)+len(c.old), held>>20, 3*maxTextBytes>>20)
	}
	if n, ok := c.get(textKey{EncodingO200k, strconv.Itoa(1_499_999)}); !ok || n != 1_499_999 {
		t.Errorf("the newest text: %d, %v", n, ok)
	}
	runtime.KeepAlive(&c)
}

// BenchmarkTokenizerLongRun counts 64 KB of one run of letters: our
// encode, in parts, beside tiktoken's EncodeOrdinary on the whole run.
func BenchmarkTokenizerLongRun(b *testing.B) {
	e, err := encoding(EncodingO200k)
	if err != nil {
		b.Fatal(err)
	}
	dna := strings.Repeat("ACGTTGCAAGCTTAGC", 4096)
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(dna)))
		for b.Loop() {
			encode(e, dna)
		}
	})
	b.Run("tiktoken-whole", func(b *testing.B) {
		b.SetBytes(int64(len(dna)))
		for b.Loop() {
			e.EncodeOrdinary(dna)
		}
	})
}
