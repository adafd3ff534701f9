package inspect_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
)

func edgeMust[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// edgeLog writes records of a hand-made run the way tactics.Agent does.
type edgeLog struct {
	t testing.TB
	w *logs.Writer
}

func (l edgeLog) rec(r *logs.Record) {
	l.t.Helper()
	if err := l.w.Write(r); err != nil {
		l.t.Fatal(err)
	}
}

// call writes a model_call record of dialog dlg (a reply at reply, a summary text, or an error).
func (l edgeLog) call(dlg, agent, alias string, turn int, c dialog.Cost, reply *logs.MessageRef, text string, cerr *logs.CallError) {
	l.t.Helper()
	l.rec(&logs.Record{Kind: logs.KindModelCall, Dialog: dlg, ModelCall: &logs.ModelCall{
		Agent: agent, Provider: "mock", Model: "mock/edge", Call: 1, Attempt: 1, Alias: alias, Turn: turn,
		RequestDigest: "sha256:edge", Reply: reply, Text: text, Usage: c.Usage, USD: c.USD, Error: cerr, LatencyMS: 1}})
}

// reply appends an assistant reply to work and records the model call that made it.
func (l edgeLog) reply(work *dialog.Dialog, agent, alias string, turn int, m dialog.Message) dialog.Message {
	l.t.Helper()
	m.Role, m.Name = dialog.RoleAssistant, agent
	edgeMust(work.Append(m))
	l.call(work.ID(), agent, alias, turn, m.Cost(), &logs.MessageRef{Dialog: work.ID(), Index: work.Len() - 1}, "", nil)
	return m
}

// edgeRichRun writes a run with every record kind of format 1.3: tactic sessions and a
// sub-tactic, a context summary and its model_call text, cache writes, a tool call with an
// error, a network failure, a parse retry whose calls fail with every other error type, and
// an agent that never spoke. It returns the run and the two attempts that failed.
func edgeRichRun(t testing.TB, root string) (run *logs.Run, networkFailed, parseFailed string) {
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "outer", Task: json.RawMessage(`{"q":"2+2 ✓"}`)}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := edgeLog{t, w}
	l.rec(&logs.Record{Kind: logs.KindTacticStart, TacticStart: &logs.TacticStart{Session: "s1", Tactic: "outer", Task: json.RawMessage(`"2+2"`)}})
	main := edgeMust(dialog.New("coder", dialog.WithAlias("main"), dialog.WithSink(w)))
	edgeMust(main.PutText("You add.", dialog.AsRole(dialog.RoleSystem), dialog.From("system")))
	edgeMust(main.PutText("Add 2 and 2 with the tool."))

	// Turn 1: a summary, a tool call that fails, then a reply that is kept.
	w1 := edgeMust(main.Fork(0, 0, dialog.WithAlias("main#1")))
	l.rec(&logs.Record{Kind: logs.KindContext, Dialog: w1.ID(), Context: &logs.ContextAction{Agent: "coder", Manager: "summary",
		Action: "summary", MessagesBefore: 2, MessagesAfter: 2, TokensBefore: 40, TokensAfter: 20, Archived: 1, Summary: "The user adds."}})
	l.call(w1.ID(), "coder", "main", 1, dialog.Cost{Usage: dialog.Usage{InputTokens: 30, CacheWriteTokens: 10, OutputTokens: 5}, USD: 0.0003}, nil, "The user adds.", nil)
	l.reply(w1, "coder", "main", 1, dialog.Message{FunctionCalls: []dialog.FunctionCall{{ID: "c1", Name: "add", Arguments: json.RawMessage(`{"a":2,"b":"two"}`)}},
		Usage: dialog.Usage{InputTokens: 40, CachedInputTokens: 30, OutputTokens: 7}, USD: 0.0001})
	l.rec(&logs.Record{Kind: logs.KindToolCall, Dialog: w1.ID(), ToolCall: &logs.ToolCall{Agent: "coder", CallID: "c1", Name: "add",
		Arguments: json.RawMessage(`{"a":2,"b":"two"}`), Error: "b is not a number", Result: "Error: b is not a number", LatencyMS: 1}})
	edgeMust(w1.Append(dialog.Message{Role: dialog.RoleTool, Name: "add", ToolCallID: "c1", Content: "Error: b is not a number",
		FunctionCalls: []dialog.FunctionCall{{ID: "c1", Name: "add", Arguments: json.RawMessage(`{"a":2,"b":"two"}`), Error: "b is not a number"}}}))
	kept := l.reply(w1, "coder", "main", 1, dialog.Message{Content: "<answer>4</answer>",
		Usage: dialog.Usage{InputTokens: 50, CachedInputTokens: 20, CacheWriteTokens: 5, OutputTokens: 8, ReasoningTokens: 3}, USD: 0.0002})
	kept.Parsed = json.RawMessage(`{"answer":["4"]}`)
	edgeMust(main.Append(kept))

	// Turn 2: the network is down; the tactic goes on.
	edgeMust(main.PutText("And 3+3?"))
	w2 := edgeMust(main.Fork(0, 0, dialog.WithAlias("main#1")))
	l.call(w2.ID(), "coder", "main", 2, dialog.Cost{}, nil, "", &logs.CallError{Type: "network", Message: "dial tcp 127.0.0.1:9: connect: connection refused"})

	// Turn 3: a reply that does not parse; the retry's calls fail with every other error type, then one succeeds.
	edgeMust(main.PutText("And 4+4?"))
	w3 := edgeMust(main.Fork(0, 0, dialog.WithAlias("main#1")))
	l.reply(w3, "coder", "main", 3, dialog.Message{Content: "eight", Usage: dialog.Usage{InputTokens: 60, OutputTokens: 1}, USD: 0.0001})
	w3b := edgeMust(w3.Fork(0, 0, dialog.WithAlias("main#2")))
	edgeMust(w3b.PutText("Your reply could not be parsed. Answer again."))
	for _, typ := range []string{"rate_limit", "context_length", "auth", "timeout", "server", "bad_request", "cancelled", "other"} {
		l.call(w3b.ID(), "coder", "main", 3, dialog.Cost{}, nil, "", &logs.CallError{Type: typ, Message: typ + " failure", Status: 500})
	}
	kept = l.reply(w3b, "coder", "main", 3, dialog.Message{Content: "<answer>8</answer>", Usage: dialog.Usage{InputTokens: 70, OutputTokens: 8}, USD: 0.0003})
	edgeMust(main.Append(kept))

	// A sub-tactic session with an agent of its own.
	l.rec(&logs.Record{Kind: logs.KindTacticStart, TacticStart: &logs.TacticStart{Session: "s2", Parent: "s1", Tactic: "inner", Task: json.RawMessage(`"check"`)}})
	h := edgeMust(dialog.New("helper", dialog.WithAlias("main"), dialog.WithSink(w)))
	edgeMust(h.PutText("Check 8."))
	hw := edgeMust(h.Fork(0, 0, dialog.WithAlias("main#1")))
	edgeMust(h.Append(l.reply(hw, "helper", "main", 1, dialog.Message{Content: "fine", Usage: dialog.Usage{InputTokens: 9, OutputTokens: 1}, USD: 0.00001})))
	l.rec(&logs.Record{Kind: logs.KindTacticEnd, TacticEnd: &logs.TacticEnd{Session: "s2", Tactic: "inner", Status: logs.StatusOK,
		Result: json.RawMessage(`"fine"`), Cost: dialog.Cost{Usage: dialog.Usage{InputTokens: 9, OutputTokens: 1}, USD: 0.00001}}})
	edgeMust(dialog.New("idle", dialog.WithAlias("main"), dialog.WithSink(w)))
	l.rec(&logs.Record{Kind: logs.KindTacticEnd, TacticEnd: &logs.TacticEnd{Session: "s1", Tactic: "outer", Status: logs.StatusOK, Result: json.RawMessage(`8`)}})
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK, Result: json.RawMessage(`8`)}); err != nil {
		t.Fatal(err)
	}
	return run, w2.ID(), w3.ID()
}

