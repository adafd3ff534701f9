package tactics

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Attempts of different timeouts, begun in any order and many at once,
// are each cancelled at their own deadline and not before, by one timer.
func TestDeadlineSet(t *testing.T) {
	var s deadlineSet
	long, endLong := s.within(t.Context(), time.Hour)
	defer endLong()
	var wg sync.WaitGroup
	for _, timeout := range []time.Duration{300 * time.Millisecond, 50 * time.Millisecond, 150 * time.Millisecond} {
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				ctx, end := s.within(t.Context(), timeout)
				defer end()
				<-ctx.Done()
				if took := time.Since(start); took < timeout || !errors.Is(context.Cause(ctx), errCallTimeout) {
					t.Errorf("timeout %v: cancelled after %v, cause %v", timeout, took, context.Cause(ctx))
				}
			}()
		}
	}
	wg.Wait()
	if long.Err() != nil {
		t.Fatal("the hour-long attempt was cancelled")
	}
	// An attempt that ends in time leaves nothing behind, and is not
	// cancelled by its deadline.
	ctx, end := s.within(t.Context(), 20*time.Millisecond)
	end()
	time.Sleep(60 * time.Millisecond)
	if c := context.Cause(ctx); c == errCallTimeout {
		t.Fatal("an ended attempt was cancelled at its deadline")
	}
	s.mu.Lock()
	n := len(s.live)
	s.mu.Unlock()
	if n != 1 { // the hour-long one
		t.Fatalf("%d attempts left in the set, want 1", n)
	}
}
