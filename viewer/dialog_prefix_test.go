package viewer

import (
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// A dialog is named in the API as lllm show names it: by its id or a
// unique prefix of one, such as the eight characters lllm tree prints. A
// prefix of several dialogs is a 400 that lists them; a name no dialog
// has is a 404 that says how dialogs are named.
func TestDialogByPrefix(t *testing.T) {
	f := newFixture(t)
	h := New(f.root, Options{})
	var byID, byPrefix dialogInfo
	get(t, h, "/api/runs/"+f.bestOfN+"/dialogs/"+f.try2, 200, &byID)
	get(t, h, "/api/runs/"+f.bestOfN+"/dialogs/"+f.try2[:8], 200, &byPrefix)
	if byPrefix.Node.ID != f.try2 || byPrefix.Node.Alias != "try2" || len(byPrefix.Ancestors) != len(byID.Ancestors) {
		t.Fatalf("by prefix %+v; by id %+v", byPrefix, byID)
	}
	var msgs messagePage
	get(t, h, "/api/runs/"+f.bestOfN+"/dialogs/"+f.try2[:8]+"/messages", 200, &msgs)
	if msgs.Dialog != f.try2 || msgs.Total != 3 {
		t.Fatalf("messages by prefix: dialog %q, %d messages; want %s's 3", msgs.Dialog, msgs.Total, f.try2)
	}
	var kids treePage
	get(t, h, "/api/runs/"+f.bestOfN+"/tree?parent="+f.try2[:8], 200, &kids)
	if kids.Parent != f.try2 || len(kids.Nodes) != 1 || kids.Nodes[0].Alias != "try2#1" {
		t.Fatalf("tree by prefix: %+v", kids)
	}

	// Seventeen dialogs: two of them share their first hex digit.
	w, run, err := logs.Create(f.root, logs.RunStart{Tactic: "many"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[byte]string{}
	var shared, other string
	for range 17 {
		d, err := dialog.New("agent", dialog.WithSink(w), dialog.WithAlias("main"))
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[d.ID()[0]]; ok && shared == "" {
			shared, other = d.ID(), prev
		}
		seen[d.ID()[0]] = d.ID()
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	var amb errBody
	get(t, h, "/api/runs/"+run.ID+"/dialogs/"+shared[:1], 400, &amb)
	if !strings.Contains(amb.Error, "give more of an id") || !strings.Contains(amb.Error, shared) || !strings.Contains(amb.Error, other) {
		t.Errorf("a prefix of several dialogs: %q", amb.Error)
	}
	var none errBody
	get(t, h, "/api/runs/"+run.ID[:20]+"/dialogs/zz", 404, &none)
	if want := "run " + run.ID + ` has no dialog "zz": name a dialog by its id, or a unique prefix of one`; none.Error != want {
		t.Errorf("no such dialog: %q, want %q", none.Error, want)
	}
}
