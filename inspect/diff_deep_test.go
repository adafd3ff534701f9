package inspect

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// step is one dialog of a generated run: a fork of the dialog made at
// step parent (a root when parent < 0) keeping its last lastN messages
// and first firstK, that then adds the texts.
type step struct {
	parent        int
	lastN, firstK int
	texts         []string
}

// runOf writes the run of the steps and reads its tree with messages.
func runOf(t testing.TB, steps []step) *Tree {
	t.Helper()
	var buf bytes.Buffer
	w, err := logs.NewWriter(&buf, logs.RunStart{Tactic: "deep", RunID: "deep"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ds := make([]*dialog.Dialog, len(steps))
	for i, s := range steps {
		if s.parent < 0 {
			ds[i], err = dialog.New("a", dialog.WithSink(w), dialog.WithAlias("main"))
		} else {
			ds[i], err = ds[s.parent].Fork(s.lastN, s.firstK, dialog.WithAlias("main"))
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range s.texts {
			if _, err := ds[i].PutText(text); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	tree, err := Read(context.Background(), logs.NewReader(&buf, "deep"), "deep", Options{Messages: true})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// chain is a fork chain of depth n under a root holding one message,
// each fork adding "step I".
func chain(n int) []step {
	steps := []step{{parent: -1, texts: []string{"s"}}}
	for i := 1; i <= n; i++ {
		steps = append(steps, step{parent: i - 1, texts: []string{fmt.Sprintf("step %d", i)}})
	}
	return steps
}

// naiveDiff is what Compare reports of a pair of matched dialogs,
// computed from their whole transcripts: FirstDiff, and the divergence
// found from the first message the pair does not leave to its parents.
type naiveDiff struct {
	firstDiff                   int
	index                       int // -1 for no divergence
	roleA, roleB                string
	laterDiffer, extraA, extraB int
}

func naive(a, b *Tree) map[string]naiveDiff {
	keysA, keysB := Keys(a), Keys(b)
	byKey := map[Key]*Node{}
	for n, k := range keysB {
		byKey[k] = n
	}
	out := map[string]naiveDiff{}
	for _, na := range a.Nodes {
		nb := byKey[keysA[na]]
		if nb == nil {
			continue
		}
		ma, mb := a.Forest.Dialog(na.ID).Messages(), b.Forest.Dialog(nb.ID).Messages()
		first := func(from int) int {
			for i := from; i < min(len(ma), len(mb)); i++ {
				if messageText(ma[i]) != messageText(mb[i]) {
					return i
				}
			}
			if len(ma) != len(mb) {
				return max(from, min(len(ma), len(mb)))
			}
			return -1
		}
		from := 0
		if pa, pb := na.Parent, nb.Parent; pa != nil && pb != nil && byKey[keysA[pa]] == pb && na.SplitPoint == nb.SplitPoint &&
			na.LastN == nb.LastN && na.FirstK == nb.FirstK && na.ParentLen == nb.ParentLen {
			from = na.SplitPoint
		}
		nd := naiveDiff{firstDiff: first(0), index: first(from)}
		if i := nd.index; i >= 0 {
			if i < len(ma) {
				nd.roleA = string(ma[i].Role)
			}
			if i < len(mb) {
				nd.roleB = string(mb[i].Role)
			}
			for j := i + 1; j < max(len(ma), len(mb)); j++ {
				switch {
				case j >= len(mb):
					nd.extraA++
				case j >= len(ma):
					nd.extraB++
				case messageText(ma[j]) != messageText(mb[j]):
					nd.laterDiffer++
				}
			}
		}
		out[na.ID] = nd
	}
	return out
}

// checkNaive checks Compare(a, b) against naive.
func checkNaive(t *testing.T, a, b *Tree) {
	t.Helper()
	d, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := naive(a, b)
	if len(d.Dialogs) != len(want) {
		t.Fatalf("%d matched dialogs, want %d", len(d.Dialogs), len(want))
	}
	got := map[string]naiveDiff{}
	for _, dd := range d.Dialogs {
		got[dd.A] = naiveDiff{firstDiff: dd.FirstDiff, index: -1}
	}
	for _, v := range d.Divergences {
		g := got[v.A]
		g.index, g.roleA, g.roleB, g.laterDiffer, g.extraA, g.extraB = v.Index, v.RoleA, v.RoleB, v.LaterDiffer, v.ExtraA, v.ExtraB
		got[v.A] = g
	}
	for id, w := range want {
		if g := got[id]; g != w {
			t.Errorf("dialog %s: got %+v, want %+v", id, g, w)
		}
	}
}

// Compare reports of deep chains what a comparison of whole transcripts
// does: the same message changed, added or left out in B at some depth,
// forks made alike or not, in chains and in trees with last_n forks.
func TestCompareDeepMatchesWholeTranscripts(t *testing.T) {
	base := chain(40)
	changed := chain(40)
	changed[17].texts = []string{"other 17"}
	extra := chain(40)
	extra[9].texts = append(extra[9].texts, "extra 9")
	missing := chain(40)
	missing[25].texts = nil
	twice := chain(40)
	twice[5].texts = []string{"other 5"}
	twice[30].texts = []string{"other 30"}
	last := chain(40)
	last[33].texts = []string{"other 33"}
	runs := map[string][]step{"base": base, "changed": changed, "extra": extra, "missing": missing, "twice": twice, "last": last}
	for na, sa := range runs {
		for nb, sb := range runs {
			t.Run(na+"-"+nb, func(t *testing.T) { checkNaive(t, runOf(t, sa), runOf(t, sb)) })
		}
	}

	// Random trees: each dialog forks one of the last few, sometimes
	// keeping only its last messages; B changes, adds or drops texts.
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		var sa, sb []step
		for i := range 60 {
			s := step{parent: -1}
			if i > 0 {
				s.parent = max(0, i-1-rng.IntN(3))
				if rng.IntN(5) == 0 {
					s.lastN, s.firstK = 1+rng.IntN(3), rng.IntN(2)
				}
			}
			for j := range rng.IntN(3) {
				s.texts = append(s.texts, fmt.Sprintf("m %d.%d", i, j))
			}
			sa = append(sa, s)
			s.texts = append([]string(nil), s.texts...)
			switch rng.IntN(12) {
			case 0:
				s.texts = append(s.texts, "added")
			case 1:
				if len(s.texts) > 0 {
					s.texts[0] = "changed"
				}
			case 2:
				if len(s.texts) > 0 {
					s.texts = s.texts[1:]
				}
			}
			sb = append(sb, s)
		}
		t.Run(fmt.Sprint("random", round), func(t *testing.T) { checkNaive(t, runOf(t, sa), runOf(t, sb)) })
	}
}

// chainTree is the tree of a fork chain of depth n written as
// /tmp/qa6/gen/deep.py does, the fastest way: a root with one message,
// each fork adding "step I", but the fork at depth change says "other"
// and the one at depth extra adds a second message.
func chainTree(t testing.TB, n, change, extra int) *Tree {
	t.Helper()
	var b bytes.Buffer
	seq := 0
	rec := func(format string, args ...any) {
		seq++
		fmt.Fprintf(&b, `{"seq":%d,"ts":"2026-11-20T10:00:10Z",`+format+"}\n", append([]any{seq}, args...)...)
	}
	rec(`"kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":"deep","tactic":"deep"}`)
	rec(`"kind":"dialog_open","dialog":"f0","dialog_open":{"id":"f0","owner":"a","alias":"main"}`)
	rec(`"kind":"message","dialog":"f0","message":{"role":"system","content":"s"}`)
	size := 1
	for i := 1; i <= n; i++ {
		rec(`"kind":"fork","dialog":"f%d","fork":{"id":"f%[2]d","owner":"a","alias":"main","parent_id":"f%d","split_point":%d,"parent_len":%[4]d,"depth":%[2]d}`, i, i-1, size)
		text := fmt.Sprintf("step %d", i)
		if i == change {
			text = "other"
		}
		rec(`"kind":"message","dialog":"f%d","index":%d,"message":{"role":"user","content":%q}`, i, size, text)
		size++
		if i == extra {
			rec(`"kind":"message","dialog":"f%d","index":%d,"message":{"role":"user","content":"extra"}`, i, size)
			size++
		}
	}
	rec(`"kind":"run_end","run_end":{"status":"ok"}`)
	tree, err := Read(context.Background(), logs.NewReader(&b, "deep"), "deep", Options{Messages: true})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// Compare takes time linear in the depth of a fork chain: 5,000 deep,
// with forks made alike (B changes one message) or not (B has one more
// message early on), where comparing every fork's whole transcript took
// 6 and 10 s (46 and 59 s 10,000 deep).
func TestCompareDeepChainLinear(t *testing.T) {
	const n = 5000
	a := chainTree(t, n, -1, -1)
	for _, tt := range []struct {
		name          string
		change, extra int
	}{{"alike", n / 2, -1}, {"shifted", -1, 10}} {
		b := chainTree(t, n, tt.change, tt.extra)
		start := time.Now()
		d, err := Compare(a, b)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		t.Logf("%s: %d divergences in %v", tt.name, len(d.Divergences), took)
		if took > 5*time.Second {
			t.Errorf("%s: Compare of a %d-deep chain took %v", tt.name, n, took)
		}
		switch last := d.Divergences[len(d.Divergences)-1]; {
		case tt.name == "alike" && (len(d.Divergences) != 1 || last.Index != n/2):
			t.Errorf("alike: divergences %+v, want one at message %d", d.Divergences, n/2)
		case tt.name == "shifted" && (len(d.Divergences) != n-9 || last.Index != 11 || last.LaterDiffer != n-11 || last.ExtraB != 1):
			t.Errorf("shifted: %d divergences, the last %+v; want %d, the last at 11 with %d later differing and 1 extra in B",
				len(d.Divergences), last, n-9, n-11)
		}
	}
}

// BenchmarkCompareDeepChain compares two 10,000-deep fork chains, made
// alike or not as in TestCompareDeepChainLinear.
func BenchmarkCompareDeepChain(b *testing.B) {
	const n = 10000
	a := chainTree(b, n, -1, -1)
	for _, bb := range []struct {
		name          string
		change, extra int
	}{{"alike", n / 2, -1}, {"shifted", -1, 10}} {
		tb := chainTree(b, n, bb.change, bb.extra)
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Compare(a, tb); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
