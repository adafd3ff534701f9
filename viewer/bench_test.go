package viewer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// The large run of the benchmarks: LLLM_VIEWER_BENCH_MESSAGES messages
// (default 1,000,000, about 1 GB) in 1,000 dialogs: 10 trees of 100
// dialogs, each fork made from a random earlier dialog of its tree (every
// third one keeping first 1 + last 5 messages), each dialog with an equal
// share of the messages, and a model_call record after every assistant
// message. It is generated once and kept in the system's temporary
// directory (lllm-viewer-bench-N/), since writing it takes a while;
// delete that directory to regenerate it.
func benchRun(b *testing.B) (root, id string) {
	b.Helper()
	benchOnce.Do(func() { benchRoot, benchID, benchErr = generateBenchRun() })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchRoot, benchID
}

var (
	benchOnce                    sync.Once
	benchRoot, benchID, benchErr = "", "", error(nil)
)

func benchMessages() int {
	if s := os.Getenv("LLLM_VIEWER_BENCH_MESSAGES"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 1000 {
			return n
		}
	}
	return 1_000_000
}

func generateBenchRun() (string, string, error) {
	total := benchMessages()
	root := filepath.Join(os.TempDir(), fmt.Sprintf("lllm-viewer-bench-%d", total))
	if data, err := os.ReadFile(filepath.Join(root, "COMPLETE")); err == nil {
		return root, strings.TrimSpace(string(data)), nil
	}
	if err := os.RemoveAll(root); err != nil {
		return "", "", err
	}
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "bench", Task: json.RawMessage(`"a very long run"`)}, logs.Options{SyncInterval: time.Minute})
	if err != nil {
		return "", "", err
	}
	const trees, perTree = 10, 100
	perDialog := total / (trees * perTree)
	rng := rand.New(rand.NewPCG(1, 2))
	filler := strings.Repeat("The quick brown fox jumps over the lazy dog; ", 40) // 1,800 bytes
	lengths, depths := map[string]int{}, map[string]int{}
	write := func(rec *logs.Record) {
		if err == nil {
			err = w.Write(rec)
		}
	}
	for t := range trees {
		var ids []string
		for k := range perTree {
			id := fmt.Sprintf("%04x%012x", t, k)
			owner := fmt.Sprintf("agent%d", t)
			if k == 0 {
				write(&logs.Record{Kind: logs.KindDialogOpen, Dialog: id, DialogOpen: &dialog.TreeNode{ID: id, Owner: owner, Alias: "main"}})
			} else {
				parent := ids[rng.IntN(len(ids))]
				plen := lengths[parent]
				node := dialog.TreeNode{ID: id, Owner: owner, Alias: fmt.Sprintf("branch%d", k), ParentID: parent,
					SplitPoint: plen, ParentLen: plen, Depth: depths[parent] + 1}
				depths[id] = node.Depth
				if k%3 == 0 && plen > 6 {
					node.LastN, node.FirstK, node.SplitPoint = 5, 1, 6
				}
				write(&logs.Record{Kind: logs.KindFork, Dialog: id, Fork: &node})
				lengths[id] = node.SplitPoint
			}
			ids = append(ids, id)
			for range perDialog {
				i := lengths[id]
				m := &dialog.Message{Role: dialog.RoleUser, Name: "user", Content: fmt.Sprintf("message %d of %s: %s", i, id, filler[:400+rng.IntN(1000)])}
				if i%2 == 1 {
					m.Role, m.Name, m.Model = dialog.RoleAssistant, owner, "mock/demo"
					m.Usage = dialog.Usage{InputTokens: 100 + i, OutputTokens: 50}
					m.USD = 0.0001
				}
				write(&logs.Record{Kind: logs.KindMessage, Dialog: id, Index: i, Message: m})
				if m.Role == dialog.RoleAssistant {
					write(&logs.Record{Kind: logs.KindModelCall, Dialog: id, ModelCall: &logs.ModelCall{
						Agent: owner, Model: "mock/demo", Call: i / 2, Attempt: 1, Alias: "main", Turn: i / 2,
						RequestDigest: "sha256:0000000000000000000000000000000000000000000000000000000000000000",
						Reply:         &logs.MessageRef{Dialog: id, Index: i}, Usage: m.Usage, USD: m.USD, LatencyMS: 100}})
				}
				lengths[id] = i + 1
			}
		}
	}
	if err != nil {
		return "", "", err
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(root, "COMPLETE"), []byte(run.ID), 0o644); err != nil {
		return "", "", err
	}
	return root, run.ID, nil
}

func benchGet(b *testing.B, h http.Handler, path string, out any) {
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:7777"+path, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkViewerFirstPage is what opening the large run costs a fresh
// viewer: the runs list, the run (indexing its whole log), the first page
// of roots, the first page of a root's forks, and the first page of a
// fork's transcript.
func BenchmarkViewerFirstPage(b *testing.B) {
	root, id := benchRun(b)
	st, err := os.Stat(filepath.Join(root, id, logs.EventsFile))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Size())/1e6, "MB")
	b.ResetTimer()
	for b.Loop() {
		h := New(root, Options{})
		benchGet(b, h, "/api/runs", nil)
		var run runDetail
		benchGet(b, h, "/api/runs/"+id, &run)
		var roots, kids treePage
		benchGet(b, h, "/api/runs/"+id+"/tree", &roots)
		benchGet(b, h, "/api/runs/"+id+"/tree?parent="+roots.Nodes[0].ID, &kids)
		var p messagePage
		benchGet(b, h, "/api/runs/"+id+"/dialogs/"+kids.Nodes[0].ID+"/messages", &p)
		if run.Messages != benchMessages() || len(p.Messages) != min(defaultMessages, p.Total) {
			b.Fatalf("run has %d messages, page %d", run.Messages, len(p.Messages))
		}
	}
}

// BenchmarkViewerScroll is one page of a transcript anywhere in a large
// dialog, once the run is indexed.
func BenchmarkViewerScroll(b *testing.B) {
	root, id := benchRun(b)
	h := New(root, Options{})
	var roots, kids treePage
	benchGet(b, h, "/api/runs/"+id+"/tree", &roots)
	benchGet(b, h, "/api/runs/"+id+"/tree?parent="+roots.Nodes[0].ID, &kids)
	d := kids.Nodes[0]
	for _, n := range kids.Nodes {
		if n.Messages > d.Messages {
			d = n
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	b.ResetTimer()
	for b.Loop() {
		var p messagePage
		off := rng.IntN(max(1, d.Messages-defaultMessages))
		benchGet(b, h, fmt.Sprintf("/api/runs/%s/dialogs/%s/messages?offset=%d", id, d.ID, off), &p)
		if len(p.Messages) != min(defaultMessages, d.Messages-off) {
			b.Fatalf("page of %d", len(p.Messages))
		}
	}
}

// BenchmarkRebuildLarge is logs.Rebuild of the same run, for comparison:
// what a viewer that decoded the whole log would pay before its first page.
func BenchmarkRebuildLarge(b *testing.B) {
	root, id := benchRun(b)
	run, err := logs.Open(root, id)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		f, _, err := run.Forest(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if f.Len() != 1000 {
			b.Fatalf("%d dialogs", f.Len())
		}
	}
}
