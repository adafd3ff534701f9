package contextmgr

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

var words = strings.Fields(`the of and to in is that for it as with was on be by this are at
from or an have not but which they their one all were we can there has been more when will
would who so if out about up what into than them some could time only other model agent
dialog token budget context window research experiment result analysis method system prompt
tool call summary message language learning training evaluation benchmark dataset baseline
performance improvement approach problem solution question answer example structure memory
function parameter value error retry provider latency throughput careful simple robust quick
brown fox jumps over lazy dog however therefore moreover although because whereas`)

// englishText returns about n bytes of deterministic English-like text:
// sentences of common words with capitals, punctuation, numbers and
// paragraph breaks.
func englishText(r *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n + 100)
	for b.Len() < n {
		k := 5 + r.IntN(15)
		for i := range k {
			w := words[r.IntN(len(words))]
			switch {
			case i == 0:
				w = strings.ToUpper(w[:1]) + w[1:]
			case r.IntN(25) == 0:
				w = strconv.Itoa(r.IntN(2000)) + "." + strconv.Itoa(r.IntN(100))
			case r.IntN(15) == 0:
				w += ","
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		b.WriteString([]string{".", ".", ".", "?", "!", ";"}[r.IntN(6)])
		if r.IntN(8) == 0 {
			b.WriteString("\n\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

// loopTexts are the message texts of the agent loop: a few hundred
// characters each.
var loopTexts = sync.OnceValue(func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, 400)
	for i := range out {
		out[i] = englishText(r, 200+r.IntN(400))
	}
	return out
})

// runLoop runs an agent loop of the given number of turns: each turn
// appends a user and an assistant message and passes the whole dialog
// through the manager cfg describes, with a fresh Input and the shared
// Tokenizer tok. It returns the tokens tok tokenized and the dialog's own
// token count (each message tokenized once by a fresh Tokenizer).
func runLoop(tb testing.TB, tok *Tokenizer, turns int, cfg map[string]any) (work, own int64) {
	if cfg == nil {
		cfg = map[string]any{"type": "default"}
	}
	mgr, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	texts := loopTexts()
	msgs := []*dialog.Message{{Role: dialog.RoleSystem, Content: "You are a careful research assistant. Answer briefly."}}
	for i := range turns {
		msgs = append(msgs,
			&dialog.Message{Role: dialog.RoleUser, Content: texts[(2*i)%len(texts)]},
			&dialog.Message{Role: dialog.RoleAssistant, Content: texts[(2*i+1)%len(texts)]})
		if _, err := mgr.Fit(context.Background(), Input{Model: "openai/gpt-4o", Messages: msgs, Tokens: tok}); err != nil {
			tb.Fatal(err)
		}
	}
	fresh := NewTokenizer()
	for _, m := range msgs {
		fresh.CountMessage("openai/gpt-4o", m)
	}
	return tok.Stats().Tokenized, fresh.Stats().Tokenized
}

func BenchmarkTokenizer1MB(b *testing.B) {
	text := englishText(rand.New(rand.NewPCG(3, 4)), 1<<20)
	tok := NewTokenizer()
	tok.noMemo = true              // the tokenizer's speed, not its memory of counts
	tok.Count("gpt-4o", "warm up") // build the shared encoding outside the timer
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	var n int
	for b.Loop() {
		n = tok.Count("gpt-4o", text)
	}
	b.ReportMetric(float64(n), "tokens/op")
}

// The recounting loop is slow, so it runs once per process.
var (
	baselineOnce    sync.Once
	baselineRatio   float64
	baselineElapsed time.Duration
)

// recountBaseline runs the 100-turn loop with a Tokenizer that recounts
// every message on every call, and returns its work ratio and time.
func recountBaseline(b *testing.B) (ratio float64, elapsed time.Duration) {
	baselineOnce.Do(func() {
		tok := NewTokenizer()
		tok.noMemo = true
		start := time.Now()
		work, own := runLoop(b, tok, 100, nil)
		baselineElapsed = time.Since(start)
		baselineRatio = float64(work) / float64(own)
	})
	return baselineRatio, baselineElapsed
}

// BenchmarkContextLoop100 runs a 100-turn agent loop through the default
// manager. tokenized/dialog is the tokenizer's work over the whole loop
// divided by the final dialog's own token count (1.0: each message
// tokenized once); recount-tokenized/dialog is the same for a Tokenizer
// that recounts every message on every call, and recount-ns/op its time
// for one loop.
func BenchmarkContextLoop100(b *testing.B) {
	benchLoop(b, nil)
}

// BenchmarkContextLoop100Budget8k is the same loop with max_tokens 8000, so
// that the later calls drop and cut messages; a cut message is new text,
// tokenized on each call that makes it.
func BenchmarkContextLoop100Budget8k(b *testing.B) {
	benchLoop(b, map[string]any{"type": "default", "max_tokens": 8000, "buffer": 1000})
}

func benchLoop(b *testing.B, cfg map[string]any) {
	runLoop(b, NewTokenizer(), 1, cfg) // build the shared encoding outside the timer
	var ratio float64
	for b.Loop() {
		work, own := runLoop(b, NewTokenizer(), 100, cfg)
		ratio = float64(work) / float64(own)
	}
	b.StopTimer()
	b.ReportMetric(ratio, "tokenized/dialog")
	if cfg == nil {
		base, elapsed := recountBaseline(b)
		b.ReportMetric(base, "recount-tokenized/dialog")
		b.ReportMetric(float64(elapsed.Nanoseconds()), "recount-ns/op")
	}
}
