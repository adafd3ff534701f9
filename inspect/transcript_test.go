package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// txModel answers from a list of messages, tool calls included.
type txModel struct {
	mu      sync.Mutex
	replies []dialog.Message
}

func (m *txModel) Generate(_ context.Context, req *provider.Request) (*provider.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.replies) == 0 {
		return nil, errors.New("txModel: no more replies")
	}
	r := m.replies[0]
	m.replies = m.replies[1:]
	if r.Role == "" {
		r.Role = dialog.RoleAssistant
	}
	r.Usage = dialog.Usage{InputTokens: 10, OutputTokens: 2}
	return &provider.Response{Message: r}, nil
}

func txText(s string) dialog.Message { return dialog.Message{Content: s} }

func txCall(id, name, args string) dialog.Message {
	return dialog.Message{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}}
}

// txRun runs play with an agent "solver" on replies, and reads its log
// back for transcripts.
func txRun(t *testing.T, replies []dialog.Message, play func(a *tactics.Agent)) *inspect.Log {
	t.Helper()
	var buf bytes.Buffer
	w, err := logs.NewWriter(&buf, logs.RunStart{RunID: "tx", Tactic: "test"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &tactics.Agent{Name: "solver", System: dialog.MustPrompt("sys", "You add numbers."), Model: &txModel{replies: replies},
		ModelName: "mock/test", Limits: tactics.DefaultLimits(), Log: w}
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	play(a)
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	r := logs.NewReader(bytes.NewReader(buf.Bytes()), "events.jsonl")
	l, err := inspect.ReadLog(context.Background(), r, "events.jsonl", inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func txAdd(t *testing.T) *dialog.Function {
	t.Helper()
	type args struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	f, err := dialog.NewFunction("add", "Adds two numbers.", func(_ context.Context, in args) (int, error) { return in.A + in.B, nil })
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func txRespond(t *testing.T, a *tactics.Agent) *dialog.Message {
	t.Helper()
	reply, _, err := a.Respond(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

// txNode is the dialog of l with alias; it must be one.
func txNode(t *testing.T, l *inspect.Log, alias string) *inspect.Node {
	t.Helper()
	var found *inspect.Node
	for _, n := range l.Nodes {
		if n.Alias == alias {
			if found != nil {
				t.Fatalf("two dialogs %s", alias)
			}
			found = n
		}
	}
	if found == nil {
		t.Fatalf("no dialog %s", alias)
	}
	return found
}

// txShape is each message as "role:text", tool calls as "role:→name" and
// tool results as "tool[id]:text".
func txShape(msgs []*dialog.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		s := string(m.Role) + ":" + m.Text()
		if m.ToolCallID != "" {
			s = string(m.Role) + "[" + m.ToolCallID + "]:" + m.Text()
		}
		for _, fc := range m.FunctionCalls {
			if m.Role != dialog.RoleTool {
				s += "→" + fc.Name
			}
		}
		out[i] = s
	}
	return out
}

func txWant(t *testing.T, what string, got []*dialog.Message, want ...string) {
	t.Helper()
	g := txShape(got)
	if len(g) != len(want) {
		t.Fatalf("%s: %d messages %q, want %q", what, len(g), g, want)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("%s: message %d is %q, want %q\nall: %q", what, i, g[i], want[i], g)
		}
	}
}

// A kept reply comes back with the tool round that led to it, in its
// dialog and in a fork of it, which inherits it; the tools' declarations
// come with them.
func TestTranscriptToolRounds(t *testing.T) {
	add := txAdd(t)
	ask := dialog.MustPrompt("ask", "What is {q}?", dialog.WithFunctions(add))
	var first *dialog.Message
	l := txRun(t, []dialog.Message{txCall("c1", "add", `{"a":2,"b":3}`), txText("5."), txText("Still 5.")}, func(a *tactics.Agent) {
		if err := a.ReceivePrompt(ask, map[string]any{"q": "2+3"}); err != nil {
			t.Fatal(err)
		}
		first = txRespond(t, a)
		if err := a.Fork("main", "branch", 0, 0, true); err != nil {
			t.Fatal(err)
		}
		if err := a.Receive("Sure?"); err != nil {
			t.Fatal(err)
		}
		txRespond(t, a)
	})
	main := l.Transcript(txNode(t, l, "main"))
	round := []string{"system:You add numbers.", "user:What is 2+3?", "tool_call:→add", "tool[c1]:" + main.Messages[3].Text(), "assistant:5."}
	txWant(t, "main", main.Messages, round...)
	if main.Messages[3].FunctionCalls[0].Result == "" || main.Messages[3].Text() == "" {
		t.Errorf("the tool message lost its result: %+v", main.Messages[3])
	}
	if main.Messages[4] != l.Forest.Dialog(main.Node.ID).At(2) {
		t.Errorf("the transcript's reply is not the dialog's own copy of it")
	}
	if main.Messages[4].Content != first.Content {
		t.Errorf("reply %q, want %q", main.Messages[4].Content, first.Content)
	}
	branch := l.Transcript(txNode(t, l, "branch"))
	txWant(t, "branch (a fork inheriting the turn)", branch.Messages, append(round, "user:Sure?", "assistant:Still 5.")...)

	for _, tr := range []*inspect.Transcript{main, branch} {
		if len(tr.Declarations) != 1 || len(tr.Declarations[0].Tools) != 1 || tr.Declarations[0].Tools[0].Name != "add" {
			t.Errorf("%s: declarations %+v, want the one declaring add", tr.Node.Alias, tr.Declarations)
		}
	}
	// The dialog itself is unchanged: it holds only the reply.
	if n := l.Forest.Dialog(main.Node.ID).Len(); n != 3 {
		t.Errorf("the dialog has %d messages, want 3", n)
	}
	// A working copy's transcript is its own messages.
	w := l.Transcript(txNode(t, l, "main#1"))
	txWant(t, "main#1", w.Messages, round...)
	if w.Messages[4] == main.Messages[4] {
		t.Errorf("main#1 ends with the dialog's copy of the reply, not its own")
	}
}

// A reply the parser refused, and the prompt asking to fix it, are left
// out; the tool round before them is kept, and the reply is the dialog's
// copy, with its parsed output.
func TestTranscriptLeavesOutRefusedReplies(t *testing.T) {
	ask := dialog.MustPrompt("ask", "What is {q}? Answer in <answer></answer>.",
		dialog.WithFunctions(txAdd(t)), dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
	l := txRun(t, []dialog.Message{txCall("c1", "add", `{"a":2,"b":2}`), txText("It is four."), txText("<answer>4</answer>")}, func(a *tactics.Agent) {
		if err := a.ReceivePrompt(ask, map[string]any{"q": "2+2"}); err != nil {
			t.Fatal(err)
		}
		txRespond(t, a)
	})
	main := l.Transcript(txNode(t, l, "main"))
	txWant(t, "main", main.Messages, "system:You add numbers.", "user:What is 2+2? Answer in <answer></answer>.",
		"tool_call:→add", "tool[c1]:"+main.Messages[3].Text(), "assistant:<answer>4</answer>")
	if got := string(main.Messages[4].Parsed); got == "" {
		t.Errorf("the reply lost its parsed output")
	}
	// The attempts, as recorded.
	first := l.Transcript(txNode(t, l, "main#1"))
	txWant(t, "main#1", first.Messages, "system:You add numbers.", "user:What is 2+2? Answer in <answer></answer>.",
		"tool_call:→add", "tool[c1]:"+first.Messages[3].Text(), "assistant:It is four.")
	second := l.Transcript(txNode(t, l, "main#2"))
	if len(second.Messages) != 7 || second.Messages[5].Role != dialog.RoleUser || second.Messages[6].Content != "<answer>4</answer>" {
		t.Errorf("main#2: %q", txShape(second.Messages))
	}
	if !txNode(t, l, "main#1").Failed || txNode(t, l, "main#2").Failed {
		t.Errorf("main#1 should be the failed attempt, main#2 the kept one")
	}
}

// Each turn of a dialog is put back where its reply is, and a dialog
// without tools has no declarations.
func TestTranscriptTurns(t *testing.T) {
	add := txAdd(t)
	ask := dialog.MustPrompt("ask", "What is {q}?", dialog.WithFunctions(add))
	l := txRun(t, []dialog.Message{
		txCall("c1", "add", `{"a":1,"b":1}`), txText("2."),
		txText("No tool needed: 3."),
		txCall("c2", "add", `{"a":2,"b":2}`), txCall("c3", "add", `{"a":4,"b":4}`), txText("8."),
	}, func(a *tactics.Agent) {
		for _, q := range []string{"1+1", "1+2", "(2+2)*2"} {
			if err := a.ReceivePrompt(ask, map[string]any{"q": q}); err != nil {
				t.Fatal(err)
			}
			txRespond(t, a)
		}
	})
	main := l.Transcript(txNode(t, l, "main"))
	got := txShape(main.Messages)
	want := []string{"system:You add numbers.",
		"user:What is 1+1?", "tool_call:→add", got[3], "assistant:2.",
		"user:What is 1+2?", "assistant:No tool needed: 3.",
		"user:What is (2+2)*2?", "tool_call:→add", got[9], "tool_call:→add", got[11], "assistant:8."}
	txWant(t, "main", main.Messages, want...)
	for i, id := range map[int]string{3: "c1", 9: "c2", 11: "c3"} {
		if main.Messages[i].ToolCallID != id {
			t.Errorf("message %d answers %q, want %q", i, main.Messages[i].ToolCallID, id)
		}
	}

	plain := txRun(t, []dialog.Message{txText("Hi.")}, func(a *tactics.Agent) {
		if err := a.Receive("Hello"); err != nil {
			t.Fatal(err)
		}
		txRespond(t, a)
	})
	tr := plain.Transcript(txNode(t, plain, "main"))
	txWant(t, "plain", tr.Messages, "system:You add numbers.", "user:Hello", "assistant:Hi.")
	if tr.Declarations != nil {
		t.Errorf("declarations %+v for calls that declared nothing", tr.Declarations)
	}
}

// LoadLog reads a run directory as Load does.
func TestLoadLog(t *testing.T) {
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "test"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := dialog.New("a", dialog.WithSink(w), dialog.WithAlias("main"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutText("hi"); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	l, warnings, err := inspect.LoadLog(context.Background(), run)
	if err != nil || len(warnings) > 0 {
		t.Fatal(err, warnings)
	}
	if l.RunID != run.ID || l.Status != logs.StatusOK || len(l.Nodes) != 1 || l.Forest == nil {
		t.Errorf("LoadLog: %+v", l.Tree)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := inspect.LoadLog(ctx, run); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled LoadLog: %v", err)
	}
}
