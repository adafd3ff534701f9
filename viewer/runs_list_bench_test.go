package viewer

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// manyRuns makes a log root of n finished runs in dir, each a copy of one
// log made by logs.Create: a run_start with a 2 KB config and a short
// task, 40 message records of about 250 bytes, and a run_end. Run i is
// named run-NNNNNN; the log it copies is returned.
func manyRuns(tb testing.TB, dir string, n int) []byte {
	tb.Helper()
	tmp := tb.TempDir()
	config := map[string]any{"tactic_type": "best_of_n", "system_prompt": strings.Repeat("You solve tasks. ", 120)}
	start, err := logs.NewRunStart(tb.Context(), "best_of_n", config, "Capital of France?", 1)
	if err != nil {
		tb.Fatal(err)
	}
	start.Labels = map[string]string{"cell": "0"}
	w, run, err := logs.Create(tmp, start, logs.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	d := must(dialog.New("solver", dialog.WithAlias("main"), dialog.WithSink(w)))
	for i := range 40 {
		must(d.PutText(fmt.Sprintf("step %d: %s", i, strings.Repeat("lorem ipsum ", 16))))
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK, Totals: logs.Totals{ModelCalls: 4, Dialogs: 1, Messages: 40}, Result: json.RawMessage(`"Paris"`)}); err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(run.Path())
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("run-%06d", i)
		if err := os.Mkdir(filepath.Join(dir, id), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, id, logs.EventsFile), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return data
}

// BenchmarkAPIRuns measures GET /api/runs on a log root of n and 4n
// finished runs: the first page load of a viewer (a new Handler each
// time), and a page load after the first (the same Handler). The answer
// is checked after the timed loop.
func BenchmarkAPIRuns(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		root := b.TempDir()
		manyRuns(b, root, n)
		serve := func(b *testing.B, h *Handler) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:7777/api/runs", nil))
			if rec.Code != http.StatusOK {
				b.Fatalf("GET /api/runs: %d %s", rec.Code, rec.Body)
			}
			return rec
		}
		check := func(b *testing.B, rec *httptest.ResponseRecorder) {
			var got struct{ Runs []logs.RunInfo }
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				b.Fatal(err)
			}
			if len(got.Runs) != n || got.Runs[n-1].Status != logs.StatusOK {
				b.Fatalf("%d runs listed, want %d ok", len(got.Runs), n)
			}
		}
		b.Run(fmt.Sprintf("first/runs=%d", n), func(b *testing.B) {
			var rec *httptest.ResponseRecorder
			b.ReportAllocs()
			for b.Loop() {
				rec = serve(b, New(root, Options{}))
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/run")
			check(b, rec)
		})
		b.Run(fmt.Sprintf("again/runs=%d", n), func(b *testing.B) {
			h := New(root, Options{})
			check(b, serve(b, h))
			var rec *httptest.ResponseRecorder
			b.ReportAllocs()
			for b.Loop() {
				rec = serve(b, h)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/run")
			check(b, rec)
		})
	}
}
