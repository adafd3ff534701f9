package inspect

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/jsontext"
)

// Format is a rendering of a Tree.
type Format string

// The formats Render writes.
const (
	// FormatText is one line per dialog, indented two spaces per level:
	//
	//	[a1b2c3d4] owner=coder alias=main#1 msgs=3 split@2 (last_n=0, first_k=0) tokens=27 ✗ failed: ...
	FormatText Format = "text"
	// FormatJSON is {"run_id", "dir", "dialogs"}: the start dialogs as nested
	// objects, each with its "children".
	FormatJSON Format = "json"
	// FormatDOT is a Graphviz digraph: a box per dialog, an edge per fork
	// labelled with its split; failed attempts dashed and red.
	FormatDOT Format = "dot"
	// FormatMermaid is a Mermaid flowchart: a node line per dialog, an edge
	// per fork; failed attempts in the class "failed".
	FormatMermaid Format = "mermaid"
)

// Formats lists every Format, in the order the CLI documents them.
var Formats = []Format{FormatText, FormatJSON, FormatDOT, FormatMermaid}

// Selection picks the part of a tree to render.
type Selection struct {
	// Start lists the dialogs to start from; empty means the roots.
	Start []*Node
	// Depth is how many levels of forks below each start to include;
	// negative means all of them.
	Depth int
}

// All selects the whole tree.
var All = Selection{Depth: -1}

// Render writes the dialogs sel picks from t in format f.
func Render(w io.Writer, t *Tree, f Format, sel Selection) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var err error
	switch f {
	case FormatText:
		err = writeText(bw, t, sel)
	case FormatJSON:
		err = writeJSON(bw, t, sel)
	case FormatDOT:
		err = writeDOT(bw, t, sel)
	case FormatMermaid:
		err = writeMermaid(bw, t, sel)
	default:
		return fmt.Errorf("inspect: unknown format %q", f)
	}
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("inspect: writing %s tree: %w", f, err)
	}
	return nil
}

func (sel Selection) starts(t *Tree) []*Node {
	if len(sel.Start) > 0 {
		return sel.Start
	}
	return t.Roots
}

// walk calls fn for every selected dialog, depth first, children in fork
// order, with its level below its start. It uses its own stack, so a
// chain of forks of any length is fine.
func (sel Selection) walk(t *Tree, fn func(n *Node, level int) error) error {
	type item struct {
		n     *Node
		level int
	}
	var stack []item
	starts := sel.starts(t)
	for i := len(starts) - 1; i >= 0; i-- {
		stack = append(stack, item{starts[i], 0})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if err := fn(it.n, it.level); err != nil {
			return err
		}
		if sel.Depth >= 0 && it.level >= sel.Depth {
			continue
		}
		for i := len(it.n.Children) - 1; i >= 0; i-- {
			stack = append(stack, item{it.n.Children[i], it.level + 1})
		}
	}
	return nil
}

// edge reports whether the children of a dialog at level are selected,
// so that its fork edges are drawn.
func (sel Selection) edge(level int) bool { return sel.Depth < 0 || level < sel.Depth }

func writeText(w *bufio.Writer, t *Tree, sel Selection) error {
	var buf []byte
	return sel.walk(t, func(n *Node, level int) error {
		buf = buf[:0]
		for range level {
			buf = append(buf, "  "...)
		}
		buf = AppendLine(buf, n)
		buf = append(buf, '\n')
		_, err := w.Write(buf)
		return err
	})
}

