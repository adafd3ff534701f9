package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/config"
)

// mockEdgeChildEnv marks the child process of TestMockSameAcrossProcesses.
const mockEdgeChildEnv = "LLLM_MOCK_EDGE_CHILD"

func calcTool(t *testing.T) *dialog.Function {
	t.Helper()
	f, err := dialog.NewFunctionSchema("calc", "Evaluates arithmetic.",
		json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`),
		func(context.Context, json.RawMessage) (any, error) { return "42", nil })
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func pngImage(t *testing.T, w, h int) *dialog.Image {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	img, err := dialog.ImageBytes(b.Bytes()).Load()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// toolHistory is a dialog with one answered tool call.
func toolHistory() []*dialog.Message {
	return []*dialog.Message{
		systemMsg("You compute."),
		userMsg("What is 6*7?"),
		{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{{ID: "call_1", Name: "calc", Arguments: json.RawMessage(`{"expression":"6*7"}`)}}},
		{Role: dialog.RoleTool, ToolCallID: "call_1", Name: "calc", Content: "42"},
	}
}

// edgeFingerprint describes the replies, usage and injected failures of a fixed set of requests on fresh mocks.
func edgeFingerprint(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	args := map[string]any{"zeta": 1, "alpha": map[string]any{"y": true, "b": []any{"x", 2.5}}, "mu": "été", "k": nil, "c": 3}
	m := openMockModel(t, MockConfig{Seed: 42, Replies: []MockReply{{Text: "first", ToolCalls: []MockToolCall{{Name: "f", Arguments: args}, {Name: "g", Arguments: args}}}}})
	reqs := []*Request{
		{Messages: []*dialog.Message{systemMsg("sys"), userMsg("scripted")}},
		{Messages: []*dialog.Message{systemMsg("sys"), userMsg("héllo, 世界 — a default reply")}},
		{Messages: toolHistory(), Tools: []*dialog.Function{calcTool(t), weatherTool(t)}},
		{Messages: []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{{Type: dialog.PartText, Text: "look"}, {Type: dialog.PartImage, Image: pngImage(t, 3, 2)}}}}},
	}
	for _, req := range reqs {
		resp := generate(t, m, req)
		fmt.Fprintf(&b, "%q %+v %+v %s\n", resp.Message.Content, resp.Message.FunctionCalls, resp.Message.Usage, resp.FinishReason)
	}
	flaky := openMockModel(t, MockConfig{ErrorRate: 0.5, Seed: 3})
	for i := range 64 {
		if _, err := flaky.Generate(context.Background(), &Request{Messages: []*dialog.Message{userMsg(fmt.Sprint("q", i%40))}}); err != nil {
			b.WriteByte('x')
		} else {
			b.WriteByte('.')
		}
	}
	return b.String()
}

// TestMockSameAcrossProcesses: fresh mocks, and a child process with other map seeds and GOMAXPROCS=1, give identical replies, usage and failures.
func TestMockSameAcrossProcesses(t *testing.T) {
	if os.Getenv(mockEdgeChildEnv) == "1" {
		fmt.Println("FINGERPRINT " + strconv.Quote(edgeFingerprint(t)))
		return
	}
	want := edgeFingerprint(t)
	if again := edgeFingerprint(t); again != want {
		t.Fatalf("two runs in one process differ:\n%s\n%s", want, again)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMockSameAcrossProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), mockEdgeChildEnv+"=1", "GOMAXPROCS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if q, ok := strings.CutPrefix(strings.TrimSpace(line), "FINGERPRINT "); ok {
			got, err := strconv.Unquote(q)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("child process differs:\n%s\nparent:\n%s", got, want)
			}
			return
		}
	}
	t.Fatalf("child printed no fingerprint:\n%s", out)
}

// TestMockSameAcrossGoroutines: one request asked from many goroutines at once gets one reply and one usage.
func TestMockSameAcrossGoroutines(t *testing.T) {
	m := openMockModel(t, MockConfig{Seed: 9})
	var (
		mu  sync.Mutex
		got = map[string]int{}
		wg  sync.WaitGroup
	)
	for range 32 {
		wg.Go(func() {
			resp, err := m.Generate(context.Background(), &Request{Messages: toolHistory()})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[fmt.Sprintf("%q %+v", resp.Message.Content, resp.Message.Usage)]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(got) != 1 {
		t.Errorf("one request, %d different replies: %v", len(got), got)
	}
}

// TestMockRepliesOnceUnderContention: with more concurrent calls than replies, each reply is given exactly once, the rest get the default reply, and a second opened model starts again.
func TestMockRepliesOnceUnderContention(t *testing.T) {
	const replies, calls = 16, 80
	cfg := MockConfig{}
	for i := range replies {
		cfg.Replies = append(cfg.Replies, MockReply{Text: fmt.Sprint("reply ", i)})
	}
	m := openMockModel(t, cfg)
	var (
		mu       sync.Mutex
		seen     = map[string]int{}
		defaults int
		wg       sync.WaitGroup
	)
	for i := range calls {
		wg.Go(func() {
			resp, err := m.Generate(context.Background(), &Request{Messages: []*dialog.Message{userMsg(fmt.Sprint("q", i))}})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if strings.HasPrefix(resp.Message.Content, "mock reply to: ") {
				defaults++
			} else {
				seen[resp.Message.Content]++
			}
		})
	}
	wg.Wait()
	for i := range replies {
		if k := seen[fmt.Sprint("reply ", i)]; k != 1 {
			t.Errorf("reply %d given %d times", i, k)
		}
	}
	if len(seen) != replies || defaults != calls-replies {
		t.Errorf("%d scripted, %d default replies; want %d and %d", len(seen), defaults, replies, calls-replies)
	}
	if got := ask(t, openMockModel(t, cfg), "again").Message.Content; got != "reply 0" {
		t.Errorf("a newly opened model answers %q, want the first reply", got)
	}
}

// TestMockFailedCallsKeepReplies: injected errors and calls cancelled during latency do not use up a scripted reply.
func TestMockFailedCallsKeepReplies(t *testing.T) {
	cfg := MockConfig{ErrorRate: 0.5, Seed: 5}
	for i := range 10 {
		cfg.Replies = append(cfg.Replies, MockReply{Text: fmt.Sprint("r", i)})
	}
	m := openMockModel(t, cfg)
	failures := 0
	for i := range 10 {
		for try := 0; ; try++ {
			resp, err := m.Generate(context.Background(), &Request{Messages: []*dialog.Message{userMsg("go")}})
			if err != nil {
				if try > 50 {
					t.Fatalf("reply %d: still failing after %d tries: %v", i, try, err)
				}
				failures++
				continue
			}
			if want := fmt.Sprint("r", i); resp.Message.Content != want {
				t.Errorf("success %d answered %q, want %q", i, resp.Message.Content, want)
			}
			break
		}
	}
	if failures == 0 {
		t.Error("no injected failure at rate 0.5: the test proves nothing")
	}
	slow := openMockModel(t, MockConfig{Latency: 100 * time.Millisecond, Replies: []MockReply{{Text: "kept"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	generateErr(t, ctx, slow, &Request{Messages: []*dialog.Message{userMsg("go")}})
	if got := ask(t, slow, "go").Message.Content; got != "kept" {
		t.Errorf("after a cancelled call: %q, want the unused reply", got)
	}
}

// TestMockRules: match and regex must both hold, the first matching rule wins, regex is Unicode-aware, match is case-sensitive, and only the last user message counts.
func TestMockRules(t *testing.T) {
	m := openMockModel(t, MockConfig{Rules: []MockRule{
		{Match: "order", Regex: `#\d+`, Reply: MockReply{Text: "both"}},
		{Match: "order", Reply: MockReply{Text: "match only"}},
		{Regex: `(?i)^été`, Reply: MockReply{Text: "unicode fold"}},
		{Regex: `^\p{Han}+$`, Reply: MockReply{Text: "han"}},
		{Match: "Paris", Reply: MockReply{Text: "paris"}},
		{Regex: `^\d`, Reply: MockReply{Text: "digit"}},
	}})
	user := func(parts ...string) *dialog.Message {
		msg := &dialog.Message{Role: dialog.RoleUser}
		for _, p := range parts {
			msg.Parts = append(msg.Parts, dialog.Part{Type: dialog.PartText, Text: p})
		}
		return msg
	}
	for _, tc := range []struct {
		name string
		msgs []*dialog.Message
		want string // "" is the default reply
	}{
		{"match and regex", []*dialog.Message{userMsg("order #12")}, "both"},
		{"first rule wins", []*dialog.Message{userMsg("order soon")}, "match only"},
		{"regex without match", []*dialog.Message{userMsg("ticket #12")}, ""},
		{"unicode case fold", []*dialog.Message{userMsg("ÉTÉ indien")}, "unicode fold"},
		{"unicode class", []*dialog.Message{userMsg("漢字")}, "han"},
		{"match is case-sensitive", []*dialog.Message{userMsg("paris in spring")}, ""},
		{"parts joined", []*dialog.Message{user("my order", "#7")}, "both"},
		{"only the last user message", []*dialog.Message{userMsg("order #1"), {Role: dialog.RoleAssistant, Content: "ok"}, userMsg("hello")}, ""},
		{"assistant after the user", []*dialog.Message{userMsg("漢字"), {Role: dialog.RoleAssistant, Content: "order #3"}}, "han"},
		{"system prompt ignored", []*dialog.Message{systemMsg("Paris"), userMsg("hi")}, ""},
	} {
		got := generate(t, m, &Request{Messages: tc.msgs}).Message.Content
		if tc.want == "" && !strings.HasPrefix(got, "mock reply to: ") || tc.want != "" && got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, cmpOr(tc.want, "the default reply"))
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestMockToolRound: a scripted tool call, answered by a tool result, is followed by the next reply, with the call, the result and the tool's declaration in the usage.
func TestMockToolRound(t *testing.T) {
	m := openMockModel(t, MockConfig{Replies: []MockReply{
		{ToolCalls: []MockToolCall{{Name: "calc", Arguments: map[string]any{"expression": "6*7"}}}},
		{Text: "It is 42."},
	}})
	msgs := []*dialog.Message{systemMsg("You compute."), userMsg("What is 6*7?")}
	tools := []*dialog.Function{calcTool(t)}
	first := generate(t, m, &Request{Messages: msgs, Tools: tools})
	if first.FinishReason != "tool_calls" || first.Message.Role != dialog.RoleToolCall || len(first.Message.FunctionCalls) != 1 {
		t.Fatalf("first reply %+v, finish %q", first.Message, first.FinishReason)
	}
	fc := first.Message.FunctionCalls[0]
	if fc.ID != "call_1" || fc.Name != "calc" || string(fc.Arguments) != `{"expression":"6*7"}` {
		t.Errorf("call %+v", fc)
	}
	call := first.Message
	msgs = append(msgs, &call, &dialog.Message{Role: dialog.RoleTool, ToolCallID: fc.ID, Name: fc.Name, Content: "42"})
	second := generate(t, m, &Request{Messages: msgs, Tools: tools})
	if second.Message.Content != "It is 42." || second.FinishReason != "stop" || len(second.Message.FunctionCalls) != 0 {
		t.Errorf("second reply %+v, finish %q", second.Message, second.FinishReason)
	}
	if want := countMessages("mock/test", msgs) + contextmgr.NewTokenizer().CountTools("mock/test", tools); second.Message.Usage.InputTokens != want {
		t.Errorf("input tokens %d, want %d", second.Message.Usage.InputTokens, want)
	}
	if want := mockTokens("calc") + mockTokens(`{"expression":"6*7"}`); first.Message.Usage.OutputTokens != want {
		t.Errorf("tool call output tokens %d, want %d", first.Message.Usage.OutputTokens, want)
	}
}

