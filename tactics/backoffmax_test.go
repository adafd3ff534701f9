package tactics

import (
	"testing"
	"time"
)

// A negative BackoffMax means no cap, as for any Limits field: the waits
// keep doubling, within [d/2, d], and a huge one does not overflow.
func TestBackoffWithoutMax(t *testing.T) {
	l := Limits{BackoffBase: time.Second, BackoffMax: -1}.Resolved()
	for n, want := range map[int]time.Duration{1: time.Second, 5: 16 * time.Second, 8: 128 * time.Second} {
		if d := l.backoff(n, 0); d < want/2 || d > want {
			t.Errorf("retry %d waits %v, want within [%v, %v]", n, d, want/2, want)
		}
	}
	huge := Limits{BackoffBase: time.Hour, BackoffMax: -1}.Resolved()
	if d := huge.backoff(40, 0); d < time.Hour<<20 {
		t.Errorf("retry 40 with an hour's base waits %v: overflowed", d)
	}
	// A cap below the base is the base, as before.
	if d := (Limits{BackoffBase: time.Second, BackoffMax: time.Millisecond}).backoff(5, 0); d < time.Second/2 || d > time.Second {
		t.Errorf("BackoffMax below BackoffBase: %v", d)
	}
}
