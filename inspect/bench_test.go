package inspect_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/xlab/treeprint"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
)

// The generated run of the benchmarks: 1,000 agents, each with a dialog
// "main" and 90 turns on it, every tenth needing a parse retry, the way
// tactics.Agent logs them: 100,000 dialogs, 9,000 of them failed attempts.
const (
	benchAgents  = 1000
	benchTurns   = 90
	benchRetryEv = 10
)

var benchLog = sync.OnceValues(func() ([]byte, error) {
	var buf bytes.Buffer
	w, err := logs.NewWriter(&buf, logs.RunStart{Tactic: "bench", RunID: "bench"}, logs.Options{})
	if err != nil {
		return nil, err
	}
	call := func(d *dialog.Dialog, text string, n int) (*dialog.Message, error) {
		m, err := d.Append(dialog.Message{Role: dialog.RoleAssistant, Name: "agent", Content: text,
			Usage: dialog.Usage{InputTokens: 40 + n, OutputTokens: 8}, USD: 0.00002, Model: "mock/bench"})
		if err != nil {
			return nil, err
		}
		return m, w.Write(&logs.Record{Kind: logs.KindModelCall, Dialog: d.ID(), ModelCall: &logs.ModelCall{
			Agent: d.Owner(), Model: "mock/bench", Call: n, Attempt: 1, Alias: "main", Turn: n,
			Reply: &logs.MessageRef{Dialog: d.ID(), Index: d.Len() - 1}, Usage: m.Usage, USD: m.USD}})
	}
	for a := range benchAgents {
		owner := fmt.Sprintf("agent%04d", a)
		main, err := dialog.New(owner, dialog.WithSink(w), dialog.WithAlias("main"))
		if err != nil {
			return nil, err
		}
		if _, err := main.PutText("You are agent "+owner+".", dialog.AsRole(dialog.RoleSystem), dialog.From("system")); err != nil {
			return nil, err
		}
		for turn := 1; turn <= benchTurns; turn++ {
			if _, err := main.PutText(fmt.Sprintf("Question %d?", turn)); err != nil {
				return nil, err
			}
			work, err := main.Fork(0, 0, dialog.WithAlias("main#1"))
			if err != nil {
				return nil, err
			}
			if turn%benchRetryEv == 0 {
				if _, err := call(work, "no tags", turn); err != nil {
					return nil, err
				}
				if work, err = work.Fork(0, 0, dialog.WithAlias("main#2")); err != nil {
					return nil, err
				}
				if _, err := work.PutText("Error: missing <answer>. Please fix."); err != nil {
					return nil, err
				}
			}
			reply, err := call(work, fmt.Sprintf("<answer>%d</answer>", turn), turn)
			if err != nil {
				return nil, err
			}
			if _, err := main.Append(*reply); err != nil {
				return nil, err
			}
		}
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
})

func benchTree(b *testing.B) (*inspect.Tree, []byte) {
	data, err := benchLog()
	if err != nil {
		b.Fatal(err)
	}
	tree, err := inspect.Read(context.Background(), logs.NewReader(bytes.NewReader(data), "bench"), "bench", inspect.Options{})
	if err != nil {
		b.Fatal(err)
	}
	failed := 0
	for _, n := range tree.Nodes {
		if n.Failed {
			failed++
		}
	}
	if len(tree.Nodes) != 100_000 || failed != benchAgents*benchTurns/benchRetryEv {
		b.Fatalf("%d dialogs, %d failed", len(tree.Nodes), failed)
	}
	return tree, data
}

// BenchmarkTree100k reads the 100,000-dialog run and renders its tree in
// every format, beside logs.Rebuild of the same log and treeprint drawing
// the same lines.
func BenchmarkTree100k(b *testing.B) {
	tree, data := benchTree(b)
	b.Logf("log: %.1f MB, %d dialogs", float64(len(data))/1e6, len(tree.Nodes))

	b.Run("read/inspect.Read", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := inspect.Read(context.Background(), logs.NewReader(bytes.NewReader(data), "bench"), "bench", inspect.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read/inspect.Read+messages", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := inspect.Read(context.Background(), logs.NewReader(bytes.NewReader(data), "bench"), "bench", inspect.Options{Messages: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read/logs.Rebuild", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := logs.Rebuild(context.Background(), logs.NewReader(bytes.NewReader(data), "bench")); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, f := range inspect.Formats {
		b.Run("render/"+string(f), func(b *testing.B) {
			var cw countWriter
			for b.Loop() {
				cw = 0
				if err := inspect.Render(&cw, tree, f, inspect.All); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cw)/1e6, "MB_out")
		})
	}
	b.Run("render/treeprint", func(b *testing.B) {
		var cw countWriter
		for b.Loop() {
			cw = 0
			if _, err := cw.Write(treeprintTree(tree).Bytes()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cw)/1e6, "MB_out")
	})
}

// treeprintTree draws the text format's lines with treeprint.
func treeprintTree(t *inspect.Tree) treeprint.Tree {
	root := treeprint.NewWithRoot("run " + t.RunID)
	var add func(parent treeprint.Tree, n *inspect.Node)
	add = func(parent treeprint.Tree, n *inspect.Node) {
		line := string(inspect.AppendLine(nil, n))
		if len(n.Children) == 0 {
			parent.AddNode(line)
			return
		}
		br := parent.AddBranch(line)
		for _, c := range n.Children {
			add(br, c)
		}
	}
	for _, r := range t.Roots {
		add(root, r)
	}
	return root
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// The text format and treeprint show the same dialogs.
func TestTreeprintSameLines(t *testing.T) {
	tree := load(t, agentRun(t, "You add.", standard...), inspect.Options{})
	var text bytes.Buffer
	if err := inspect.Render(&text, tree, inspect.FormatText, inspect.All); err != nil {
		t.Fatal(err)
	}
	tp := treeprintTree(tree).String()
	for _, l := range strings.Split(strings.TrimSpace(text.String()), "\n") {
		if !strings.Contains(tp, strings.TrimSpace(l)) {
			t.Errorf("treeprint lacks %q", l)
		}
	}
}
