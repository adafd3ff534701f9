package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

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
	a := &Request{Model: "m", Messages: msgs}
	b := &Request{Model: "m", Messages: msgs, Params: Params{Seed: ptr(1)}}
	if a.Digest() == b.Digest() {
		t.Error("requests that differ in params have the same digest")
	}
}
