package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// retryConfig is a react run whose first reply has no <answer>: the agent
// retries on main#2, so main#1 is a failed attempt.
const retryConfig = `tactic_type: react
global:
  model_name: mock/demo
  max_exception_retry: 2
params: {max_steps: 2, tools: [calculator]}
agent_configs:
  - name: agent
    system_prompt: You use tools.
mock:
  replies:
    - text: "no tag here"
    - text: "<answer>7</answer>"
`

// runConfig runs yaml on task under a fresh log root and returns the
// root and the run id.
func runConfig(t *testing.T, yaml, task string, extra ...string) (logDir, runID string) {
	t.Helper()
	cfg, logDir := writeConfig(t, yaml)
	return logDir, runInto(t, cfg, logDir, task, extra...)
}

// runInto runs the config at cfg on task under logDir and returns the
// run id.
func runInto(t *testing.T, cfg, logDir, task string, extra ...string) string {
	t.Helper()
	r := lllm(t, append([]string{"run", cfg, "--task", task, "--log-dir", logDir, "-o", "json"}, extra...)...)
	if r.code != 0 {
		t.Fatalf("run: %v", r)
	}
	return decodeJSON[struct {
		RunID string `json:"run_id"`
	}](t, r.stdout).RunID
}

// treeNode is a node of lllm tree -o json with the fields this file
// checks.
type treeNode struct {
	ID         string     `json:"id"`
	Alias      string     `json:"alias"`
	Messages   int        `json:"messages"`
	Calls      int        `json:"model_calls"`
	CallErrors int        `json:"call_errors"`
	Failed     bool       `json:"failed"`
	FailReason string     `json:"fail_reason"`
	Children   []treeNode `json:"children"`
	Cost       struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"cost"`
	CallCost struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"call_cost"`
}

func treeNodes(t *testing.T, logDir, runID string) []treeNode {
	t.Helper()
	r := lllm(t, "tree", runID, "--log-dir", logDir, "-o", "json")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	var flat []treeNode
	var add func(ns []treeNode)
	add = func(ns []treeNode) {
		for _, n := range ns {
			flat = append(flat, n)
			add(n.Children)
		}
	}
	add(decodeJSON[struct {
		Dialogs []treeNode `json:"dialogs"`
	}](t, r.stdout).Dialogs)
	return flat
}

func TestTreeFailedAttempt(t *testing.T) {
	logDir, id := runConfig(t, retryConfig, "3+4?")
	nodes := treeNodes(t, logDir, id)
	if len(nodes) != 3 || nodes[0].Alias != "main" || nodes[1].Alias != "main#1" || nodes[2].Alias != "main#2" {
		t.Fatalf("nodes %+v", nodes)
	}
	if !nodes[1].Failed || nodes[1].FailReason != "reply did not parse; retried in main#2" || nodes[0].Failed || nodes[2].Failed {
		t.Errorf("failed marks: %+v", nodes)
	}
	if nodes[1].Calls != 1 || nodes[2].Calls != 1 || nodes[0].Calls != 0 || nodes[1].CallCost.InputTokens == 0 ||
		nodes[2].CallCost != nodes[2].Cost {
		t.Errorf("calls: %+v", nodes)
	}

	r := lllm(t, "tree", id, "--log-dir", logDir)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 3 {
		t.Fatalf("%v", r)
	}
	if want := "  [" + nodes[1].ID[:8] + "] owner=agent alias=main#1 msgs=3 split@2 (last_n=0, first_k=0) tokens="; !strings.HasPrefix(lines[1], want) ||
		!strings.HasSuffix(lines[1], " ✗ failed: reply did not parse; retried in main#2") {
		t.Errorf("line %q", lines[1])
	}
	if strings.Contains(lines[0]+lines[2], "failed") {
		t.Errorf("kept dialogs marked failed:\n%s", r.stdout)
	}
}

var (
	dotHeader = regexp.MustCompile(`^digraph "run ([^"]+)" \{$`)
	dotNode   = regexp.MustCompile(`^  "([0-9a-f]+)" \[label="((?:[^"\\]|\\.)*)"(, style=dashed, color=red, fontcolor=red)?\];$`)
	dotEdge   = regexp.MustCompile(`^  "([0-9a-f]+)" -> "([0-9a-f]+)" \[label="((?:[^"\\]|\\.)*)"(, style=dashed, color=red)?\];$`)
	dotAttr   = regexp.MustCompile(`^  (rankdir=LR|node \[.*\]|edge \[.*\]);$`)
)

