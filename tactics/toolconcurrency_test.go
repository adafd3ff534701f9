package tactics

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// inFlight is a tool that counts the calls running at once, each waiting
// until want of them are running (or a second has passed), so that calls
// run together are seen together.
type inFlight struct {
	want      int
	now, peak atomic.Int32
	ran       atomic.Int32
	mu        sync.Mutex
	arrived   chan struct{}
}

func newInFlight(want int) *inFlight { return &inFlight{want: want, arrived: make(chan struct{})} }

func (f *inFlight) fn(t *testing.T) *dialog.Function {
	fn, err := dialog.NewFunction("fetch", "fetches", func(ctx context.Context, in numIn) (string, error) {
		f.ran.Add(1)
		n := f.now.Add(1)
		defer f.now.Add(-1)
		for {
			p := f.peak.Load()
			if n <= p || f.peak.CompareAndSwap(p, n) {
				break
			}
		}
		f.mu.Lock()
		if int(n) >= f.want {
			select {
			case <-f.arrived:
			default:
				close(f.arrived)
			}
		}
		f.mu.Unlock()
		select {
		case <-f.arrived:
		case <-time.After(time.Second):
		}
		return fmt.Sprintf("page %d", in.N), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

// With tool_concurrency, a reply's calls run together, at most that many
// at once; their results go back in the model's order, and a call
// identical to an earlier one of the reply quotes it without running.
// Without it, they run one after another.
func TestToolConcurrency(t *testing.T) {
	for _, tc := range []struct {
		limit, peak int
	}{{0, 1}, {1, 1}, {2, 2}, {8, 4}} {
		f := newInFlight(min(max(tc.limit, 1), 4))
		p := dialog.MustPrompt("t", "Go.", dialog.WithFunctions(f.fn(t)))
		m := &script{replies: []any{
			callsReply(fcall("c1", "fetch", `{"n":1}`), fcall("c2", "fetch", `{"n":2}`), fcall("c3", "fetch", `{"n":1}`),
				fcall("c4", "fetch", `{"n":3}`), fcall("c5", "fetch", `{"n":4}`)),
			text("done"),
		}}
		a, run := newAgent(t, m, nil)
		a.Limits.ToolConcurrency = tc.limit
		a.ReceivePrompt(p, nil)
		_, s, err := a.Respond(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := int(f.peak.Load()); got != tc.peak || f.ran.Load() != 4 {
			t.Errorf("limit %d: %d calls ran at once (want %d), %d ran (want 4: c3 repeats c1)", tc.limit, got, tc.peak, f.ran.Load())
		}
		var got []string
		for _, c := range s.ToolCalls {
			page := c.Result[strings.LastIndex(c.Result, "page"):]
			if strings.HasPrefix(c.Result, "You already called") {
				page = "quoted " + page
			}
			got = append(got, c.ID+"="+page)
		}
		if want := "[c1=page 1 c2=page 2 c3=quoted page 1 c4=page 3 c5=page 4]"; fmt.Sprint(got) != want {
			t.Errorf("limit %d: results %q, want %s", tc.limit, got, want)
		}
		_, recs := run.forest(t)
		var ids []string
		for _, c := range toolCallRecords(recs) {
			ids = append(ids, fmt.Sprintf("%s:%v", c.CallID, c.Repeated))
		}
		if fmt.Sprint(ids) != "[c1:false c2:false c3:true c4:false c5:false]" {
			t.Errorf("limit %d: tool_call records %v", tc.limit, ids)
		}
	}
}

// tool_concurrency, set globally or per agent, is the agents'
// ToolConcurrency; unset, 1 (one call after another).
func TestToolConcurrencyConfig(t *testing.T) {
	la, lb := limitsOf(t, "tool_concurrency: 4", "tool_concurrency: 1")
	if a, b := la.ToolConcurrency, lb.ToolConcurrency; a != 4 || b != 1 || DefaultLimits().ToolConcurrency != 1 {
		t.Errorf("ToolConcurrency a %d, b %d, default %d; want 4, 1 and 1", a, b, DefaultLimits().ToolConcurrency)
	}
}
