package provider

import (
	"testing"
)

// A Mock with an error rate sent ever new requests keeps a bounded
// memory of them, and still fails exactly the calls it would with an
// unbounded one, for every request made again within the last
// mockSeenLimit distinct ones (retries and samples).
func TestMockSeenIsBounded(t *testing.T) {
	m, err := NewMock(MockConfig{ErrorRate: 0.5, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	// want is injectError with an unbounded count, as the Mock had.
	counts := map[uint64]uint64{}
	want := func(h uint64) bool {
		n := counts[h]
		counts[h]++
		return m.fails(h, n)
	}
	const distinct = 3 * mockSeenLimit
	for i := range uint64(distinct) {
		h := i * 0x9e3779b97f4a7c15
		// Each request is retried at once, and made again a while later.
		for _, h := range []uint64{h, h, h} {
			if got, w := m.injectError(h), want(h); got != w {
				t.Fatalf("request %d: failed %v, an unbounded count says %v", i, got, w)
			}
		}
		if i >= 1000 {
			old := (i - 1000) * 0x9e3779b97f4a7c15
			if got, w := m.injectError(old), want(old); got != w {
				t.Fatalf("request %d again after 1000 others: failed %v, an unbounded count says %v", i-1000, got, w)
			}
		}
	}
	m.mu.Lock()
	held := len(m.seen) + len(m.older)
	m.mu.Unlock()
	if held > 2*mockSeenLimit {
		t.Errorf("after %d distinct requests the Mock remembers %d, want at most %d", distinct, held, 2*mockSeenLimit)
	}
}
