package contextmgr

import (
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
	"unsafe"
	"weak"

	"github.com/lllm-go/lllm/dialog"
	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// The tiktoken encodings a Tokenizer uses.
const (
	EncodingO200k  = "o200k_base"  // gpt-4o, gpt-4.1, gpt-4.5, gpt-5, the o-series
	EncodingCL100k = "cl100k_base" // gpt-4, gpt-3.5
)

// FallbackEncoding is the encoding used for models that are not OpenAI
// models (Claude, Gemini, Llama, Mistral, Qwen, ...) and for unknown models.
// Their own tokenizers differ, so counts for them are an approximation;
// the default manager's safety buffer is there to absorb the difference.
const FallbackEncoding = EncodingO200k

// MessageOverhead is the number of tokens added to every message for its
// framing (role and separators), as in OpenAI's chat format, where each
// message costs about 4 tokens beyond its content.
const MessageOverhead = 4

// The shared encoding cache. Building an encoding costs 40-180 ms, so each
// one is built once per process; a built encoding is safe for concurrent
// use.
var (
	loaderOnce  sync.Once
	encodingsMu sync.Mutex
	encodings   = map[string]*sharedEnc{}
)

type sharedEnc struct {
	once sync.Once
	enc  *tiktoken.Tiktoken
	err  error
}

// encoding returns the process-wide encoding called name, building it on
// first use with the offline BPE loader (the BPE files are embedded; the
// network is never used).
func encoding(name string) (*tiktoken.Tiktoken, error) {
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	encodingsMu.Lock()
	e := encodings[name]
	if e == nil {
		e = &sharedEnc{}
		encodings[name] = e
	}
	encodingsMu.Unlock()
	e.once.Do(func() { e.enc, e.err = tiktoken.GetEncoding(name) })
	return e.enc, e.err
}

// Preload builds the process-wide encoding that model's tokens are counted
// with (see [EncodingFor]), which the first count would build otherwise:
// tens of milliseconds for the larger ones. Call it ahead of timed work.
func Preload(model string) {
	_, _ = encoding(EncodingFor(model))
}

// modelName is the bare, lower-case model name: the part after the last
// "/" of "provider/model", without a fine-tune "ft:" prefix.
func modelName(model string) string {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return strings.TrimPrefix(name, "ft:")
}

// isOSeries reports whether name is an OpenAI reasoning model: "o" followed
// by a digit (o1, o3-mini, o4-mini, ...).
func isOSeries(name string) bool {
	return len(name) >= 2 && name[0] == 'o' && name[1] >= '0' && name[1] <= '9'
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// EncodingFor returns the name of the tiktoken encoding used to count tokens
// for model, given as "provider/model" or as a bare model name:
//
//   - gpt-4o, gpt-4.1, gpt-4.5, gpt-5*, chatgpt-4o, gpt-oss and the o-series
//     (o1, o3, o4-mini, ...): o200k_base;
//   - gpt-4 (other than the above), gpt-3.5 and the OpenAI embedding models:
//     cl100k_base;
//   - everything else, including Claude, Gemini, Llama, Mistral, Qwen and
//     unknown models: [FallbackEncoding] (o200k_base), an approximation for
//     models that are not OpenAI's.
func EncodingFor(model string) string {
	name := modelName(model)
	switch {
	case hasAnyPrefix(name, "gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o", "gpt-oss"), isOSeries(name):
		return EncodingO200k
	case hasAnyPrefix(name, "gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada-002"):
		return EncodingCL100k
	}
	return FallbackEncoding
}

// TokenizerStats counts the work a Tokenizer has done.
type TokenizerStats struct {
	// Calls is the number of Count and CountMessage calls, and of tools
	// counted by CountTools.
	Calls int64
	// MemoHits is the number of messages and tools whose count came from
	// the memo, without tokenizing.
	MemoHits int64
	// Tokenized is the total number of tokens produced by actual
	// tokenization: the work done, including Count calls and the cutting
	// of messages. Memo hits add nothing.
	Tokenized int64
	// Texts is the number of texts actually tokenized.
	Texts int64
}

// A Tokenizer counts tokens with tiktoken and memoises the count of each
// message.
//
// Messages are immutable and shared by pointer between a dialog and its
// forks, so a message's count is remembered per message pointer and
// encoding: counting a growing dialog before every model call tokenizes each
// message once. The memo holds its messages weakly; an entry is dropped when
// its message is garbage collected. A message must not be modified after it
// has been counted.
//
// A Tokenizer is safe for concurrent use. The zero value is ready to use and
// counts with tiktoken. A Tokenizer must not be copied after first use.
type Tokenizer struct {
	charsPerToken int  // > 0: count ceil(runes/charsPerToken) instead of BPE tokens
	noMemo        bool // recount on every call (the benchmark's baseline)

	// byText remembers the counts of message texts, for messages that
	// are new copies of ones counted before (a conversation's history is
	// rebuilt for every turn).
	byText textCounts

	mu    sync.Mutex
	memo  map[memoKey]*memoEntry[dialog.Message]
	tools map[memoKey]*memoEntry[dialog.Function]

	calls, memoHits, tokenized, texts atomic.Int64
}

// memoKey is a memo entry's key: the address of the message or function
// counted, and the encoding. The entry holds its object weakly and is
// used only while that object is alive: an address freed and used again
// before the first object's cleanup ran names another object.
type memoKey struct {
	addr uintptr
	enc  string
}

type memoEntry[T any] struct {
	obj  weak.Pointer[T]
	once sync.Once
	n    int
}

// NewTokenizer returns a Tokenizer that counts with tiktoken. It is cheap:
// the encodings are built once per process and shared by all Tokenizers;
// the memo is the Tokenizer's own.
func NewTokenizer() *Tokenizer { return &Tokenizer{} }

// NewCharTokenizer returns a Tokenizer that counts a text as
// ceil(runes/charsPerToken) tokens, with the same per-message rules and
// memo as a tiktoken Tokenizer. It makes token arithmetic exact in tests.
// A charsPerToken below 1 counts as 1.
func NewCharTokenizer(charsPerToken int) *Tokenizer {
	return &Tokenizer{charsPerToken: max(charsPerToken, 1)}
}

// Stats returns the work done so far.
func (t *Tokenizer) Stats() TokenizerStats {
	return TokenizerStats{
		Calls:     t.calls.Load(),
		MemoHits:  t.memoHits.Load(),
		Tokenized: t.tokenized.Load(),
		Texts:     t.texts.Load(),
	}
}

// Count returns the number of tokens in text for model (see [EncodingFor]).
// Special tokens such as "<|endoftext|>" are counted as ordinary text.
// Counts are remembered by text, as message texts are (see CountMessage).
func (t *Tokenizer) Count(model, text string) int {
	t.calls.Add(1)
	return t.countText(EncodingFor(model), text)
}

// CountMessage returns the number of tokens m costs when sent to model: its
// text (m.Text()), the names and arguments of its function calls,
// [MessageOverhead], and [ImageTokens] for each image. The count is
// memoised per message pointer and encoding. A nil message counts 0.
func (t *Tokenizer) CountMessage(model string, m *dialog.Message) int {
	return t.countMessage(EncodingFor(model), m)
}

func (t *Tokenizer) countMessage(enc string, m *dialog.Message) int {
	if m == nil {
		return 0
	}
	if t.noMemo {
		t.calls.Add(1)
		return t.measure(enc, m)
	}
	return memoised(t, &t.memo, enc, m, func() int { return t.measure(enc, m) })
}

// CountTools returns the number of tokens the declarations of fns cost when
// sent to model: each one's name, description and parameter schema, as
// text, and [MessageOverhead]. Like a message's, a function's count is
// memoised per function pointer and encoding, so a function must not be
// modified after it has been counted. Nil functions count 0.
func (t *Tokenizer) CountTools(model string, fns []*dialog.Function) int {
	return t.countTools(EncodingFor(model), fns)
}

func (t *Tokenizer) countTools(enc string, fns []*dialog.Function) int {
	n := 0
	for _, f := range fns {
		if f == nil {
			continue
		}
		measure := func() int {
			return MessageOverhead + t.count(enc, f.Name) + t.count(enc, f.Description) + t.count(enc, string(f.Parameters))
		}
		if t.noMemo {
			t.calls.Add(1)
			n += measure()
			continue
		}
		n += memoised(t, &t.tools, enc, f, measure)
	}
	return n
}

// memoised returns the memoised count of obj in the encoding enc,
// measuring it once; the entry is dropped once obj is collected. A hit
// costs a map lookup and the load of a weak pointer: weak.Make, which
// searches the object's span for its handle under a lock, is paid once
// per object.
func memoised[T any](t *Tokenizer, memo *map[memoKey]*memoEntry[T], enc string, obj *T, measure func() int) int {
	t.calls.Add(1)
	key := memoKey{addr: uintptr(unsafe.Pointer(obj)), enc: enc}
	t.mu.Lock()
	if *memo == nil {
		*memo = map[memoKey]*memoEntry[T]{}
	}
	e := (*memo)[key]
	if e == nil || e.obj.Value() != obj {
		e = &memoEntry[T]{obj: weak.Make(obj)}
		(*memo)[key] = e
		runtime.AddCleanup(obj, func(e *memoEntry[T]) {
			t.mu.Lock()
			if (*memo)[key] == e { // not yet replaced by an object at the same address
				delete(*memo, key)
			}
			t.mu.Unlock()
		}, e)
	}
	t.mu.Unlock()
	computed := false
	e.once.Do(func() {
		e.n = measure()
		computed = true
	})
	if !computed {
		t.memoHits.Add(1)
	}
	return e.n
}

// memoLen is the number of memo entries, of messages and of tools (for
// tests).
func (t *Tokenizer) memoLen() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.memo) + len(t.tools)
}