// dotGraph checks that out is a digraph of node and edge statements and
// returns its nodes (id → failed) and edges.
func dotGraph(t *testing.T, out string) (map[string]bool, [][2]string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !dotHeader.MatchString(lines[0]) || lines[len(lines)-1] != "}" {
		t.Fatalf("not a digraph:\n%s", out)
	}
	nodes := map[string]bool{}
	var edges [][2]string
	for _, l := range lines[1 : len(lines)-1] {
		if m := dotNode.FindStringSubmatch(l); m != nil {
			nodes[m[1]] = m[3] != ""
		} else if m := dotEdge.FindStringSubmatch(l); m != nil {
			edges = append(edges, [2]string{m[1], m[2]})
		} else if !dotAttr.MatchString(l) {
			t.Errorf("not a DOT statement: %q", l)
		}
	}
	for _, e := range edges {
		if _, ok := nodes[e[0]]; !ok {
			t.Errorf("edge from a node not in the graph: %v", e)
		}
		if _, ok := nodes[e[1]]; !ok {
			t.Errorf("edge to a node not in the graph: %v", e)
		}
	}
	return nodes, edges
}

func TestTreeDOT(t *testing.T) {
	logDir, id := runConfig(t, retryConfig, "3+4?")
	n := treeNodes(t, logDir, id)
	r := lllm(t, "tree", id, "--log-dir", logDir, "--format", "dot")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%v", r)
	}
	nodes, edges := dotGraph(t, r.stdout)
	if len(nodes) != 3 || !nodes[n[1].ID] || nodes[n[0].ID] || nodes[n[2].ID] {
		t.Errorf("nodes %v", nodes)
	}
	if len(edges) != 2 || edges[0] != [2]string{n[0].ID, n[1].ID} || edges[1] != [2]string{n[1].ID, n[2].ID} {
		t.Errorf("edges %v", edges)
	}
	if !strings.Contains(r.stdout, `label="`+n[1].ID[:8]+` agent main#1\nmsgs=3 split@2 tokens=`) {
		t.Errorf("label of main#1:\n%s", r.stdout)
	}

	// --dialog and --depth pick a subtree.
	r = lllm(t, "tree", id, "--log-dir", logDir, "-o", "dot", "--dialog", n[1].ID[:8])
	if nodes, edges := dotGraph(t, r.stdout); len(nodes) != 2 || len(edges) != 1 || edges[0] != [2]string{n[1].ID, n[2].ID} {
		t.Errorf("subtree: %v %v", nodes, edges)
	}
	r = lllm(t, "tree", id, "--log-dir", logDir, "-o", "dot", "--depth", "1")
	if nodes, edges := dotGraph(t, r.stdout); len(nodes) != 2 || len(edges) != 1 || edges[0] != [2]string{n[0].ID, n[1].ID} {
		t.Errorf("depth 1: %v %v", nodes, edges)
	}
}

var mermaidNodeLine = regexp.MustCompile(`^  d_([0-9a-f]+)\["[^"]*"\]$`)

func TestTreeMermaid(t *testing.T) {
	logDir, id := runConfig(t, retryConfig, "3+4?")
	n := treeNodes(t, logDir, id)
	r := lllm(t, "tree", id, "--log-dir", logDir, "-o", "mermaid")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if lines[0] != "flowchart LR" {
		t.Errorf("header %q", lines[0])
	}
	var ids []string
	for _, l := range lines {
		if m := mermaidNodeLine.FindStringSubmatch(l); m != nil {
			ids = append(ids, m[1])
		}
	}
	if strings.Join(ids, " ") != n[0].ID+" "+n[1].ID+" "+n[2].ID {
		t.Errorf("node lines for %v, want one per dialog:\n%s", ids, r.stdout)
	}
	for _, want := range []string{
		"  d_" + n[0].ID + " -->|split@2| d_" + n[1].ID,
		"  d_" + n[1].ID + " -->|split@3| d_" + n[2].ID,
		"  class d_" + n[1].ID + " failed",
	} {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("mermaid lacks %q:\n%s", want, r.stdout)
		}
	}
	r = lllm(t, "tree", id, "--log-dir", logDir, "-o", "mermaid", "--dialog", n[2].ID, "--depth", "0")
	if strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stdout, "d_"+n[2].ID+"[") {
		t.Errorf("one dialog:\n%v", r)
	}
}

