package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

// benchConfig is a chat config on the mock provider; latency is the mock's.
func benchConfig(latency time.Duration) string {
	return fmt.Sprintf(`tactic_type: chat
global: {model_name: mock/m, model_args: {temperature: 0}}
agent_configs: [{name: assistant, system_prompt: Add.}]
mock: {latency: %s, rules: [{match: "+", reply: {text: "The answer is 2."}}]}
`, latency)
}

// BenchmarkSweepOverhead compares one sample of a sweep (a tactic run with
// its log, the cache lookup, scoring, and the sample's fsynced record)
// with calling tactics.Run directly on the same config and task, one at a
// time, on the mock provider without latency; and a sample whose only model
// call is a cache hit.
func BenchmarkSweepOverhead(b *testing.B) {
	path := writeSweep(b, "config: config.yaml\ndataset: rows.jsonl\nconcurrency: 1\nscorers: [numeric]\n",
		map[string]string{"config.yaml": benchConfig(0)})
	b.Run("tactics.Run", func(b *testing.B) {
		cfg, err := config.Load(filepath.Join(filepath.Dir(path), "config.yaml"))
		if err != nil {
			b.Fatal(err)
		}
		logDir := b.TempDir()
		for i := 0; b.Loop(); i++ {
			res, err := tactics.Run(context.Background(), cfg, fmt.Sprintf("What is %d + 1?", i), tactics.RunOptions{LogDir: logDir})
			if err != nil || res.Status != "ok" {
				b.Fatal(err, res.Error)
			}
		}
	})
	sweepN := func(b *testing.B, cache string, warm bool) {
		if err := os.WriteFile(filepath.Join(filepath.Dir(path), "rows.jsonl"), []byte(rowsJSONL(b.N)), 0o644); err != nil {
			b.Fatal(err)
		}
		spec := "config: config.yaml\ndataset: rows.jsonl\nconcurrency: 1\nscorers: [numeric]\ncache: " + cache + "\n"
		os.WriteFile(path, []byte(spec), 0o644)
		dir := filepath.Join(b.TempDir(), "out")
		if warm {
			run(b, path, Options{Dir: dir})
			os.Remove(filepath.Join(dir, SamplesFile))
		}
		s := newSweep(b, path, Options{Dir: dir})
		b.ResetTimer()
		rep, err := s.Run(context.Background())
		b.StopTimer()
		if err != nil || rep.Ran != b.N {
			b.Fatalf("ran %d of %d: %v", rep.Ran, b.N, err)
		}
		if warm && rep.CacheHits != b.N {
			b.Fatalf("%d cache hits, want %d", rep.CacheHits, b.N)
		}
	}
	b.Run("sweep", func(b *testing.B) { sweepN(b, "off", false) })
	b.Run("sweep+cache-miss", func(b *testing.B) { sweepN(b, "on", false) })
	b.Run("sweep+cache-hit", func(b *testing.B) { sweepN(b, "on", true) })
}

// benchLatency is the mock's latency in BenchmarkSweepThroughput:
// $LLLM_SWEEP_BENCH_LATENCY (a time.Duration), default 500ms, about the
// shortest a real LLM call takes.
func benchLatency(b *testing.B) time.Duration {
	v := os.Getenv("LLLM_SWEEP_BENCH_LATENCY")
	if v == "" {
		return 500 * time.Millisecond
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("LLLM_SWEEP_BENCH_LATENCY=%q: want a positive duration", v)
	}
	return d
}

