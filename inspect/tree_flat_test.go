package inspect_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
)

// flatten lists the nodes of a nested JSON document depth first, as
// FlatJSONNodes.
func flatten(ns []*inspect.JSONNode, parent string, out []inspect.FlatJSONNode) []inspect.FlatJSONNode {
	for _, n := range ns {
		out = append(out, inspect.FlatJSONNode{JSONDialog: n.JSONDialog, Parent: parent})
		out = flatten(n.Children, n.ID, out)
	}
	return out
}

// The flat JSON lists the dialogs of the nested form in its order, parents
// first, each on its own line as encoding/json writes it, with its parent
// in the list, for the whole tree and for a subtree.
func TestWriteFlatJSON(t *testing.T) {
	tree := load(t, agentRun(t, "You add.", standard...), inspect.Options{})
	// Costs and text that test the encoding.
	tree.Nodes[0].Cost = dialog.Cost{Usage: dialog.Usage{InputTokens: 12, CachedInputTokens: 3, OutputTokens: 4, ReasoningTokens: 5}, USD: 0.0000123}
	tree.Nodes[1].CallCost = dialog.Cost{Usage: dialog.Usage{CacheWriteTokens: 7}, USD: 1.5}
	tree.Nodes[1].MaxTokensCut = 12
	tree.Nodes[1].FailReason += ` <b>"quoted"</b> & ünïcode` + "\x1b \xff"
	tree.Dir = `C:\runs\x`

	sub := tree.Roots[0].Children[0]
	for name, sel := range map[string]inspect.Selection{
		"all":     inspect.All,
		"subtree": {Start: []*inspect.Node{sub}, Depth: -1},
		"depth 1": {Start: []*inspect.Node{tree.Roots[0]}, Depth: 1},
		"depth 0": {Depth: 0},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := inspect.WriteFlatJSON(&b, tree, sel); err != nil {
				t.Fatal(err)
			}
			nested := inspect.JSON(tree, sel)
			want := flatten(nested.Dialogs, "", nil)
			if len(want) < 2 && name != "depth 0" {
				t.Fatalf("the selection has %d dialogs", len(want))
			}
			var doc inspect.FlatJSONTree
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, b.String())
			}
			if doc.RunID != tree.RunID || doc.Dir != tree.Dir || len(doc.Dialogs) != len(want) {
				t.Fatalf("run %q dir %q, %d dialogs; want %q %q %d", doc.RunID, doc.Dir, len(doc.Dialogs), tree.RunID, tree.Dir, len(want))
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if len(lines) != len(want)+2 || lines[len(lines)-1] != "]}" {
				t.Fatalf("%d lines for %d dialogs:\n%s", len(lines), len(want), b.String())
			}
			seen := map[string]bool{}
			for i, w := range want {
				var line bytes.Buffer
				enc := json.NewEncoder(&line)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(w); err != nil {
					t.Fatal(err)
				}
				got := strings.TrimSuffix(lines[i+1], ",")
				if got != strings.TrimSuffix(line.String(), "\n") {
					t.Errorf("dialog %d:\n got %s\nwant %s", i, got, line.String())
				}
				if p := doc.Dialogs[i].Parent; p != "" && !seen[p] {
					t.Errorf("dialog %d: parent %q not listed before it", i, p)
				}
				seen[doc.Dialogs[i].ID] = true
			}
			if strings.Contains(b.String(), `"children"`) {
				t.Errorf("flat JSON has children:\n%s", b.String())
			}
		})
	}
}

// A chain of forks 10,000 deep is listed in size linear in its length
// and read by encoding/json, whose nesting limit the nested form passes.
func TestWriteFlatJSONDeepChain(t *testing.T) {
	const n = 10000
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"seq":1,"ts":"2026-11-20T10:00:10Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":"deep","tactic":"deep"}}`+"\n")
	fmt.Fprintf(&b, `{"seq":2,"ts":"2026-11-20T10:00:10Z","kind":"dialog_open","dialog":"f0","dialog_open":{"id":"f0","owner":"a","alias":"main"}}`+"\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"seq":%d,"ts":"2026-11-20T10:00:10Z","kind":"fork","dialog":"f%d","fork":{"id":"f%[2]d","owner":"a","alias":"main","parent_id":"f%d","depth":%[2]d}}`+"\n", i+2, i, i-1)
	}
	tree, err := inspect.Read(t.Context(), logs.NewReader(&b, "deep"), "deep", inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h := inspect.All.Height(tree); h != n {
		t.Errorf("Height %d, want %d", h, n)
	}
	var out bytes.Buffer
	if err := inspect.WriteFlatJSON(&out, tree, inspect.All); err != nil {
		t.Fatal(err)
	}
	if out.Len() > 300*(n+1) {
		t.Errorf("%d bytes for %d dialogs", out.Len(), n+1)
	}
	var doc inspect.FlatJSONTree
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for i, d := range doc.Dialogs {
		if want := fmt.Sprintf("f%d", i); d.ID != want || d.Depth != i || i > 0 && d.Parent != fmt.Sprintf("f%d", i-1) {
			t.Fatalf("dialog %d: %+v", i, d)
		}
	}
	if len(doc.Dialogs) != n+1 {
		t.Errorf("%d dialogs, want %d", len(doc.Dialogs), n+1)
	}
}
