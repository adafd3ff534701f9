package contextmgr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lllm-go/lllm/dialog"
)

// The managers and the tokenizer at their edges: tool calls whose results
// come late or in parallel, budgets at and below the buffer, images,
// unicode cuts, summaries of long dialogs, a shared tokenizer, config
// errors. The helpers are edge-prefixed so that they never collide with
// the other tests'.

// edgeText returns n characters starting with tag.
func edgeText(tag string, n int) string {
	s := tag + strings.Repeat("abcdefghij", n/10+1)
	return s[:max(n, 0)]
}

// edgeMsg returns a message costing tokens with NewCharTokenizer(1).
func edgeMsg(role dialog.Role, tag string, tokens int) *dialog.Message {
	return &dialog.Message{Role: role, Content: edgeText(tag, tokens-MessageOverhead)}
}

// edgeCall returns a message requesting one call "f({})" per id: 4+3*len(ids) tokens.
func edgeCall(ids ...string) *dialog.Message {
	m := &dialog.Message{Role: dialog.RoleToolCall}
	for _, id := range ids {
		m.FunctionCalls = append(m.FunctionCalls, dialog.FunctionCall{ID: id, Name: "f", Arguments: []byte(`{}`)})
	}
	return m
}

// edgeResult returns the tool result for id, costing tokens.
func edgeResult(id string, tokens int) *dialog.Message {
	return &dialog.Message{Role: dialog.RoleTool, Name: "f", ToolCallID: id, Content: edgeText("R"+id, tokens-MessageOverhead)}
}

func edgeCount(tok *Tokenizer, model string, msgs []*dialog.Message) int {
	n := 0
	for _, m := range msgs {
		n += tok.CountMessage(model, m)
	}
	return n
}

func edgeNames(msgs []*dialog.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "[%s %.10q]", m.Role, m.Text())
	}
	return b.String()
}

// edgeToolProblem returns what is wrong with the tool messages of sent, a
// selection of input: a result sent without its call, or a call sent
// without a result that the input has. "" when nothing is.
func edgeToolProblem(input, sent []*dialog.Message) string {
	callIn, resultIn := map[string]bool{}, map[string]bool{}
	for _, m := range input {
		for _, fc := range m.FunctionCalls {
			callIn[fc.ID] = true
		}
		if m.Role == dialog.RoleTool {
			resultIn[m.ToolCallID] = true
		}
	}
	requested, answered := map[string]bool{}, map[string]bool{}
	for _, m := range sent {
		if m.Role == dialog.RoleTool {
			if callIn[m.ToolCallID] && !requested[m.ToolCallID] {
				return fmt.Sprintf("tool result %q sent without its call", m.ToolCallID)
			}
			answered[m.ToolCallID] = true
		}
		for _, fc := range m.FunctionCalls {
			requested[fc.ID] = true
		}
	}
	for _, m := range sent {
		for _, fc := range m.FunctionCalls {
			if resultIn[fc.ID] && !answered[fc.ID] {
				return fmt.Sprintf("call %q sent without its result", fc.ID)
			}
		}
	}
	return ""
}

// edgeDefaultShape checks a default-manager result against what the
// manager promises: the first message, at most one cut message (second,
// marked, a suffix of the input message it replaces, no images, no tool
// calls), then a contiguous newest suffix of the input; TokensAfter is
// the recount of what is sent, and within limit when the first message is.
func edgeDefaultShape(in []*dialog.Message, res Result, limit int, fresh func() *Tokenizer, model string) string {
	out := res.Messages
	if len(out) == 0 || out[0] != in[0] {
		return "the first message is not kept first"
	}
	tok := fresh()
	if got := edgeCount(tok, model, out); got != res.TokensAfter {
		return fmt.Sprintf("TokensAfter %d, but the sent messages count %d", res.TokensAfter, got)
	}
	if res.TokensAfter > limit {
		// Only the newest unit, when it cannot be cut, is kept over the
		// limit: with the first message and nothing between them.
		us := units(in, 1)
		if len(us) == 0 || !slices.Equal(out[1:], in[us[len(us)-1].lo:]) ||
			tok.CountMessage(model, in[0])+edgeCount(tok, model, in[us[len(us)-1].lo:]) <= limit {
			return fmt.Sprintf("TokensAfter %d over the limit %d", res.TokensAfter, limit)
		}
	}
	rest := out[1:]
	start := len(in) - len(rest)
	if len(rest) > 0 && !slices.Contains(in, rest[0]) {
		cut := rest[0]
		rest = rest[1:]
		start = len(in) - len(rest)
		src := in[start-1]
		if !strings.HasPrefix(cut.Content, TruncationMarker) || !strings.HasSuffix(src.Text(), strings.TrimPrefix(cut.Content, TruncationMarker)) {
			return fmt.Sprintf("new message %.30q is not the marker and a suffix of %.30q", cut.Content, src.Text())
		}
		if !utf8.ValidString(cut.Content) {
			return "the cut text is not valid UTF-8"
		}
		if len(cut.Parts) != 0 || len(cut.FunctionCalls) != 0 || cut.Role != src.Role || cut.Role == dialog.RoleTool || src.IsFunctionCall() {
			return fmt.Sprintf("bad cut message %+v from %s", *cut, src.Role)
		}
	}
	if start < 1 || !slices.Equal(rest, in[start:]) {
		return "the kept messages are not a newest suffix of the input: " + edgeNames(out)
	}
	return ""
}