// AppendLine appends the one-line description of n that FormatText
// prints, without indentation or newline:
//
//	[a1b2c3d4] owner=coder alias=draft msgs=5 split@5 (last_n=2, first_k=1) tokens=120 usd=$0.0012
//
// Tokens and dollars are those of the dialog's own messages; model calls
// that failed and were retried show as "retried=N", and replies cut at
// max_tokens as "max_tokens_cut=N"; a failed attempt ends with
// "✗ failed: " and the reason.
func AppendLine(b []byte, n *Node) []byte {
	b = append(b, '[')
	b = append(b, ShortID(n.ID)...)
	b = append(b, "] "...)
	b = appendField(b, "owner", n.Owner)
	if n.Alias != "" {
		b = append(b, ' ')
		b = appendField(b, "alias", n.Alias)
	}
	b = append(b, " msgs="...)
	b = strconv.AppendInt(b, int64(n.Messages), 10)
	if !n.IsRoot() {
		b = append(b, " split@"...)
		b = strconv.AppendInt(b, int64(n.SplitPoint), 10)
		b = append(b, " (last_n="...)
		b = strconv.AppendInt(b, int64(n.LastN), 10)
		b = append(b, ", first_k="...)
		b = strconv.AppendInt(b, int64(n.FirstK), 10)
		b = append(b, ')')
	}
	if t := n.Cost.Total(); t != 0 {
		b = append(b, " tokens="...)
		b = strconv.AppendInt(b, int64(t), 10)
	}
	if n.Cost.USD != 0 {
		b = append(b, " usd="...)
		b = append(b, USD(n.Cost.USD)...)
	}
	if r := n.retried(); r > 0 {
		b = append(b, " retried="...)
		b = strconv.AppendInt(b, int64(r), 10)
	}
	if n.MaxTokensCut > 0 {
		b = append(b, " max_tokens_cut="...)
		b = strconv.AppendInt(b, int64(n.MaxTokensCut), 10)
	}
	if n.Failed {
		b = append(b, " ✗ failed: "...)
		b = append(b, n.FailReason...)
	}
	return b
}

// appendField appends key=value, quoting values that would not read as
// one word.
func appendField(b []byte, key, value string) []byte {
	b = append(b, key...)
	b = append(b, '=')
	if value == "" || strings.ContainsAny(value, " \t\n\"=") {
		return strconv.AppendQuote(b, value)
	}
	return append(b, value...)
}

// ShortID is the first 8 characters of a dialog id, as the text tree
// shows it.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// USD formats dollars: four decimals, and two significant digits for
// amounts below $0.0001 so that they do not print as zero.
func USD(v float64) string {
	if v != 0 && math.Abs(v) < 0.0001 {
		return fmt.Sprintf("$%.*f", 1-int(math.Floor(math.Log10(math.Abs(v)))), v)
	}
	return fmt.Sprintf("$%.4f", v)
}

// JSONTree is the FormatJSON document.
type JSONTree struct {
	RunID   string      `json:"run_id"`
	Dir     string      `json:"dir"` // the run directory; "" when not loaded from one
	Dialogs []*JSONNode `json:"dialogs"`
}

// JSONDialog is what the JSON forms of a tree tell of a dialog. Every key
// is always present.
type JSONDialog struct {
	ID         string      `json:"id"`
	Owner      string      `json:"owner"`
	Alias      string      `json:"alias"`
	ParentID   string      `json:"parent_id"`
	SplitPoint int         `json:"split_point"`
	LastN      int         `json:"last_n"`
	FirstK     int         `json:"first_k"`
	ParentLen  int         `json:"parent_len"`
	Depth      int         `json:"depth"`
	Messages   int         `json:"messages"`
	Cost       dialog.Cost `json:"cost"`
	Calls      int         `json:"model_calls"`
	CallErrors int         `json:"call_errors"`
	// MaxTokensCut is how many of the calls' replies were cut at
	// max_tokens.
	MaxTokensCut int         `json:"max_tokens_cut"`
	CallCost     dialog.Cost `json:"call_cost"`
	Failed       bool        `json:"failed"`
	FailReason   string      `json:"fail_reason"`
}

// jsonDialog is n's JSONDialog.
func jsonDialog(n *Node) JSONDialog {
	return JSONDialog{
		ID: n.ID, Owner: n.Owner, Alias: n.Alias, ParentID: n.ParentID,
		SplitPoint: n.SplitPoint, LastN: n.LastN, FirstK: n.FirstK, ParentLen: n.ParentLen,
		Depth: n.Depth, Messages: n.Messages, Cost: n.Cost,
		Calls: n.Calls, CallErrors: n.CallErrors, MaxTokensCut: n.MaxTokensCut, CallCost: n.CallCost,
		Failed: n.Failed, FailReason: n.FailReason,
	}
}