// A run with every record kind has the totals of its run_end, the right failed attempts and no phantom dialogs.
func TestEdgeEveryRecordKindTotals(t *testing.T) {
	run, netFailed, parseFailed := edgeRichRun(t, t.TempDir())
	tree := load(t, run, inspect.Options{Messages: true})
	if tree.End == nil || tree.Status != logs.StatusOK {
		t.Fatalf("status %s, end %v", tree.Status, tree.End)
	}
	want := tree.End.Totals
	own, calls := 0, 0
	for _, n := range tree.Nodes {
		own += n.Messages - n.SplitPoint
		calls += n.Calls
		if tree.Forest.Dialog(n.ID) == nil {
			t.Errorf("dialog %s is not in the log's forest", n.ID)
		}
	}
	if len(tree.Nodes) != want.Dialogs || len(tree.Forest.IDs()) != want.Dialogs {
		t.Errorf("%d dialogs (forest %d), run_end says %d", len(tree.Nodes), len(tree.Forest.IDs()), want.Dialogs)
	}
	if own != want.Messages || calls != want.ModelCalls {
		t.Errorf("%d messages and %d model calls, run_end says %d and %d", own, calls, want.Messages, want.ModelCalls)
	}
	if got := tree.Total(); got != want.Cost || got.CacheWriteTokens != 15 || got.ReasoningTokens != 3 {
		t.Errorf("Total() = %+v, run_end's cost is %+v", got, want.Cost)
	}
	var failed []string
	for _, n := range tree.Nodes {
		if n.Failed {
			failed = append(failed, n.ID+" "+n.FailReason)
		}
	}
	if len(failed) != 2 || !strings.HasPrefix(failed[0], netFailed+" model call failed: network: dial tcp") ||
		failed[1] != parseFailed+" reply did not parse; retried in main#2" {
		t.Errorf("failed attempts: %q", failed)
	}
	if n := tree.Node(parseFailed).Children[0]; n.CallErrors != 8 || n.Calls != 9 || n.Failed {
		t.Errorf("the retry: %d calls, %d errors, failed %v (%s)", n.Calls, n.CallErrors, n.Failed, n.FailReason)
	}

	// The JSON tree carries the same call costs, and the text one line per dialog.
	var doc inspect.JSONTree
	if err := json.Unmarshal([]byte(render(t, tree, inspect.FormatJSON, inspect.All)), &doc); err != nil {
		t.Fatal(err)
	}
	var sum dialog.Cost
	var walk func([]*inspect.JSONNode) int
	walk = func(ns []*inspect.JSONNode) int {
		c := 0
		for _, n := range ns {
			sum = sum.Add(n.CallCost)
			c += 1 + walk(n.Children)
		}
		return c
	}
	if c := walk(doc.Dialogs); c != want.Dialogs || sum != want.Cost {
		t.Errorf("JSON: %d dialogs, call cost %+v; run_end: %d, %+v", c, sum, want.Dialogs, want.Cost)
	}
	text := render(t, tree, inspect.FormatText, inspect.All)
	if strings.Count(text, "\n") != want.Dialogs || strings.Count(text, "✗ failed") != 2 {
		t.Errorf("text tree:\n%s", text)
	}
}

