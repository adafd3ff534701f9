package contextmgr

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lllm-go/lllm/dialog"
)

// text returns n characters of a recognisable sequence starting with tag.
func text(tag string, n int) string {
	s := tag + strings.Repeat("0123456789", n/10+1)
	return s[:n]
}

// msg returns a message that costs tokens with NewCharTokenizer(1).
func msg(role dialog.Role, tag string, tokens int) *dialog.Message {
	return &dialog.Message{Role: role, Content: text(tag, tokens-MessageOverhead)}
}

func mustNew(t *testing.T, cfg map[string]any) Manager {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%v): %v", cfg, err)
	}
	return m
}

func fit(t *testing.T, m Manager, in Input) Result {
	t.Helper()
	before := make([]*dialog.Message, len(in.Messages))
	for i, x := range in.Messages {
		before[i] = x.Clone()
	}
	res, err := m.Fit(context.Background(), in)
	if err != nil {
		t.Fatalf("Fit: %v", err)
	}
	for i, x := range in.Messages {
		if !reflect.DeepEqual(x, before[i]) {
			t.Fatalf("Fit modified input message %d", i)
		}
	}
	return res
}

// same reports whether got holds exactly the messages want, by pointer.
func same(got, want []*dialog.Message) bool {
	return slices.Equal(got, want)
}

func names(msgs []*dialog.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "[%s %.8q]", m.Role, m.Text())
	}
	return b.String()
}

// dialog5 is a system message of 100 tokens and four messages of 200, 200,
// 300 and 100 tokens: 900 in all (NewCharTokenizer(1)).
func dialog5() []*dialog.Message {
	return []*dialog.Message{
		msg(dialog.RoleSystem, "S", 100),
		msg(dialog.RoleUser, "A", 200),
		msg(dialog.RoleAssistant, "B", 200),
		msg(dialog.RoleUser, "C", 300),
		msg(dialog.RoleAssistant, "D", 100),
	}
}

func TestDefaultFits(t *testing.T) {
	msgs := dialog5()
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 900, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if res.Action != "none" || !same(res.Messages, msgs) || res.TokensBefore != 900 || res.TokensAfter != 900 {
		t.Errorf("got %s %s %d->%d, want everything unchanged at 900 tokens", res.Action, names(res.Messages), res.TokensBefore, res.TokensAfter)
	}
}

func TestDefaultTruncates(t *testing.T) {
	for _, cfg := range []map[string]any{
		{"type": "default", "max_tokens": 600, "buffer": 0},
		{"max_tokens": 1200}, // the default buffer 5000 would leave less than half: half
		{"max_tokens": 1200, "buffer": 5000},
		{"max_tokens": 1200.0, "buffer": 5000.0},
	} {
		msgs := dialog5()
		res := fit(t, mustNew(t, cfg), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
		// Limit 600: D (100) and C (300) fit with S (100); 100 remain for B,
		// which is cut to 100 - 4 overhead - 34 marker = 62 characters.
		if res.Action != "truncate" || len(res.Messages) != 4 {
			t.Fatalf("%v: got %s %s, want truncate to 4 messages", cfg, res.Action, names(res.Messages))
		}
		if res.Messages[0] != msgs[0] || res.Messages[2] != msgs[3] || res.Messages[3] != msgs[4] {
			t.Errorf("%v: kept %s, want S, cut B, C, D", cfg, names(res.Messages))
		}
		cut := res.Messages[1]
		orig := msgs[2].Content
		if want := TruncationMarker + orig[len(orig)-62:]; cut.Content != want {
			t.Errorf("%v: cut text = %q, want %q", cfg, cut.Content, want)
		}
		if cut == msgs[2] || cut.Role != dialog.RoleAssistant || msgs[2].Content != orig {
			t.Errorf("%v: the cut message must be a new assistant message, the input unchanged", cfg)
		}
		if res.TokensBefore != 900 || res.TokensAfter != 600 {
			t.Errorf("%v: tokens %d->%d, want 900->600", cfg, res.TokensBefore, res.TokensAfter)
		}
		if !strings.Contains(res.Note, "limit 600 tokens") {
			t.Errorf("%v: note %q does not give the limit", cfg, res.Note)
		}
	}
}

func TestDefaultFiftyTokenRule(t *testing.T) {
	// After S, C and D (500 tokens), exactly 50 remain at limit 550: not more
	// than 50, so B is dropped, not cut.
	msgs := dialog5()
	tok := NewCharTokenizer(1)
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 550, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok})
	if want := []*dialog.Message{msgs[0], msgs[3], msgs[4]}; !same(res.Messages, want) || res.TokensAfter != 500 {
		t.Errorf("limit 550: got %s (%d tokens), want S, C, D (500)", names(res.Messages), res.TokensAfter)
	}
	// At 551, 51 remain: B is cut to 51 - 38 = 13 characters.
	res = fit(t, mustNew(t, map[string]any{"max_tokens": 551, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok})
	if len(res.Messages) != 4 || res.TokensAfter != 551 {
		t.Fatalf("limit 551: got %s (%d tokens), want S, cut B, C, D (551)", names(res.Messages), res.TokensAfter)
	}
	if want := TruncationMarker + msgs[2].Content[196-13:]; res.Messages[1].Content != want {
		t.Errorf("limit 551: cut text %q, want %q", res.Messages[1].Content, want)
	}
}

