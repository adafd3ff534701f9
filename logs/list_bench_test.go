package logs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// listBenchRoot makes a log root of n finished runs in dir, each a copy
// of one log made by Create and Finish: a run_start with a 2 KB config and
// a task of taskBytes, 40 message records of about 250 bytes, and a
// run_end. It returns the size of one log.
func listBenchRoot(tb testing.TB, dir string, n, taskBytes int) int {
	tb.Helper()
	tmp := tb.TempDir()
	config := map[string]any{"tactic_type": "best_of_n", "system_prompt": strings.Repeat("You solve tasks. ", 120)}
	task, _ := json.Marshal(strings.Repeat("Capital of France? ", taskBytes/19+1)[:taskBytes])
	start, err := NewRunStart(tb.Context(), "best_of_n", config, json.RawMessage(task), 1)
	if err != nil {
		tb.Fatal(err)
	}
	start.Labels = map[string]string{"cell": "0", "row": "17"}
	w, run, err := Create(tmp, start, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range 40 {
		m := dialog.Message{Role: dialog.RoleAssistant, Name: "solver", Content: fmt.Sprintf("step %d: %s", i, strings.Repeat("lorem ipsum ", 16))}
		rec := Record{Kind: KindMessage, Dialog: "0123456789abcdef", Index: i, Message: &m}
		if err := w.Write(&rec); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Finish(RunEnd{Status: StatusOK, Totals: Totals{ModelCalls: 4, Dialogs: 9}, Result: json.RawMessage(`"Paris"`)}); err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(run.Path())
	if err != nil {
		tb.Fatal(err)
	}
	t0 := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for i := range n {
		id := t0.Add(time.Duration(i)*time.Millisecond).Format(idTimeLayout) + fmt.Sprintf("-%06x", i)
		if err := os.Mkdir(filepath.Join(dir, id), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, id, EventsFile), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return len(data)
}

// BenchmarkList measures List of a log root of n and 4n finished runs,
// with a small task and with a 100 KB one: what lllm runs and the
// viewer's run list do on every listing.
func BenchmarkList(b *testing.B) {
	for _, task := range []struct {
		name  string
		bytes int
	}{{"task=20B", 20}, {"task=100KB", 100 << 10}} {
		for _, n := range []int{1000, 4000} {
			b.Run(fmt.Sprintf("%s/runs=%d", task.name, n), func(b *testing.B) {
				root := b.TempDir()
				size := listBenchRoot(b, root, n, task.bytes)
				b.ReportAllocs()
				for b.Loop() {
					list, err := List(root)
					if err != nil || len(list) != n || list[n-1].Status() != StatusOK {
						b.Fatalf("List: %d runs, %v", len(list), err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/run")
				b.ReportMetric(float64(size), "log-bytes")
			})
		}
	}
}
