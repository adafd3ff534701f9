package conversation

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// benchWords make the generated messages' text.
var benchWords = strings.Fields(`the a of to and in that is for it with as on was this by be are from at or an
model run dialog agent prompt token context result score baseline seed sweep compaction archive
summary recall request reply latency throughput memory budget window experiment hypothesis data
evaluation metric error retry cache sample batch tool call function stream server client config`)

// benchText is n bytes or so of words.
func benchText(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchWords[r.IntN(len(benchWords))])
	}
	return b.String()
}

// writeBenchConversation writes, with the store's own writer, one
// conversation of total messages under dir: alternately a user message
// (60 to 400 bytes) and an assistant reply (200 to 2,000 bytes), a read
// marker before each user message as a Service writes, and a compaction
// every period messages after the first, archives times in all, so
// that total - archives*period messages stay live.
func writeBenchConversation(b *testing.B, dir string, total, archives, period int) {
	b.Helper()
	s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	c, err := s.Get("assistant", "alice")
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	if err := c.SetTitle("A long-running research conversation"); err != nil {
		b.Fatal(err)
	}
	n := 0
	for i := range total {
		m := dialog.Message{Role: dialog.RoleUser, Name: "alice", Content: benchText(r, 60+r.IntN(340)), Modality: dialog.ModalityText}
		if i%2 == 1 {
			m = dialog.Message{Role: dialog.RoleAssistant, Name: "assistant", Content: benchText(r, 200+r.IntN(1800)), Modality: dialog.ModalityText}
		} else if err := c.MarkRead(); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Append(m); err != nil {
			b.Fatal(err)
		}
		n++
		if n == period && len(c.Archives()) < archives {
			n = 0
			id := len(c.Archives()) + 1
			_, err := c.Compact(context.Background(), func(context.Context, []*dialog.Message) (string, error) {
				return fmt.Sprintf("Part %d of the study of %s. %s", id, benchText(r, 20), benchText(r, 600)), nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if got := len(c.Archives()); got != archives {
		b.Fatalf("%d archives, want %d", got, archives)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkRestore measures opening a store holding one conversation of
// 100,000 messages: with 50 archives and a live part of 1,000 messages
// (half a compaction period, the average), and with no compaction at all
// (100,000 live messages). Beside each, the baseline reads the same log
// with encoding/json line by line, decoding every record and keeping every
// message, as a restore without the live-part rule would.
//
//	go test -run=XXX -bench=Restore -benchmem -benchtime=10x ./runtime/conversation
func BenchmarkRestore(b *testing.B) {
	const total = 100_000
	for _, c := range []struct {
		name             string
		archives, period int
	}{
		{"archives=50/live=1000", 50, (total - 1000) / 50},
		{"archives=0/live=100000", 0, total},
	} {
		dir := filepath.Join(b.TempDir(), "data")
		writeBenchConversation(b, dir, total, c.archives, c.period)
		logPath := filepath.Join(dir, "assistant", "alice", LogFile)
		st, err := os.Stat(logPath)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("restore/"+c.name, func(b *testing.B) {
			b.SetBytes(st.Size())
			base := heapInUse()
			var s *Store
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if s != nil {
					_ = s.Close()
				}
				if s, err = Open(dir, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			retained := heapInUse() - base
			conv, ok := s.Lookup("assistant", "alice")
			if !ok || len(conv.Archives()) != c.archives {
				b.Fatalf("restored %v with %d archives", ok, len(conv.Archives()))
			}
			live := len(conv.Messages())
			if want := total - c.archives*c.period + min(c.archives, 1); live != want {
				b.Fatalf("%d live messages, want %d", live, want)
			}
			b.ReportMetric(float64(retained)/(1<<20), "retained-MB")
			b.ReportMetric(float64(live), "live-msgs")
			_ = s.Close()
		})
		b.Run("json-lines/"+c.name, func(b *testing.B) {
			b.SetBytes(st.Size())
			base := heapInUse()
			var kept []*dialog.Message
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				kept = readAllRecords(b, logPath)
			}
			b.StopTimer()
			retained := heapInUse() - base
			if len(kept) != total {
				b.Fatalf("%d messages read", len(kept))
			}
			b.ReportMetric(float64(retained)/(1<<20), "retained-MB")
			b.ReportMetric(float64(len(kept)), "live-msgs")
			runtime.KeepAlive(kept)
		})
	}
}

// readAllRecords is the baseline: every line decoded with encoding/json,
// every message kept.
func readAllRecords(b *testing.B, path string) []*dialog.Message {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out []*dialog.Message
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var rec struct {
			Seq     int64           `json:"seq"`
			Time    time.Time       `json:"ts"`
			Kind    string          `json:"kind"`
			Message *dialog.Message `json:"message"`
			Compact *Marker         `json:"compact"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			b.Fatal(err)
		}
		if rec.Message != nil {
			out = append(out, rec.Message)
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}
