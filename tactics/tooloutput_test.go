package tactics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/config"
)

func TestCutOutput(t *testing.T) {
	long := strings.Repeat("ab", 10) + "é" + strings.Repeat("z", 20) // é at bytes 20-21; 42 bytes
	for _, c := range []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"no cap", long, 0, long},
		{"short", "abc", 3, "abc"},
		{"at a rune start", long, 20, long[:20] + "\n[output cut to the first 20 of 42 bytes]"},
		{"inside a rune", long, 21, long[:20] + "\n[output cut to the first 20 of 42 bytes]"},
		{"after a rune", long, 22, long[:22] + "\n[output cut to the first 22 of 42 bytes]"},
		{"already cut", "x\n[output cut to the first 1 of 99 bytes]", 5, "x\n[output cut to the first 1 of 99 bytes]"},
		{"a line like the cut's, but not its", "x\n[output cut to the first 3 of 99 bytes]", 5, "x\n[ou\n[output cut to the first 5 of 41 bytes]"},
	} {
		got := cutOutput(c.in, c.max)
		if got != c.want {
			t.Errorf("%s: cutOutput(%q, %d) = %q, want %q", c.name, c.in, c.max, got, c.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: %q is not UTF-8", c.name, got)
		}
		if again := cutOutput(got, c.max); again != got {
			t.Errorf("%s: cut again, %q became %q", c.name, got, again)
		}
	}
}

// A tool's result longer than MaxToolOutput is cut, once, before anything
// holds it: the model, the tool message, the tool_call record and the
// session all get the same cut text; an error is cut alike, and a repeat
// of the call quotes the cut result.
func TestMaxToolOutput(t *testing.T) {
	big, _ := dialog.NewFunction("big", "talks a lot", func(_ context.Context, in struct {
		Fail bool `json:"fail,omitempty"`
	}) (string, error) {
		text := strings.Repeat("é", 3000) // 6000 bytes
		if in.Fail {
			return "", errors.New(text)
		}
		return text, nil
	})
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(big))
	m := &script{replies: []any{toolCall("c1", "big", `{}`), toolCall("c2", "big", `{}`), toolCall("c3", "big", `{"fail": true}`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.Limits.MaxToolOutput = 1001
	a.ReceivePrompt(p, nil)
	_, s, err := a.Respond(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, recs := run.forest(t)
	calls := toolCallRecords(recs)
	if len(calls) != 3 || len(s.ToolCalls) != 3 {
		t.Fatalf("%d tool_call records, %d in the session", len(calls), len(s.ToolCalls))
	}
	for i, c := range calls {
		sent := m.reqs[i+1].Messages[len(m.reqs[i+1].Messages)-1]
		if sent.Content != c.Result || sent.FunctionCalls[0].Result != c.Result || s.ToolCalls[i].Result != c.Result || s.ToolCalls[i].Error != c.Error {
			t.Errorf("call %d: the model got %d bytes, the log has %d", i+1, len(sent.Content), len(c.Result))
		}
	}
	first := calls[0].Result
	const prefix = "Return of calling function big with arguments {}:\n"
	runes := (1001 - len(prefix)) / 2
	if want := prefix + strings.Repeat("é", runes) + cutLine(len(prefix)+2*runes, len(prefix)+6000); first != want {
		t.Errorf("first result %q, want %q", first, want)
	}
	if want := "You already called big with these arguments. The result was:\n" + first; calls[1].Result != want || !calls[1].Repeated {
		t.Errorf("the repeat %q, want %q", calls[1].Result, want)
	}
	errText := calls[2].Error
	if errText != strings.Repeat("é", 500)+"\n[output cut to the first 1000 of 6000 bytes]" ||
		calls[2].Result != "Error: "+strings.Repeat("é", 497)+"\n[output cut to the first 1001 of 6007 bytes]" {
		t.Errorf("the error %q, result %q", errText, calls[2].Result)
	}
}

// A result a replay serves from the log, already cut, is sent as the log
// holds it, not cut again.
func TestMaxToolOutputServed(t *testing.T) {
	recorded := strings.Repeat("x", 100) + cutLine(100, 5000)
	f, _ := dialog.NewFunction("big", "talks a lot", func(context.Context, struct{}) (string, error) { return "not run", nil })
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(f))
	m := &script{replies: []any{toolCall("c1", "big", `{}`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.Limits.MaxToolOutput = 100
	a.CallTool = func(_ context.Context, _ string, _ *dialog.Function, fc dialog.FunctionCall) dialog.FunctionCall {
		fc.Result = recorded
		return fc
	}
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, recs := run.forest(t)
	if calls := toolCallRecords(recs); len(calls) != 1 || calls[0].Result != recorded || m.reqs[1].Messages[len(m.reqs[1].Messages)-1].Content != recorded {
		t.Fatalf("tool_call records %+v", calls)
	}
}

// max_tool_output, set globally or per agent, is the agents'
// MaxToolOutput; unset, 1 MiB; 0, none, is -1 there; a negative one is an error at its place.
func TestMaxToolOutputConfig(t *testing.T) {
	la, lb := limitsOf(t, "max_tool_output: 2048", "max_tool_output: 0")
	if a, b := la.MaxToolOutput, lb.MaxToolOutput; a != 2048 || b != -1 {
		t.Errorf("MaxToolOutput a %d, b %d; want 2048 and -1 (none)", a, b)
	}
	if DefaultLimits().MaxToolOutput != 1048576 {
		t.Errorf("default %d", DefaultLimits().MaxToolOutput)
	}
	_, err := config.Parse("t.yaml", []byte("tactic_type: chat\nglobal: {model_name: mock/demo, max_tool_output: -1}\nagent_configs: [{name: a, system_prompt: x}]\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "global.max_tool_output must be a non-negative integer, not the integer -1") {
		t.Errorf("err %v", err)
	}
}
