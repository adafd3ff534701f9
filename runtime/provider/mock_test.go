package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/tmc/langchaingo/llms"
)

func openMockModel(t *testing.T, cfg MockConfig) Model {
	t.Helper()
	m, err := Open(context.Background(), "mock/test", Config{Mock: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ask(t *testing.T, m Model, text string) *Response {
	t.Helper()
	return generate(t, m, &Request{Messages: []*dialog.Message{systemMsg("sys"), userMsg(text)}})
}

func TestMockDeterministic(t *testing.T) {
	a, b := openMockModel(t, MockConfig{}), openMockModel(t, MockConfig{})
	r1, r2 := ask(t, a, "What is the capital of France?"), ask(t, b, "What is the capital of France?")
	if r1.Message.Content != r2.Message.Content || r1.Message.Usage != r2.Message.Usage {
		t.Errorf("same request, different replies: %q %+v, %q %+v", r1.Message.Content, r1.Message.Usage, r2.Message.Content, r2.Message.Usage)
	}
	if !strings.HasPrefix(r1.Message.Content, "mock reply to: What is the capital of France?") {
		t.Errorf("default reply = %q", r1.Message.Content)
	}
	if again := ask(t, a, "What is the capital of France?"); again.Message.Content != r1.Message.Content {
		t.Errorf("asked twice: %q, then %q", r1.Message.Content, again.Message.Content)
	}
	// Requests that differ only after the first 40 characters, or only in
	// an earlier message, still get different replies.
	long := strings.Repeat("x", 50)
	if ask(t, a, long+"1").Message.Content == ask(t, a, long+"2").Message.Content {
		t.Error("different requests, same reply")
	}
	other := generate(t, a, &Request{Messages: []*dialog.Message{systemMsg("other"), userMsg("What is the capital of France?")}})
	if other.Message.Content == r1.Message.Content {
		t.Error("different system prompts, same reply")
	}
	seeded := openMockModel(t, MockConfig{Seed: 7})
	if ask(t, seeded, "What is the capital of France?").Message.Content == r1.Message.Content {
		t.Error("different seeds, same reply")
	}
	msg := r1.Message
	if msg.Role != dialog.RoleAssistant || msg.Model != "mock/test" || msg.Usage.InputTokens <= 0 || msg.Usage.OutputTokens <= 0 {
		t.Errorf("message = %+v", msg)
	}
	if r1.FinishReason != "stop" {
		t.Errorf("finish reason %q, want stop", r1.FinishReason)
	}
	if want := mockTokens(msg.Content); msg.Usage.OutputTokens != want {
		t.Errorf("output tokens = %d, want %d", msg.Usage.OutputTokens, want)
	}
	if want := mockTokens("sys") + mockTokens("What is the capital of France?") + 2*mockMessageOverhead; msg.Usage.InputTokens != want {
		t.Errorf("input tokens = %d, want %d", msg.Usage.InputTokens, want)
	}
}

func TestMockScriptedRepliesAndRules(t *testing.T) {
	m := openMockModel(t, MockConfig{
		Replies: []MockReply{{Text: "first"}, {Text: "second"}},
		Rules: []MockRule{
			{Match: "weather", Reply: MockReply{Text: "sunny"}},
			{Regex: `^\d+\+\d+$`, Reply: MockReply{Text: "<answer>4</answer>"}},
		},
	})
	for i, tc := range []struct{ ask, want string }{
		{"hello", "first"},
		{"what's the weather?", "sunny"}, // a rule; no reply used
		{"2+2", "<answer>4</answer>"},
		{"hello", "second"},
	} {
		if got := ask(t, m, tc.ask).Message.Content; got != tc.want {
			t.Errorf("%d: %q -> %q, want %q", i, tc.ask, got, tc.want)
		}
	}
	// Replies used up: the default reply.
	if got := ask(t, m, "hello").Message.Content; !strings.HasPrefix(got, "mock reply to: hello") {
		t.Errorf("after the replies: %q", got)
	}
}

func TestMockToolCalls(t *testing.T) {
	m := openMockModel(t, MockConfig{Replies: []MockReply{{ToolCalls: []MockToolCall{
		{Name: "get_weather", Arguments: map[string]any{"city": "Paris", "days": 2}},
		{Name: "get_time"},
	}}}})
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("go")}, Tools: []*dialog.Function{weatherTool(t)}})
	msg := resp.Message
	if msg.Role != dialog.RoleToolCall || len(msg.FunctionCalls) != 2 || resp.FinishReason != "tool_calls" {
		t.Fatalf("message = %+v, finish %q", msg, resp.FinishReason)
	}
	if fc := msg.FunctionCalls[0]; fc.ID != "call_1" || fc.Name != "get_weather" || string(fc.Arguments) != `{"city":"Paris","days":2}` {
		t.Errorf("call 1 = %+v", fc)
	}
	if fc := msg.FunctionCalls[1]; fc.ID != "call_2" || string(fc.Arguments) != "{}" {
		t.Errorf("call 2 = %+v", fc)
	}
}

