package tactics

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errCallTimeout is the cause of an attempt's context cancelled at its
// call timeout.
var errCallTimeout = errors.New("call timeout")

// deadlineSet cancels the model-call attempts that outlive their call
// timeout. One timer serves them all: it is armed for the earliest
// deadline and moved only when an attempt's deadline comes sooner, which
// with one timeout for all never happens while the timer is armed. A timer
// per attempt would cost more than the rest of an agent's turn: arming one
// wakes the runtime's network poller, a system call per model call.
type deadlineSet struct {
	mu    sync.Mutex
	timer *time.Timer
	armed time.Time // when the timer fires; zero when it is not armed
	live  map[*attemptDeadline]struct{}
}

type attemptDeadline struct {
	at     time.Time
	cancel context.CancelCauseFunc
}

// attemptDeadlines is the process's set: a sweep's thousands of agents
// share its one timer.
var attemptDeadlines deadlineSet

// within returns ctx cancelled with errCallTimeout once timeout has
// passed, and the function that ends the attempt, which must be called.
func (s *deadlineSet) within(ctx context.Context, timeout time.Duration) (context.Context, func()) {
	actx, cancel := context.WithCancelCause(ctx)
	d := &attemptDeadline{at: time.Now().Add(timeout), cancel: cancel}
	s.mu.Lock()
	if s.live == nil {
		s.live = map[*attemptDeadline]struct{}{}
	}
	s.live[d] = struct{}{}
	if s.armed.IsZero() || d.at.Before(s.armed) {
		s.arm(d.at)
	}
	s.mu.Unlock()
	return actx, func() {
		s.mu.Lock()
		delete(s.live, d)
		s.mu.Unlock()
		cancel(nil)
	}
}

// arm sets the timer to fire at t; s.mu is held.
func (s *deadlineSet) arm(t time.Time) {
	s.armed = t
	if s.timer == nil {
		s.timer = time.AfterFunc(time.Until(t), s.fire)
		return
	}
	s.timer.Reset(time.Until(t))
}

// fire cancels the attempts whose deadline has passed and arms the timer
// for the next one.
func (s *deadlineSet) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var next time.Time
	for d := range s.live {
		switch {
		case !d.at.After(now):
			d.cancel(errCallTimeout)
			delete(s.live, d)
		case next.IsZero() || d.at.Before(next):
			next = d.at
		}
	}
	s.armed = time.Time{}
	if !next.IsZero() {
		s.arm(next)
	}
}