// TestMockRuleToolCallNotRepeated: a rule's tool call, once answered by a tool result, is not requested again for the same user message.
func TestMockRuleToolCallNotRepeated(t *testing.T) {
	m := openMockModel(t, MockConfig{Rules: []MockRule{{Match: "6*7", Reply: MockReply{
		ToolCalls: []MockToolCall{{Name: "calc", Arguments: map[string]any{"expression": "6*7"}}},
	}}}})
	msgs := []*dialog.Message{userMsg("What is 6*7?")}
	tools := []*dialog.Function{calcTool(t)}
	first := generate(t, m, &Request{Messages: msgs, Tools: tools})
	if len(first.Message.FunctionCalls) != 1 {
		t.Fatalf("first reply %+v", first.Message)
	}
	call := first.Message
	msgs = append(msgs, &call, &dialog.Message{Role: dialog.RoleTool, ToolCallID: "call_1", Name: "calc", Content: "42"})
	if second := generate(t, m, &Request{Messages: msgs, Tools: tools}); len(second.Message.FunctionCalls) != 0 {
		fc := second.Message.FunctionCalls[0]
		t.Errorf("the tool result is answered by the same tool call again (%s %s): an agent loops until its step limit", fc.Name, fc.Arguments)
	}
}

// TestMockStreamingMatchesNonStreaming: streamed chunks join to the non-streamed reply and come in several chunks, each valid UTF-8.
func TestMockStreamingMatchesNonStreaming(t *testing.T) {
	for _, text := range []string{"ok", "héllo wörld ✓ 日本語 🙂", strings.Repeat("long reply ", 40), ""} {
		cfg := MockConfig{}
		if text != "" {
			cfg.Replies = []MockReply{{Text: text}}
		}
		req := func(stream func(context.Context, Chunk) error) *Request {
			return &Request{Messages: []*dialog.Message{systemMsg("s"), userMsg("stream me, ünïcode")}, Stream: stream}
		}
		plain := generate(t, openMockModel(t, cfg), req(nil))
		var chunks []string
		streamed := generate(t, openMockModel(t, cfg), req(func(_ context.Context, c Chunk) error {
			chunks = append(chunks, c.Text)
			return nil
		}))
		if streamed.Message.Content != plain.Message.Content || strings.Join(chunks, "") != plain.Message.Content || streamed.Message.Usage != plain.Message.Usage {
			t.Errorf("streamed %q in %q, usage %+v; not streamed %q, usage %+v", streamed.Message.Content, chunks, streamed.Message.Usage, plain.Message.Content, plain.Message.Usage)
		}
		if len(chunks) < 2 {
			t.Errorf("%q arrived in %d chunk(s), want a few", plain.Message.Content, len(chunks))
		}
		for _, c := range chunks {
			if !utf8.ValidString(c) || c == "" {
				t.Errorf("chunk %q of %q is empty or splits a character", c, plain.Message.Content)
			}
		}
	}
}

