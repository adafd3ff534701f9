package contextmgr

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// tool returns a declaration that costs tokens with NewCharTokenizer(1):
// MessageOverhead, its name, its description and its schema.
func tool(name string, tokens int) *dialog.Function {
	params := json.RawMessage(`{"type":"object"}`)
	desc := text("d", tokens-MessageOverhead-len(name)-len(params))
	return &dialog.Function{Name: name, Description: desc, Parameters: params}
}

func TestCountTools(t *testing.T) {
	tok := NewCharTokenizer(1)
	fns := []*dialog.Function{tool("search", 120), nil, tool("read", 80)}
	if n := tok.CountTools("gpt-4o", fns); n != 200 {
		t.Fatalf("CountTools = %d, want 200 (120 + 80, nil counts 0)", n)
	}
	if n := tok.CountTools("gpt-4o", fns); n != 200 {
		t.Fatalf("CountTools again = %d, want 200", n)
	}
	if s := tok.Stats(); s.MemoHits != 2 || s.Calls != 4 {
		t.Errorf("stats %+v, want 4 tools counted, the second two from the memo", s)
	}
	if n := tok.CountTools("gpt-4o", nil); n != 0 {
		t.Errorf("no tools count %d, want 0", n)
	}
	// With tiktoken, a schema costs what its text costs.
	tt := NewTokenizer()
	f := &dialog.Function{Name: "get_weather", Description: "Get the weather for a city.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	want := MessageOverhead + tt.Count("gpt-4o", f.Name) + tt.Count("gpt-4o", f.Description) + tt.Count("gpt-4o", string(f.Parameters))
	if n := tt.CountTools("gpt-4o", []*dialog.Function{f}); n != want {
		t.Errorf("tiktoken CountTools = %d, want %d", n, want)
	}
}

func TestToolMemoDropsCollectedFunctions(t *testing.T) {
	tok := NewCharTokenizer(1)
	func() {
		for i := range 50 {
			tok.CountTools("gpt-4o", []*dialog.Function{tool("f", 30+i)})
		}
	}()
	if n := tok.memoLen(); n != 50 {
		t.Fatalf("memo has %d entries, want 50", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for tok.memoLen() > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := tok.memoLen(); n != 0 {
		t.Errorf("memo still has %d entries after their functions were collected", n)
	}
}

// The tools a request declares take room in the window: the default and
// summary managers keep fewer messages when they are declared.
func TestToolDeclarationsCountAgainstTheLimit(t *testing.T) {
	tools := []*dialog.Function{tool("search", 150), tool("read", 150)} // 300 tokens
	t.Run("default", func(t *testing.T) {
		msgs := dialog5() // 900 tokens
		m := mustNew(t, map[string]any{"max_tokens": 1000, "buffer": 0})
		if res := fit(t, m, Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)}); res.Action != "none" {
			t.Fatalf("without tools: %s %s, want everything kept", res.Action, names(res.Messages))
		}
		// Limit 1000 - 300 = 700: S (100), D (100) and C (300) whole, and
		// B cut to the 200 left.
		res := fit(t, m, Input{Model: "gpt-4o", Messages: msgs, Tools: tools, Tokens: NewCharTokenizer(1)})
		if res.Action != "truncate" || res.TokensAfter != 700 || len(res.Messages) != 4 || res.Messages[3] != msgs[4] {
			t.Fatalf("with tools: %s %s, %d tokens; want S, B cut, C, D in 700 tokens", res.Action, names(res.Messages), res.TokensAfter)
		}
		if res.TokensBefore != 900 {
			t.Errorf("TokensBefore = %d, want 900 (the messages alone)", res.TokensBefore)
		}
		if !strings.Contains(res.Note, "700 tokens (max_tokens 1000 - buffer 0 - tool declarations 300)") {
			t.Errorf("note %q does not say the tools took 300 tokens of the limit", res.Note)
		}
	})
	t.Run("summary", func(t *testing.T) {
		msgs := dialog5()
		m := mustNew(t, map[string]any{"type": "summary", "max_tokens": 1000, "buffer": 0})
		calls := 0
		summarize := func(context.Context, []*dialog.Message) (*dialog.Message, error) {
			calls++
			return &dialog.Message{Role: dialog.RoleUser, Content: "a summary"}, nil
		}
		in := Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1), Summarize: summarize}
		if res := fit(t, m, in); res.Action != "none" || calls != 0 {
			t.Fatalf("without tools: %s after %d calls, want nothing done", res.Action, calls)
		}
		in.Tools = tools
		res := fit(t, m, in)
		if res.Action != "summary" || calls == 0 || res.TokensAfter > 700 {
			t.Fatalf("with tools: %s after %d calls, %d tokens; want a summary within 700 tokens", res.Action, calls, res.TokensAfter)
		}
		if !strings.Contains(res.Note, "tool declarations 300") {
			t.Errorf("note %q does not name the tool declarations", res.Note)
		}
	})
}