// A model_call outside any dialog still counts in Total, which must equal run_end's cost.
func TestEdgeTotalCountsModelCallsOutsideDialogs(t *testing.T) {
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "router"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := edgeLog{t, w}
	l.call("", "router", "", 0, dialog.Cost{Usage: dialog.Usage{InputTokens: 11, OutputTokens: 2}, USD: 0.5}, nil, "route: coder", nil)
	d := edgeMust(dialog.New("coder", dialog.WithAlias("main"), dialog.WithSink(w)))
	edgeMust(d.PutText("hi"))
	wc := edgeMust(d.Fork(0, 0, dialog.WithAlias("main#1")))
	edgeMust(d.Append(l.reply(wc, "coder", "main", 1, dialog.Message{Content: "hello", Usage: dialog.Usage{InputTokens: 3, OutputTokens: 1}, USD: 0.25})))
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	tree := load(t, run, inspect.Options{Messages: true})
	if got, want := tree.Total(), tree.End.Totals.Cost; got != want {
		t.Errorf("Total() = %+v, run_end's cost (every model call) is %+v", got, want)
	}
	d2, err := inspect.Compare(tree, load(t, run, inspect.Options{Messages: true}))
	if err != nil {
		t.Fatal(err)
	}
	if d2.Total.A != tree.End.Totals.Cost {
		t.Errorf("diff total %+v, want %+v", d2.Total.A, tree.End.Totals.Cost)
	}
}