// TestMockStreamErrorCancels: an error returned by Stream ends the call as ErrCancelled, wrapping that error.
func TestMockStreamErrorCancels(t *testing.T) {
	m := openMockModel(t, MockConfig{Replies: []MockReply{{Text: "a reply long enough to come in pieces"}}})
	stop := errors.New("client went away")
	calls := 0
	pe := generateErr(t, context.Background(), m, &Request{
		Messages: []*dialog.Message{userMsg("hi")},
		Stream:   func(context.Context, Chunk) error { calls++; return stop },
	})
	if pe.Kind != ErrCancelled || !errors.Is(pe, stop) || calls != 1 {
		t.Errorf("error %v (kind %s), Stream called %d times; want ErrCancelled wrapping the stream's error after one chunk", pe, pe.Kind, calls)
	}
}

// countMessages is contextmgr's count of msgs for model.
func countMessages(model string, msgs []*dialog.Message) int {
	tok := contextmgr.NewTokenizer()
	n := 0
	for _, m := range msgs {
		n += tok.CountMessage(model, m)
	}
	return n
}

// TestMockUsageMatchesTokenizer: input tokens are contextmgr's count of the messages sent for the model opened, images and multi-part texts included.
func TestMockUsageMatchesTokenizer(t *testing.T) {
	img := pngImage(t, 1000, 600) // 4 tiles: 765 tokens
	// A text that cl100k_base and o200k_base count differently.
	text := "Привет, мир! Ünïcödé façade — naïve café. 東京都の天気は晴れです。"
	if contextmgr.NewTokenizer().Count("gpt-4", text) == contextmgr.NewTokenizer().Count("gpt-4o", text) {
		t.Fatal("pick a text the two encodings count differently")
	}
	for _, tc := range []struct {
		name, model string
		msgs        []*dialog.Message
	}{
		{"text", "mock/test", []*dialog.Message{systemMsg("You are terse."), userMsg(text)}},
		{"tool round", "mock/test", toolHistory()},
		{"text parts", "mock/test", []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{
			{Type: dialog.PartText, Text: "first part"}, {Type: dialog.PartText, Text: "second part"},
		}}}},
		{"image", "mock/test", []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{
			{Type: dialog.PartText, Text: "What is in this picture?"}, {Type: dialog.PartImage, Image: img},
		}}}},
		{"model with its own encoding", "mock/gpt-4", []*dialog.Message{systemMsg("You are terse."), userMsg(text)}},
	} {
		m, err := Open(context.Background(), tc.model, Config{})
		if err != nil {
			t.Fatal(err)
		}
		msg := generate(t, m, &Request{Messages: tc.msgs}).Message
		if want := countMessages(tc.model, tc.msgs); msg.Usage.InputTokens != want {
			t.Errorf("%s: input tokens %d, want contextmgr's %d", tc.name, msg.Usage.InputTokens, want)
		}
		if want := contextmgr.NewTokenizer().Count(tc.model, msg.Content); msg.Usage.OutputTokens != want {
			t.Errorf("%s: output tokens %d, want contextmgr's %d", tc.name, msg.Usage.OutputTokens, want)
		}
	}
}

