package tactics

import (
	"context"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// A call run at once with others is logged with the time its tool took,
// not with the time its result waited for the calls before it to be
// answered: a quick call after a slow one has a small latency_ms.
func TestToolConcurrencyLatency(t *testing.T) {
	quickDone := make(chan struct{})
	tool, err := dialog.NewFunction("work", "works", func(ctx context.Context, in struct {
		Slow bool `json:"slow"`
	}) (string, error) {
		if !in.Slow {
			close(quickDone)
			return "quick", nil
		}
		<-quickDone // the quick call has returned: it waits only to be answered
		time.Sleep(500 * time.Millisecond)
		return "slow", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(tool))
	m := &script{replies: []any{callsReply(fcall("c1", "work", `{"slow":true}`), fcall("c2", "work", `{"slow":false}`)), text("done")}}
	a, run := newAgent(t, m, nil)
	a.Limits.ToolConcurrency = 2
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, recs := run.forest(t)
	calls := toolCallRecords(recs)
	if len(calls) != 2 || calls[0].CallID != "c1" || calls[1].CallID != "c2" {
		t.Fatalf("tool_call records %+v", calls)
	}
	if slow, quick := calls[0].LatencyMS, calls[1].LatencyMS; slow < 500 || quick >= 250 {
		t.Errorf("latency_ms: slow call %.1f (want at least 500), quick call %.1f (want under 250: its tool returned at once)", slow, quick)
	}
}
