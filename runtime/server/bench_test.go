package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/provider"
)

// turnsPerConversation bounds each benchmark conversation's history: a
// worker moves to a new conversation after this many turns, so the
// results do not depend on b.N.
const turnsPerConversation = 20

// benchService is a Service on a store in a fresh directory with one agent
// on the mock provider.
func benchService(b *testing.B, latency time.Duration) *conversation.Service {
	b.Helper()
	store, err := conversation.Open(b.TempDir(), conversation.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	model, err := provider.Open(context.Background(), "mock/bench", provider.Config{Mock: &provider.MockConfig{Latency: latency}})
	if err != nil {
		b.Fatal(err)
	}
	sys, err := dialog.NewPrompt("assistant/system", "You help {sender}. Be brief.")
	if err != nil {
		b.Fatal(err)
	}
	svc, err := conversation.NewService(store, []*conversation.AgentSpec{
		{Name: "assistant", System: sys, Model: model, ModelName: "mock/bench"},
	}, conversation.ServiceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return svc
}

// streamResult is one stream as a client saw it.
type streamResult struct {
	firstEvent time.Duration // from sending the request to the first whole event
	err        error
}

// runStreams runs b.N turns over conc concurrent conversations with one,
// reporting streams/s and the first-event latencies.
func runStreams(b *testing.B, conc int, one func(ctx context.Context, sender, content string) streamResult) {
	b.Helper()
	var next atomic.Int64
	results := make([][]time.Duration, conc)
	errs := make(chan error, conc)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for turn := 0; ; turn++ {
				if next.Add(1) > int64(b.N) {
					return
				}
				sender := fmt.Sprintf("w%d-c%d", w, turn/turnsPerConversation)
				r := one(ctx, sender, fmt.Sprintf("Turn %d of worker %d: what do you make of the results so far?", turn, w))
				if r.err != nil {
					errs <- r.err
					return
				}
				results[w] = append(results[w], r.firstEvent)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(results...)
	if len(all) != b.N {
		b.Fatalf("%d streams finished, want %d", len(all), b.N)
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "streams/s")
	b.ReportMetric(pct(0.50), "p50-first-event-ms")
	b.ReportMetric(pct(0.99), "p99-first-event-ms")
}

// BenchmarkStreams measures streams per second and the time to the first
// event with conc conversations streaming at once, on the mock provider:
// through the HTTP handler on 127.0.0.1 with SSE clients, and, for
// comparison, calling Service.Run in process (no HTTP, no SSE). Each
// stream is one finished turn, fsynced.
//
//	go test -run=XXX -bench=Streams -benchtime=3000x ./runtime/server
func BenchmarkStreams(b *testing.B) {
	for _, c := range []struct {
		conc    int
		latency time.Duration
	}{{1, 0}, {100, 0}, {100, 20 * time.Millisecond}} {
		name := fmt.Sprintf("conc=%d/latency=%s", c.conc, c.latency)
		b.Run("http-sse/"+name, func(b *testing.B) {
			svc := benchService(b, c.latency)
			srv := httptest.NewServer(New(svc, Options{}))
			b.Cleanup(srv.Close)
			client := &http.Client{Transport: &http.Transport{MaxIdleConns: 4 * c.conc, MaxIdleConnsPerHost: 4 * c.conc}}
			b.Cleanup(client.CloseIdleConnections)
			runStreams(b, c.conc, func(ctx context.Context, sender, content string) streamResult {
				return sseStream(ctx, client, srv.URL, sender, content)
			})
		})
		b.Run("in-process/"+name, func(b *testing.B) {
			svc := benchService(b, c.latency)
			runStreams(b, c.conc, func(ctx context.Context, sender, content string) streamResult {
				t0 := time.Now()
				var first time.Duration
				var status string
				_, err := svc.Run(ctx, conversation.RunRequest{Agent: "assistant", Sender: sender, Content: content}, func(ev conversation.Event) error {
					if first == 0 {
						first = time.Since(t0)
					}
					if ev.Type == "end" {
						status = ev.Status
					}
					return nil
				})
				if err == nil && status != "ok" {
					err = fmt.Errorf("run ended %q", status)
				}
				return streamResult{firstEvent: first, err: err}
			})
		})
	}
}

// sseStream is an SSE client's turn: POST /v1/stream, then read events
// until end.
func sseStream(ctx context.Context, client *http.Client, url, sender, content string) streamResult {
	body, _ := json.Marshal(map[string]string{"agent": "assistant", "sender": sender, "content": content})
	t0 := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/stream", bytes.NewReader(body))
	if err != nil {
		return streamResult{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return streamResult{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return streamResult{err: fmt.Errorf("stream: %s %s", resp.Status, msg)}
	}
	var first time.Duration
	r := bufio.NewReader(resp.Body)
	var data []byte
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return streamResult{err: fmt.Errorf("stream cut short: %w", err)}
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				data = append(data[:0], d...)
			}
			continue
		}
		if len(data) == 0 {
			continue
		}
		if first == 0 {
			first = time.Since(t0)
		}
		var ev conversation.Event
		if err := json.Unmarshal(data, &ev); err != nil {
			return streamResult{err: err}
		}
		data = data[:0]
		if ev.Type == "end" {
			if ev.Status != "ok" {
				return streamResult{err: fmt.Errorf("stream ended %q: %s", ev.Status, ev.Error)}
			}
			_, _ = io.Copy(io.Discard, r)
			return streamResult{firstEvent: first}
		}
	}
}