// JSONNode is one dialog in FormatJSON, with its forks. Children is an
// empty array for a leaf or where the depth stops.
type JSONNode struct {
	JSONDialog
	Children []*JSONNode `json:"children"`
}

// JSON returns the FormatJSON document of the dialogs sel picks.
func JSON(t *Tree, sel Selection) *JSONTree {
	doc := &JSONTree{RunID: t.RunID, Dir: t.Dir, Dialogs: []*JSONNode{}}
	var path []*JSONNode // path[level] is the last node made at that level
	_ = sel.walk(t, func(n *Node, level int) error {
		j := &JSONNode{JSONDialog: jsonDialog(n), Children: []*JSONNode{}}
		if level == 0 {
			doc.Dialogs = append(doc.Dialogs, j)
		} else {
			p := path[level-1]
			p.Children = append(p.Children, j)
		}
		path = append(path[:level], j)
		return nil
	})
	return doc
}

// writeJSON streams the FormatJSON document: byte for byte what
// encoding/json writes for JSON(t, sel) with two-space indentation and no
// HTML escaping, without building the document in memory first.
func writeJSON(w *bufio.Writer, t *Tree, sel Selection) error {
	b := append([]byte(nil), "{\n  \"run_id\": "...)
	b = jsontext.AppendString(b, t.RunID)
	b = append(b, ",\n  \"dir\": "...)
	b = jsontext.AppendString(b, t.Dir)
	b = append(b, ",\n  \"dialogs\": ["...)
	// items[i] counts the elements written so far into the array open at
	// nesting i: the "dialogs" array, then the children of each open node.
	items := []int{0}
	closeNode := func() {
		level := len(items) - 2 // of the node being closed
		ind := 4 + 4*level
		if items[len(items)-1] > 0 {
			b = append(b, '\n')
			b = appendIndent(b, ind+2)
		}
		b = append(b, "]\n"...)
		b = appendIndent(b, ind)
		b = append(b, '}')
		items = items[:len(items)-1]
	}
	err := sel.walk(t, func(n *Node, level int) error {
		for len(items) > level+1 {
			closeNode()
		}
		if items[level] > 0 {
			b = append(b, ',')
		}
		items[level]++
		ind := 4 + 4*level
		b = append(b, '\n')
		b = appendIndent(b, ind)
		b = appendNodeFields(b, n, ind+2)
		items = append(items, 0)
		if len(b) >= 32<<10 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
		return nil
	})
	if err != nil {
		return err
	}
	for len(items) > 1 {
		closeNode()
	}
	if items[0] > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, "]\n}\n"...)
	_, err = w.Write(b)
	return err
}

// appendNodeFields appends "{" and the fields of n's JSONNode, each on its
// own line indented by ind, up to and including `"children": [`.
func appendNodeFields(b []byte, n *Node, ind int) []byte {
	b = append(b, '{')
	str := func(key, v string) {
		b = append(b, '\n')
		b = appendIndent(b, ind)
		b = append(b, key...)
		b = jsontext.AppendString(b, v)
		b = append(b, ',')
	}
	num := func(key string, v int) {
		b = append(b, '\n')
		b = appendIndent(b, ind)
		b = append(b, key...)
		b = strconv.AppendInt(b, int64(v), 10)
		b = append(b, ',')
	}
	cost := func(key string, c dialog.Cost) {
		b = append(b, '\n')
		b = appendIndent(b, ind)
		b = append(b, key...)
		b = appendCostJSON(b, c, ind)
		b = append(b, ',')
	}
	str(`"id": `, n.ID)
	str(`"owner": `, n.Owner)
	str(`"alias": `, n.Alias)
	str(`"parent_id": `, n.ParentID)
	num(`"split_point": `, n.SplitPoint)
	num(`"last_n": `, n.LastN)
	num(`"first_k": `, n.FirstK)
	num(`"parent_len": `, n.ParentLen)
	num(`"depth": `, n.Depth)
	num(`"messages": `, n.Messages)
	cost(`"cost": `, n.Cost)
	num(`"model_calls": `, n.Calls)
	num(`"call_errors": `, n.CallErrors)
	num(`"max_tokens_cut": `, n.MaxTokensCut)
	cost(`"call_cost": `, n.CallCost)
	b = append(b, '\n')
	b = appendIndent(b, ind)
	b = append(b, `"failed": `...)
	b = strconv.AppendBool(b, n.Failed)
	b = append(b, ',')
	str(`"fail_reason": `, n.FailReason)
	b = append(b, '\n')
	b = appendIndent(b, ind)
	return append(b, `"children": [`...)
}

