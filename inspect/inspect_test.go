package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// script is a provider.Model that answers from a list: a reply text,
// "CUT:" and a reply cut at max_tokens, or "ERR" for a failed call.
type script struct {
	mu      sync.Mutex
	replies []string
}

func (s *script) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.replies) == 0 {
		return nil, errors.New("script: no more replies")
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	if r == "ERR" {
		return nil, &provider.Error{Kind: provider.ErrBadRequest, Provider: "script", Status: 400, Err: errors.New("bad request (scripted)")}
	}
	in := 0
	for _, m := range req.Messages {
		in += len(m.Text())
	}
	var finish string
	if cut, ok := strings.CutPrefix(r, "CUT:"); ok {
		r, finish = cut, "length"
	}
	return &provider.Response{Message: dialog.Message{
		Role: dialog.RoleAssistant, Content: r, Modality: dialog.ModalityText,
		Usage: dialog.Usage{InputTokens: in, OutputTokens: len(r)}, USD: float64(in+len(r)) * 1e-6, Model: "script/test",
	}, FinishReason: finish}, nil
}

var ask = dialog.MustPrompt("ask", "{q} Answer in <answer></answer>.", dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))

// agentRun records an agent "coder" answering three questions on its
// dialog "main" with replies, then a second agent "judge" answering one.
// It returns the run.
func agentRun(t testing.TB, system string, replies ...string) *logs.Run {
	t.Helper()
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "test", Task: []byte(`"q"`)}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model := &script{replies: replies}
	lim := tactics.Limits{MaxExceptionRetry: 1, MaxRetries: -1}
	a := &tactics.Agent{Name: "coder", System: dialog.MustPrompt("sys", system), Model: model, ModelName: "script/test", Limits: lim, Log: w}
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	for i, q := range []string{"What is 2+2?", "What is 3+3?", "What is 4+4?"} {
		if err := a.ReceivePrompt(ask, map[string]any{"q": q}); err != nil {
			t.Fatal(err)
		}
		_, _, err := a.Respond(context.Background())
		t.Logf("respond %d: %v", i, err)
	}
	j := &tactics.Agent{Name: "judge", System: dialog.MustPrompt("jsys", "You judge."), Model: model, ModelName: "script/test", Limits: lim, Log: w}
	if err := j.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	if err := j.Receive("Judge."); err != nil {
		t.Fatal(err)
	}
	if _, _, err := j.Respond(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	return run
}

// The replies of the standard run: turn 1 needs a retry, turn 2's call
// fails, turn 3 never parses (one retry allowed), the judge answers.
var standard = []string{
	"four", "<answer>4</answer>",
	"ERR",
	"six?", "still six?",
	"fine",
}