// measure counts m without the memo of messages.
func (t *Tokenizer) measure(enc string, m *dialog.Message) int {
	n := MessageOverhead + t.countText(enc, m.Text())
	for _, fc := range m.FunctionCalls {
		n += t.count(enc, fc.Name) + t.count(enc, string(fc.Arguments))
	}
	for _, p := range m.Parts {
		if p.Type == dialog.PartImage && p.Image != nil {
			w, h := imageSize(p.Image)
			n += ImageTokens(w, h)
		}
	}
	return n
}

// count tokenizes text with the encoding called enc and records the work.
func (t *Tokenizer) count(enc, text string) int {
	if text == "" {
		return 0
	}
	var n int
	if t.charsPerToken > 0 {
		n = ceilDiv(utf8.RuneCountInString(text), t.charsPerToken)
	} else if e, err := encoding(enc); err == nil {
		n = len(encode(e, text))
	} else {
		// The encodings are embedded, so this does not happen; if it
		// did, four bytes a token is the usual rule of thumb.
		n = ceilDiv(len(text), 4)
	}
	t.tokenized.Add(int64(n))
	t.texts.Add(1)
	return n
}

// countText is count, remembered by text: a message's text is counted
// once whatever copies of the message are counted later.
func (t *Tokenizer) countText(enc, text string) int {
	if t.noMemo || t.charsPerToken > 0 || text == "" {
		return t.count(enc, text)
	}
	k := textKey{enc, text}
	if n, ok := t.byText.get(k); ok {
		return n
	}
	n := t.count(enc, text)
	t.byText.put(k, n)
	return n
}