// appendCostJSON appends c as encoding/json does (every field omitzero):
// on one line when ind is negative, else as an object whose fields are
// indented by ind+2.
func appendCostJSON(b []byte, c dialog.Cost, ind int) []byte {
	if c == (dialog.Cost{}) {
		return append(b, "{}"...)
	}
	b = append(b, '{')
	sep := false
	field := func(key string) {
		if sep {
			b = append(b, ',')
		}
		sep = true
		if ind >= 0 {
			b = append(b, '\n')
			b = appendIndent(b, ind+2)
		}
		b = append(b, key...)
		if ind >= 0 {
			b = append(b, ' ')
		}
	}
	for _, f := range []struct {
		key string
		v   int
	}{
		{`"input_tokens":`, c.InputTokens}, {`"cached_input_tokens":`, c.CachedInputTokens},
		{`"cache_write_tokens":`, c.CacheWriteTokens},
		{`"output_tokens":`, c.OutputTokens}, {`"reasoning_tokens":`, c.ReasoningTokens},
	} {
		if f.v != 0 {
			field(f.key)
			b = strconv.AppendInt(b, int64(f.v), 10)
		}
	}
	if c.USD != 0 {
		field(`"usd":`)
		var err error
		if b, err = jsontext.AppendFloat(b, c.USD); err != nil {
			b = append(b, "null"...) // NaN or infinite: a broken price table
		}
	}
	if ind >= 0 {
		b = append(b, '\n')
		b = appendIndent(b, ind)
	}
	return append(b, '}')
}

func appendIndent(b []byte, n int) []byte {
	for range n {
		b = append(b, ' ')
	}
	return b
}

// label is the text of a dialog in DOT and Mermaid: id, owner and alias,
// then its size and cost, then the failure.
func label(n *Node) []string {
	lines := make([]string, 0, 4)
	head := ShortID(n.ID) + " " + n.Owner
	if n.Alias != "" {
		head += " " + n.Alias
	}
	lines = append(lines, head)
	size := "msgs=" + strconv.Itoa(n.Messages)
	if !n.IsRoot() {
		size += " split@" + strconv.Itoa(n.SplitPoint)
		if n.LastN > 0 {
			size += " last_n=" + strconv.Itoa(n.LastN) + " first_k=" + strconv.Itoa(n.FirstK)
		}
	}
	if t := n.Cost.Total(); t != 0 {
		size += " tokens=" + strconv.Itoa(t)
	}
	if n.Cost.USD != 0 {
		size += " " + USD(n.Cost.USD)
	}
	if r := n.retried(); r > 0 {
		size += " retried=" + strconv.Itoa(r)
	}
	if n.MaxTokensCut > 0 {
		size += " max_tokens_cut=" + strconv.Itoa(n.MaxTokensCut)
	}
	lines = append(lines, size)
	if n.Failed {
		lines = append(lines, "✗ failed: "+n.FailReason)
	}
	return lines
}