// ---- tool calls ----

// edgeLateResultDialog has a parallel call whose second result comes
// after an interjected user message: S, U1, call(a,b), r(a), U2, r(b), A, U3.
func edgeLateResultDialog() []*dialog.Message {
	return []*dialog.Message{
		edgeMsg(dialog.RoleSystem, "S", 100),
		edgeMsg(dialog.RoleUser, "U1", 100),
		edgeCall("a", "b"),
		edgeResult("a", 100),
		edgeMsg(dialog.RoleUser, "U2", 100),
		edgeResult("b", 100),
		edgeMsg(dialog.RoleAssistant, "A", 100),
		edgeMsg(dialog.RoleUser, "U3", 100),
	}
}

// TestLateToolResultNeverOrphaned checks that no manager sends a tool result without its call, or a call without a result the dialog has, when the results are not all right after the call.
func TestLateToolResultNeverOrphaned(t *testing.T) {
	msgs := edgeLateResultDialog()
	tok := NewCharTokenizer(1)
	total := edgeCount(tok, "gpt-4o", msgs)
	for limit := 150; limit <= total; limit++ {
		res := fit(t, mustNew(t, map[string]any{"max_tokens": limit, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok})
		if p := edgeToolProblem(msgs, res.Messages); p != "" {
			t.Errorf("default, limit %d: %s: sent %s", limit, p, edgeNames(res.Messages))
			break
		}
	}
	for n := 1; n < len(msgs); n++ {
		res := fit(t, mustNew(t, map[string]any{"type": "window", "n": n}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok})
		if p := edgeToolProblem(msgs, res.Messages); p != "" {
			t.Errorf("window, n=%d: %s: sent %s", n, p, edgeNames(res.Messages))
			break
		}
	}
	for limit := 150; limit <= total; limit += 5 {
		var old []*dialog.Message
		sum := func(_ context.Context, o []*dialog.Message) (*dialog.Message, error) {
			old = o
			return &dialog.Message{Role: dialog.RoleUser, Content: "summary"}, nil
		}
		res := fit(t, mustNew(t, map[string]any{"type": "summary", "max_tokens": limit, "buffer": 0}),
			Input{Model: "gpt-4o", Messages: msgs, Tokens: tok, Summarize: sum})
		if p := edgeToolProblem(msgs, res.Messages); p != "" {
			t.Errorf("summary, limit %d: %s: sent %s", limit, p, edgeNames(res.Messages))
			break
		}
		if p := edgeToolProblem(msgs, old); p != "" {
			t.Errorf("summary, limit %d: summarizer got a split tool pair: %s: %s", limit, p, edgeNames(old))
			break
		}
	}
}

// TestParallelToolCallsKeptWhole checks that a call with several adjacent results (in any order) is kept or dropped as one unit by every manager and every budget.
func TestParallelToolCallsKeptWhole(t *testing.T) {
	msgs := []*dialog.Message{
		edgeMsg(dialog.RoleSystem, "S", 100),
		edgeMsg(dialog.RoleUser, "U1", 100),
		edgeCall("a", "b", "c"),
		edgeResult("c", 80),
		edgeResult("a", 80),
		edgeResult("b", 80),
		edgeMsg(dialog.RoleAssistant, "A", 100),
		edgeMsg(dialog.RoleUser, "U2", 100),
	}
	unit := msgs[2:6]
	whole := func(out []*dialog.Message) bool {
		k := 0
		for _, m := range unit {
			if slices.Contains(out, m) {
				k++
			}
		}
		return k == 0 || k == len(unit)
	}
	tok := NewCharTokenizer(1)
	total := edgeCount(tok, "gpt-4o", msgs)
	for limit := 150; limit <= total; limit++ {
		res := fit(t, mustNew(t, map[string]any{"max_tokens": limit, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok})
		if p := edgeToolProblem(msgs, res.Messages); p != "" || !whole(res.Messages) {
			t.Fatalf("default, limit %d: %q, sent %s", limit, p, edgeNames(res.Messages))
		}
		if p := edgeDefaultShape(msgs, res, limit, func() *Tokenizer { return NewCharTokenizer(1) }, "gpt-4o"); p != "" {
			t.Fatalf("default, limit %d: %s", limit, p)
		}
	}
	for n := 1; n < len(msgs); n++ {
		res := fit(t, mustNew(t, map[string]any{"type": "window", "n": n}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok})
		if p := edgeToolProblem(msgs, res.Messages); p != "" || !whole(res.Messages) {
			t.Fatalf("window n=%d: %q, sent %s", n, p, edgeNames(res.Messages))
		}
	}
	for limit := 150; limit <= total; limit += 3 {
		var old []*dialog.Message
		sum := func(_ context.Context, o []*dialog.Message) (*dialog.Message, error) {
			old = o
			return &dialog.Message{Role: dialog.RoleUser, Content: "summary"}, nil
		}
		res := fit(t, mustNew(t, map[string]any{"type": "summary", "max_tokens": limit, "buffer": 0}),
			Input{Model: "gpt-4o", Messages: msgs, Tokens: tok, Summarize: sum})
		for what, got := range map[string][]*dialog.Message{"sent": res.Messages, "summarised": old} {
			if p := edgeToolProblem(msgs, got); p != "" || !whole(got) {
				t.Fatalf("summary, limit %d: %s %s: %q", limit, what, edgeNames(got), p)
			}
		}
	}
}

// TestReusedToolCallIDsStayPerTurn checks that tool call IDs reused on every turn (as some providers do) keep each call with its own adjacent result only.
func TestReusedToolCallIDsStayPerTurn(t *testing.T) {
	msgs := []*dialog.Message{edgeMsg(dialog.RoleSystem, "S", 50)}
	for i := range 4 {
		msgs = append(msgs, edgeMsg(dialog.RoleUser, fmt.Sprint("U", i), 50), edgeCall("call_0"), edgeResult("call_0", 50), edgeMsg(dialog.RoleAssistant, fmt.Sprint("A", i), 50))
	}
	res := fit(t, mustNew(t, map[string]any{"type": "window", "n": 2}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	n := len(msgs)
	if want := []*dialog.Message{msgs[0], msgs[n-3], msgs[n-2], msgs[n-1]}; !slices.Equal(res.Messages, want) {
		t.Errorf("window n=2: sent %s, want S and the last call, result, answer", edgeNames(res.Messages))
	}
	res = fit(t, mustNew(t, map[string]any{"max_tokens": 200, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	// S 50 + A 50 + result 50 + call 7 = 157; U3 does not fit and 43 remain.
	if want := []*dialog.Message{msgs[0], msgs[n-3], msgs[n-2], msgs[n-1]}; !slices.Equal(res.Messages, want) {
		t.Errorf("default limit 200: sent %s, want S and the last call, result, answer", edgeNames(res.Messages))
	}
}

// TestToolCallUnitNeverCut checks that a tool-call unit that is the first not to fit is dropped whole, never cut or split, even with text on the call and plenty of budget left.
func TestToolCallUnitNeverCut(t *testing.T) {
	call := edgeCall("c1")
	call.Role, call.Content = dialog.RoleAssistant, edgeText("thinking", 200) // 4+200+3 = 207
	msgs := []*dialog.Message{
		edgeMsg(dialog.RoleSystem, "S", 100),
		edgeMsg(dialog.RoleUser, "U", 100),
		call,
		edgeResult("c1", 100),
		edgeMsg(dialog.RoleAssistant, "A", 100),
	}
	// S + A = 200; the pair (307) does not fit; 150 remain: no cut, and U is not kept past the gap.
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 350, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if want := []*dialog.Message{msgs[0], msgs[4]}; !slices.Equal(res.Messages, want) || res.TokensAfter != 200 {
		t.Errorf("limit 350: sent %s (%d tokens), want S, A (200)", edgeNames(res.Messages), res.TokensAfter)
	}
	// The same with the call's result missing (a singleton call unit), and across all budgets.
	lone := []*dialog.Message{msgs[0], msgs[1], call, msgs[4]}
	for _, d := range [][]*dialog.Message{msgs, lone} {
		for limit := 100; limit <= 600; limit++ {
			res := fit(t, mustNew(t, map[string]any{"max_tokens": limit, "buffer": 0}), Input{Model: "gpt-4o", Messages: d, Tokens: NewCharTokenizer(1)})
			if p := edgeDefaultShape(d, res, limit, func() *Tokenizer { return NewCharTokenizer(1) }, "gpt-4o"); p != "" {
				t.Fatalf("%d messages, limit %d: %s", len(d), limit, p)
			}
			if p := edgeToolProblem(d, res.Messages); p != "" {
				t.Fatalf("%d messages, limit %d: %s", len(d), limit, p)
			}
		}
	}
}

// ---- budget edge cases ----

// TestSystemMessageAloneOverBudget checks that a first message over the limit is sent whole (never cut) with the newest message only, with accurate token counts and a warning.
func TestSystemMessageAloneOverBudget(t *testing.T) {
	msgs := []*dialog.Message{edgeMsg(dialog.RoleSystem, "S", 500), edgeMsg(dialog.RoleUser, "U", 100), edgeMsg(dialog.RoleAssistant, "A", 100)}
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 300, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if want := []*dialog.Message{msgs[0], msgs[2]}; !slices.Equal(res.Messages, want) || res.Action != "truncate" || res.TokensBefore != 700 || res.TokensAfter != 600 {
		t.Errorf("got %s %s %d->%d, want the system message and the newest, uncut, 700->600", res.Action, edgeNames(res.Messages), res.TokensBefore, res.TokensAfter)
	}
	if !strings.Contains(res.Note, "first message alone") {
		t.Errorf("note %q does not warn that the first message is over the limit", res.Note)
	}
}

// TestTruncatedExactlyAtBudget checks the boundaries: a dialog exactly at the limit is unchanged, one token over cuts to exactly the limit, and no budget ever sends more than the limit or miscounts.
func TestTruncatedExactlyAtBudget(t *testing.T) {
	msgs := []*dialog.Message{edgeMsg(dialog.RoleSystem, "S", 100), edgeMsg(dialog.RoleUser, "U", 200), edgeMsg(dialog.RoleAssistant, "A", 300)}
	tok := NewCharTokenizer(1)
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 600, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok})
	if res.Action != "none" || !slices.Equal(res.Messages, msgs) {
		t.Errorf("exactly at the limit: got %s %s, want unchanged", res.Action, edgeNames(res.Messages))
	}
	res = fit(t, mustNew(t, map[string]any{"max_tokens": 599, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok})
	if len(res.Messages) != 3 || res.TokensAfter != 599 || tok.CountMessage("gpt-4o", res.Messages[1]) != 199 {
		t.Errorf("one over: got %s (%d tokens), want U cut to 199 tokens and 599 in all", edgeNames(res.Messages), res.TokensAfter)
	}
	big := []*dialog.Message{edgeMsg(dialog.RoleSystem, "S", 100)}
	for i := range 8 {
		big = append(big, edgeMsg([]dialog.Role{dialog.RoleUser, dialog.RoleAssistant}[i%2], fmt.Sprint(i), 60+37*i))
	}
	for cpt := 1; cpt <= 3; cpt++ {
		fresh := func() *Tokenizer { return NewCharTokenizer(cpt) }
		for limit := 20; limit <= 1300; limit += cpt*cpt - cpt + 1 { // every budget for 1 char/token, a sample for the others
			res := fit(t, mustNew(t, map[string]any{"max_tokens": limit, "buffer": 0}), Input{Model: "gpt-4o", Messages: big, Tokens: fresh()})
			if p := edgeDefaultShape(big, res, limit, fresh, "gpt-4o"); p != "" {
				t.Fatalf("chars/token %d, limit %d: %s", cpt, limit, p)
			}
		}
	}
}

// TestBudgetBelowBuffer checks that max_tokens at or below the buffer gives the documented half, and that a larger max_tokens never gives a smaller limit.
func TestBudgetBelowBuffer(t *testing.T) {
	msgs := []*dialog.Message{edgeMsg(dialog.RoleSystem, "S", 10)}
	for i := range 2000 {
		msgs = append(msgs, edgeMsg(dialog.RoleUser, fmt.Sprint(i), 10))
	}
	tok := NewCharTokenizer(1)
	after := func(maxTokens int) int {
		return fit(t, mustNew(t, map[string]any{"max_tokens": maxTokens}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok}).TokensAfter
	}
	if got := after(1000); got != 500 {
		t.Errorf("max_tokens 1000, default buffer 5000: sent %d tokens, want 500 (half the budget)", got)
	}
	if got := after(5000); got != 2500 {
		t.Errorf("max_tokens 5000 = buffer: sent %d tokens, want 2500", got)
	}
	prev, prevMax := 0, 0
	for m := 1000; m <= 20000; m += 250 {
		got := after(m)
		if got < prev {
			t.Errorf("max_tokens %d sends %d tokens, fewer than the %d that max_tokens %d sends: the limit must not shrink as the budget grows", m, got, prev, prevMax)
			break
		}
		prev, prevMax = got, m
	}
}

// ---- models ----

// TestUnknownModelFallback checks the documented fallback for unknown models: a 128000-token window, o200k_base counting, and a note saying so, in both budget managers.
func TestUnknownModelFallback(t *testing.T) {
	for _, model := range []string{"acme/mystery-7b", "local/my-finetune", "", "vllm/Qwen2.5-7B-Instruct"} {
		if w, known := ContextWindow(model); w != DefaultContextWindow || known {
			t.Errorf("ContextWindow(%q) = %d, %v; want %d, false", model, w, known, DefaultContextWindow)
		}
		if enc := EncodingFor(model); enc != FallbackEncoding {
			t.Errorf("EncodingFor(%q) = %q, want %q", model, enc, FallbackEncoding)
		}
	}
	small := []*dialog.Message{{Role: dialog.RoleSystem, Content: "Ты — помощник. 日本語で答えて。"}, {Role: dialog.RoleUser, Content: "Explain BPE tokenization in one line."}}
	res := fit(t, mustNew(t, map[string]any{}), Input{Model: "acme/mystery-7b", Messages: small, Tokens: NewTokenizer()})
	if want := edgeCount(NewTokenizer(), "gpt-4o", small); res.TokensBefore != want {
		t.Errorf("unknown model counted %d tokens, want %d (o200k_base)", res.TokensBefore, want)
	}
	big := []*dialog.Message{edgeMsg(dialog.RoleSystem, "S", 100), edgeMsg(dialog.RoleUser, "U", 100000), edgeMsg(dialog.RoleAssistant, "A", 30000)}
	res = fit(t, mustNew(t, map[string]any{}), Input{Model: "acme/mystery-7b", Messages: big, Tokens: NewCharTokenizer(1)})
	if res.TokensAfter != 123000 || !strings.Contains(res.Note, "not a known model") {
		t.Errorf("default: %d tokens, note %q; want 123000 and a note that the model is unknown", res.TokensAfter, res.Note)
	}
	sum := func(context.Context, []*dialog.Message) (*dialog.Message, error) {
		return &dialog.Message{Role: dialog.RoleUser, Content: "summary"}, nil
	}
	res = fit(t, mustNew(t, map[string]any{"type": "summary"}), Input{Model: "acme/mystery-7b", Messages: big, Tokens: NewCharTokenizer(1), Summarize: sum})
	if res.Action != "summary" || !strings.Contains(res.Note, "not a known model") || !strings.Contains(res.Note, "123000") {
		t.Errorf("summary: %s, note %q; want a summary against the 123000 fallback limit", res.Action, res.Note)
	}
}

// TestBedrockModelIDsKnown checks that Claude named by Bedrock model ids (the form provider.Open documents) gets Claude's 200000-token window, not the unknown-model fallback.
func TestBedrockModelIDsKnown(t *testing.T) {
	for _, model := range []string{
		"bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
		"bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
		"anthropic.claude-3-haiku-20240307-v1:0",
	} {
		if w, known := ContextWindow(model); w != 200000 || !known {
			t.Errorf("ContextWindow(%q) = %d, %v; want 200000, true", model, w, known)
		}
	}
}

// ---- images and unicode ----

// edgeNoisePNG returns a w x h PNG of random pixels (large, incompressible bytes).
func edgeNoisePNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(7, 8))
	for i := range img.Pix {
		img.Pix[i] = byte(r.IntN(256))
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestImagesCountedByRule checks that images cost their tile price, not their bytes, and that cutting an image message drops its images while an image-only message that does not fit is dropped, not sent empty.
func TestImagesCountedByRule(t *testing.T) {
	data := edgeNoisePNG(t, 300, 300) // about 90 KB: tens of thousands of tokens as base64 text
	img := &dialog.Image{MIME: "image/png", Data: data}
	urlImg := &dialog.Image{URL: img.DataURL()}
	caption := "What is in this picture?"
	for name, im := range map[string]*dialog.Image{"bytes": img, "data URL": urlImg} {
		msgs := []*dialog.Message{
			{Role: dialog.RoleSystem, Content: "You describe images."},
			{Role: dialog.RoleUser, Modality: dialog.ModalityImage, Parts: []dialog.Part{{Type: dialog.PartText, Text: caption}, {Type: dialog.PartImage, Image: im}}},
		}
		tok := NewTokenizer()
		want := 2*MessageOverhead + tok.Count("gpt-4o", msgs[0].Content) + tok.Count("gpt-4o", caption) + ImageTokens(300, 300)
		res := fit(t, mustNew(t, map[string]any{"max_tokens": 2000, "buffer": 0}), Input{Model: "openai/gpt-4o", Messages: msgs, Tokens: tok})
		if res.Action != "none" || !slices.Equal(res.Messages, msgs) || res.TokensBefore != want {
			t.Errorf("%s: got %s, %d tokens; want unchanged at %d (255 for the image)", name, res.Action, res.TokensBefore, want)
		}
	}

	cap300 := edgeText("caption", 300)
	msgs := []*dialog.Message{
		edgeMsg(dialog.RoleSystem, "S", 100),
		{Role: dialog.RoleUser, Name: "alice", Modality: dialog.ModalityImage, Parts: []dialog.Part{
			{Type: dialog.PartImage, Image: img}, {Type: dialog.PartText, Text: cap300}, {Type: dialog.PartImage, Image: urlImg}}},
		edgeMsg(dialog.RoleAssistant, "A", 100),
	}
	// S + A = 200; 200 remain: the caption is cut to 200 - 4 - 34 = 162 characters, the images dropped.
	res := fit(t, mustNew(t, map[string]any{"max_tokens": 400, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1)})
	if len(res.Messages) != 3 {
		t.Fatalf("got %s, want S, the cut image message, A", edgeNames(res.Messages))
	}
	cut := res.Messages[1]
	if cut.Content != TruncationMarker+cap300[300-162:] || len(cut.Parts) != 0 || cut.Modality != dialog.ModalityText ||
		cut.Role != dialog.RoleUser || cut.Name != "alice" || res.TokensAfter != 400 {
		t.Errorf("cut message %+v, %d tokens; want the last 162 caption characters after the marker, no parts, text modality, user alice, 400 tokens", *cut, res.TokensAfter)
	}
	if len(msgs[1].Parts) != 3 || msgs[1].Parts[0].Image != img {
		t.Errorf("the input image message was changed")
	}
	imageOnly := []*dialog.Message{msgs[0], {Role: dialog.RoleUser, Modality: dialog.ModalityImage, Parts: []dialog.Part{{Type: dialog.PartImage, Image: img}}}, msgs[2]}
	res = fit(t, mustNew(t, map[string]any{"max_tokens": 400, "buffer": 0}), Input{Model: "gpt-4o", Messages: imageOnly, Tokens: NewCharTokenizer(1)})
	if want := []*dialog.Message{msgs[0], msgs[2]}; !slices.Equal(res.Messages, want) {
		t.Errorf("image-only message over budget: sent %s, want S, A (dropped, not an empty marker)", edgeNames(res.Messages))
	}
}

// TestUnicodeCutOnCharacterBoundary checks with tiktoken and the char tokenizer that a cut of emoji, CJK and combining text is valid UTF-8, a suffix of the original, within the limit and counted exactly.
func TestUnicodeCutOnCharacterBoundary(t *testing.T) {
	long := strings.Repeat("Grüße 👩‍👩‍👧‍👦 日本語のテキスト é̃ 🇯🇵 naïve café 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ", 300)
	msgs := []*dialog.Message{
		{Role: dialog.RoleSystem, Content: "Answer in the user's language."},
		{Role: dialog.RoleUser, Content: long},
		{Role: dialog.RoleAssistant, Content: "了解しました。"},
	}
	for _, kind := range []struct {
		name  string
		fresh func() *Tokenizer
	}{{"tiktoken", NewTokenizer}, {"chars/2", func() *Tokenizer { return NewCharTokenizer(2) }}} {
		tok := kind.fresh()
		cuts := 0
		for limit := 60; limit <= 3000; limit += 53 {
			res := fit(t, mustNew(t, map[string]any{"max_tokens": limit, "buffer": 0}), Input{Model: "gpt-4o", Messages: msgs, Tokens: tok})
			if p := edgeDefaultShape(msgs, res, limit, kind.fresh, "gpt-4o"); p != "" {
				t.Fatalf("%s, limit %d: %s", kind.name, limit, p)
			}
			if len(res.Messages) == 3 && res.Messages[1] != msgs[1] {
				cuts++
				kept := strings.TrimPrefix(res.Messages[1].Content, TruncationMarker)
				if r, _ := utf8.DecodeRuneInString(kept); r == utf8.RuneError {
					t.Fatalf("%s, limit %d: cut text starts inside a character", kind.name, limit)
				}
			}
		}
		if cuts < 50 {
			t.Errorf("%s: only %d budgets cut the long message; the sweep tests too little", kind.name, cuts)
		}
	}
}

// ---- summary manager ----

// TestSummaryKeepsNewestWhenTailOverHalf checks that the newest message is always sent verbatim, never folded into the summary, even when it alone is over half the limit (or over the limit).
func TestSummaryKeepsNewestWhenTailOverHalf(t *testing.T) {
	for _, newest := range []int{300, 600} { // over half the limit 500; over the limit
		msgs := []*dialog.Message{edgeMsg(dialog.RoleSystem, "S", 100)}
		for i := range 4 {
			msgs = append(msgs, edgeMsg(dialog.RoleUser, fmt.Sprint("m", i), 100))
		}
		msgs = append(msgs, edgeMsg(dialog.RoleUser, "NEWEST", newest))
		var old []*dialog.Message
		sum := func(_ context.Context, o []*dialog.Message) (*dialog.Message, error) {
			old = o
			return &dialog.Message{Role: dialog.RoleUser, Content: "summary"}, nil
		}
		res := fit(t, mustNew(t, map[string]any{"type": "summary", "max_tokens": 500, "buffer": 0}),
			Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1), Summarize: sum})
		if n := len(res.Messages); n == 0 || res.Messages[n-1] != msgs[len(msgs)-1] {
			t.Errorf("newest %d tokens: sent %s; the newest message must be sent verbatim", newest, edgeNames(res.Messages))
		}
		if !slices.Equal(old, msgs[1:len(msgs)-1]) {
			t.Errorf("newest %d tokens: summarised %s, want the 4 messages before the newest", newest, edgeNames(old))
		}
	}
}

// TestSummaryInputFitsBudget checks that in a long dialog far over the limit the summarizer (a model call on the same budget) is never sent more than the limit at once.
func TestSummaryInputFitsBudget(t *testing.T) {
	msgs := []*dialog.Message{edgeMsg(dialog.RoleSystem, "S", 100)}
	for i := range 30 {
		msgs = append(msgs, edgeMsg([]dialog.Role{dialog.RoleUser, dialog.RoleAssistant}[i%2], fmt.Sprint("m", i), 100))
	}
	tok := NewCharTokenizer(1)
	var last *dialog.Message
	calls := 0
	sum := func(_ context.Context, o []*dialog.Message) (*dialog.Message, error) {
		calls++
		if n := edgeCount(NewCharTokenizer(1), "gpt-4o", o); n > 1000 {
			t.Errorf("summarizer call %d was sent %d tokens (%d messages), over the limit 1000", calls, n, len(o))
		}
		last = &dialog.Message{Role: dialog.RoleUser, Content: fmt.Sprint("summary ", calls)}
		return last, nil
	}
	res := fit(t, mustNew(t, map[string]any{"type": "summary", "max_tokens": 1000, "buffer": 0}),
		Input{Model: "gpt-4o", Messages: msgs, Tokens: tok, Summarize: sum})
	if len(res.Messages) < 3 || res.Messages[0] != msgs[0] || res.Messages[1] != last || res.TokensAfter > 1000 {
		t.Errorf("sent %s (%d tokens), want S, the final summary, a recent tail, within 1000", edgeNames(res.Messages), res.TokensAfter)
	}
}

// TestSummaryErrorsAndNilSummary checks that a summarizer error is wrapped and returns nothing, that a nil summary is an error, and that the summarizer gets the caller's context.
func TestSummaryErrorsAndNilSummary(t *testing.T) {
	msgs := []*dialog.Message{edgeMsg(dialog.RoleSystem, "S", 100)}
	for i := range 6 {
		msgs = append(msgs, edgeMsg(dialog.RoleUser, fmt.Sprint(i), 100))
	}
	m := mustNew(t, map[string]any{"type": "summary", "max_tokens": 500, "buffer": 0})
	boom := errors.New("rate limited")
	res, err := m.Fit(context.Background(), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1),
		Summarize: func(context.Context, []*dialog.Message) (*dialog.Message, error) { return nil, boom }})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "summarising") || res.Messages != nil {
		t.Errorf("failing summarizer: err %v, %d messages; want the error wrapped and no messages", err, len(res.Messages))
	}
	res, err = m.Fit(context.Background(), Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1),
		Summarize: func(context.Context, []*dialog.Message) (*dialog.Message, error) { return nil, nil }})
	if err == nil || !strings.Contains(err.Error(), "no message") || res.Messages != nil {
		t.Errorf("nil summary: err %v, %d messages; want an error saying no message was returned", err, len(res.Messages))
	}
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "run-42")
	var seen any
	if _, err := m.Fit(ctx, Input{Model: "gpt-4o", Messages: msgs, Tokens: NewCharTokenizer(1),
		Summarize: func(ctx context.Context, _ []*dialog.Message) (*dialog.Message, error) {
			seen = ctx.Value(key{})
			return &dialog.Message{Role: dialog.RoleUser, Content: "s"}, nil
		}}); err != nil || seen != "run-42" {
		t.Errorf("summarizer context value %v, err %v; want the caller's context", seen, err)
	}
}