// maxTextBytes bounds the text a textCounts remembers in each of its two
// generations, each entry counted with textEntryBytes more: the map's
// entry and the text's allocation, which outweigh short texts (a
// generation of 7-byte texts held 200 MB, not 16).
const (
	maxTextBytes   = 16 << 20
	textEntryBytes = 96
)

type textKey struct{ enc, text string }

// textCounts remembers token counts by text in two generations: when the
// newer holds maxTextBytes of text it becomes the older and the older is
// dropped, so that memory stays bounded while the texts still in use are
// found. It is safe for concurrent use; the zero value is ready.
type textCounts struct {
	mu       sync.Mutex
	cur, old map[textKey]int
	size     int // bytes of the texts in cur, and textEntryBytes an entry
}

func (c *textCounts) get(k textKey) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.cur[k]; ok {
		return n, true
	}
	n, ok := c.old[k]
	if ok {
		c.add(k, n)
	}
	return n, ok
}

func (c *textCounts) put(k textKey, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.add(k, n)
}

func (c *textCounts) add(k textKey, n int) {
	if len(k.text) > maxTextBytes {
		return
	}
	size := len(k.text) + textEntryBytes
	if c.size+size > maxTextBytes {
		c.old, c.cur, c.size = c.cur, nil, 0
	}
	if c.cur == nil {
		c.cur = map[textKey]int{}
	}
	c.cur[k] = n
	c.size += size
}