// TestMockCostFromConfiguredPrice: a price configured for the mock model, bare or qualified, prices its usage.
func TestMockCostFromConfiguredPrice(t *testing.T) {
	for _, key := range []string{"priced", "mock/priced"} {
		m, err := Open(context.Background(), "mock/priced", Config{Prices: map[string]Price{key: {Input: 3, Output: 15}}})
		if err != nil {
			t.Fatal(err)
		}
		msg := ask(t, m, "How much does this cost?").Message
		want := (float64(msg.Usage.InputTokens)*3 + float64(msg.Usage.OutputTokens)*15) / 1e6
		if msg.USD <= 0 || math.Abs(msg.USD-want) > 1e-12 {
			t.Errorf("price under %q: cost %v, want %v", key, msg.USD, want)
		}
	}
	if msg := ask(t, openMockModel(t, MockConfig{}), "free?").Message; msg.USD != 0 {
		t.Errorf("an unpriced mock costs %v", msg.USD)
	}
}

// TestMockLatency: concurrent calls wait their latency in parallel, and cancelling the context returns promptly as ErrCancelled.
func TestMockLatency(t *testing.T) {
	const latency = 60 * time.Millisecond
	m := openMockModel(t, MockConfig{Latency: latency})
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			resp, err := m.Generate(context.Background(), &Request{Messages: []*dialog.Message{userMsg(fmt.Sprint(i))}})
			if err != nil {
				t.Error(err)
			} else if resp.Latency < latency {
				t.Errorf("latency %v, want at least %v", resp.Latency, latency)
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d < latency || d > 10*latency {
		t.Errorf("20 concurrent calls took %v with a latency of %v", d, latency)
	}
	slow := openMockModel(t, MockConfig{Latency: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start = time.Now()
	pe := generateErr(t, ctx, slow, &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if pe.Kind != ErrCancelled || !errors.Is(pe, context.Canceled) {
		t.Errorf("error %v (kind %s), want ErrCancelled", pe, pe.Kind)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cancelled call returned after %v", d)
	}
}

// TestMockErrorRateOverRequests: rates 0 and 1 are exact, 0.3 fails near 30% of distinct requests, the same ones on every run and in any order, and a retry can succeed.
func TestMockErrorRateOverRequests(t *testing.T) {
	const n = 1000
	req := func(i int) *Request {
		return &Request{Messages: []*dialog.Message{userMsg(fmt.Sprint("question ", i))}}
	}
	failed := func(cfg MockConfig, concurrent bool) []bool {
		m := openMockModel(t, cfg)
		out := make([]bool, n)
		var wg sync.WaitGroup
		for i := range n {
			run := func() {
				_, err := m.Generate(context.Background(), req(i))
				if err != nil && AsError("mock", err).Kind != ErrServer {
					t.Errorf("injected error %v is not a server error", err)
				}
				out[i] = err != nil
			}
			if concurrent {
				wg.Go(run)
			} else {
				run()
			}
		}
		wg.Wait()
		return out
	}
	count := func(fs []bool) (k int) {
		for _, f := range fs {
			if f {
				k++
			}
		}
		return k
	}
	if k := count(failed(MockConfig{ErrorRate: 0}, false)); k != 0 {
		t.Errorf("rate 0: %d of %d failed", k, n)
	}
	if k := count(failed(MockConfig{ErrorRate: 1}, false)); k != n {
		t.Errorf("rate 1: %d of %d failed", k, n)
	}
	cfg := MockConfig{ErrorRate: 0.3, Seed: 11}
	a := failed(cfg, false)
	if k := count(a); k < 250 || k > 350 { // 30% ± 3.5 sd
		t.Errorf("rate 0.3: %d of %d distinct requests failed", k, n)
	}
	if b := failed(cfg, true); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("same seed, run concurrently: different requests failed")
	}
	m := openMockModel(t, cfg)
	for i, f := range a[:50] {
		if !f {
			continue
		}
		for try := 0; ; try++ {
			if _, err := m.Generate(context.Background(), req(i)); err == nil {
				break
			}
			if try > 30 {
				t.Fatalf("request %d never succeeds on retry", i)
			}
		}
	}
}

// TestMockDefaultReplyCoversWholeRequest: requests differing only in seed, model or a tool's schema get different default replies ("a hash of the whole request").
func TestMockDefaultReplyCoversWholeRequest(t *testing.T) {
	m := openMockModel(t, MockConfig{})
	base := func() *Request {
		return &Request{Messages: []*dialog.Message{userMsg("same words")}, Tools: []*dialog.Function{weatherTool(t)}}
	}
	want := generate(t, m, base()).Message.Content
	otherSchema, err := dialog.NewFunctionSchema("get_weather", "Weather in a city.",
		json.RawMessage(`{"type":"object","properties":{"town":{"type":"string"}},"required":["town"]}`),
		func(context.Context, json.RawMessage) (any, error) { return "", nil })
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Request){
		"seed":        func(r *Request) { r.Params.Seed = ptr(7) },
		"model":       func(r *Request) { r.Model = "other" },
		"tool schema": func(r *Request) { r.Tools = []*dialog.Function{otherSchema} },
	} {
		r := base()
		edit(r)
		if got := generate(t, m, r).Message.Content; got == want {
			t.Errorf("request differing in its %s: same default reply %q", name, got)
		}
	}
}

// TestMockYAMLErrors: each bad mock: section of a YAML config gives one error naming the offending key.
func TestMockYAMLErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, key string }{
		{"replys: [{text: hi}]", "replys"},
		{"latency: -50", "latency"},
		{"latency: soon", "latency"},
		{"error_rate: often", "error_rate"},
		{"error_rate: 2", "error_rate"},
		{"seed: 1.5", "seed"},
		{"replies: {text: hi}", "replies"},
		{"replies: [{error: ratelimit}]", "mock.replies.0.error"},
		{"replies: [{error: rate_limit, retry_after: later}]", "retry_after"},
		{"replies: [{text: hi, error: server}]", "error"},
		{"replies: [{tool_calls: [{name: f, arguments: '{\"x\": 1}'}]}]", "arguments"},
		{"rules: [{regex: '(', reply: {text: x}}]", "regex"},
		{"rules: [{reply: {text: x}}]", "match, regex or system"},
		{"rules: [{match: x, times: -1, reply: {text: x}}]", "times"},
		{"rules: [{match: x, times: once, reply: {text: x}}]", "times"},
	} {
		err := loadMockYAML(tc.yaml)
		if err == nil {
			t.Errorf("%s: accepted", tc.yaml)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.key) || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q should be one line naming %q", tc.yaml, msg, tc.key)
		}
	}
	if err := loadMockYAML("latency: 20ms\nseed: 3\nerror_rate: 0.1\nreplies: [{error: rate_limit, retry_after: 2s}, {text: hi}]"); err != nil {
		t.Errorf("a good script: %v", err)
	}
}