func writeDOT(w *bufio.Writer, t *Tree, sel Selection) error {
	w.WriteString("digraph ")
	w.WriteString(dotQuote("run " + t.RunID))
	w.WriteString(" {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n  edge [fontname=\"monospace\", fontsize=9];\n")
	var edges []byte
	var buf []byte
	err := sel.walk(t, func(n *Node, level int) error {
		buf = append(buf[:0], "  "...)
		buf = append(buf, dotQuote(n.ID)...)
		buf = append(buf, " [label="...)
		buf = append(buf, dotQuote(strings.Join(label(n), "\n"))...)
		if n.Failed {
			buf = append(buf, `, style=dashed, color=red, fontcolor=red`...)
		}
		buf = append(buf, "];\n"...)
		if sel.edge(level) {
			for _, c := range n.Children {
				edges = append(edges, "  "...)
				edges = append(edges, dotQuote(n.ID)...)
				edges = append(edges, " -> "...)
				edges = append(edges, dotQuote(c.ID)...)
				edges = append(edges, " [label="...)
				edges = append(edges, dotQuote(forkLabel(c))...)
				if c.Failed {
					edges = append(edges, ", style=dashed, color=red"...)
				}
				edges = append(edges, "];\n"...)
			}
		}
		_, err := w.Write(buf)
		return err
	})
	if err != nil {
		return err
	}
	w.Write(edges)
	_, err = w.WriteString("}\n")
	return err
}

// forkLabel describes how a fork was made, for an edge.
func forkLabel(n *Node) string {
	if n.LastN > 0 {
		return "split@" + strconv.Itoa(n.SplitPoint) + " (first " + strconv.Itoa(n.FirstK) + " + last " + strconv.Itoa(n.LastN) + ")"
	}
	return "split@" + strconv.Itoa(n.SplitPoint)
}

// dotQuote makes s a DOT double-quoted string; newlines become \n line
// breaks.
func dotQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func writeMermaid(w *bufio.Writer, t *Tree, sel Selection) error {
	w.WriteString("flowchart LR\n")
	id := mermaidID
	var edges, failed []byte
	var buf []byte
	err := sel.walk(t, func(n *Node, level int) error {
		nid := id(n)
		buf = append(buf[:0], "  "...)
		buf = append(buf, nid...)
		buf = append(buf, `["`...)
		buf = append(buf, mermaidText(strings.Join(label(n), "<br/>"))...)
		buf = append(buf, "\"]\n"...)
		if n.Failed {
			if len(failed) > 0 {
				failed = append(failed, ',')
			}
			failed = append(failed, nid...)
		}
		if sel.edge(level) {
			for _, c := range n.Children {
				edges = append(edges, "  "...)
				edges = append(edges, nid...)
				edges = append(edges, " -->|"...)
				edges = append(edges, mermaidText(forkLabel(c))...)
				edges = append(edges, "| "...)
				edges = append(edges, id(c)...)
				edges = append(edges, '\n')
			}
		}
		_, err := w.Write(buf)
		return err
	})
	if err != nil {
		return err
	}
	w.Write(edges)
	if len(failed) > 0 {
		w.WriteString("  classDef failed stroke:#d00,stroke-width:2px,stroke-dasharray:5 5,color:#d00\n  class ")
		w.Write(failed)
		w.WriteString(" failed\n")
	}
	return nil
}

// mermaidID is the Mermaid node id of a dialog: "d_" and its id, with
// any character Mermaid would not take in an id replaced by '_'.
func mermaidID(n *Node) string {
	b := []byte("d_" + n.ID)
	for i := 2; i < len(b); i++ {
		if c := b[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// mermaidText escapes the characters that would end a Mermaid label or
// be read as markup, with Mermaid's #code; entities.
func mermaidText(s string) string {
	if !strings.ContainsAny(s, "\"#|<>[]{}()\n") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.HasPrefix(s[i:], "<br/>") {
			b.WriteString("<br/>")
			i += len("<br/>") - 1
			continue
		}
		switch c := s[i]; c {
		case '"':
			b.WriteString("#quot;")
		case '#':
			b.WriteString("#35;")
		case '|':
			b.WriteString("#124;")
		case '<':
			b.WriteString("#lt;")
		case '>':
			b.WriteString("#gt;")
		case '[', ']', '{', '}', '(', ')':
			b.WriteString("#" + strconv.Itoa(int(c)) + ";")
		case '\n':
			b.WriteString("<br/>")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