func TestDefaultFirstMessageOverLimit(t *testing.T) {
	msgs := dialog5()
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 80, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if want := []*dialog.Message{msgs[0], msgs[len(msgs)-1]}; !same(res.Messages, want) || !strings.Contains(res.Note, "first message alone") {
		t.Errorf("got %s, note %q; want the first and the newest message, and a warning", names(res.Messages), res.Note)
	}
}

// toolDialog: S 100, U 100, a tool call (19 tokens) answered by a 200-token
// result, then A 100: 519 tokens.
func toolDialog() []*dialog.Message {
	return []*dialog.Message{
		msg(dialog.RoleSystem, "S", 100),
		msg(dialog.RoleUser, "U", 100),
		{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{{ID: "c1", Name: "search", Arguments: []byte(`{"q":"x"}`)}}},
		{Role: dialog.RoleTool, ToolCallID: "c1", Content: text("R", 196)},
		msg(dialog.RoleAssistant, "A", 100),
	}
}

func TestDefaultKeepsToolUnitsWhole(t *testing.T) {
	msgs := toolDialog()
	tok := NewCharTokenizer(1)
	if n := tok.CountMessage("gpt-4o", msgs[2]); n != 19 {
		t.Fatalf("tool call costs %d, want 19", n)
	}
	// Limit 410: S + A = 200; the result alone (200) would fit, but not
	// with its call (219), so the pair is dropped whole, and nothing older
	// is kept past the gap.
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 410, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok})
	if want := []*dialog.Message{msgs[0], msgs[4]}; !same(res.Messages, want) {
		t.Errorf("limit 410: got %s, want S, A", names(res.Messages))
	}
	// Limit 420: the pair fits (419); U is the first that does not fit and
	// only 1 token remains, so it is dropped.
	res = fit(t, mustNew(t, map[string]any{"max_tokens": 420, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok})
	if want := []*dialog.Message{msgs[0], msgs[2], msgs[3], msgs[4]}; !same(res.Messages, want) {
		t.Errorf("limit 420: got %s, want S, call, result, A", names(res.Messages))
	}
	// With the pair newest: at limit 330 it fits (319) and U is dropped
	// (11 tokens remain); at 300 the pair does not fit and is not cut,
	// though 200 tokens remain after S: as the newest unit it is sent
	// whole, over the limit, for without it the model would get S alone.
	pairLast := msgs[:4]
	res = fit(t, mustNew(t, map[string]any{"max_tokens": 330, "buffer": 0}), Input{Model: "gpt-4o", Messages: pairLast, Tokens: tok})
	if want := []*dialog.Message{msgs[0], msgs[2], msgs[3]}; !same(res.Messages, want) {
		t.Errorf("pair last, limit 330: got %s, want S, call, result", names(res.Messages))
	}
	res = fit(t, mustNew(t, map[string]any{"max_tokens": 300, "buffer": 0}), Input{Model: "gpt-4o", Messages: pairLast, Tokens: tok})
	if want := []*dialog.Message{msgs[0], msgs[2], msgs[3]}; !same(res.Messages, want) || !strings.Contains(res.Note, "kept whole over the limit") {
		t.Errorf("pair last, limit 300: got %s (%s), want S, call, result whole (the pair is not cut, and it is the newest)", names(res.Messages), res.Note)
	}
}

