package sweep

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/lllm-go/lllm/internal/registry"
	"github.com/lllm-go/lllm/runtime/provider"
)

// sampleState is what the models of one sample share: its repeat index,
// the positions of its calls and what they cost. It travels in the
// context of the sample's run.
type sampleState struct {
	repeat int

	mu       sync.Mutex
	seen     map[string]int // occurrences of each digest, for calls without a CallInfo
	calls    int
	hits     int
	spentUSD float64
	spentTok int
	lastErr  error // the last failed call; nil after a success
}

type stateKey struct{}

func withState(ctx context.Context, st *sampleState) context.Context {
	return context.WithValue(ctx, stateKey{}, st)
}

func stateFrom(ctx context.Context) *sampleState {
	st, _ := ctx.Value(stateKey{}).(*sampleState)
	return st
}

// position places a call within its sample: the agent, dialog alias and
// turn of its CallInfo, or else how many times the same request came
// before in the sample.
func (st *sampleState) position(ctx context.Context, digest string) string {
	if ci, ok := provider.CallInfoFrom(ctx); ok {
		return fmt.Sprintf("%s\x00%s\x00%d", ci.Agent, ci.Dialog, ci.Turn)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.seen == nil {
		st.seen = map[string]int{}
	}
	st.seen[digest]++
	return fmt.Sprintf("#%d", st.seen[digest])
}

// model wraps a provider model with the sweep's cache, per-provider
// limiter and accounting.
type model struct {
	inner    provider.Model
	name     string // provider/model
	cacheID  string // name and provider settings, for cache keys
	provider string // registered name, as registeredProvider makes it
	x        *execution
}

// providerOf is the provider part of "provider/model", lowercased.
func providerOf(name string) string {
	p, _, _ := strings.Cut(name, "/")
	return strings.ToLower(p)
}

// registeredProvider is the registered provider that p, the provider
// part of a model name, stands for, as provider.Open finds it: p itself
// (lowercased), or else the one package-qualified provider with that
// name ("mylab:vllm" for "vllm"); p when there is none or several.
func registeredProvider(p string) string {
	p = strings.ToLower(strings.TrimSpace(p))
	names := provider.Providers()
	if slices.Contains(names, p) {
		return p
	}
	found := ""
	for _, n := range names {
		if _, path := registry.Split(n); path == p {
			if found != "" {
				return p // ambiguous: Open refuses it
			}
			found = n
		}
	}
	return cmp.Or(found, p)
}

func (m *model) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	x, st := m.x, stateFrom(ctx)
	var key string
	if x.cache != nil && st != nil && x.cacheable(req) {
		digest := req.Digest()
		key = cacheKey(orDefault(m.cacheID, m.name), digest, st.repeat, st.position(ctx, digest))
		for {
			if r, ok := x.cache.Get(key); ok {
				x.hit(st)
				return r, nil
			}
			// One call per key at a time: the others wait for its reply.
			done, lead := x.flight(key)
			if lead {
				defer x.land(key, done)
				// A call for key may have landed between the miss
				// above and taking the lead: its reply is cached.
				if r, ok := x.cache.Get(key); ok {
					x.hit(st)
					return r, nil
				}
				break
			}
			select {
			case <-done:
			case <-ctx.Done():
				return nil, &provider.Error{Kind: provider.ErrCancelled, Provider: m.provider, Err: ctx.Err()}
			}
		}
	}
	permit, err := x.limiter(m.provider).Acquire(ctx)
	if err != nil {
		return nil, &provider.Error{Kind: provider.ErrCancelled, Provider: m.provider, Err: err}
	}
	resp, err := m.inner.Generate(ctx, req)
	x.calls.Add(1)
	if err != nil {
		pe := provider.AsError(m.provider, err)
		if pe.Kind == provider.ErrRateLimit {
			permit.Release(permitRateLimited)
		} else {
			permit.Release(permitFailed)
		}
		if st != nil {
			st.mu.Lock()
			st.calls++
			st.lastErr = err
			st.mu.Unlock()
		}
		if pe.Kind != provider.ErrCancelled && ctx.Err() == nil {
			x.callFailed(m.name, err)
		}
		return nil, err
	}
	permit.Release(permitOK)
	u := resp.Message.Usage
	x.callSucceeded(resp.Message.USD, u.InputTokens+u.OutputTokens)
	if st != nil {
		st.mu.Lock()
		st.calls++
		st.spentUSD += resp.Message.USD
		st.spentTok += u.InputTokens + u.OutputTokens
		st.lastErr = nil
		st.mu.Unlock()
	}
	if key != "" {
		x.cache.Put(key, resp)
	}
	return resp, nil
}

// hit counts a reply the cache served to the sample of st.
func (x *execution) hit(st *sampleState) {
	x.hits.Add(1)
	st.mu.Lock()
	st.hits++
	st.mu.Unlock()
}

// flight returns the channel closed when the call in flight for key ends,
// and whether the caller is to make that call (no call was in flight).
func (x *execution) flight(key string) (chan struct{}, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if ch, ok := x.flights[key]; ok {
		return ch, false
	}
	if x.flights == nil {
		x.flights = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	x.flights[key] = ch
	return ch, true
}

// land ends the call in flight for key, once its reply is in the cache.
func (x *execution) land(key string, ch chan struct{}) {
	x.mu.Lock()
	delete(x.flights, key)
	x.mu.Unlock()
	close(ch)
}