func TestTreeFormatsBadLogs(t *testing.T) {
	logDir, id := runConfig(t, retryConfig, "3+4?")
	path := filepath.Join(logDir, id, logs.EventsFile)
	whole := lllm(t, "tree", id, "--log-dir", logDir, "-o", "dot")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":99,"ts":"2026-01-01T00:00:00Z","kind":"mod`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, format := range []string{"dot", "mermaid", "json", "text"} {
		r := lllm(t, "tree", id, "--log-dir", logDir, "-o", format)
		if r.code != 0 || !strings.HasPrefix(r.stderr, "lllm: warning: "+path) || !strings.Contains(r.stderr, "torn") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s of a torn log:\n%v", format, r)
		}
		if format == "dot" && r.stdout != whole.stdout {
			t.Errorf("dot of a torn log:\n%s\nwant:\n%s", r.stdout, whole.stdout)
		}
	}

	root := t.TempDir()
	newer := `{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"2.0","run_id":"x"}}` + "\n"
	p := writeRun(t, root, "20200101T000000.000000Z-newer0", newer)
	for _, format := range []string{"dot", "mermaid"} {
		wantError(t, lllm(t, "tree", "newer0", "--log-dir", root, "-o", format), ExitError, p, "version 2.0")
	}
}

// lllm show prints a tool result once: as the tool message's text, not
// again under its call.
func TestShowToolResultOnce(t *testing.T) {
	logDir := t.TempDir()
	id := runInto(t, "../../../configs/react.yaml", logDir, "What is (17 + 25) * 3?")
	r := lllm(t, "show", id, "--log-dir", logDir)
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	data, err := os.ReadFile(filepath.Join(logDir, id, logs.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	results := strings.Count(string(data), `"kind":"tool_call"`)
	// Each result shows in the transcripts of the dialogs that hold it:
	// the working copy and the dialog the reply went back to.
	shown := strings.Count(r.stdout, "Return of calling function")
	msgs := strings.Count(r.stdout, "] tool ")
	if results == 0 || shown != msgs {
		t.Errorf("%d tool calls; %d tool messages shown, %d results printed (want one per message):\n%s", results, msgs, shown, r.stdout)
	}
}

// A dialog may be named by OWNER/ALIAS, or by an alias one dialog has, as
// lllm diff names them; a name several dialogs share lists them.
func TestDialogByName(t *testing.T) {
	logDir := t.TempDir()
	id := runInto(t, "../../../configs/best_of_n.yaml", logDir, "Name a prime between 10 and 20.")
	for _, args := range [][]string{{"show", id, "judge/main"}, {"tree", id, "--dialog", "judge/main"}} {
		r := lllm(t, append(args, "--log-dir", logDir)...)
		if r.code != 0 || !strings.Contains(r.stdout, "owner=judge alias=main") || strings.Contains(r.stdout, "owner=solver") {
			t.Errorf("%v: %v", args, r)
		}
	}
	r := lllm(t, "show", id, "main", "--log-dir", logDir)
	if r.code != ExitError || !strings.Contains(r.stderr, `name "main" matches 2 dialogs`) {
		t.Errorf("an alias two agents share: %v", r)
	}
}

// lllm show marks a failed attempt in its header, as lllm tree does.
func TestShowMarksFailedAttempts(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	r := lllm(t, "run", cfg, "--task", "please fail", "--log-dir", logDir)
	if r.code != ExitError {
		t.Fatalf("the run should fail: %v", r)
	}
	show := lllm(t, "show", "latest", "--log-dir", logDir)
	tree := lllm(t, "tree", "latest", "--log-dir", logDir)
	if !strings.Contains(tree.stdout, "✗ failed: model call failed: auth") {
		t.Fatalf("tree does not mark the attempt:\n%s", tree.stdout)
	}
	if !regexp.MustCompile(`(?m)^── dialog \S+ owner=assistant alias=main#1 \(fork of \S+ at 2\) ✗ failed: model call failed: auth.* ──$`).MatchString(show.stdout) {
		t.Errorf("show does not mark the failed attempt:\n%s", show.stdout)
	}
}

