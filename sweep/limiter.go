package sweep

import (
	"context"
	"slices"
	"sync"
)

// Outcome is how a call that held a Limiter's permit ended.
type Outcome int

// The outcomes a Limiter adapts to.
const (
	// Succeeded grows the limit back, by one per limit's worth of
	// successes (additive increase).
	Succeeded Outcome = iota
	// RateLimited halves the limit (multiplicative decrease), at most once
	// per round of calls: a call started before the last cut does not cut
	// again.
	RateLimited
	// Failed leaves the limit as it is.
	Failed
)

// Limiter bounds how many calls are in flight, adapting the bound to rate
// limits between 1 and a maximum, in the manner of TCP's congestion window
// (AIMD). Waiters are served in order. The zero value is not usable; make
// one with NewLimiter. It is safe for concurrent use.
type Limiter struct {
	mu       sync.Mutex
	max      int
	limit    float64
	inflight int
	epoch    int // bumped on every cut
	waiters  []chan struct{}
	minLimit int
}

// NewLimiter returns a Limiter allowing max calls at once (at least 1).
func NewLimiter(max int) *Limiter {
	max = maxInt(max, 1)
	return &Limiter{max: max, limit: float64(max), minLimit: max}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Permit is the right to make one call; Release it when the call ends.
type Permit struct {
	l     *Limiter
	epoch int
}

// Acquire waits for a free slot, or for ctx to be done.
func (l *Limiter) Acquire(ctx context.Context) (Permit, error) {
	l.mu.Lock()
	if len(l.waiters) == 0 && l.inflight < l.cap() {
		l.inflight++
		p := Permit{l, l.epoch}
		l.mu.Unlock()
		return p, nil
	}
	ch := make(chan struct{})
	l.waiters = append(l.waiters, ch)
	l.mu.Unlock()
	select {
	case <-ch:
		l.mu.Lock()
		p := Permit{l, l.epoch}
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
		return Permit{}, ctx.Err()
	}
}

// Release ends the call of p, adapting the limit to how it ended.
func (p Permit) Release(o Outcome) {
	l := p.l
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	switch o {
	case RateLimited:
		if p.epoch == l.epoch {
			l.limit = max(1, l.limit/2)
			l.epoch++
			l.minLimit = min(l.minLimit, l.cap())
		}
	case Succeeded:
		l.limit = min(float64(l.max), l.limit+1/l.limit)
	}
	l.wake()
}

func (l *Limiter) cap() int { return int(l.limit) }

// wake hands free slots to waiters, oldest first.
func (l *Limiter) wake() {
	for len(l.waiters) > 0 && l.inflight < l.cap() {
		ch := l.waiters[0]
		l.waiters = l.waiters[1:]
		l.inflight++
		close(ch)
	}
}

// Limit is the current bound.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cap()
}

// MinLimit is the lowest bound the limiter has had.
func (l *Limiter) MinLimit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.minLimit
}

// Max is the limiter's maximum bound.
func (l *Limiter) Max() int { return l.max }