// A crashed run (torn last line, lock gone) is interrupted, shown up to the torn line, its last attempt failed.
func TestEdgeCrashedRunTornLine(t *testing.T) {
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "chat"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := edgeLog{t, w}
	d := edgeMust(dialog.New("coder", dialog.WithAlias("main"), dialog.WithSink(w)))
	edgeMust(d.PutText("question"))
	wc := edgeMust(d.Fork(0, 0, dialog.WithAlias("main#1")))
	l.reply(wc, "coder", "main", 1, dialog.Message{Content: "unparsable", Usage: dialog.Usage{InputTokens: 5, OutputTokens: 1}})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fh := edgeMust(os.OpenFile(run.Path(), os.O_APPEND|os.O_WRONLY, 0))
	edgeMust(fh.WriteString(`{"seq":7,"ts":"2026-01-01T00:00:00Z","kind":"message","dialog":"` + d.ID() + `","index":1,"message":{"role":"assis`))
	fh.Close()

	tree, warnings, err := inspect.Load(t.Context(), run, inspect.Options{})
	if err != nil || tree.Status != logs.StatusRunning || tree.Node(wc.ID()).Failed || len(warnings) != 1 {
		t.Fatalf("while written: %v, status %s, warnings %q", err, tree.Status, warnings)
	}
	if err := w.Close(); err != nil { // the process dies: no run_end
		t.Fatal(err)
	}
	tree, warnings, err = inspect.Load(t.Context(), run, inspect.Options{Messages: true})
	if err != nil {
		t.Fatal(err)
	}
	if tree.Status != logs.StatusInterrupted || tree.End != nil || len(tree.Nodes) != 2 || tree.Node(d.ID()).Messages != 1 {
		t.Errorf("crashed run: status %s, %d dialogs, main has %d messages", tree.Status, len(tree.Nodes), tree.Node(d.ID()).Messages)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "torn") {
		t.Errorf("warnings %q", warnings)
	}
	if n := tree.Node(wc.ID()); !n.Failed || !strings.Contains(n.FailReason, "not kept") {
		t.Errorf("the last attempt of a crashed run: failed %v (%s)", n.Failed, n.FailReason)
	}
}

// A run with 0 model calls and one empty dialog, and a run with no dialog, render and diff cleanly.
func TestEdgeEmptyRuns(t *testing.T) {
	root := t.TempDir()
	mk := func(dialogs bool) *logs.Run {
		w, run, err := logs.Create(root, logs.RunStart{Tactic: "idle"}, logs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if dialogs {
			edgeMust(dialog.New("idle", dialog.WithAlias("main"), dialog.WithSink(w)))
		}
		if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
			t.Fatal(err)
		}
		return run
	}
	one := load(t, mk(true), inspect.Options{Messages: true})
	if len(one.Nodes) != 1 || one.Nodes[0].Messages != 0 || one.Total() != (dialog.Cost{}) || one.Nodes[0].Failed {
		t.Fatalf("one empty dialog: %+v", one.Nodes)
	}
	if got, want := render(t, one, inspect.FormatText, inspect.All), "["+one.Nodes[0].ID[:8]+"] owner=idle alias=main msgs=0\n"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if g := parseDOT(t, render(t, one, inspect.FormatDOT, inspect.All)); len(g.nodes) != 1 || len(g.edges) != 0 {
		t.Errorf("DOT: %+v", g)
	}
	none := load(t, mk(false), inspect.Options{Messages: true})
	if got := render(t, none, inspect.FormatText, inspect.All); got != "" {
		t.Errorf("text of a run without dialogs: %q", got)
	}
	if g := parseDOT(t, render(t, none, inspect.FormatDOT, inspect.All)); len(g.nodes) != 0 {
		t.Errorf("DOT of a run without dialogs: %+v", g)
	}
	if got := render(t, none, inspect.FormatMermaid, inspect.All); got != "flowchart LR\n" {
		t.Errorf("Mermaid of a run without dialogs: %q", got)
	}
	for _, tc := range []struct {
		tree *inspect.Tree
		want string
	}{{one, "identical: 1 dialogs, tokens 0, $0.0000\n"}, {none, "identical: 0 dialogs, tokens 0, $0.0000\n"}} {
		d, err := inspect.Compare(tc.tree, tc.tree)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := d.WriteText(&b, inspect.TextOptions{}); err != nil {
			t.Fatal(err)
		}
		if !d.Identical || !strings.HasSuffix(b.String(), tc.want) {
			t.Errorf("diff with itself:\n%s", b.String())
		}
	}
}