func load(t testing.TB, run *logs.Run, opts inspect.Options) *inspect.Tree {
	t.Helper()
	tree, warnings, err := inspect.Load(context.Background(), run, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	return tree
}

func TestTreeFailedAttempts(t *testing.T) {
	run := agentRun(t, "You add.", standard...)
	tree := load(t, run, inspect.Options{Messages: true})
	type want struct {
		alias  string
		failed string // a part of FailReason, "" when not failed
	}
	wants := []want{
		{"main", ""},
		{"main#1", "did not parse; retried in main#2"}, // turn 1
		{"main#2", ""},
		{"main#1", "model call failed: bad_request"},   // turn 2
		{"main#1", "did not parse; retried in main#2"}, // turn 3
		{"main#2", "reply not kept"},
		{"main", ""}, // the judge's
		{"main#1", ""},
	}
	if len(tree.Nodes) != len(wants) {
		for _, n := range tree.Nodes {
			t.Logf("%s %s %s", n.Owner, n.Alias, n.FailReason)
		}
		t.Fatalf("%d dialogs, want %d", len(tree.Nodes), len(wants))
	}
	var total dialog.Cost
	for i, n := range tree.Nodes {
		w := wants[i]
		if n.Alias != w.alias || n.Failed != (w.failed != "") || !strings.Contains(n.FailReason, w.failed) {
			t.Errorf("dialog %d: %s failed=%v %q, want %s failed %q", i, n.Alias, n.Failed, n.FailReason, w.alias, w.failed)
		}
		d := tree.Forest.Dialog(n.ID)
		if n.Messages != d.Len() || n.Cost != d.OwnCost() {
			t.Errorf("dialog %d: %d messages, cost %+v; the forest has %d, %+v", i, n.Messages, n.Cost, d.Len(), d.OwnCost())
		}
		if base, _, ok := n.IsWorkingCopy(); ok != strings.Contains(n.Alias, "#") || ok && base != "main" {
			t.Errorf("dialog %d: IsWorkingCopy = %q, %v", i, base, ok)
		}
		total = total.Add(n.CallCost)
	}
	// The call costs add up to what every reply cost, each counted once.
	var replies dialog.Cost
	for _, n := range tree.Nodes {
		if _, _, ok := n.IsWorkingCopy(); ok {
			replies = replies.Add(n.Cost)
		}
	}
	if total != replies || total.Total() == 0 || tree.Total() != total {
		t.Errorf("call cost %+v, replies %+v, Total %+v", total, replies, tree.Total())
	}
	if n := tree.Nodes[3]; n.Calls != 1 || n.CallErrors != 1 {
		t.Errorf("failed call: calls=%d errors=%d", n.Calls, n.CallErrors)
	}
	if tree.Nodes[1].Parent != tree.Nodes[0] || tree.Nodes[2].Parent != tree.Nodes[1] || len(tree.Roots) != 2 {
		t.Errorf("tree shape wrong")
	}

	// The tree alone (no messages) is the same.
	bare := load(t, run, inspect.Options{})
	for i, n := range bare.Nodes {
		m := tree.Nodes[i]
		if n.ID != m.ID || n.Messages != m.Messages || n.Cost != m.Cost || n.CallCost != m.CallCost || n.Failed != m.Failed || n.FailReason != m.FailReason {
			t.Errorf("dialog %d differs without messages: %+v vs %+v", i, n, m)
		}
	}
	if bare.Forest != nil {
		t.Error("Forest kept without Options.Messages")
	}
}

func render(t *testing.T, tree *inspect.Tree, f inspect.Format, sel inspect.Selection) string {
	t.Helper()
	var b bytes.Buffer
	if err := inspect.Render(&b, tree, f, sel); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestRenderText(t *testing.T) {
	tree := load(t, agentRun(t, "You add.", standard...), inspect.Options{})
	out := render(t, tree, inspect.FormatText, inspect.All)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(tree.Nodes) {
		t.Fatalf("%d lines for %d dialogs:\n%s", len(lines), len(tree.Nodes), out)
	}
	failed := 0
	for _, l := range lines {
		if strings.Contains(l, " ✗ failed: ") {
			failed++
		}
	}
	if failed != 4 {
		t.Errorf("%d failed lines, want 4:\n%s", failed, out)
	}
	// Depth first, two spaces a level: main, #1, #2 (a retry, one deeper).
	n := tree.Nodes
	for i, want := range []string{
		"[" + n[0].ID[:8] + "] owner=coder alias=main msgs=",
		"  [" + n[1].ID[:8] + "] owner=coder alias=main#1 msgs=3 split@2 (last_n=0, first_k=0) tokens=",
		"    [" + n[2].ID[:8] + "] owner=coder alias=main#2 msgs=5 split@3 (last_n=0, first_k=0) tokens=",
	} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], want)
		}
	}
	if !strings.HasSuffix(lines[1], "✗ failed: reply did not parse; retried in main#2") {
		t.Errorf("line 1 = %q", lines[1])
	}

	// A subtree, one level deep.
	out = render(t, tree, inspect.FormatText, inspect.Selection{Start: []*inspect.Node{n[0]}, Depth: 1})
	if got := strings.Count(out, "\n"); got != 1+3 {
		t.Errorf("main to depth 1: %d lines, want 4:\n%s", got, out)
	}
}

// dotGraph is what parseDOT understands of a digraph.
type dotGraph struct {
	name  string
	nodes map[string]map[string]string // id -> attributes
	edges [][2]string
}