// loadMockYAML reads a config whose mock: section is section, as tactics.ProviderConfig and Open do.
func loadMockYAML(section string) error {
	src := "tactic_type: chat\nmock:\n  " + strings.ReplaceAll(section, "\n", "\n  ") + "\n"
	cfg, err := config.Parse("edge.yaml", []byte(src), nil)
	if err != nil {
		return err
	}
	mc := new(MockConfig)
	if err := cfg.DecodeSection("mock", mc); err != nil {
		return err
	}
	_, err = Open(context.Background(), "mock/edge", Config{Mock: mc})
	return err
}

// The mock's reply obeys max_tokens (cut on a word, finish "length") and
// stop words (cut before the first, finish "stop"), streamed or not.
func TestMockLimits(t *testing.T) {
	m := openMockModel(t, MockConfig{Rules: []MockRule{{Match: "tell", Reply: MockReply{Text: "one two three four five six seven eight"}}}})
	ask := func(p Params, stream bool) *Response {
		req := &Request{Messages: []*dialog.Message{userMsg("tell me")}, Params: p}
		if stream {
			req.Stream = func(context.Context, Chunk) error { return nil }
		}
		return generate(t, m, req)
	}
	for _, stream := range []bool{false, true} {
		resp := ask(Params{MaxTokens: ptr(3)}, stream)
		if got := resp.Message.Content; !strings.HasPrefix("one two three four five six seven eight", got) || got == "" ||
			mockTokens(got) > 3 || resp.FinishReason != "length" || resp.Message.Usage.OutputTokens > 3 {
			t.Errorf("max_tokens 3 (stream %v): %q, finish %q, output %d", stream, got, resp.FinishReason, resp.Message.Usage.OutputTokens)
		}
		resp = ask(Params{Stop: []string{" five", " three"}}, stream)
		if resp.Message.Content != "one two" || resp.FinishReason != "stop" {
			t.Errorf("stop words (stream %v): %q, finish %q", stream, resp.Message.Content, resp.FinishReason)
		}
		if resp := ask(Params{}, stream); resp.Message.Content != "one two three four five six seven eight" || resp.FinishReason != "stop" {
			t.Errorf("no limit (stream %v): %q, finish %q", stream, resp.Message.Content, resp.FinishReason)
		}
	}
}