func TestMockErrorsAreClassified(t *testing.T) {
	m := openMockModel(t, MockConfig{Replies: []MockReply{
		{Error: "rate_limit", RetryAfter: 2 * time.Second},
		{Error: "server"},
		{Error: "overloaded"},
		{Error: "context_length"},
		{Error: "auth"},
		{Error: "bad_request"},
		{Error: "timeout"},
		{Error: "network"},
	}})
	req := &Request{Messages: []*dialog.Message{userMsg("hi")}}
	for _, want := range []struct {
		kind   ErrorKind
		status int
		retry  time.Duration
	}{
		{ErrRateLimit, 429, 2 * time.Second}, {ErrServer, 500, 0}, {ErrServer, 529, 0}, {ErrContextLength, 400, 0},
		{ErrAuth, 401, 0}, {ErrBadRequest, 400, 0}, {ErrTimeout, 0, 0}, {ErrNetwork, 0, 0},
	} {
		pe := generateErr(t, context.Background(), m, req)
		if pe.Kind != want.kind || pe.Status != want.status || pe.Retry != want.retry || pe.Provider != "mock" {
			t.Errorf("error = %v (kind %s, status %d, retry %v), want %s %d %v", pe, pe.Kind, pe.Status, pe.Retry, want.kind, want.status, want.retry)
		}
	}
}

func TestMockConfigErrors(t *testing.T) {
	for name, cfg := range map[string]MockConfig{
		"error name": {Replies: []MockReply{{Error: "nope"}}},
		"rule":       {Rules: []MockRule{{Reply: MockReply{Text: "x"}}}},
		"regex":      {Rules: []MockRule{{Regex: "(", Reply: MockReply{Text: "x"}}}},
		"rate":       {ErrorRate: 1.5},
		"latency":    {Latency: -time.Second},
		"tool name":  {Replies: []MockReply{{ToolCalls: []MockToolCall{{}}}}},
		"arguments":  {Replies: []MockReply{{ToolCalls: []MockToolCall{{Name: "f", Arguments: map[string]any{"c": make(chan int)}}}}}},
	} {
		if _, err := Open(context.Background(), "mock/x", Config{Mock: &cfg}); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
}

func TestMockErrorRate(t *testing.T) {
	outcomes := func(seed int64) string {
		m := openMockModel(t, MockConfig{ErrorRate: 0.3, Seed: seed})
		var b strings.Builder
		for i := range 200 {
			_, err := m.Generate(context.Background(), &Request{Messages: []*dialog.Message{userMsg(fmt.Sprint("q", i%100))}})
			switch {
			case err == nil:
				b.WriteByte('.')
			case AsError("mock", err).Kind == ErrServer:
				b.WriteByte('x')
			default:
				t.Fatalf("unexpected error %v", err)
			}
		}
		return b.String()
	}
	a := outcomes(1)
	if b := outcomes(1); a != b {
		t.Errorf("same seed, different failures:\n%s\n%s", a, b)
	}
	if c := outcomes(2); a == c {
		t.Error("different seeds, same failures")
	}
	if n := strings.Count(a, "x"); n < 30 || n > 90 {
		t.Errorf("%d of 200 calls failed at rate 0.3", n)
	}
	// A retried request is a new draw: request q0 (asked twice) need not
	// fail both times.
	if strings.Count(a[:100], "x") == strings.Count(a, "x") {
		t.Error("no failures among repeated requests")
	}
}

func TestMockConcurrent(t *testing.T) {
	const n = 64
	replies := make([]MockReply, n)
	for i := range replies {
		replies[i] = MockReply{Text: fmt.Sprint("reply ", i)}
	}
	m := openMockModel(t, MockConfig{Replies: replies})
	var (
		mu   sync.Mutex
		seen = map[string]int{}
		wg   sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := m.Generate(context.Background(), &Request{Messages: []*dialog.Message{userMsg(fmt.Sprint("q", i))}})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[resp.Message.Content]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct replies to %d calls, want each scripted reply once", len(seen), n)
	}
	for text, k := range seen {
		if k != 1 {
			t.Errorf("%q answered %d times", text, k)
		}
	}
}

func TestMockLatencyRespectsContext(t *testing.T) {
	m := openMockModel(t, MockConfig{Latency: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	pe := generateErr(t, ctx, m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if pe.Kind != ErrTimeout {
		t.Errorf("kind = %s (%v)", pe.Kind, pe)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %v", d)
	}
	fast := openMockModel(t, MockConfig{Latency: 20 * time.Millisecond})
	if resp := ask(t, fast, "hi"); resp.Latency < 20*time.Millisecond {
		t.Errorf("latency = %v, want at least 20ms", resp.Latency)
	}
}

func TestMockStreamingAndImages(t *testing.T) {
	m := openMockModel(t, MockConfig{Replies: []MockReply{{Text: "a streamed mock reply, in pieces"}}})
	img, err := dialog.ImageBytes([]byte("GIF89a\x01\x00\x01\x00")).Load()
	if err != nil {
		t.Fatal(err)
	}
	var chunks []string
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{
			{Type: dialog.PartText, Text: "look"}, {Type: dialog.PartImage, Image: img},
		}}},
		Stream: func(ctx context.Context, c Chunk) error { chunks = append(chunks, c.Text); return nil },
	})
	if len(chunks) < 2 || strings.Join(chunks, "") != resp.Message.Content || resp.Message.Content != "a streamed mock reply, in pieces" {
		t.Errorf("chunks %q, reply %q", chunks, resp.Message.Content)
	}
}