// parseDOT parses the DOT subset Render writes, strictly: a digraph of
// node statements and edge statements with attribute lists, and
// attribute statements (graph, node, edge, k=v).
func parseDOT(t *testing.T, src string) *dotGraph {
	t.Helper()
	toks := dotTokens(t, src)
	i := 0
	next := func() string {
		if i >= len(toks) {
			t.Fatalf("DOT ends early")
		}
		i++
		return toks[i-1]
	}
	expect := func(s string) {
		if tok := next(); tok != s {
			t.Fatalf("DOT: got %q, want %q (token %d)", tok, s, i-1)
		}
	}
	unq := func(s string) string {
		if strings.HasPrefix(s, `"`) {
			s = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, "\n").Replace(s[1 : len(s)-1])
		}
		return s
	}
	attrs := func() map[string]string {
		m := map[string]string{}
		if i < len(toks) && toks[i] == "[" {
			next()
			for toks[i] != "]" {
				k := next()
				expect("=")
				m[k] = unq(next())
				if toks[i] == "," {
					next()
				}
			}
			next()
		}
		return m
	}
	g := &dotGraph{nodes: map[string]map[string]string{}}
	expect("digraph")
	g.name = unq(next())
	expect("{")
	for toks[i] != "}" {
		a := next()
		switch {
		case a == "node" || a == "edge" || a == "graph":
			attrs()
		case toks[i] == "=":
			next()
			next()
		case toks[i] == "->":
			next()
			b := next()
			attrs()
			g.edges = append(g.edges, [2]string{unq(a), unq(b)})
		default:
			g.nodes[unq(a)] = attrs()
		}
		expect(";")
	}
	expect("}")
	if i != len(toks) {
		t.Fatalf("DOT: tokens after the graph: %v", toks[i:])
	}
	return g
}

func dotTokens(t *testing.T, src string) []string {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\n' || c == '\t':
			i++
		case strings.HasPrefix(src[i:], "->"):
			toks = append(toks, "->")
			i += 2
		case strings.ContainsRune("{}[];,=", rune(c)):
			toks = append(toks, string(c))
			i++
		case c == '"':
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			if j >= len(src) {
				t.Fatalf("DOT: unterminated string at %d", i)
			}
			toks = append(toks, src[i:j+1])
			i = j + 1
		default:
			j := i
			for j < len(src) && (src[j] == '_' || src[j] == '.' || src[j] >= '0' && src[j] <= '9' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z') {
				j++
			}
			if j == i {
				t.Fatalf("DOT: unexpected %q at %d", c, i)
			}
			toks = append(toks, src[i:j])
			i = j
		}
	}
	return toks
}

func TestRenderDOT(t *testing.T) {
	tree := load(t, agentRun(t, "You add.", standard...), inspect.Options{})
	g := parseDOT(t, render(t, tree, inspect.FormatDOT, inspect.All))
	if g.name != "run "+tree.RunID || len(g.nodes) != len(tree.Nodes) {
		t.Fatalf("digraph %q with %d nodes, want %d", g.name, len(g.nodes), len(tree.Nodes))
	}
	var want [][2]string
	for _, n := range tree.Nodes {
		if n.Parent != nil {
			want = append(want, [2]string{n.ParentID, n.ID})
		}
		attrs := g.nodes[n.ID]
		if attrs == nil {
			t.Fatalf("no node %s", n.ID)
		}
		if !strings.HasPrefix(attrs["label"], n.ID[:8]+" coder "+n.Alias) && !strings.HasPrefix(attrs["label"], n.ID[:8]+" judge "+n.Alias) {
			t.Errorf("label %q", attrs["label"])
		}
		if dashed := attrs["style"] == "dashed" && attrs["color"] == "red"; dashed != n.Failed {
			t.Errorf("%s %s: style %q color %q, failed %v", n.ID, n.Alias, attrs["style"], attrs["color"], n.Failed)
		}
	}
	if fmt.Sprint(g.edges) != fmt.Sprint(orderLike(want, g.edges)) || len(g.edges) != len(want) {
		t.Errorf("edges %v, want %v", g.edges, want)
	}

	// A subtree: main's first working copy and its retry.
	sub := parseDOT(t, render(t, tree, inspect.FormatDOT, inspect.Selection{Start: []*inspect.Node{tree.Nodes[1]}, Depth: -1}))
	if len(sub.nodes) != 2 || len(sub.edges) != 1 || sub.edges[0] != [2]string{tree.Nodes[1].ID, tree.Nodes[2].ID} {
		t.Errorf("subtree: %v %v", sub.nodes, sub.edges)
	}
	// Depth 0: the roots and no edges.
	top := parseDOT(t, render(t, tree, inspect.FormatDOT, inspect.Selection{Depth: 0}))
	if len(top.nodes) != 2 || len(top.edges) != 0 {
		t.Errorf("depth 0: %v %v", top.nodes, top.edges)
	}
}

