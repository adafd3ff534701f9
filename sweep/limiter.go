package sweep

import (
	"context"
	"slices"
	"sync"
)

// permitOutcome is how a call that held a limiter's permit ended.
type permitOutcome int

// The outcomes a limiter adapts to.
const (
	// permitOK grows the limit back, by one per limit's worth of
	// successes (additive increase).
	permitOK permitOutcome = iota
	// permitRateLimited halves the limit (multiplicative decrease), at
	// most once per round of calls: a call started before the last cut
	// does not cut again.
	permitRateLimited
	// permitFailed leaves the limit as it is.
	permitFailed
)

// limiter bounds how many calls are in flight, adapting the bound to rate
// limits between 1 and a maximum, in the manner of TCP's congestion window
// (AIMD). Waiters are served in order. The zero value is not usable; make
// one with newLimiter. It is safe for concurrent use.
type limiter struct {
	mu       sync.Mutex
	max      int
	limit    float64
	inflight int
	epoch    int // bumped on every cut
	waiters  []chan struct{}
	minLimit int
}

// newLimiter returns a limiter allowing max calls at once (at least 1).
func newLimiter(max int) *limiter {
	max = maxInt(max, 1)
	return &limiter{max: max, limit: float64(max), minLimit: max}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// permit is the right to make one call; Release it when the call ends.
type permit struct {
	l     *limiter
	epoch int
}

// Acquire waits for a free slot, or for ctx to be done.
func (l *limiter) Acquire(ctx context.Context) (permit, error) {
	l.mu.Lock()
	if len(l.waiters) == 0 && l.inflight < l.cap() {
		l.inflight++
		p := permit{l, l.epoch}
		l.mu.Unlock()
		return p, nil
	}
	ch := make(chan struct{})
	l.waiters = append(l.waiters, ch)
	l.mu.Unlock()
	select {
	case <-ch:
		l.mu.Lock()
		p := permit{l, l.epoch}
		l.mu.Unlock()
		return p, nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		if i := slices.Index(l.waiters, ch); i >= 0 {
			l.waiters = slices.Delete(l.waiters, i, i+1)
		} else { // granted meanwhile: give the slot back
			l.inflight--
			l.wake()
		}
		return permit{}, ctx.Err()
	}
}

// Release ends the call of p, adapting the limit to how it ended.
func (p permit) Release(o permitOutcome) {
	l := p.l
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	switch o {
	case permitRateLimited:
		if p.epoch == l.epoch {
			l.limit = max(1, l.limit/2)
			l.epoch++
			l.minLimit = min(l.minLimit, l.cap())
		}
	case permitOK:
		l.limit = min(float64(l.max), l.limit+1/l.limit)
	}
	l.wake()
}

func (l *limiter) cap() int { return int(l.limit) }

// wake hands free slots to waiters, oldest first.
func (l *limiter) wake() {
	for len(l.waiters) > 0 && l.inflight < l.cap() {
		ch := l.waiters[0]
		l.waiters = l.waiters[1:]
		l.inflight++
		close(ch)
	}
}

// Limit is the current bound.
func (l *limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cap()
}

// MinLimit is the lowest bound the limiter has had.
func (l *limiter) MinLimit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.minLimit
}

// Max is the limiter's maximum bound.
func (l *limiter) Max() int { return l.max }