// Asked for a format, the mock's default reply is JSON that follows the
// schema: required properties (or all), values of their types, enums'
// first values; a scripted reply is sent as scripted.
func TestMockAnswersTheFormat(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"},"score":{"type":"integer"},
		"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}},"extra":{"type":"boolean"}},"required":["answer","score","tags"]}`)
	m := openMockModel(t, MockConfig{Rules: []MockRule{{Match: "scripted", Reply: MockReply{Text: "not json"}}}})
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("give json")}, Format: schema})
	if got, want := resp.Message.Content, `{"answer":"mock","score":0,"tags":["a"]}`; got != want {
		t.Errorf("reply %s, want %s", got, want)
	}
	if resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("scripted")}, Format: schema}); resp.Message.Content != "not json" {
		t.Errorf("scripted reply %q", resp.Message.Content)
	}
	if resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("give json")}}); json.Valid([]byte(resp.Message.Content)) {
		t.Errorf("without a format the default reply is text, got %s", resp.Message.Content)
	}
}

// TestMockToolCallIDsUniqueInConversation: a second reply with tool calls
// goes on numbering after the calls already in the conversation.
func TestMockToolCallIDsUniqueInConversation(t *testing.T) {
	m := openMockModel(t, MockConfig{Replies: []MockReply{
		{ToolCalls: []MockToolCall{{Name: "calc", Arguments: map[string]any{"expression": "1+1"}}, {Name: "calc", Arguments: map[string]any{"expression": "2+2"}}}},
		{ToolCalls: []MockToolCall{{Name: "calc", Arguments: map[string]any{"expression": "3+3"}}}},
	}})
	tools := []*dialog.Function{calcTool(t)}
	msgs := []*dialog.Message{userMsg("sums")}
	first := generate(t, m, &Request{Messages: msgs, Tools: tools}).Message
	msgs = append(msgs, &first,
		&dialog.Message{Role: dialog.RoleTool, ToolCallID: first.FunctionCalls[0].ID, Name: "calc", Content: "2"},
		&dialog.Message{Role: dialog.RoleTool, ToolCallID: first.FunctionCalls[1].ID, Name: "calc", Content: "4"})
	second := generate(t, m, &Request{Messages: msgs, Tools: tools}).Message
	var ids []string
	for _, fc := range append(first.FunctionCalls, second.FunctionCalls...) {
		ids = append(ids, fc.ID)
	}
	if fmt.Sprint(ids) != "[call_1 call_2 call_3]" {
		t.Errorf("tool call ids %v, want call_1 call_2 call_3", ids)
	}
}