// tail returns a suffix of text of at most about n tokens, cut on a
// character boundary. The result is usually within n tokens; callers that
// need a guarantee count it. Its cost is proportional to n, not to the
// length of text.
func (t *Tokenizer) tail(enc, text string, n int) string {
	if n <= 0 || text == "" {
		return ""
	}
	if t.charsPerToken > 0 {
		keep := n * t.charsPerToken
		if utf8.RuneCountInString(text) <= keep {
			return text
		}
		i := len(text)
		for ; keep > 0; keep-- {
			_, size := utf8.DecodeLastRuneInString(text[:i])
			i -= size
		}
		return text[i:]
	}
	e, err := encoding(enc)
	if err != nil {
		keep := min(len(text), n*4)
		return trimToRune(text, len(text)-keep)
	}
	// Tokenize a window at the end of text that is large enough to hold
	// more than n tokens, growing it as needed.
	window := 8*n + 64
	for {
		start := trimStart(text, max(0, len(text)-window))
		s := text[start:]
		toks := encode(e, s)
		t.tokenized.Add(int64(len(toks)))
		t.texts.Add(1)
		if len(toks) <= n {
			if start == 0 {
				return text
			}
			window *= 2
			continue
		}
		// Byte-level BPE round-trips exactly, so the last n tokens are
		// the last len(Decode(...)) bytes of s.
		keep := len(e.Decode(toks[len(toks)-n:]))
		return trimToRune(s, len(s)-keep)
	}
}

// maxRun is the longest run of letters that encode hands to tiktoken
// whole. Byte-pair encoding is quadratic in the length of a pre-tokenized
// piece, and a run of letters is one piece: 64 KB of DNA or of base64
// letters took over a second, a megabyte minutes.
const maxRun = 1024

// encode is e.EncodeOrdinary(text), except that a run of letters longer
// than maxRun bytes is encoded maxRun bytes at a time, in linear time. A
// part may take a token more than the whole run would: counts of such
// text are exact to within one token per kilobyte of the run.
func encode(e *tiktoken.Tiktoken, text string) []int {
	cuts := longRunCuts(text)
	if len(cuts) == 0 {
		return e.EncodeOrdinary(text)
	}
	var out []int
	prev := 0
	for _, c := range cuts {
		out = append(out, e.EncodeOrdinary(text[prev:c])...)
		prev = c
	}
	return append(out, e.EncodeOrdinary(text[prev:])...)
}

// longRunCuts returns where to cut text so that no part holds more than
// maxRun bytes of one run of letters (and marks): every maxRun bytes into
// such a run, on a character boundary.
func longRunCuts(text string) []int {
	var cuts []int
	run := 0 // bytes of the current run since its start or the last cut
	for i, r := range text {
		if r < utf8.RuneSelf && !('a' <= r|0x20 && r|0x20 <= 'z') || r >= utf8.RuneSelf && !unicode.IsLetter(r) && !unicode.Is(unicode.M, r) {
			run = 0
			continue
		}
		if run >= maxRun {
			cuts = append(cuts, i)
			run = 0
		}
		run += utf8.RuneLen(r)
	}
	return cuts
}

// trimStart moves i forward to the start of a character of s.
func trimStart(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

// trimToRune returns s[i:], moving i forward to the start of a character.
func trimToRune(s string, i int) string { return s[trimStart(s, i):] }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// ImageTokens returns the tokens an image of width x height pixels costs,
// by OpenAI's rule for detailed images: scale it to fit within 2048x2048,
// then scale it down so that its shortest side is at most 768; count the
// 512x512 tiles that cover it; the cost is 85 + 170 per tile. Images are
// never scaled up. A size that is not positive counts as 1024x1024 (765
// tokens).
func ImageTokens(width, height int) int {
	if width <= 0 || height <= 0 {
		width, height = 1024, 1024
	}
	w, h := float64(width), float64(height)
	if m := max(w, h); m > 2048 {
		w, h = w*2048/m, h*2048/m
	}
	if m := min(w, h); m > 768 {
		w, h = w*768/m, h*768/m
	}
	// Round first so that float error never adds a tile.
	w, h = max(1, math.Round(w)), max(1, math.Round(h))
	tiles := math.Ceil(w/512) * math.Ceil(h/512)
	return 85 + 170*int(tiles)
}