func TestUnits(t *testing.T) {
	call := func(ids ...string) *dialog.Message {
		m := &dialog.Message{Role: dialog.RoleAssistant}
		for _, id := range ids {
			m.FunctionCalls = append(m.FunctionCalls, dialog.FunctionCall{ID: id, Name: "f"})
		}
		return m
	}
	result := func(id string) *dialog.Message { return &dialog.Message{Role: dialog.RoleTool, ToolCallID: id} }
	user := &dialog.Message{Role: dialog.RoleUser}
	msgs := []*dialog.Message{user, call("a", "b"), result("b"), result("a"), result("x"), user, call("c"), user, result("c")}
	// An orphan result stands alone; a result after a user message still
	// belongs to its call.
	want := []span{{1, 4}, {4, 5}, {5, 6}, {6, 9}}
	if got := units(msgs, 1); !slices.Equal(got, want) {
		t.Errorf("units = %v, want %v", got, want)
	}
}

func TestDefaultTruncatesWithTiktoken(t *testing.T) {
	long := strings.Repeat("Grüße aus Köln, 日本語のテキスト, and plain English words. ", 400)
	msgs := []*dialog.Message{
		{Role: dialog.RoleSystem, Content: "You are a helpful assistant."},
		{Role: dialog.RoleUser, Content: long},
		{Role: dialog.RoleAssistant, Content: "A short answer."},
	}
	tok := NewTokenizer()
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 1000, "buffer": 200}), Input{Model: "openai/gpt-4o", Messages: msgs, Tokens: tok})
	if res.Action != "truncate" || len(res.Messages) != 3 {
		t.Fatalf("got %s %s, want a truncated user message", res.Action, names(res.Messages))
	}
	cut := res.Messages[1]
	if !strings.HasPrefix(cut.Content, TruncationMarker) || !strings.HasSuffix(long, strings.TrimPrefix(cut.Content, TruncationMarker)) {
		t.Errorf("cut text is not the marker and a suffix of the original")
	}
	if !utf8.ValidString(cut.Content) {
		t.Errorf("cut text is not valid UTF-8")
	}
	after := 0
	for _, m := range res.Messages {
		after += NewTokenizer().CountMessage("gpt-4o", m)
	}
	if after != res.TokensAfter || after > 800 || after < 800-10 {
		t.Errorf("TokensAfter = %d, recounted %d; want within a few tokens under the limit 800", res.TokensAfter, after)
	}
}

func TestDefaultTruncatesImageMessage(t *testing.T) {
	msgs := []*dialog.Message{
		msg(dialog.RoleSystem, "S", 100),
		{Role: dialog.RoleUser, Modality: dialog.ModalityImage, Parts: []dialog.Part{
			{Type: dialog.PartText, Text: text("caption", 100)},
			{Type: dialog.PartImage, Image: &dialog.Image{URL: "https://example.com/x.png"}}, // 765
		}},
		msg(dialog.RoleAssistant, "A", 100),
	}
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 400, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if len(res.Messages) != 3 || res.Messages[1].Parts != nil || res.Messages[1].Content != TruncationMarker+msgs[1].Text() {
		t.Errorf("got %s, want the caption kept whole after the marker and the image dropped", names(res.Messages))
	}
	if len(msgs[1].Parts) != 2 {
		t.Errorf("input message lost its parts")
	}
}