// writeChain writes, under a fresh log root, a run whose dialogs are a
// chain of forks depth deep, and returns the root and the run id.
func writeChain(t *testing.T, depth int) (logDir, id string) {
	t.Helper()
	id = fmt.Sprintf("20261120T100010.000000Z-deep%d", depth)
	lines := []string{
		`{"seq":1,"ts":"2026-11-20T10:00:10Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":"` + id + `","tactic":"deep"}}`,
		`{"seq":2,"ts":"2026-11-20T10:00:10Z","kind":"dialog_open","dialog":"f0","dialog_open":{"id":"f0","owner":"a","alias":"main"}}`,
	}
	for i := 1; i <= depth; i++ {
		lines = append(lines, fmt.Sprintf(`{"seq":%d,"ts":"2026-11-20T10:00:10Z","kind":"fork","dialog":"f%d","fork":{"id":"f%[2]d","owner":"a","alias":"main","parent_id":"f%d","depth":%[2]d}}`, i+2, i, i-1))
	}
	lines = append(lines, fmt.Sprintf(`{"seq":%d,"ts":"2026-11-20T10:00:10Z","kind":"run_end","run_end":{"status":"ok"}}`, depth+3))
	logDir = filepath.Join(t.TempDir(), "logs")
	ctWrite(t, filepath.Join(logDir, id, "events.jsonl"), strings.Join(lines, "\n")+"\n")
	return logDir, id
}

// flatTree is lllm tree -o json --flat with the fields this file checks.
type flatTree struct {
	RunID   string `json:"run_id"`
	Dialogs []struct {
		ID       string `json:"id"`
		ParentID string `json:"parent_id"`
		Failed   bool   `json:"failed"`
		Children any    `json:"children"`
	} `json:"dialogs"`
}

// --flat lists the dialogs of -o json flat, parents first, the failed
// attempts the same as in the nested form; without -o json it is a usage
// error.
func TestTreeFlat(t *testing.T) {
	logDir, runID := runConfig(t, retryConfig, "What is 3+4?")
	r := lllm(t, "tree", runID, "--log-dir", logDir, "-o", "json", "--flat")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	doc := decodeJSON[flatTree](t, r.stdout)
	nested := treeNodes(t, logDir, runID)
	if doc.RunID != runID || len(doc.Dialogs) != len(nested) || len(lines) != len(nested)+2 {
		t.Fatalf("run %q, %d dialogs on %d lines; the nested form has %d:\n%s", doc.RunID, len(doc.Dialogs), len(lines), len(nested), r.stdout)
	}
	var failed, nestedFailed []string
	seen := map[string]bool{}
	for i, d := range doc.Dialogs {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(strings.TrimSuffix(lines[i+1], ",")), &raw); err != nil {
			t.Fatalf("line %d is not one dialog: %v\n%s", i+2, err, lines[i+1])
		}
		parent, hasParent := raw["parent"]
		switch {
		case d.ID != nested[i].ID:
			t.Errorf("dialog %d is %s, nested %s", i, d.ID, nested[i].ID)
		case d.Children != nil:
			t.Errorf("dialog %s has children", d.ID)
		case d.ParentID == "" && hasParent:
			t.Errorf("root %s has a parent %s", d.ID, parent)
		case d.ParentID != "" && string(parent) != `"`+d.ParentID+`"`:
			t.Errorf("dialog %s: parent %s, parent_id %s", d.ID, parent, d.ParentID)
		case d.ParentID != "" && !seen[d.ParentID]:
			t.Errorf("dialog %s comes before its parent", d.ID)
		}
		seen[d.ID] = true
		if d.Failed {
			failed = append(failed, d.ID)
		}
		if nested[i].Failed {
			nestedFailed = append(nestedFailed, nested[i].ID)
		}
	}
	if len(failed) != 1 || !slices.Equal(failed, nestedFailed) {
		t.Errorf("failed attempts %q, nested %q", failed, nestedFailed)
	}

	for _, args := range [][]string{{"--flat"}, {"-o", "text", "--flat"}, {"--format", "dot", "--flat"}} {
		r := lllm(t, append([]string{"tree", runID, "--log-dir", logDir}, args...)...)
		if r.code != ExitUsage || r.stdout != "" || !strings.Contains(r.stderr, "add -o json") {
			t.Errorf("tree %s: %v", strings.Join(args, " "), r)
		}
	}
}

