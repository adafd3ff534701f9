package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/lllm-go/lllm/dialog"
)

// referenceDigest is Digest as first written, with encoding/json for the
// whole header: recorded logs carry its digests, so Digest must not drift.
func referenceDigest(r *Request) string {
	h := sha256.New()
	_ = json.NewEncoder(h).Encode(struct {
		Model  string             `json:"model"`
		Tools  []*dialog.Function `json:"tools,omitempty"`
		Format json.RawMessage    `json:"format,omitempty"`
		Params Params             `json:"params"`
	}{r.Model, r.Tools, r.Format, r.Params})
	for _, m := range r.Messages {
		b, _ := json.Marshal(m)
		d := sha256.Sum256(b)
		h.Write(d[:])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func TestDigestIsStable(t *testing.T) {
	msgs := []*dialog.Message{systemMsg("be brief"), userMsg("hi <there> & \"you\"")}
	tool := weatherTool(t)
	for _, r := range []*Request{
		{},
		{Model: "gpt-4o-mini", Messages: msgs},
		{Model: "openai/gpt-4o-mini", Messages: msgs[:1]},
		{Model: "a<b>&c", Messages: msgs},
		{Model: "quote\"back\\slash\ttab", Messages: msgs},
		{Model: "modèle", Messages: msgs},
		{Model: "m", Messages: msgs, Params: Params{Temperature: ptr(0.0)}},
		{Model: "m", Messages: msgs, Params: Params{Stop: []string{"END"}}},
		{Model: "m", Messages: msgs, Format: json.RawMessage(`{"type":"object"}`)},
		{Model: "m", Messages: msgs, Tools: []*dialog.Function{tool}},
	} {
		want := referenceDigest(r)
		for range 2 { // the second time from the memo and a reused digester
			if got := r.Digest(); got != want {
				t.Errorf("Digest(model %q, %d messages) = %s, want %s", r.Model, len(r.Messages), got, want)
			}
		}
	}
	long := &Request{Model: "m"}
	for i := range 1000 { // hashed in pieces
		long.Messages = append(long.Messages, userMsg(fmt.Sprint(i)))
	}
	if got, want := long.Digest(), referenceDigest(long); got != want {
		t.Errorf("Digest of 1000 messages = %s, want %s", got, want)
	}
	a := &Request{Model: "m", Messages: msgs}
	b := &Request{Model: "m", Messages: msgs, Params: Params{Seed: ptr(1)}}
	if a.Digest() == b.Digest() {
		t.Error("requests that differ in params have the same digest")
	}
}

// digestsMemoised is how many of keys the memo holds.
func digestsMemoised(keys []weak.Pointer[dialog.Message]) int {
	digestMemo.RLock()
	defer digestMemo.RUnlock()
	n := 0
	for _, e := range digestMemo.m {
		for _, k := range keys {
			if e.msg == k {
				n++
			}
		}
	}
	return n
}

// TestDigestMemoForgetsCollectedMessages checks that the memo holds an
// entry per live message only: a long run must not grow it for ever.
func TestDigestMemoForgetsCollectedMessages(t *testing.T) {
	keys := make([]weak.Pointer[dialog.Message], 100)
	func() {
		msgs := make([]*dialog.Message, len(keys))
		for i := range msgs {
			msgs[i] = userMsg(strings.Repeat("x", i+1))
			keys[i] = weak.Make(msgs[i])
		}
		(&Request{Model: "m", Messages: msgs}).Digest()
		if n := digestsMemoised(keys); n != len(keys) {
			t.Fatalf("memo holds %d of the request's %d messages", n, len(keys))
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for digestsMemoised(keys) > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := digestsMemoised(keys); n > 0 {
		t.Errorf("memo still holds %d collected messages", n)
	}
}

// A memo entry at a message's address that belongs to another message (as
// when a collected message's address is reused before its entry goes) is
// not taken for the message's own hash.
func TestDigestMemoChecksTheEntrysMessage(t *testing.T) {
	m, other := userMsg("mine"), userMsg("another message")
	req := &Request{Model: "m", Messages: []*dialog.Message{m}}
	want := referenceDigest(req)
	if got := req.Digest(); got != want {
		t.Fatalf("Digest = %s, want %s", got, want)
	}
	addr := uintptr(unsafe.Pointer(m))
	digestMemo.Lock()
	digestMemo.m[addr] = memoDigest{msg: weak.Make(other), sum: sha256.Sum256([]byte("stale"))}
	digestMemo.Unlock()
	if got := req.Digest(); got != want {
		t.Errorf("Digest with another message's entry at its address = %s, want %s", got, want)
	}
	digestMemo.RLock()
	defer digestMemo.RUnlock()
	if digestMemo.m[addr].msg != weak.Make(m) {
		t.Error("the entry was not given back to the message at its address")
	}
	runtime.KeepAlive(other)
}

// BenchmarkDigest is the digest of a 10-message request whose messages'
// hashes are memoised, as in an agent loop.
func BenchmarkDigest(b *testing.B) {
	req := &Request{Model: "openai/gpt-4o-mini"}
	for i := range 10 {
		req.Messages = append(req.Messages, userMsg(fmt.Sprintf("Turn %d: %s", i, strings.Repeat("some words of context ", 8))))
	}
	b.ReportAllocs()
	for b.Loop() {
		req.Digest()
	}
}
