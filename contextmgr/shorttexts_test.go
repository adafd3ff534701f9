package contextmgr

import (
	"runtime"
	"strconv"
	"testing"
)

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