// edgePair writes a small agent run: an image and a question, one working copy with reply, kept.
func edgePair(t testing.TB, root, tactic, reply string, usd float64, img []byte, status logs.Status) *inspect.Tree {
	t.Helper()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: tactic, Task: json.RawMessage(`"q"`)}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := edgeLog{t, w}
	d := edgeMust(dialog.New("coder", dialog.WithAlias("main"), dialog.WithSink(w)))
	edgeMust(d.PutImage(dialog.ImageBytes(img), "the figure"))
	edgeMust(d.PutText("What is it?"))
	wc := edgeMust(d.Fork(0, 0, dialog.WithAlias("main#1")))
	edgeMust(d.Append(l.reply(wc, "coder", "main", 1, dialog.Message{Content: reply, Usage: dialog.Usage{InputTokens: 20, OutputTokens: 4}, USD: usd})))
	if err := w.Finish(logs.RunEnd{Status: status}); err != nil {
		t.Fatal(err)
	}
	return load(t, run, inspect.Options{Messages: true})
}

func edgeDiff(t *testing.T, a, b *inspect.Tree) (*inspect.Diff, string) {
	t.Helper()
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := d.WriteText(&out, inspect.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	return d, out.String()
}

// Runs that differ in one reply, in an image's bytes, or only in cost are told apart precisely.
func TestEdgeDiffOneReplyImageOrCost(t *testing.T) {
	root := t.TempDir()
	img := edgeMust(base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="))
	img2 := bytes.Clone(img)
	img2[45] ^= 0xff // same size, other pixels
	a := edgePair(t, root, "chat", "a square", 0.001, img, logs.StatusOK)

	// One reply: first seen in the working copy, then in main's copy.
	d, text := edgeDiff(t, a, edgePair(t, root, "chat", "a circle", 0.001, img, logs.StatusOK))
	if d.Identical || d.First() == nil || d.First().Key != (inspect.Key{Owner: "coder", Alias: "main#1", Turn: 1}) || d.First().Index != 2 ||
		d.First().Diff != "  [assistant coder]\n- a square\n+ a circle" || len(d.OnlyA)+len(d.OnlyB) != 0 || !d.Total.Equal() {
		t.Errorf("one reply differs:\n%s\n%+v", text, d.First())
	}
	// One image, same size, other bytes: the root's message 0, by checksum.
	d, text = edgeDiff(t, a, edgePair(t, root, "chat", "a square", 0.001, img2, logs.StatusOK))
	if d.Identical || d.First() == nil || d.First().Key != (inspect.Key{Owner: "coder", Alias: "main", Turn: 1}) || d.First().Index != 0 ||
		!strings.Contains(d.First().Diff, "- [image") || !strings.Contains(d.First().Diff, "+ [image") {
		t.Errorf("one image differs:\n%s", text)
	}
	// Only the cost: no message differs, the dialogs and the total show the dollars.
	d, text = edgeDiff(t, a, edgePair(t, root, "chat", "a square", 0.003, img, logs.StatusOK))
	if d.Identical || d.First() != nil || d.Total.Delta.USD <= 0 || d.Total.Delta.Total() != 0 ||
		!strings.Contains(text, "no message differs\n") || !strings.Contains(text, "$0.0010→$0.0030 (+$0.0020)") {
		t.Errorf("only the cost differs:\n%s", text)
	}
	for _, dd := range d.Dialogs {
		if dd.FirstDiff != -1 {
			t.Errorf("%v: first diff %d, want -1", dd.Key, dd.FirstDiff)
		}
	}
}

// Runs of different tactics, or that ended differently, are never "identical".
func TestEdgeDiffTacticOrStatusNotIdentical(t *testing.T) {
	root := t.TempDir()
	img := edgeMust(base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="))
	a := edgePair(t, root, "chat", "x", 0.001, img, logs.StatusOK)
	for name, b := range map[string]*inspect.Tree{
		"another tactic": edgePair(t, root, "debate", "x", 0.001, img, logs.StatusOK),
		"another status": edgePair(t, root, "chat", "x", 0.001, img, logs.StatusFailed),
	} {
		d, text := edgeDiff(t, a, b)
		if d.Identical || strings.Contains(text, "identical:") {
			t.Errorf("%s: reported identical:\n%s", name, text)
		}
	}
}

// A parse retry needed on turn 1 in A and on turn 2 in B is "only in A" and "only in B", not matched.
func TestEdgeDiffRetriesOfDifferentTurns(t *testing.T) {
	a := load(t, agentRun(t, "You add.", "four", "<answer>4</answer>", "<answer>6</answer>", "<answer>8</answer>", "ok"), inspect.Options{Messages: true})
	b := load(t, agentRun(t, "You add.", "<answer>4</answer>", "six", "<answer>6</answer>", "<answer>8</answer>", "ok"), inspect.Options{Messages: true})
	retry := func(tr *inspect.Tree) string {
		for _, n := range tr.Nodes {
			if n.Alias == "main#2" {
				return n.ID
			}
		}
		t.Fatal("no retry")
		return ""
	}
	ra, rb := retry(a), retry(b)
	d, text := edgeDiff(t, a, b)
	for _, dd := range d.Dialogs {
		if dd.A == ra || dd.B == rb {
			t.Errorf("the retry of turn 1 in A was matched with %s (B's retry is of turn 2)", dd.B)
		}
	}
	in := func(list []inspect.Dialog, id string) bool {
		for _, o := range list {
			if o.ID == id {
				return true
			}
		}
		return false
	}
	if !in(d.OnlyA, ra) || !in(d.OnlyB, rb) {
		t.Errorf("only A %v, only B %v; want A's %s and B's %s:\n%s", d.OnlyA, d.OnlyB, ra[:8], rb[:8], text)
	}
}

// Unicode names and a long multi-line unicode error render as valid one-line UTF-8 everywhere.
func TestEdgeUnicodeFailReason(t *testing.T) {
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "ünï"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := edgeLog{t, w}
	d := edgeMust(dialog.New("écrivain 🖋", dialog.WithAlias("le \"main\""), dialog.WithSink(w)))
	edgeMust(d.PutText("Bonjour \u202e \u2028 世界"))
	wc := edgeMust(d.Fork(0, 0, dialog.WithAlias("le \"main\"#1")))
	msg := strings.Repeat("é世🖋", 40) + "\nsecond line"
	l.call(wc.ID(), "écrivain 🖋", "le \"main\"", 1, dialog.Cost{}, nil, "", &logs.CallError{Type: "auth", Message: msg, Status: 401})
	if err := w.Finish(logs.RunEnd{Status: logs.StatusFailed, Error: "auth"}); err != nil {
		t.Fatal(err)
	}
	tree := load(t, run, inspect.Options{})
	n := tree.Node(wc.ID())
	if !n.Failed || !strings.HasPrefix(n.FailReason, "model call failed: auth: é世🖋") || !utf8.ValidString(n.FailReason) ||
		strings.Contains(n.FailReason, "\n") || len(n.FailReason) > 200 {
		t.Errorf("fail reason %q", n.FailReason)
	}
	for _, f := range inspect.Formats {
		out := render(t, tree, f, inspect.All)
		if !utf8.ValidString(out) || !strings.Contains(out, "✗ failed") && f != inspect.FormatJSON {
			t.Errorf("%s:\n%s", f, out)
		}
	}
	text := render(t, tree, inspect.FormatText, inspect.All)
	if !strings.Contains(text, `owner="écrivain 🖋" alias="le \"main\""`) || strings.Count(text, "\n") != 2 {
		t.Errorf("text:\n%s", text)
	}
	if g := parseDOT(t, render(t, tree, inspect.FormatDOT, inspect.All)); len(g.nodes) != 2 || len(g.edges) != 1 {
		t.Errorf("DOT: %+v", g)
	}
	var doc inspect.JSONTree
	if err := json.Unmarshal([]byte(render(t, tree, inspect.FormatJSON, inspect.All)), &doc); err != nil || doc.Dialogs[0].Owner != "écrivain 🖋" {
		t.Errorf("JSON: %v %+v", err, doc)
	}
}

// The text tree says how many calls a dialog retried after a failure;
// the failure that ended a failed attempt is its "✗ failed", not a retry.
func TestEdgeRetriedCallsShown(t *testing.T) {
	run, netFailed, _ := edgeRichRun(t, t.TempDir())
	tree := load(t, run, inspect.Options{})
	text := render(t, tree, inspect.FormatText, inspect.All)
	var retried, failed string
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.Contains(l, "alias=main#2"):
			retried = l
		case strings.Contains(l, "["+inspect.ShortID(netFailed)+"]"):
			failed = l
		}
	}
	if !strings.Contains(retried, " retried=8") {
		t.Errorf("the dialog whose 8 failed calls were retried: %q", retried)
	}
	if strings.Contains(failed, "retried=") || !strings.Contains(failed, "✗ failed") {
		t.Errorf("the attempt that failed on its one call: %q", failed)
	}
}