func TestMockConfigFromJSON(t *testing.T) {
	var cfg MockConfig
	err := json.Unmarshal([]byte(`{"replies":[{"text":"hi","tool_calls":[{"name":"f","arguments":{"x":1}}]},{"error":"rate_limit","retry_after":1000000000}],
		"rules":[{"match":"a","reply":{"text":"b"}}],"error_rate":0.1,"seed":3,"latency":1000}`), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Replies) != 2 || cfg.Replies[0].ToolCalls[0].Arguments["x"] != 1.0 || cfg.Replies[1].RetryAfter != time.Second ||
		cfg.Rules[0].Reply.Text != "b" || cfg.ErrorRate != 0.1 || cfg.Seed != 3 || cfg.Latency != time.Microsecond {
		t.Errorf("decoded %+v", cfg)
	}
}

// A scripted reply may come with reasoning: it is the message's one
// unsigned reasoning block, counted in the output and reasoning tokens,
// and never streamed as text; with an error, the reply is refused.
func TestMockReasoning(t *testing.T) {
	m := openMockModel(t, MockConfig{Replies: []MockReply{{Text: "42", Reasoning: "six times seven"}}})
	var streamed strings.Builder
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("6*7?")},
		Stream: func(_ context.Context, c Chunk) error { streamed.WriteString(c.Text); return nil }})
	msg := resp.Message
	if msg.Content != "42" || len(msg.Reasoning) != 1 || msg.Reasoning[0] != (dialog.Reasoning{Text: "six times seven"}) {
		t.Fatalf("reply %q, reasoning %+v", msg.Content, msg.Reasoning)
	}
	want := mockTokens("six times seven")
	if msg.Usage.ReasoningTokens != want || msg.Usage.OutputTokens != mockTokens("42")+want {
		t.Errorf("usage %+v, want %d reasoning tokens among the output", msg.Usage, want)
	}
	if streamed.String() != "42" {
		t.Errorf("streamed %q, want the text alone", streamed.String())
	}
	if err := loadMockYAML(`replies: [{error: server, reasoning: hmm}]`); err == nil || !strings.Contains(err.Error(), "error") {
		t.Errorf("an error reply with reasoning: %v, want refused", err)
	}
	if err := loadMockYAML(`replies: [{text: "42", reasoning: "six times seven"}]`); err != nil {
		t.Errorf("a reply with reasoning from YAML: %v", err)
	}
}