func TestContextWindow(t *testing.T) {
	tests := []struct {
		model string
		want  int
		known bool
	}{
		{"openai/gpt-4o", 128000, true},
		{"gpt-4o-mini", 128000, true},
		{"gpt-4.1", 1047576, true},
		{"gpt-4.1-mini", 1047576, true},
		{"gpt-5-mini", 272000, true},
		{"openai/gpt-5.1", 272000, true},
		{"gpt-5-chat-latest", 128000, true},
		{"o1", 200000, true},
		{"o1-mini", 128000, true},
		{"o3-mini", 200000, true},
		{"o4-mini", 200000, true},
		{"gpt-4", 8192, true},
		{"gpt-4-turbo", 128000, true},
		{"gpt-3.5-turbo", 16385, true},
		{"anthropic/claude-3-5-haiku", 200000, true},
		{"gemini-1.5-flash", 1048576, true},
		{"google/gemini-2.5-pro", 1048576, true},
		{"ollama/llama3.1:8b", 131072, true},
		{"meta-llama/Llama-3.1-70B-Instruct", 131072, true},
		{"mistral-small", 32768, true},
		{"acme/unknown-model", DefaultContextWindow, false},
		{"", DefaultContextWindow, false},
	}
	for _, tt := range tests {
		got, known := ContextWindow(tt.model)
		if got != tt.want || known != tt.known {
			t.Errorf("ContextWindow(%q) = %d, %v; want %d, %v", tt.model, got, known, tt.want, tt.known)
		}
	}
	if DefaultContextWindow != 128000 {
		t.Errorf("DefaultContextWindow = %d, want 128000", DefaultContextWindow)
	}
}