// The nested -o json of a tree deeper than jq 1.6 reads says on stderr to
// add --flat, and prints the same; a shallower one and --flat say nothing.
func TestTreeDeepJSONHint(t *testing.T) {
	deepDir, deep := writeChain(t, deepJSON+1)
	shallowDir, shallow := writeChain(t, deepJSON)
	for _, tt := range []struct {
		dir, id string
		flat    bool
		hint    bool
	}{{deepDir, deep, false, true}, {deepDir, deep, true, false}, {shallowDir, shallow, false, false}} {
		args := []string{"tree", tt.id, "--log-dir", tt.dir, "-o", "json"}
		if tt.flat {
			args = append(args, "--flat")
		}
		r := lllm(t, args...)
		if r.code != 0 {
			t.Fatalf("%s: %v", strings.Join(args, " "), r)
		}
		if got := strings.Contains(r.stderr, "--flat"); got != tt.hint || strings.Count(r.stderr, "\n") > 1 {
			t.Errorf("%s: stderr %q, want a hint: %v", strings.Join(args, " "), r.stderr, tt.hint)
		}
		var v struct {
			Dialogs []json.RawMessage `json:"dialogs"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Dialogs) == 0 {
			t.Errorf("%s: stdout is not the tree: %v", strings.Join(args, " "), err)
		}
	}
	// With --depth the nested form is shallow enough: no hint.
	if r := lllm(t, "tree", deep, "--log-dir", deepDir, "-o", "json", "--depth", "10"); r.code != 0 || r.stderr != "" {
		t.Errorf("--depth 10: %v", r)
	}
}

func TestTreeText(t *testing.T) {
	f := newFixture(t, t.TempDir())
	r := lllm(t, "tree", f.runID, "--log-dir", f.root)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("tree failed:\n%v", r)
	}
	want := []string{
		fmt.Sprintf("[%s] owner=coder alias=main msgs=4 tokens=120 usd=$0.0012", short(f.main)),
		fmt.Sprintf("  [%s] owner=coder alias=draft msgs=4 split@3 (last_n=2, first_k=1)", short(f.draft)),
		fmt.Sprintf("    [%s] owner=coder msgs=5 split@4 (last_n=0, first_k=0)", short(f.grand)),
		fmt.Sprintf("  [%s] owner=coder msgs=6 split@4 (last_n=0, first_k=0) tokens=55 usd=$0.0005", short(f.tools)),
		fmt.Sprintf("[%s] owner=judge msgs=1", short(f.judge)),
	}
	if got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The same run by "latest", by its run directory and by its suffix.
	for _, ref := range []string{"latest", filepath.Join(f.root, f.runID), f.runID[len(f.runID)-6:]} {
		if r2 := lllm(t, "tree", ref, "--log-dir", f.root); r2.stdout != r.stdout {
			t.Errorf("tree %s:\n%v\nwant the same as by id", ref, r2)
		}
	}
}

func TestTreeDialogAndDepth(t *testing.T) {
	f := newFixture(t, t.TempDir())
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--depth", "0"}, []string{
			fmt.Sprintf("[%s] owner=coder alias=main msgs=4 tokens=120 usd=$0.0012", short(f.main)),
			fmt.Sprintf("[%s] owner=judge msgs=1", short(f.judge)),
		}},
		{[]string{"--depth", "1"}, []string{
			fmt.Sprintf("[%s] owner=coder alias=main msgs=4 tokens=120 usd=$0.0012", short(f.main)),
			fmt.Sprintf("  [%s] owner=coder alias=draft msgs=4 split@3 (last_n=2, first_k=1)", short(f.draft)),
			fmt.Sprintf("  [%s] owner=coder msgs=6 split@4 (last_n=0, first_k=0) tokens=55 usd=$0.0005", short(f.tools)),
			fmt.Sprintf("[%s] owner=judge msgs=1", short(f.judge)),
		}},
		// A subtree starts unindented, by full id or by prefix.
		{[]string{"--dialog", f.draft.ID()}, []string{
			fmt.Sprintf("[%s] owner=coder alias=draft msgs=4 split@3 (last_n=2, first_k=1)", short(f.draft)),
			fmt.Sprintf("  [%s] owner=coder msgs=5 split@4 (last_n=0, first_k=0)", short(f.grand)),
		}},
		{[]string{"--dialog", short(f.draft), "--depth", "0"}, []string{
			fmt.Sprintf("[%s] owner=coder alias=draft msgs=4 split@3 (last_n=2, first_k=1)", short(f.draft)),
		}},
		{[]string{"--dialog", short(f.tools), "--depth", "-1"}, []string{
			fmt.Sprintf("[%s] owner=coder msgs=6 split@4 (last_n=0, first_k=0) tokens=55 usd=$0.0005", short(f.tools)),
		}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := lllm(t, append([]string{"tree", f.runID, "--log-dir", f.root}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("%v", r)
			}
			if got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"); !slices.Equal(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}

	r := lllm(t, "tree", f.runID, "--log-dir", f.root, "--dialog", "ffffffffff")
	wantError(t, r, ExitError, `"ffffffffff"`, f.runID, "lllm tree "+f.runID)
}

type treeNodeJSON struct {
	ID         string         `json:"id"`
	Owner      string         `json:"owner"`
	Alias      string         `json:"alias"`
	ParentID   string         `json:"parent_id"`
	SplitPoint int            `json:"split_point"`
	LastN      int            `json:"last_n"`
	FirstK     int            `json:"first_k"`
	Depth      int            `json:"depth"`
	Messages   int            `json:"messages"`
	Children   []treeNodeJSON `json:"children"`
	Cost       dialog.Cost    `json:"cost"`
}

func TestTreeJSON(t *testing.T) {
	f := newFixture(t, t.TempDir())
	r := lllm(t, "tree", "latest", "--log-dir", f.root, "--format", "json")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	var got struct {
		RunID   string         `json:"run_id"`
		Dir     string         `json:"dir"`
		Dialogs []treeNodeJSON `json:"dialogs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if got.RunID != f.runID || got.Dir != filepath.Join(f.root, f.runID) {
		t.Errorf("run_id %q, dir %q, want %q in %s", got.RunID, got.Dir, f.runID, f.root)
	}
	if len(got.Dialogs) != 2 || got.Dialogs[0].ID != f.main.ID() || got.Dialogs[1].ID != f.judge.ID() {
		t.Fatalf("roots %+v, want main then judge", got.Dialogs)
	}
	main := got.Dialogs[0]
	if main.Owner != "coder" || main.Alias != "main" || main.ParentID != "" || main.Messages != 4 || main.Depth != 0 ||
		main.Cost.USD != 0.0012 || main.Cost.Total() != 120 {
		t.Errorf("main node %+v", main)
	}
	if len(main.Children) != 2 {
		t.Fatalf("main has %d children, want 2", len(main.Children))
	}
	draft, tools := main.Children[0], main.Children[1]
	if draft.ID != f.draft.ID() || draft.ParentID != f.main.ID() || draft.SplitPoint != 3 || draft.LastN != 2 ||
		draft.FirstK != 1 || draft.Depth != 1 || draft.Messages != 4 || draft.Alias != "draft" {
		t.Errorf("draft node %+v", draft)
	}
	if tools.ID != f.tools.ID() || tools.Messages != 6 || len(tools.Children) != 0 {
		t.Errorf("tools node %+v", tools)
	}
	if len(draft.Children) != 1 || draft.Children[0].ID != f.grand.ID() || draft.Children[0].Depth != 2 {
		t.Errorf("draft's children %+v, want grand at depth 2", draft.Children)
	}

	// Every key is there, children an array even when empty.
	var raw struct {
		Dialogs []map[string]json.RawMessage `json:"dialogs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	judge := raw.Dialogs[1]
	for _, k := range []string{"id", "owner", "alias", "parent_id", "split_point", "last_n", "first_k", "depth", "messages", "children", "cost"} {
		if _, ok := judge[k]; !ok {
			t.Errorf("judge node lacks %q: %v", k, judge)
		}
	}
	if string(judge["children"]) != "[]" {
		t.Errorf("judge children = %s, want []", judge["children"])
	}
	if !strings.HasPrefix(r.stdout, "{\n  \"run_id\"") {
		t.Errorf("JSON is not pretty-printed:\n%s", r.stdout)
	}

	// --dialog and --depth apply to JSON too.
	r = lllm(t, "tree", f.runID, "--log-dir", f.root, "-o", "json", "--dialog", short(f.draft), "--depth", "0")
	got.Dialogs = nil
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%v", err, r)
	}
	if len(got.Dialogs) != 1 || got.Dialogs[0].ID != f.draft.ID() || len(got.Dialogs[0].Children) != 0 {
		t.Errorf("subtree JSON %+v, want only draft", got.Dialogs)
	}
}
