package contextmgr

import (
	"context"
	"fmt"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// BenchmarkFitLongMemoised is one Fit of a dialog of n messages whose counts
// are all memoised already, as every call of a long agent loop is.
func BenchmarkFitLongMemoised(b *testing.B) {
	for _, typ := range []string{"window", "default"} {
		for _, n := range []int{2000, 8000} {
			b.Run(fmt.Sprintf("%s/n=%d", typ, n), func(b *testing.B) {
				cfg := map[string]any{"type": typ}
				if typ == "window" {
					cfg["n"] = 40
				} else {
					cfg["max_tokens"] = 1 << 30 // nothing cut: the count alone
				}
				mgr, err := New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				tok := NewTokenizer()
				msgs := []*dialog.Message{{Role: dialog.RoleSystem, Content: "You count."}}
				for i := range n {
					msgs = append(msgs, &dialog.Message{Role: dialog.RoleUser, Content: fmt.Sprintf("message %d", i)})
				}
				in := Input{Model: "mock/demo", Messages: msgs, Tokens: tok}
				if _, err := mgr.Fit(context.Background(), in); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := mgr.Fit(context.Background(), in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/message")
			})
		}
	}
}