func TestDefaultUnknownModelUses128k(t *testing.T) {
	// 100,000 tokens fit in 128000 - 5000; with the reference's 4096
	// fallback they would be cut.
	msgs := []*dialog.Message{msg(dialog.RoleSystem, "S", 100), msg(dialog.RoleUser, "U", 100000)}
	res := fit(t, mustNew(t, map[string]any{"type": "default"}), Input{Model: "acme/unknown-model", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if res.Action != "none" || !same(res.Messages, msgs) {
		t.Errorf("got %s, want unchanged", res.Action)
	}
	// Over 123000 they are cut, and the note says why.
	msgs = append(msgs, msg(dialog.RoleUser, "V", 23000))
	res = fit(t, mustNew(t, map[string]any{}), Input{Model: "acme/unknown-model", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if res.Action != "truncate" || res.TokensAfter != 123000 || !strings.Contains(res.Note, "not a known model") {
		t.Errorf("got %s to %d tokens, note %q; want truncate to 123000 with a note", res.Action, res.TokensAfter, res.Note)
	}
}

func TestMaxTokensWins(t *testing.T) {
	msgs := dialog5()
	// gpt-4.1's window is a million tokens, but max_tokens is 600.
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 600, "buffer": 0}), Input{Model: "gpt-4.1", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if res.TokensAfter != 600 || res.Action != "truncate" {
		t.Errorf("got %s to %d tokens, want truncate to 600", res.Action, res.TokensAfter)
	}
	// And gpt-4's 8192 window is ignored when max_tokens is larger.
	res = fit(t, mustNew(t, map[string]any{"max_tokens": 100000}), Input{Model: "gpt-4", Messages: []*dialog.Message{msg(dialog.RoleUser, "U", 20000)}, Tokens: NewCharTokenizer(1)})
	if res.Action != "none" {
		t.Errorf("max_tokens 100000 on gpt-4: got %s, want none", res.Action)
	}
}

func TestNullPassesThrough(t *testing.T) {
	msgs := dialog5()
	for _, cfg := range []map[string]any{nil, {"type": "null"}, {"type": "none"}, {"type": nil}, {"type": " None "}} {
		m := mustNew(t, cfg)
		res := fit(t, m, Input{Model: "gpt-4o", Messages: msgs})
		if res.Action != "none" || !same(res.Messages, msgs) {
			t.Errorf("%v: got %s %s, want the messages unchanged", cfg, res.Action, names(res.Messages))
		}
	}
	// The empty config is the default manager, not the null one.
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 100, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if res.Action == "none" {
		t.Errorf("a config without a type must be the default manager")
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New(map[string]any{"type": "defualt"})
	if !errors.Is(err, ErrUnknownType) {
		t.Fatalf("unknown type: err = %v, want ErrUnknownType", err)
	}
	for _, want := range []string{`"defualt"`, `did you mean "default"?`, "registered context manager types: default, none, summary, window"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("unknown type error %q lacks %q", err, want)
		}
	}
	if _, err := New(map[string]any{"type": "windwo"}); err == nil || !strings.Contains(err.Error(), `did you mean "window"?`) {
		t.Errorf("windwo: err = %v, want a suggestion of window", err)
	}
	if _, err := New(map[string]any{"type": "quantum-compressor"}); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("far-off type: err = %v, want an error without a suggestion", err)
	}

	tests := []struct {
		cfg  map[string]any
		want []string
	}{
		{map[string]any{"type": "default", "max_token": 5}, []string{`unknown key "max_token" (did you mean "max_tokens"?)`}},
		{map[string]any{"n": 5}, []string{`unknown key "n"`}},
		{map[string]any{"type": "window", "max_tokens": 5}, []string{`unknown key "max_tokens" (accepted: type, n)`}},
		{map[string]any{"type": "none", "n": 5}, []string{`unknown key "n" (accepted: type)`}},
		{map[string]any{"type": "summary", "bufer": 5}, []string{`unknown key "bufer"`}},
		{map[string]any{"max_tokens": "lots"}, []string{`max_tokens must be an integer, not "lots"`}},
		{map[string]any{"max_tokens": 1.5}, []string{"max_tokens must be an integer"}},
		{map[string]any{"buffer": -1}, []string{"buffer must be at least 0"}},
		{map[string]any{"type": "window", "n": 0}, []string{"n must be at least 1"}},
		{map[string]any{"type": 7}, []string{"type must be a string"}},
	}
	for _, tt := range tests {
		_, err := New(tt.cfg)
		if err == nil {
			t.Errorf("New(%v): no error", tt.cfg)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New(%v) = %q, want it to contain %q", tt.cfg, err, w)
			}
		}
	}
}

func TestRegister(t *testing.T) {
	Register("test-custom", func(cfg map[string]any) (Manager, error) { return nullManager{}, nil })
	t.Cleanup(func() { factories.Delete("test-custom") }) // so that the tests can run again
	if !slices.Contains(Names(), "test-custom") || !slices.IsSorted(Names()) {
		t.Errorf("Names() = %v, want sorted and containing test-custom", Names())
	}
	if _, err := New(map[string]any{"type": "test-custom", "anything": 1}); err != nil {
		t.Errorf("custom manager: %v", err)
	}
	// A name with capitals is found as registered; the built-ins in any case.
	Register("test:PinnedWindow", func(cfg map[string]any) (Manager, error) { return windowManager{n: 1}, nil })
	t.Cleanup(func() { factories.Delete("test:PinnedWindow") })
	for typ, want := range map[string]any{"test:PinnedWindow": windowManager{n: 1}, " Window ": nil, "NULL": nullManager{}} {
		m, err := New(map[string]any{"type": typ})
		if err != nil || want != nil && m != want {
			t.Errorf("New(type %q) = %v, %v", typ, m, err)
		}
	}
	if _, err := New(map[string]any{"type": "test:pinnedwindow"}); !errors.Is(err, ErrUnknownType) {
		t.Errorf("a name registered with capitals was found in lower case: %v", err)
	}
	for _, name := range []string{"test-custom", "default", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			Register(name, newNull)
		}()
	}
}

