package logs

import (
	"testing"
)

// BenchmarkListFunc measures ListFunc of a log root of 4,000 finished
// runs keeping one run in two, what lllm runs does with a filter: keep
// is called in order on the caller's goroutine while the logs are read.
func BenchmarkListFunc(b *testing.B) {
	const n = 4000
	root := b.TempDir()
	listBenchRoot(b, root, n, 20)
	b.ReportAllocs()
	for b.Loop() {
		i := 0
		list, err := ListFunc(root, func(Summary) bool { i++; return i%2 == 0 })
		if err != nil || len(list) != n/2 || list[n/2-1].Status() != StatusOK {
			b.Fatalf("ListFunc: %d runs, %v", len(list), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/run")
}
