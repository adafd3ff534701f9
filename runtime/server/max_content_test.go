package server

import (
	"math"
	"testing"
	"time"
)

// A Server given a MaxContentBytes over MaxMaxContentBytes takes that: six
// times MaxInt/4, its body limit, overflowed and refused every request.
func TestHugeMaxContentBytesServes(t *testing.T) {
	f := edgeFixture(t, t.TempDir(), scripted, time.Minute, Options{MaxContentBytes: math.MaxInt / 4})
	if end := f.turn(`{"agent":"assistant","sender":"alice","content":"hello"}`); end.Status != "ok" {
		t.Fatalf("a turn with MaxContentBytes MaxInt/4: %+v", end)
	}
}
