package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// BenchmarkSweepThroughput runs samples on a mock with a fixed 50 ms
// latency at several concurrency limits, and reports the rate reached as a
// fraction of what the limit allows (concurrency / latency).
func BenchmarkSweepThroughput(b *testing.B) {
	const latency = 50 * time.Millisecond
	for _, conc := range []int{1, 4, 16, 64, 256} {
		b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) {
			n := max(4*conc, 40)
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
