package contextmgr

import "testing"

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
