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

// wantDivergence is what a test expects of an inspect.Divergence.
type wantDivergence struct {
	key                  inspect.Key
	index                int
	roleA, roleB         string
	diff                 string
	later, extraA, extra int
}

func checkDivergences(t *testing.T, got []inspect.Divergence, want []wantDivergence) {
	t.Helper()
	if len(got) != len(want) {
		for _, v := range got {
			t.Logf("%v message %d:\n%s", v.Key, v.Index, v.Diff)
		}
		t.Fatalf("%d divergences, want %d", len(got), len(want))
	}
	for i, w := range want {
		v := got[i]
		if v.Key != w.key || v.Index != w.index || v.RoleA != w.roleA || v.RoleB != w.roleB || v.Diff != w.diff ||
			v.LaterDiffer != w.later || v.ExtraA != w.extraA || v.ExtraB != w.extra {
			t.Errorf("divergence %d: %+v\nwant %+v", i+1, v, w)
		}
	}
}

func compareText(t *testing.T, d *inspect.Diff, opts inspect.TextOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := d.WriteText(&b, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Replies that differ in turns 1 and 3 and in the judge's answer: each
// working copy where a reply differs, in the order A's log wrote them; the
// dialogs the replies were kept in diverge at the same replies, written
// again, and are left out; turn 2, whose reply is the same, only inherits
// turn 1's and has none of its own.
func TestDivergencesEveryTurn(t *testing.T) {
	a := load(t, agentRun(t, "You add.", "<answer>4</answer>", "<answer>6</answer>", "<answer>8</answer>", "ok"), inspect.Options{Messages: true})
	b := load(t, agentRun(t, "You add.", "<answer>5</answer>", "<answer>6</answer>", "<answer>9</answer>", "good"), inspect.Options{Messages: true})
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	coder := func(alias string, turn int) inspect.Key { return inspect.Key{Owner: "coder", Alias: alias, Turn: turn} }
	judge := func(alias string) inspect.Key { return inspect.Key{Owner: "judge", Alias: alias, Turn: 1} }
	turn1 := "  [assistant coder]\n- <answer>4</answer>\n+ <answer>5</answer>"
	turn3 := "  [assistant coder]\n- <answer>8</answer>\n+ <answer>9</answer>"
	verdict := "  [assistant judge]\n- ok\n+ good"
	checkDivergences(t, d.Divergences, []wantDivergence{
		{key: coder("main#1", 1), index: 2, roleA: "assistant", roleB: "assistant", diff: turn1},
		{key: coder("main#1", 3), index: 6, roleA: "assistant", roleB: "assistant", diff: turn3},
		{key: judge("main#1"), index: 2, roleA: "assistant", roleB: "assistant", diff: verdict},
	})
	// The dialogs that keep the replies differ all the same.
	for _, dd := range d.Dialogs {
		if (dd.Key == coder("main", 1) || dd.Key == judge("main")) && dd.FirstDiff != 2 {
			t.Errorf("%v: first diff %d, want 2", dd.Key, dd.FirstDiff)
		}
	}
	if f := d.First(); f != &d.Divergences[0] {
		t.Errorf("First() = %+v, want the first of Divergences", f)
	}
	// Turn 2's working copy differs from message 2 on, all inherited.
	for _, dd := range d.Dialogs {
		if dd.Key == coder("main#1", 2) && dd.FirstDiff != 2 {
			t.Errorf("turn 2: first diff %d, want 2 (inherited)", dd.FirstDiff)
		}
	}
	// The dialogs hold the messages the divergences name.
	for _, v := range d.Divergences {
		ma, mb := a.Forest.Dialog(v.A).Messages(), b.Forest.Dialog(v.B).Messages()
		if a.Node(v.A).Owner != v.Key.Owner || b.Node(v.B).Alias != v.Key.Alias || ma[v.Index].Content == mb[v.Index].Content {
			t.Errorf("%v: dialogs %s and %s, messages %q and %q", v.Key, v.A, v.B, ma[v.Index].Content, mb[v.Index].Content)
		}
	}

	all := compareText(t, d, inspect.TextOptions{})
	var blocks []string
	for i, v := range d.Divergences {
		h := fmt.Sprintf("divergence %d of 3: %s (A %s, B %s), message %d", i+1, v.Key, v.A[:8], v.B[:8], v.Index)
		if v.LaterDiffer == 1 {
			h += "; 1 later message differs"
		}
		blocks = append(blocks, h+"\n  "+strings.ReplaceAll(v.Diff, "\n", "\n  ")+"\n")
	}
	if want := strings.Join(blocks, ""); !strings.Contains(all, want) {
		t.Errorf("text lacks the three blocks in order:\n%s\nwant:\n%s", all, want)
	}
	if strings.Contains(all, "… and") || strings.Contains(all, "no message differs") {
		t.Errorf("text with Max 0 leaves divergences out:\n%s", all)
	}
	one := compareText(t, d, inspect.TextOptions{Max: 1, MoreHint: "ask for all"})
	if want := blocks[0] + "… and 2 more (ask for all)\n"; !strings.Contains(one, want) || strings.Contains(one, "divergence 2 of") {
		t.Errorf("text with Max 1:\n%s\nwant:\n%s", one, want)
	}
	if bare := compareText(t, d, inspect.TextOptions{Max: 2}); !strings.Contains(bare, "\n… and 1 more\n") {
		t.Errorf("text with Max 2 and no hint:\n%s", bare)
	}
	if same := compareText(t, d, inspect.TextOptions{Max: 3}); same != all {
		t.Errorf("Max 3 of 3:\n%s\nall:\n%s", same, all)
	}

	// JSON: "divergences" in order, and the runs by run_id.
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		A struct {
			RunID string `json:"run_id"`
		} `json:"a"`
		Divergences []struct {
			Key         inspect.Key `json:"key"`
			Index       int         `json:"index"`
			LaterDiffer int         `json:"later_differ"`
		} `json:"divergences"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	if j.A.RunID != a.RunID || a.RunID == "" || len(j.Divergences) != 3 || j.Divergences[1].Key != coder("main#1", 3) ||
		j.Divergences[1].Index != 6 || j.Divergences[0].LaterDiffer != 0 || strings.Contains(string(raw), "first_divergence") {
		t.Errorf("JSON %s", raw)
	}
}

// A system prompt that differs while every reply is the same is one
// divergence, in the root: the working copies and retries only inherit it.
func TestDivergencesInheritedOnce(t *testing.T) {
	a := load(t, agentRun(t, "You add.", standard...), inspect.Options{Messages: true})
	b := load(t, agentRun(t, "You add well.", standard...), inspect.Options{Messages: true})
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	checkDivergences(t, d.Divergences, []wantDivergence{{key: inspect.Key{Owner: "coder", Alias: "main", Turn: 1}, index: 0,
		roleA: "system", roleB: "system", diff: "  [system system]\n- You add.\n+ You add well."}})
	forks := 0
	for _, dd := range d.Dialogs {
		if dd.Key.Owner == "coder" && dd.FirstDiff == 0 {
			forks++
		}
	}
	if forks != 6 { // main and its five working copies
		t.Errorf("%d of coder's dialogs differ at message 0, want 6", forks)
	}
	if d.Identical {
		t.Error("identical")
	}
}

// The same run twice has no divergence, in Go, text and JSON.
func TestDivergencesNoneWhenIdentical(t *testing.T) {
	run := agentRun(t, "You add.", standard...)
	d, err := inspect.Compare(load(t, run, inspect.Options{Messages: true}), load(t, run, inspect.Options{Messages: true}))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Identical || d.Divergences == nil || len(d.Divergences) != 0 || d.First() != nil {
		t.Fatalf("diff of a run with itself: %+v", d.Divergences)
	}
	raw, err := json.Marshal(d)
	if err != nil || !strings.Contains(string(raw), `"divergences":[]`) {
		t.Errorf("JSON %s: %v", raw, err)
	}
	if text := compareText(t, d, inspect.TextOptions{Max: 1}); strings.Contains(text, "divergence") {
		t.Errorf("text:\n%s", text)
	}
}

// forkedRun writes a run with a root "main" of three messages, a fork of
// it that keeps its last lastN messages, and a root "notes" with notes.
func forkedRun(t *testing.T, lastN int, notes ...string) *inspect.Tree {
	t.Helper()
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "test"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	main := edgeMust(dialog.New("coder", dialog.WithAlias("main"), dialog.WithSink(w)))
	for _, s := range []string{"u1", "u2", "u3"} {
		edgeMust(main.PutText(s))
	}
	sub := edgeMust(main.Fork(lastN, 0, dialog.WithAlias("sub")))
	edgeMust(sub.PutText("own"))
	n := edgeMust(dialog.New("coder", dialog.WithAlias("notes"), dialog.WithSink(w)))
	for _, s := range notes {
		edgeMust(n.PutText(s))
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	return load(t, run, inspect.Options{Messages: true})
}

// Forks made differently from the same parent differ in what they
// inherit: that is their own divergence. A dialog one run wrote more
// messages in diverges where the other's ends.
func TestDivergencesForkMadeDifferentlyAndExtraMessages(t *testing.T) {
	a := forkedRun(t, 1, "n1")
	b := forkedRun(t, 2, "n1", "n2", "n3")
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	key := func(alias string) inspect.Key { return inspect.Key{Owner: "coder", Alias: alias, Turn: 1} }
	// A's sub is [u3 own], B's [u2 u3 own].
	checkDivergences(t, d.Divergences, []wantDivergence{
		{key: key("sub"), index: 0, roleA: "user", roleB: "user", diff: "  [user user]\n- u3\n+ u2", later: 1, extra: 1},
		{key: key("notes"), index: 1, roleB: "user", diff: "- (no message)\n+ [user user]\n+ n2", extra: 1},
	})
	text := compareText(t, d, inspect.TextOptions{})
	for _, want := range []string{
		"divergence 1 of 2: coder/sub turn 1 (A " + d.Divergences[0].A[:8] + ", B " + d.Divergences[0].B[:8] + "), message 0; 1 later message differs, B has 1 more\n",
		"divergence 2 of 2: coder/notes turn 1 (A " + d.Divergences[1].A[:8] + ", B " + d.Divergences[1].B[:8] + "), message 1; B has 1 more\n  - (no message)\n  + [user user]\n  + n2\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	// The other way round, A has the extra messages.
	d, err = inspect.Compare(b, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Divergences) != 2 || d.Divergences[1].ExtraA != 1 || d.Divergences[1].RoleA != "user" || d.Divergences[1].RoleB != "" ||
		!strings.Contains(compareText(t, d, inspect.TextOptions{}), "), message 1; A has 1 more\n") {
		t.Errorf("B against A: %+v", d.Divergences)
	}
}