// orderLike returns want if it holds the same edges as got, in got's
// order, else want unchanged.
func orderLike(want, got [][2]string) [][2]string {
	set := map[[2]string]bool{}
	for _, e := range want {
		set[e] = true
	}
	for _, e := range got {
		if !set[e] {
			return want
		}
	}
	return got
}

var mermaidNode = regexp.MustCompile(`^  (d_[0-9a-f]+)\["([^"]*)"\]$`)
var mermaidEdge = regexp.MustCompile(`^  (d_[0-9a-f]+) -->\|[^|]*\| (d_[0-9a-f]+)$`)

func TestRenderMermaid(t *testing.T) {
	tree := load(t, agentRun(t, "You add.", standard...), inspect.Options{})
	out := render(t, tree, inspect.FormatMermaid, inspect.All)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != "flowchart LR" {
		t.Fatalf("first line %q", lines[0])
	}
	nodes, edges := map[string]string{}, 0
	var classLine string
	for _, l := range lines[1:] {
		switch {
		case mermaidNode.MatchString(l):
			m := mermaidNode.FindStringSubmatch(l)
			if _, dup := nodes[m[1]]; dup {
				t.Errorf("node %s twice", m[1])
			}
			nodes[m[1]] = m[2]
		case mermaidEdge.MatchString(l):
			m := mermaidEdge.FindStringSubmatch(l)
			if _, ok := nodes[m[1]]; !ok {
				t.Errorf("edge from unknown node: %q", l)
			}
			edges++
		case strings.HasPrefix(l, "  class "):
			classLine = l
		case strings.HasPrefix(l, "  classDef failed "):
		default:
			t.Errorf("unexpected line %q", l)
		}
	}
	if len(nodes) != len(tree.Nodes) || edges != len(tree.Nodes)-len(tree.Roots) {
		t.Errorf("%d nodes, %d edges; want %d, %d:\n%s", len(nodes), edges, len(tree.Nodes), len(tree.Nodes)-len(tree.Roots), out)
	}
	var failed []string
	for _, n := range tree.Nodes {
		label := nodes["d_"+n.ID]
		if !strings.HasPrefix(label, n.ID[:8]+" ") {
			t.Errorf("node %s label %q", n.ID, label)
		}
		if strings.ContainsAny(label, "\"[]|") {
			t.Errorf("label not escaped: %q", label)
		}
		if n.Failed {
			failed = append(failed, "d_"+n.ID)
		}
	}
	if want := "  class " + strings.Join(failed, ",") + " failed"; classLine != want {
		t.Errorf("class line %q, want %q", classLine, want)
	}
	// A subtree to depth 0 is one node.
	out = render(t, tree, inspect.FormatMermaid, inspect.Selection{Start: []*inspect.Node{tree.Nodes[4]}, Depth: 0})
	if strings.Count(out, "\n") != 1+1+2 { // header, node, classDef, class
		t.Errorf("one node:\n%s", out)
	}
}

func TestTornAndNewerLogs(t *testing.T) {
	run := agentRun(t, "You add.", standard...)
	whole := load(t, run, inspect.Options{})
	f, err := os.OpenFile(run.Path(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":999,"ts":"2026-01-01T00:00:00Z","kind":"mess`)
	f.Close()
	torn, warnings, err := inspect.Load(context.Background(), run, inspect.Options{})
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "torn") {
		t.Fatalf("torn log: %v %v", warnings, err)
	}
	if len(torn.Nodes) != len(whole.Nodes) {
		t.Errorf("torn log has %d dialogs, want %d", len(torn.Nodes), len(whole.Nodes))
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	os.WriteFile(path, []byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"2.0","run_id":"x"}}`+"\n"), 0o644)
	r, err := logs.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = inspect.Read(context.Background(), r, path, inspect.Options{})
	var fe *logs.FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "2.0") {
		t.Errorf("newer log: %v", err)
	}

	// A message for a dialog the log never opened names the line.
	os.WriteFile(path, []byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.1","run_id":"x"}}`+"\n"+
		`{"seq":2,"ts":"2026-01-01T00:00:00Z","kind":"message","dialog":"abc","message":{"role":"user","content":"hi"}}`+"\n"), 0o644)
	r2, _ := logs.OpenFile(path)
	defer r2.Close()
	_, err = inspect.Read(context.Background(), r2, path, inspect.Options{})
	if err == nil || !strings.Contains(err.Error(), path+":2:") || !strings.Contains(err.Error(), "unknown dialog abc") {
		t.Errorf("dangling message: %v", err)
	}
}

