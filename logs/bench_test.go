package logs

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

func benchMessage(i int) dialog.Message {
	return dialog.Message{Role: dialog.RoleAssistant, Name: "solver", Content: fmt.Sprintf("step %d: %s", i, strings.Repeat("lorem ipsum ", 8)),
		Usage: dialog.Usage{InputTokens: 120, OutputTokens: 40}, Model: "openai/gpt-4o-mini"}
}

// BenchmarkWriterAppend measures appending message records to a log file,
// from one goroutine and from two, with the default flush (records handed
// to the OS from the background, one write per batch) and with a write
// per record before Write returns (FlushDelay -1). Flush is timed too, so
// every record counted has reached the OS.
func BenchmarkWriterAppend(b *testing.B) {
	for _, mode := range []struct {
		name  string
		delay time.Duration
	}{{"batched", 0}, {"per-record", -1}} {
		for _, par := range []bool{false, true} {
			name := mode.name + "/serial"
			if par {
				name = mode.name + "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				w, _, err := Create(b.TempDir(), RunStart{}, Options{FlushDelay: mode.delay})
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				m := benchMessage(1)
				rec := recordOf(dialog.Event{Kind: dialog.EventAppend, DialogID: "0123456789abcdef", Index: 1, Message: &m})
				before := w.size
				b.ReportAllocs()
				if par {
					b.RunParallel(func(pb *testing.PB) {
						r := rec
						for pb.Next() {
							if err := w.Write(&r); err != nil {
								b.Fatal(err)
							}
						}
					})
				} else {
					for b.Loop() {
						if err := w.Write(&rec); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				bytes := float64(w.size - before)
				secs := b.Elapsed().Seconds()
				b.ReportMetric(float64(b.N)/secs, "records/s")
				b.ReportMetric(bytes/secs/1e6, "MB/s")
			})
		}
	}
}

var (
	bigRunOnce sync.Once
	bigRunDir  string // removed by TestMain
	bigRunPath string
	bigRunErr  error
)

// TestMain removes the run bigRun wrote, which every -count of the
// benchmarks shares.
func TestMain(m *testing.M) {
	code := m.Run()
	if bigRunDir != "" {
		os.RemoveAll(bigRunDir)
	}
	os.Exit(code)
}

// bigRun writes a run of 10,000 dialogs and 1,000,000 messages: 1,000
// roots of 100 messages, each forked 9 times (full and partial forks), every
// fork adding 100 messages of its own.
func bigRun(b *testing.B) string {
	bigRunOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lllm-bench-*")
		if err != nil {
			bigRunErr = err
			return
		}
		bigRunDir = dir
		w, run, err := Create(dir, RunStart{Tactic: "bench"}, Options{SyncInterval: time.Minute})
		if err != nil {
			bigRunErr = err
			return
		}
		for r := range 1000 {
			d, _ := dialog.New(fmt.Sprintf("agent%d", r%7), dialog.WithSink(w))
			for i := range 100 {
				d.Append(benchMessage(i))
			}
			for k := range 9 {
				c, err := d.Fork(k*5, 1)
				if err != nil {
					bigRunErr = err
					return
				}
				for i := range 100 {
					c.Append(benchMessage(i))
				}
			}
		}
		bigRunErr = w.Finish(RunEnd{Status: StatusOK})
		bigRunPath = run.Path()
	})
	if bigRunErr != nil {
		b.Fatal(bigRunErr)
	}
	return bigRunPath
}

// BenchmarkRebuild1M rebuilds the forest of a 1,000,000-message,
// 10,000-dialog run and reports the heap it keeps and the most it held.
func BenchmarkRebuild1M(b *testing.B) {
	path := bigRun(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	var peak, kept uint64
	for b.Loop() {
		runtime.GC()
		base := heapBytes()
		stop := make(chan struct{})
		done := make(chan uint64)
		go func() {
			var hi uint64
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					done <- hi
					return
				case <-t.C:
					hi = max(hi, heapBytes())
				}
			}
		}()
		rd, err := OpenFile(path)
		if err != nil {
			b.Fatal(err)
		}
		f, err := Rebuild(context.Background(), rd)
		rd.Close()
		if err != nil {
			b.Fatal(err)
		}
		close(stop)
		peak = max(peak, <-done-base)
		runtime.GC()
		kept = heapBytes() - base
		if f.Len() != 10_000 {
			b.Fatalf("rebuilt %d dialogs", f.Len())
		}
		runtime.KeepAlive(f)
	}
	b.ReportMetric(float64(st.Size())/1e6, "log-MB")
	b.ReportMetric(float64(kept)/1e6, "kept-MB")
	b.ReportMetric(float64(peak)/1e6, "peak-MB")
}

func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