// warmUp pays the process's one-time costs (the tokenizer's encodings,
// the git commit a run log records) outside the timed region.
func warmUp(b *testing.B) {
	cfg, err := config.Parse("warm.yaml", []byte(benchConfig(0)), nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tactics.Run(context.Background(), cfg, "1 + 1", tactics.RunOptions{LogDir: b.TempDir()}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSweepThroughput runs 4 x concurrency samples (at least 8) on a
// mock with a fixed latency (benchLatency) at several concurrency limits,
// and reports the rate reached, Run's whole time included, as a fraction
// of what the limit allows (concurrency / latency).
func BenchmarkSweepThroughput(b *testing.B) {
	latency := benchLatency(b)
	warmUp(b)
	for _, conc := range []int{1, 4, 16, 64, 256} {
		b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) {
			n := max(4*conc, 8)
			path := writeSweep(b, fmt.Sprintf("config: config.yaml\ndataset: rows.jsonl\nconcurrency: %d\ncache: off\n", conc),
				map[string]string{"config.yaml": benchConfig(latency), "rows.jsonl": rowsJSONL(n)})
			var rate float64
			for i := 0; b.Loop(); i++ {
				s := newSweep(b, path, Options{Dir: filepath.Join(b.TempDir(), fmt.Sprint("out", i))})
				start := time.Now()
				rep, err := s.Run(context.Background())
				if err != nil || rep.Ran != n {
					b.Fatalf("ran %d of %d: %v", rep.Ran, n, err)
				}
				rate = float64(n) / time.Since(start).Seconds()
			}
			ideal := float64(conc) / latency.Seconds()
			b.ReportMetric(rate, "samples/s")
			b.ReportMetric(rate/ideal, "of-limit")
		})
	}
}

// memorySizes are the sample counts of BenchmarkSweepMemory:
// $LLLM_SWEEP_BENCH_SAMPLES (comma-separated), default 1000 and 10000.
func memorySizes(b *testing.B) []int {
	v := os.Getenv("LLLM_SWEEP_BENCH_SAMPLES")
	if v == "" {
		return []int{1000, 10000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 || n%1000 != 0 {
			b.Fatalf("LLLM_SWEEP_BENCH_SAMPLES=%q: want multiples of 1000", v)
		}
		out = append(out, n)
	}
	return out
}

// peakHeap samples the heap every 5 ms until stop is called, which
// returns the highest values seen, in MB: live, the heap the last GC
// found reachable (runtime/metrics /gc/heap/live:bytes), what the program
// retains; and in use (HeapInuse), which also holds the garbage not yet
// collected, up to GOGC% more.
func peakHeap() (stop func() (live, inuse float64)) {
	runtime.GC()
	var peakLive, peakInuse uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			runtime.ReadMemStats(&ms)
			metrics.Read(sample)
			peakInuse = max(peakInuse, ms.HeapInuse)
			peakLive = max(peakLive, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() (float64, float64) {
		runtime.GC() // so that the live heap of the end is counted
		time.Sleep(10 * time.Millisecond)
		close(done)
		wg.Wait()
		return float64(peakLive) / (1 << 20), float64(peakInuse) / (1 << 20)
	}
}

// BenchmarkSweepMemory measures the peak heap (see peakHeap) of a sweep of N samples on a mock without
// latency, cache off, concurrency 8: 1,000 rows and one cell, N/1,000
// repeats, so that only the number of samples changes. "run" is the whole
// Run (samples, records, the report at the end), "resume" a New and Run
// over the finished directory (index every record, run nothing), "report"
// LoadReport from disk.
func BenchmarkSweepMemory(b *testing.B) {
	warmUp(b)
	for _, n := range memorySizes(b) {
		b.Run(fmt.Sprintf("samples=%d", n), func(b *testing.B) {
			spec := fmt.Sprintf("config: config.yaml\ndataset: rows.jsonl\nconcurrency: 8\ncache: off\nscorers: [numeric]\nrepeats: %d\n", n/1000)
			path := writeSweep(b, spec, map[string]string{"config.yaml": benchConfig(0), "rows.jsonl": rowsJSONL(1000)})
			for i := 0; b.Loop(); i++ {
				dir := filepath.Join(b.TempDir(), fmt.Sprint("out", i))
				stop := peakHeap()
				s := newSweep(b, path, Options{Dir: dir})
				rep, err := s.Run(context.Background())
				runLive, runInuse := stop()
				if err != nil || rep.Ran != n || rep.Done != n {
					b.Fatalf("ran %d of %d: %v", rep.Ran, n, err)
				}
				stop = peakHeap()
				rep, err = newSweep(b, path, Options{Dir: dir}).Run(context.Background())
				resumeLive, resumeInuse := stop()
				if err != nil || rep.Ran != 0 || rep.Done != n {
					b.Fatalf("resume ran %d, done %d of %d: %v", rep.Ran, rep.Done, n, err)
				}
				stop = peakHeap()
				rep, _, err = LoadReport(dir)
				reportLive, reportInuse := stop()
				if err != nil || rep.Done != n {
					b.Fatalf("report: done %d of %d: %v", rep.Done, n, err)
				}
				b.ReportMetric(runLive, "run-live-MB")
				b.ReportMetric(runInuse, "run-inuse-MB")
				b.ReportMetric(resumeLive, "resume-live-MB")
				b.ReportMetric(resumeInuse, "resume-inuse-MB")
				b.ReportMetric(reportLive, "report-live-MB")
				b.ReportMetric(reportInuse, "report-inuse-MB")
			}
		})
	}
}
