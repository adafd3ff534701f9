package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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