func TestDiffIdentical(t *testing.T) {
	run := agentRun(t, "You add.", standard...)
	a, b := load(t, run, inspect.Options{Messages: true}), load(t, run, inspect.Options{Messages: true})
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Identical || d.First() != nil || len(d.OnlyA)+len(d.OnlyB) != 0 || len(d.Dialogs) != len(a.Nodes) {
		t.Fatalf("diff of a run with itself: %+v", d)
	}
	var out bytes.Buffer
	if err := d.WriteText(&out, inspect.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\nidentical: 8 dialogs") {
		t.Errorf("text:\n%s", out.String())
	}
	if _, err := inspect.Compare(load(t, run, inspect.Options{}), b); !errors.Is(err, inspect.ErrNoMessages) {
		t.Errorf("compare without messages: %v", err)
	}
}

func TestDiffChangedSystemPrompt(t *testing.T) {
	a := load(t, agentRun(t, "You add.", standard...), inspect.Options{Messages: true})
	// B: another system prompt, and turn 3 parses at once, so B has no
	// retry on turn 3 and its judge sees other replies.
	b := load(t, agentRun(t, "You add numbers.\nCarefully.", "four", "<answer>4</answer>", "ERR", "<answer>8</answer>", "fine!"), inspect.Options{Messages: true})
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if d.Identical {
		t.Fatal("identical")
	}
	f := d.First()
	if f == nil || f.Key != (inspect.Key{Owner: "coder", Alias: "main", Turn: 1}) || f.Index != 0 || f.A != a.Nodes[0].ID || f.B != b.Nodes[0].ID {
		t.Fatalf("first divergence %+v, want coder/main turn 1 message 0", f)
	}
	if want := "  [system system]\n- You add.\n+ You add numbers.\n+ Carefully."; f.Diff != want {
		t.Errorf("diff:\n%s\nwant:\n%s", f.Diff, want)
	}
	// Turn 3's retry is only in A.
	if len(d.OnlyA) != 1 || d.OnlyA[0].Key != (inspect.Key{Owner: "coder", Alias: "main#2", Turn: 3}) || len(d.OnlyB) != 0 {
		t.Errorf("only A %v, only B %v", d.OnlyA, d.OnlyB)
	}
	// Token deltas per matched dialog are B - A of the trees' costs.
	keysA, keysB := inspect.Keys(a), inspect.Keys(b)
	byKey := map[inspect.Key]*inspect.Node{}
	for n, k := range keysB {
		byKey[k] = n
	}
	for _, dd := range d.Dialogs {
		na, nb := a.Node(dd.A), b.Node(dd.B)
		if keysA[na] != dd.Key || byKey[dd.Key] != nb {
			t.Errorf("%v matched %s with %s", dd.Key, dd.A, dd.B)
		}
		if dd.Cost.A != na.Cost || dd.Cost.B != nb.Cost ||
			dd.Cost.Delta.InputTokens != nb.Cost.InputTokens-na.Cost.InputTokens ||
			dd.Cost.Delta.OutputTokens != nb.Cost.OutputTokens-na.Cost.OutputTokens ||
			dd.CallCost.Delta.Total() != nb.CallCost.Total()-na.CallCost.Total() {
			t.Errorf("%v: cost %+v for %+v and %+v", dd.Key, dd.Cost, na.Cost, nb.Cost)
		}
	}
	// The root's system prompt is 16 characters longer in B: every reply
	// on main#1 of turn 1 has that many more input tokens (the script
	// counts characters).
	if dd := d.Dialogs[1]; dd.Key.Alias != "main#1" || dd.CallCost.Delta.InputTokens != len("You add numbers.\nCarefully.")-len("You add.") {
		t.Errorf("turn 1 working copy: %+v", dd)
	}
	if d.Total.Delta.Total() != b.Total().Total()-a.Total().Total() {
		t.Errorf("total %+v", d.Total)
	}
	var out bytes.Buffer
	if err := d.WriteText(&out, inspect.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\ndivergence 1 of " + fmt.Sprint(len(d.Divergences)) + ": coder/main turn 1 (A " + a.Nodes[0].ID[:8] + ", B " + b.Nodes[0].ID[:8] + "), message 0",
		"  - You add.\n  + You add numbers.\n",
		"only in A: coder/main#2 turn 3 [",
		"total (model calls)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
	if !utf8.Valid(out.Bytes()) {
		t.Error("text is not UTF-8")
	}
}

// A later message differs: the divergence is in the working copy of turn
// 3, where the reply first differs, not in the root that received the
// same reply later or in the judge.
func TestDiffFirstDivergenceIsEarliest(t *testing.T) {
	a := load(t, agentRun(t, "You add.", "<answer>4</answer>", "<answer>6</answer>", "<answer>8</answer>", "ok"), inspect.Options{Messages: true})
	b := load(t, agentRun(t, "You add.", "<answer>4</answer>", "<answer>6</answer>", "<answer>9</answer>", "ok"), inspect.Options{Messages: true})
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	f := d.First()
	if f == nil || f.Key != (inspect.Key{Owner: "coder", Alias: "main#1", Turn: 3}) || f.Index != 6 {
		t.Fatalf("first divergence %+v, want coder/main#1 turn 3 message 6", f)
	}
	if !strings.Contains(f.Diff, "- <answer>8</answer>\n+ <answer>9</answer>") {
		t.Errorf("diff:\n%s", f.Diff)
	}
}

// The streamed JSON is what encoding/json writes for the same document,
// byte for byte, whatever the strings, numbers and selection.
func TestRenderJSONMatchesEncodingJSON(t *testing.T) {
	var buf bytes.Buffer
	w, err := logs.NewWriter(&buf, logs.RunStart{RunID: "r\"1"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := dialog.New("a\"b\\c\n\x01\u2028é\xff<&>", dialog.WithSink(w), dialog.WithAlias("main"))
	root.PutText("hi")
	for i, usd := range []float64{0, 1e-7, 0.5, 123456.25, 3e21} {
		c, err := root.Fork(0, 0, dialog.WithAlias(fmt.Sprintf("x#%d", i+1)))
		if err != nil {
			t.Fatal(err)
		}
		c.Append(dialog.Message{Role: dialog.RoleAssistant, Content: "r", Usage: dialog.Usage{InputTokens: i, CachedInputTokens: i / 2, OutputTokens: 2 * i, ReasoningTokens: i % 2}, USD: usd})
		if i == 2 {
			g, _ := c.Fork(1, 1)
			g.PutText("deeper")
			g.Fork(0, 0)
		}
	}
	dialog.New("solo", dialog.WithSink(w))
	w.Finish(logs.RunEnd{Status: logs.StatusOK})
	tree, err := inspect.Read(context.Background(), logs.NewReader(&buf, "mem"), "mem", inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tree.Dir = `logs/a "quoted" <dir>` // as Load sets it, escaped alike
	tree.Nodes[3].MaxTokensCut = 12
	sels := []inspect.Selection{inspect.All, {Depth: 0}, {Depth: 1}, {Depth: 2},
		{Start: []*inspect.Node{tree.Nodes[3]}, Depth: -1}, {Start: []*inspect.Node{tree.Nodes[len(tree.Nodes)-1]}, Depth: -1}}
	for i, sel := range sels {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(inspect.JSON(tree, sel)); err != nil {
			t.Fatal(err)
		}
		got := render(t, tree, inspect.FormatJSON, sel)
		if i == 0 && (!strings.Contains(got, `\u2028`) || !strings.Contains(got, `1e-7`) || strings.Count(got, `"id"`) != len(tree.Nodes)) {
			t.Errorf("the test tree lacks what it tests:\n%s", got)
		}
		if got != want.String() {
			t.Errorf("selection %d:\ngot:\n%s\nwant:\n%s", i, got, want.String())
		}
	}
	empty := &inspect.Tree{RunID: "none"}
	if got := render(t, empty, inspect.FormatJSON, inspect.All); got != "{\n  \"run_id\": \"none\",\n  \"dir\": \"\",\n  \"dialogs\": []\n}\n" {
		t.Errorf("empty tree: %q", got)
	}
}

// A reply cut at max_tokens counts on the working copy its call was made
// on, and shows there in the text line, the DOT label and each JSON form
// (which give every dialog the key).
func TestTreeMaxTokensCut(t *testing.T) {
	// Turn 1's reply is cut before its closing tag, so it does not parse
	// and is retried; the retry and the rest are whole.
	tree := load(t, agentRun(t, "You add.", "CUT:<answer>4", "<answer>4</answer>", "<answer>6</answer>", "<answer>8</answer>", "fine"), inspect.Options{})
	var cut *inspect.Node
	for _, n := range tree.Nodes {
		if n.MaxTokensCut > 0 {
			if cut != nil {
				t.Fatalf("dialogs %s and %s have cut replies", cut.Alias, n.Alias)
			}
			cut = n
		}
	}
	if cut == nil || cut.Alias != "main#1" || cut.MaxTokensCut != 1 || cut.Calls != 1 || !cut.Failed {
		t.Fatalf("the cut attempt: %+v", cut)
	}
	text := render(t, tree, inspect.FormatText, inspect.All)
	if strings.Count(text, "max_tokens_cut") != 1 ||
		!strings.Contains(text, "["+inspect.ShortID(cut.ID)+"] owner=coder alias=main#1 msgs=3 split@2 (last_n=0, first_k=0) tokens=") ||
		!strings.Contains(text, " max_tokens_cut=1 ✗ failed: reply did not parse; retried in main#2\n") {
		t.Errorf("text:\n%s", text)
	}
	if dot := render(t, tree, inspect.FormatDOT, inspect.All); strings.Count(dot, " max_tokens_cut=1") != 1 {
		t.Errorf("DOT:\n%s", dot)
	}

	// Every dialog has the key; only the cut one counts a reply.
	check := func(form string, dialogs []inspect.JSONDialog, raw string) {
		t.Helper()
		if n := strings.Count(raw, `"max_tokens_cut"`); n != len(tree.Nodes) || len(dialogs) != len(tree.Nodes) {
			t.Errorf("%s: %d keys, %d dialogs, want %d", form, n, len(dialogs), len(tree.Nodes))
		}
		for _, d := range dialogs {
			want := 0
			if d.ID == cut.ID {
				want = 1
			}
			if d.MaxTokensCut != want {
				t.Errorf("%s: dialog %s (%s) max_tokens_cut %d, want %d", form, d.ID, d.Alias, d.MaxTokensCut, want)
			}
		}
	}
	raw := render(t, tree, inspect.FormatJSON, inspect.All)
	var nested inspect.JSONTree
	if err := json.Unmarshal([]byte(raw), &nested); err != nil {
		t.Fatal(err)
	}
	var walk func([]*inspect.JSONNode) []inspect.JSONDialog
	walk = func(ns []*inspect.JSONNode) (out []inspect.JSONDialog) {
		for _, n := range ns {
			out = append(append(out, n.JSONDialog), walk(n.Children)...)
		}
		return out
	}
	check("json", walk(nested.Dialogs), raw)
	check("json (encoding/json)", walk(inspect.JSON(tree, inspect.All).Dialogs), raw)
	var flat bytes.Buffer
	if err := inspect.WriteFlatJSON(&flat, tree, inspect.All); err != nil {
		t.Fatal(err)
	}
	var doc inspect.FlatJSONTree
	if err := json.Unmarshal(flat.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var dialogs []inspect.JSONDialog
	for _, d := range doc.Dialogs {
		dialogs = append(dialogs, d.JSONDialog)
	}
	check("flat json", dialogs, flat.String())
}

// An attempt without a reply is not failed while its run is written, and
// is once the run was interrupted.
func TestAttemptOfInterruptedRun(t *testing.T) {
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "chat"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := dialog.New("coder", dialog.WithAlias("main"), dialog.WithSink(w))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutText("question"); err != nil {
		t.Fatal(err)
	}
	work, err := d.Fork(0, 0, dialog.WithAlias("main#1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	attempt := func() (*inspect.Tree, *inspect.Node) {
		tr, _, err := inspect.Load(t.Context(), run, inspect.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range tr.Nodes {
			if n.ID == work.ID() {
				return tr, n
			}
		}
		t.Fatal("no node for the attempt")
		return nil, nil
	}
	if tr, n := attempt(); tr.Status != logs.StatusRunning || n.Failed {
		t.Fatalf("while written: %s, failed %v", tr.Status, n.Failed)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if tr, n := attempt(); tr.Status != logs.StatusInterrupted || !n.Failed || n.FailReason != "no model reply" {
		t.Fatalf("interrupted: %s, failed %v (%s)", tr.Status, n.Failed, n.FailReason)
	}
}