// ---- tokenizer: concurrency and memory ----

// TestSharedTokenizerConcurrentFits checks that one Tokenizer shared by many goroutines running every manager (cuts, tool pairs, images, two encodings) gives the same results as sequential runs (run with -race).
func TestSharedTokenizerConcurrentFits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var dialogs [][]*dialog.Message
	for d := range 6 {
		msgs := []*dialog.Message{{Role: dialog.RoleSystem, Content: fmt.Sprint("System prompt ", d)}}
		for i := range 30 {
			msgs = append(msgs, &dialog.Message{Role: dialog.RoleUser, Content: strings.Repeat(fmt.Sprintf("turn %d: 日本語 ü 🙂 words ", i), 5+r.IntN(40))})
			if i%5 == 2 {
				id := fmt.Sprint("c", d, "_", i)
				msgs = append(msgs, edgeCall(id), &dialog.Message{Role: dialog.RoleTool, ToolCallID: id, Content: strings.Repeat("result ", 50)})
			}
			if i%7 == 3 {
				msgs = append(msgs, &dialog.Message{Role: dialog.RoleUser, Modality: dialog.ModalityImage, Parts: []dialog.Part{
					{Type: dialog.PartText, Text: "see"}, {Type: dialog.PartImage, Image: &dialog.Image{URL: "https://example.com/x.png"}}}})
			}
			msgs = append(msgs, &dialog.Message{Role: dialog.RoleAssistant, Content: strings.Repeat("ok ", 10+r.IntN(30))})
		}
		dialogs = append(dialogs, msgs)
	}
	sum := func(_ context.Context, o []*dialog.Message) (*dialog.Message, error) {
		return &dialog.Message{Role: dialog.RoleUser, Content: fmt.Sprintf("summary of %d", len(o))}, nil
	}
	cfgs := []map[string]any{
		{"max_tokens": 3000, "buffer": 0},
		{"type": "window", "n": 7},
		{"type": "summary", "max_tokens": 3000, "buffer": 0},
	}
	models := []string{"openai/gpt-4o", "gpt-4"}
	type job struct{ d, c, mo int }
	render := func(res Result) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %d %d|", res.Action, res.TokensBefore, res.TokensAfter)
		for _, m := range res.Messages {
			b.WriteString(string(m.Role) + ":" + m.Text() + "|")
		}
		return b.String()
	}
	var jobs []job
	want := map[job]string{}
	for d := range dialogs {
		for c := range cfgs {
			for mo := range models {
				j := job{d, c, mo}
				jobs = append(jobs, j)
				res := fit(t, mustNew(t, cfgs[c]), Input{Model: models[mo], Messages: dialogs[d], Tokens: NewTokenizer(), Summarize: sum})
				want[j] = render(res)
			}
		}
	}
	shared := NewTokenizer()
	mgrs := make([]Manager, len(cfgs))
	for c := range cfgs {
		mgrs[c] = mustNew(t, cfgs[c])
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fails []string
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				j := jobs[(k*7+g)%len(jobs)]
				res, err := mgrs[j.c].Fit(context.Background(), Input{Model: models[j.mo], Messages: dialogs[j.d], Tokens: shared, Summarize: sum})
				if err != nil || render(res) != want[j] {
					mu.Lock()
					fails = append(fails, fmt.Sprintf("goroutine %d, job %+v: err %v, result differs from the sequential run", g, j, err))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(fails) > 0 {
		t.Errorf("%d concurrent fits went wrong; first: %s", len(fails), fails[0])
	}
}

// edgeGlobalMsg is a package-level message, which the runtime may allocate statically (outside the heap).
var edgeGlobalMsg = &dialog.Message{Role: dialog.RoleSystem, Content: "a package-level system prompt"}

// TestMemoBoundedInLongLoop checks that in a long agent loop keeping only a recent tail alive, the memo shrinks to the live messages once the rest are collected, and that package-level messages can be counted.
func TestMemoBoundedInLongLoop(t *testing.T) {
	tok := NewCharTokenizer(1)
	if a, b := tok.CountMessage("gpt-4o", edgeGlobalMsg), tok.CountMessage("gpt-4o", edgeGlobalMsg); a != b || a != MessageOverhead+len(edgeGlobalMsg.Content) {
		t.Errorf("package-level message counted %d then %d", a, b)
	}
	mgr := mustNew(t, map[string]any{"max_tokens": 400, "buffer": 0})
	const keep = 40
	live := []*dialog.Message{edgeGlobalMsg}
	func() {
		for i := range 3000 {
			live = append(live, edgeMsg(dialog.RoleUser, fmt.Sprint("u", i), 30+i%90), edgeMsg(dialog.RoleAssistant, fmt.Sprint("a", i), 20+i%50))
			if len(live) > keep+1 {
				live = append(live[:1:1], live[len(live)-keep:]...) // a bounded tail: older messages become garbage
			}
			if _, err := mgr.Fit(context.Background(), Input{Model: "gpt-4o", Messages: live, Tokens: tok}); err != nil {
				t.Fatal(err)
			}
			tok.CountMessage("gpt-4", live[len(live)-1]) // a second encoding: a second memo entry
		}
	}()
	bound := 2*keep + 1 + 1 // two encodings for the tail, plus the global message
	deadline := time.Now().Add(10 * time.Second)
	for tok.memoLen() > bound && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := tok.memoLen(); n > bound {
		t.Errorf("memo holds %d entries after a 3000-turn loop with %d live messages; want at most %d", n, len(live), bound)
	}
	runtime.KeepAlive(live)
}

// ---- configuration ----

// TestConfigErrors checks that every manager rejects unknown keys, negative values and wrong types with an error naming the manager, the key and the bad value.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  map[string]any
		want []string
	}{
		{map[string]any{"type": "default", "max_tokens": -1}, []string{"default", "max_tokens must be at least 0", "-1"}},
		{map[string]any{"type": "default", "buffer": -5}, []string{"default", "buffer must be at least 0", "-5"}},
		{map[string]any{"type": "default", "max_tokens": true}, []string{"default", "max_tokens must be an integer, not true"}},
		{map[string]any{"type": "default", "Max_Tokens": 1000}, []string{"default", `unknown key "Max_Tokens" (did you mean "max_tokens"?)`}},
		{map[string]any{"type": "summary", "max_tokens": -100}, []string{"summary", "max_tokens must be at least 0", "-100"}},
		{map[string]any{"type": "summary", "buffer": -5}, []string{"summary", "buffer must be at least 0", "-5"}},
		{map[string]any{"type": "summary", "n": 5}, []string{"summary", `unknown key "n" (accepted: type, max_tokens, buffer)`}},
		{map[string]any{"type": "window", "n": -3}, []string{"window", "n must be at least 1", "-3"}},
		{map[string]any{"type": "window", "n": 2.5}, []string{"window", "n must be an integer", "2.5"}},
		{map[string]any{"type": "window", "n": "5"}, []string{"window", `n must be an integer, not "5"`}},
		{map[string]any{"type": "window", "buffer": 5}, []string{"window", `unknown key "buffer" (accepted: type, n)`}},
		{map[string]any{"type": "none", "max_tokens": 1000}, []string{"none", `unknown key "max_tokens" (accepted: type)`}},
		{map[string]any{"type": "null", "n": 1}, []string{"none", `unknown key "n"`}},
	}
	for _, tt := range tests {
		m, err := New(tt.cfg)
		if err == nil || m != nil {
			t.Errorf("New(%v) = %v, %v; want no manager and an error", tt.cfg, m, err)
			continue
		}
		if errors.Is(err, ErrUnknownType) || !strings.HasPrefix(err.Error(), "contextmgr: ") {
			t.Errorf("New(%v) = %q; want a contextmgr config error, not an unknown type", tt.cfg, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("New(%v) = %q; want it to contain %q", tt.cfg, err, w)
			}
		}
	}
}