// TestMockInputTokensRemembered checks that the mock's input usage is the
// same whether a request's texts were counted before or not, and that a
// conversation's earlier messages are not tokenized again.
func TestMockInputTokensRemembered(t *testing.T) {
	m, err := Open(context.Background(), "mock/gpt-4o", Config{Mock: &MockConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	tok := contextmgr.NewTokenizer()
	msgs := []*dialog.Message{systemMsg("You count carefully.")}
	for i := range 30 {
		msgs = append(msgs, userMsg(fmt.Sprintf("turn %d: %s", i, strings.Repeat("word ", i))))
		want := 0
		for _, msg := range msgs {
			want += tok.CountMessage("mock/gpt-4o", msg)
		}
		before := mockTokenizer.Stats().Texts
		resp := generate(t, m, &Request{Messages: msgs})
		if got := resp.Message.Usage.InputTokens; got != want {
			t.Fatalf("turn %d: input tokens %d, want %d", i, got, want)
		}
		// The new user message, the previous reply (new as input) and
		// the new reply's text: nothing earlier.
		if n := mockTokenizer.Stats().Texts - before; n > 3 {
			t.Errorf("turn %d: %d texts tokenized for one new message", i, n)
		}
		msgs = append(msgs, &resp.Message)
	}
}

// The mock cuts a reply over max_tokens at the longest prefix of whole
// words within the limit, as counting word by word would, for every
// limit; and it counts a few prefixes to find it, not one per word.
func TestMockLimitLongestPrefix(t *testing.T) {
	m, err := NewMock(MockConfig{})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("the quick brown fox jumps over the lazy dog; ", 30)
	words := strings.SplitAfter(text, " ")
	for _, limit := range []int{1, 2, 7, 50, 133, mockTokens(text) - 1} {
		want := ""
		for _, w := range words {
			if mockTokens(want+w) > limit {
				break
			}
			want += w
		}
		before := mockTokenizer.Stats().Calls
		got, why := m.limit(text, llms.CallOptions{MaxTokens: limit})
		if got != want || why != "length" {
			t.Errorf("max_tokens %d: cut at %d bytes (%q), want %d (%q)", limit, len(got), why, len(want), "length")
		}
		if calls := mockTokenizer.Stats().Calls - before; calls > 20 {
			t.Errorf("max_tokens %d: %d counts for a reply of %d words", limit, calls, len(words))
		}
	}
}

// A Mock with an error rate sent ever new requests keeps a bounded
// memory of them, and still fails exactly the calls it would with an
// unbounded one, for every request made again within the last
// mockSeenLimit distinct ones (retries and samples).
func TestMockSeenIsBounded(t *testing.T) {
	m, err := NewMock(MockConfig{ErrorRate: 0.5, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	// want is injectError with an unbounded count, as the Mock had.
	counts := map[uint64]uint64{}
	want := func(h uint64) bool {
		n := counts[h]
		counts[h]++
		return m.fails(h, n)
	}
	const distinct = 3 * mockSeenLimit
	for i := range uint64(distinct) {
		h := i * 0x9e3779b97f4a7c15
		// Each request is retried at once, and made again a while later.
		for _, h := range []uint64{h, h, h} {
			if got, w := m.injectError(h), want(h); got != w {
				t.Fatalf("request %d: failed %v, an unbounded count says %v", i, got, w)
			}
		}
		if i >= 1000 {
			old := (i - 1000) * 0x9e3779b97f4a7c15
			if got, w := m.injectError(old), want(old); got != w {
				t.Fatalf("request %d again after 1000 others: failed %v, an unbounded count says %v", i-1000, got, w)
			}
		}
	}
	m.mu.Lock()
	held := len(m.seen) + len(m.older)
	m.mu.Unlock()
	if held > 2*mockSeenLimit {
		t.Errorf("after %d distinct requests the Mock remembers %d, want at most %d", distinct, held, 2*mockSeenLimit)
	}
}

// TestMockCountsToolDeclarations: the mock's input tokens include what the
// request's tool declarations cost, as a context manager counts them
// (contextmgr.Tokenizer.CountTools), as a real provider's usage does.
func TestMockCountsToolDeclarations(t *testing.T) {
	search, err := dialog.NewFunctionSchema("search", "Search the web for pages about a query and return the ten best.",
		json.RawMessage(`{"type": "object", "properties": {"query": {"type": "string", "description": "what to look for"}}, "required": ["query"]}`),
		func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	tools := []*dialog.Function{weatherTool(t), search}
	msgs := []*dialog.Message{systemMsg("sys"), userMsg("What is the weather in Paris?")}
	for _, name := range []string{"mock/test", "mock/gpt-4"} {
		m, err := Open(t.Context(), name, Config{Mock: &MockConfig{}})
		if err != nil {
			t.Fatal(err)
		}
		bare := generate(t, m, &Request{Messages: msgs}).Message.Usage.InputTokens
		with := generate(t, m, &Request{Messages: msgs, Tools: tools}).Message.Usage.InputTokens
		want := contextmgr.NewTokenizer().CountTools(name, tools)
		if want == 0 || with-bare != want {
			t.Errorf("%s: input tokens %d with the tools, %d without: the tools counted %d, want %d (contextmgr's count)", name, with, bare, with-bare, want)
		}
	}
}
