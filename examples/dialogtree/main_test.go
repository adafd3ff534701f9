package main

import (
	"testing"

	"github.com/lllm-go/lllm/logs"
)

func TestExampleWritesARebuildableTree(t *testing.T) {
	dir := t.TempDir()
	if err := run(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	r, err := logs.Open(dir, "latest")
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := r.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	roots := f.Roots()
	if len(roots) != 1 || len(f.SubtreeIDs(roots[0])) != 3 {
		t.Fatalf("roots %v, subtree %v", roots, f.SubtreeIDs(roots[0]))
	}
	main := f.Dialog(roots[0])
	if main.Len() != 3 || string(main.Tail().Parsed) == "" {
		t.Fatalf("main dialog: %d messages, parsed %q", main.Len(), main.Tail().Parsed)
	}
	lens := map[int]bool{}
	for _, id := range main.Node().ChildrenIDs {
		lens[f.Dialog(id).Len()] = true
	}
	if !lens[4] || !lens[3] { // full fork: 3+1; fork(1, 1): system prompt and draft, +1
		t.Fatalf("variation lengths %v", lens)
	}
}
