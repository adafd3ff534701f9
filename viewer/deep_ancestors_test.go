package viewer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/logs"
)

// A dialog at the end of a chain of 8,000 forks: its ancestors come root
// first, every one of them, in time linear in the depth (prepending them
// one by one took half a minute here under -race). Timed as a ratio, the
// dialog 8,000 deep against one 2,000 deep, taking turns (the fastest of
// three each), so that a busy machine slows both alike: linear is 4x,
// quadratic 16x.
func TestDeepAncestorsRootFirstAndLinear(t *testing.T) {
	const depth = 8000
	root := t.TempDir()
	id := "20261120T100010.000000Z-deep08"
	var b strings.Builder
	seq := 0
	line := func(kind, dlg, payload string) {
		seq++
		fmt.Fprintf(&b, `{"seq":%d,"ts":"2026-11-20T10:00:10Z","kind":%q,"dialog":%q,%q:%s}`+"\n", seq, kind, dlg, kind, payload)
	}
	seq++
	fmt.Fprintf(&b, `{"seq":1,"ts":"2026-11-20T10:00:10Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":%q,"tactic":"deep"}}`+"\n", id)
	line("dialog_open", "d0", `{"id":"d0","owner":"a","alias":"main","split_point":0,"last_n":0,"first_k":0,"parent_len":0,"depth":0}`)
	for i := 1; i <= depth; i++ {
		line("fork", fmt.Sprintf("d%d", i), fmt.Sprintf(`{"id":"d%d","owner":"a","alias":"main","parent_id":"d%d","split_point":0,"last_n":0,"first_k":0,"parent_len":0,"depth":%d}`, i, i-1, i))
	}
	if err := os.MkdirAll(filepath.Join(root, id), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, id, logs.EventsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	h := New(root, Options{})
	var tp treePage
	get(t, h, "/api/runs/"+id+"/tree", 200, &tp) // index it first

	var info dialogInfo
	timed := func(d int) time.Duration {
		start := time.Now()
		get(t, h, fmt.Sprintf("/api/runs/%s/dialogs/d%d", id, d), 200, &info)
		return time.Since(start)
	}
	quarter, whole := time.Duration(1<<63-1), time.Duration(1<<63-1)
	for range 3 {
		quarter = min(quarter, timed(depth/4))
		whole = min(whole, timed(depth))
	}
	if info.Node.ID != fmt.Sprintf("d%d", depth) || len(info.Ancestors) != depth {
		t.Fatalf("node %s with %d ancestors, want d%d with %d", info.Node.ID, len(info.Ancestors), depth, depth)
	}
	for i, a := range info.Ancestors {
		if want := fmt.Sprintf("d%d", i); a.ID != want || a.Depth != i {
			t.Fatalf("ancestor %d is %s at depth %d, want %s (root first)", i, a.ID, a.Depth, want)
		}
	}
	if whole > 10*quarter && whole > time.Second {
		t.Errorf("the ancestors of a dialog %d forks deep took %v, %d deep %v: not linear", depth, whole, depth/4, quarter)
	}
}