func TestWindow(t *testing.T) {
	msgs := []*dialog.Message{msg(dialog.RoleSystem, "S", 10)}
	for i := range 30 {
		msgs = append(msgs, msg(dialog.RoleUser, fmt.Sprint(i), 10))
	}
	res := fit(t, mustNew(t, map[string]any{"type": "window", "n": 5}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	want := append([]*dialog.Message{msgs[0]}, msgs[26:]...)
	if res.Action != "window" || !same(res.Messages, want) || res.TokensBefore != 310 || res.TokensAfter != 60 {
		t.Errorf("n=5: got %s %s %d->%d, want S and the last 5, 310->60", res.Action, names(res.Messages), res.TokensBefore, res.TokensAfter)
	}
	// Default n is 20.
	res = fit(t, mustNew(t, map[string]any{"type": "window"}), Input{Model: "gpt-4o", Messages: msgs})
	if len(res.Messages) != 21 || res.Messages[1] != msgs[11] {
		t.Errorf("default n: got %d messages, want 21 starting S, msg 11", len(res.Messages))
	}
	// Short dialogs are unchanged.
	res = fit(t, mustNew(t, map[string]any{"type": "window", "n": 30}), Input{Model: "gpt-4o", Messages: msgs})
	if res.Action != "none" || !same(res.Messages, msgs) {
		t.Errorf("n=30 of 30: got %s, want none", res.Action)
	}
}

func TestWindowKeepsToolUnits(t *testing.T) {
	msgs := toolDialog() // S, U, call, result, A
	// The last 2 would start at the result; the window reaches back to the call.
	res := fit(t, mustNew(t, map[string]any{"type": "window", "n": 2}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if want := []*dialog.Message{msgs[0], msgs[2], msgs[3], msgs[4]}; !same(res.Messages, want) {
		t.Errorf("n=2: got %s, want S, call, result, A", names(res.Messages))
	}
	if !strings.Contains(res.Note, "1 more to keep a tool call") {
		t.Errorf("note %q does not say the window was extended", res.Note)
	}
	res = fit(t, mustNew(t, map[string]any{"type": "window", "n": 1}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if want := []*dialog.Message{msgs[0], msgs[4]}; !same(res.Messages, want) {
		t.Errorf("n=1: got %s, want S, A", names(res.Messages))
	}
}

func TestSummary(t *testing.T) {
	msgs := []*dialog.Message{msg(dialog.RoleSystem, "S", 100)}
	for i := range 6 {
		msgs = append(msgs, msg(dialog.RoleUser, fmt.Sprint(i), 100))
	}
	var got []*dialog.Message
	summarize := func(ctx context.Context, old []*dialog.Message) (*dialog.Message, error) {
		got = old
		return &dialog.Message{Role: dialog.RoleUser, Content: fmt.Sprintf("summary of %d messages", len(old))}, nil
	}
	m := mustNew(t, map[string]any{"type": "summary", "max_tokens": 500, "buffer": 0})
	// 700 tokens, limit 500: the tail that fits in 250 is the last 2
	// messages; the 4 before them are summarised.
	res := fit(t, m, Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1), Summarize: summarize})
	if !same(got, msgs[1:5]) {
		t.Errorf("summarised %s, want messages 1-4", names(got))
	}
	if res.Action != "summary" || len(res.Messages) != 4 || res.Messages[0] != msgs[0] ||
		res.Messages[1].Content != "summary of 4 messages" || !same(res.Messages[2:], msgs[5:]) {
		t.Errorf("got %s %s, want S, the summary, the last 2", res.Action, names(res.Messages))
	}
	if !strings.Contains(res.Note, "summarised 4 messages") || res.TokensBefore != 700 || res.TokensAfter != 100+4+21+200 {
		t.Errorf("note %q, tokens %d->%d; want 4 summarised, 700->325", res.Note, res.TokensBefore, res.TokensAfter)
	}

	if res.Archived != 4 || res.Summary != res.Messages[1] {
		t.Errorf("archived %d, summary %v: want 4 and the message sent", res.Archived, res.Summary)
	}
	sum := res.Messages[1]

	// The next call on the grown dialog sends the same summary again,
	// without summarising, while it fits.
	got = nil
	grown := append(slices.Clip(msgs), msg(dialog.RoleUser, "6", 50))
	res = fit(t, m, Input{Model: "gpt-4o", Messages: grown, Tokens: NewCharTokenizer(1), Summarize: summarize})
	if got != nil || res.Messages[1] != sum || !same(res.Messages[2:], grown[5:]) || res.Archived != 4 ||
		!strings.HasPrefix(res.Note, "kept the summary of the first 4 messages") {
		t.Errorf("grown dialog: summarised %s, sent %s, note %q; want the kept summary and no call", names(got), names(res.Messages), res.Note)
	}
	// Once it no longer fits, a new one starts from it: the kept summary
	// and the messages after it are summarised, not the whole dialog.
	grown = append(grown, msg(dialog.RoleAssistant, "7", 200))
	res = fit(t, m, Input{Model: "gpt-4o", Messages: grown, Tokens: NewCharTokenizer(1), Summarize: summarize})
	if len(got) == 0 || got[0] != sum || !same(got[1:], grown[5:7]) || res.Messages[1] == sum || res.Archived != 6 {
		t.Errorf("over again: summarised %s, archived %d; want the kept summary and messages 5-6", names(got), res.Archived)
	}
	// Another dialog never gets this one's summary.
	got = nil
	other := append([]*dialog.Message{msgs[0]}, dialog5()[1:]...)
	fit(t, m, Input{Model: "gpt-4o", Messages: append(other, msg(dialog.RoleUser, "x", 300)), Tokens: NewCharTokenizer(1), Summarize: summarize})
	if len(got) == 0 || got[0] == sum {
		t.Errorf("another dialog: summarised %s, want its own messages", names(got))
	}

	// Under the limit nothing is summarised.
	got = nil
	res = fit(t, m, Input{Model: "gpt-4o", Messages: msgs[:5], Tokens: NewCharTokenizer(1), Summarize: summarize})
	if res.Action != "none" || got != nil {
		t.Errorf("under the limit: got %s, summarizer called: %v", res.Action, got != nil)
	}

	// Without a summarizer it is an error.
	if _, err := m.Fit(context.Background(), Input{Model: "gpt-4o", Messages: msgs}); !errors.Is(err, ErrNoSummarizer) {
		t.Errorf("nil Summarize: err = %v, want ErrNoSummarizer", err)
	}
	// A failing summarizer's error is wrapped.
	boom := errors.New("boom")
	m = mustNew(t, map[string]any{"type": "summary", "max_tokens": 500, "buffer": 0})
	_, err := m.Fit(context.Background(), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1),
		Summarize: func(context.Context, []*dialog.Message) (*dialog.Message, error) { return nil, boom }})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "summarising 4 messages") {
		t.Errorf("failing summarizer: err = %v, want it wrapped", err)
	}
}

func TestFitRejectsNilMessage(t *testing.T) {
	for _, name := range []string{"default", "window", "summary"} {
		m := mustNew(t, map[string]any{"type": name})
		_, err := m.Fit(context.Background(), Input{Model: "gpt-4o", Messages: []*dialog.Message{msg(dialog.RoleSystem, "S", 10), nil},
			Summarize: func(context.Context, []*dialog.Message) (*dialog.Message, error) { return nil, nil }})
		if err == nil || !strings.Contains(err.Error(), "message 1 is nil") {
			t.Errorf("%s: err = %v, want message 1 is nil", name, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := mustNew(t, map[string]any{}).Fit(ctx, Input{Model: "gpt-4o"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
}

// TestLoopTokenizesEachMessageOnce runs a 100-turn loop through the default
// manager with one Tokenizer: the work is the dialog's own token count.
func TestLoopTokenizesEachMessageOnce(t *testing.T) {
	tok := NewTokenizer()
	work, own := runLoop(t, tok, 100, nil)
	if work != own {
		t.Errorf("tokenized %d tokens over the loop, want %d (each message once)", work, own)
	}
	if s := tok.Stats(); s.Texts != 201 {
		t.Errorf("tokenized %d texts, want 201 (each message once)", s.Texts)
	}
	recount := NewTokenizer()
	recount.noMemo = true
	if work, own := runLoop(t, recount, 10, nil); work < 5*own {
		t.Errorf("the recounting baseline did %d tokens of work for a dialog of %d; is noMemo honoured?", work, own)
	}
}

// Every error of New is a *ConfigError: the type it is about, if known,
// and the problem, for a caller that says "context manager" itself.
func TestNewConfigError(t *testing.T) {
	Register("test:refuses", func(cfg map[string]any) (Manager, error) { return nil, errors.New("bad setting") })
	t.Cleanup(func() { factories.Delete("test:refuses") })
	for _, tt := range []struct {
		cfg        map[string]any
		typ, error string
	}{
		{map[string]any{"type": "test:refuses"}, "test:refuses", "contextmgr: test:refuses: bad setting"},
		{map[string]any{"type": "window", "n": 0}, "window", "contextmgr: window: key n must be at least 1, not 0"},
		{map[string]any{"type": 7}, "", "contextmgr: type must be a string, got int 7"},
		{map[string]any{"type": "windwo"}, "", `contextmgr: unknown context manager type "windwo"`},
	} {
		_, err := New(tt.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Type != tt.typ || !strings.HasPrefix(err.Error(), tt.error) {
			t.Errorf("New(%v) = %v, want a *ConfigError of type %q reading %q", tt.cfg, err, tt.typ, tt.error)
		}
	}
}

// Every error of a built-in manager's Fit is a *FitError naming the
// manager once, under the package's prefix, whatever the problem.
func TestFitErrorNamesManagerOnce(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	boom := errors.New("boom")
	fails := func(context.Context, []*dialog.Message) (*dialog.Message, error) { return nil, boom }
	long := []*dialog.Message{msg(dialog.RoleSystem, "S", 100)}
	for i := range 6 {
		long = append(long, msg(dialog.RoleUser, fmt.Sprint(i), 100))
	}
	nilMsg := []*dialog.Message{msg(dialog.RoleSystem, "S", 10), nil}
	for _, tt := range []struct {
		typ   string
		ctx   context.Context
		in    Input
		is    error
		error string
	}{
		{"default", canceled, Input{}, context.Canceled, "contextmgr: default: context canceled"},
		{"window", context.Background(), Input{Messages: nilMsg}, nil, "contextmgr: window: message 1 is nil"},
		{"default", context.Background(), Input{Messages: nilMsg}, nil, "contextmgr: default: message 1 is nil"},
		{"summary", context.Background(), Input{Messages: long}, ErrNoSummarizer, "contextmgr: summary: no summarizer (Input.Summarize is nil)"},
		{"summary", context.Background(), Input{Messages: long, Summarize: fails}, boom, "contextmgr: summary: summarising 4 messages: boom"},
	} {
		cfg := map[string]any{"type": tt.typ}
		if tt.typ != "window" {
			cfg["max_tokens"], cfg["buffer"] = 500, 0
		}
		m := mustNew(t, cfg)
		tt.in.Model, tt.in.Tokens = "gpt-4o", NewCharTokenizer(1)
		_, err := m.Fit(tt.ctx, tt.in)
		var fe *FitError
		if !errors.As(err, &fe) || fe.Type != tt.typ || err.Error() != tt.error || (tt.is != nil && !errors.Is(err, tt.is)) {
			t.Errorf("%s: err = %v, want a *FitError reading %q", tt.typ, err, tt.error)
		}
	}
}
