package provider

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
)

// MockConfig scripts the mock provider ("mock/NAME").
//
// For each call the mock answers with, in order of precedence: an
// injected error (see ErrorRate); the first rule matching the call (see
// MockRule); the next of Replies not yet used; else a default reply,
// "mock reply to: " and the first 40 characters of the last user message,
// followed by a hash of the whole request in brackets. Replies are used
// once each, in order, per opened model; once they run out, the default
// reply answers. A request that asks for a format (a JSON schema) gets, by
// default, a small JSON value that follows it. Any reply is cut as a
// model's would be: before the first of the request's stop words (finish
// reason "stop") and to its max_tokens (on a word; finish reason
// "length").
//
// Usage is counted with the tokenizer, and priced like the model the mock
// is named after: "mock/gpt-4o-mini" costs what gpt-4o-mini would, so
// budgets and cost columns can be tried offline, while a name no price
// table knows ("mock/demo") costs nothing.
//
// In a config's mock section (config.Config.DecodeSection), a duration is
// text such as "50ms" or a number of seconds; in JSON, nanoseconds.
// docs/mock.md describes that section, with examples.
type MockConfig struct {
	// Replies are answered in order, one per call that no rule matches.
	Replies []MockReply `json:"replies,omitempty" yaml:"replies,omitempty"`
	// Rules answer the calls they match, the first matching rule first.
	Rules []MockRule `json:"rules,omitempty" yaml:"rules,omitempty"`
	// Latency is how long each call takes; the call's context cuts it
	// short.
	Latency time.Duration `json:"latency,omitempty" yaml:"latency,omitempty"`
	// ErrorRate is the fraction of calls, from 0 to 1, that fail with a
	// server error (HTTP 500). Which calls fail is decided by a hash of
	// Seed, the request and how many times that same request was made
	// before, so a run is reproducible and a retried request may succeed.
	// A Mock remembers at least the last 65,536 distinct requests: one
	// made again after that many others counts from zero.
	ErrorRate float64 `json:"error_rate,omitempty" yaml:"error_rate,omitempty"`
	// Seed changes the default replies and which calls ErrorRate fails.
	Seed int64 `json:"seed,omitempty" yaml:"seed,omitempty"`
}

// MockReply is one scripted answer: text, tool calls, or an error.
type MockReply struct {
	Text      string         `json:"text,omitempty" yaml:"text,omitempty"`
	ToolCalls []MockToolCall `json:"tool_calls,omitempty" yaml:"tool_calls,omitempty"`
	// Reasoning is the reasoning the reply comes with (Message.Reasoning,
	// one unsigned block), counted in its output and reasoning tokens.
	Reasoning string `json:"reasoning,omitempty" yaml:"reasoning,omitempty"`
	// Error, when set, fails the call the way the provider would:
	// "rate_limit" (HTTP 429), "server" (500), "overloaded" (529),
	// "context_length" (400, context_length_exceeded), "auth" (401),
	// "bad_request" (400), "timeout", or "network" (no response: the
	// connection was refused).
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
	// RetryAfter is the Retry-After of a "rate_limit" error.
	RetryAfter time.Duration `json:"retry_after,omitempty" yaml:"retry_after,omitempty"`
}

// MockToolCall is a tool call in a scripted reply. Calls get the ids
// "call_1", "call_2", ... in the order of the conversation, so that each
// is unique in it.
type MockToolCall struct {
	Name      string         `json:"name" yaml:"name"`
	Arguments map[string]any `json:"arguments,omitempty" yaml:"arguments,omitempty"`
}

// MockRule answers the calls whose last user message contains Match and
// matches the regular expression Regex, and whose system message contains
// System: the conditions set must all hold. System tells agents apart when
// they receive the same message. A rule with none of them and Times set
// answers the first Times calls, whatever they are.
type MockRule struct {
	Match  string `json:"match,omitempty" yaml:"match,omitempty"`
	Regex  string `json:"regex,omitempty" yaml:"regex,omitempty"`
	System string `json:"system,omitempty" yaml:"system,omitempty"`
	// Times, when positive, is how many calls the rule answers, per
	// opened model; after that it matches none, and the next rule or
	// reply answers. A rule that fails once and then lets a later rule
	// answer scripts a retry. A run opens its models, but the samples
	// of a sweep's cell share theirs: there, Times counts the calls of
	// all of them.
	Times int       `json:"times,omitempty" yaml:"times,omitempty"`
	Reply MockReply `json:"reply" yaml:"reply"`
}

// mockErrors are the errors a reply can script, as the providers' HTTP
// APIs report them.
var mockErrors = map[string]struct {
	status int
	msg    string
}{
	"rate_limit":     {429, "Rate limit reached for requests (mock)"},
	"server":         {500, "The server had an error while processing your request (mock)"},
	"overloaded":     {529, "Overloaded (mock)"},
	"context_length": {400, "This model's maximum context length is 128000 tokens; your messages are longer (context_length_exceeded, mock)"},
	"auth":           {401, "Incorrect API key provided (mock)"},
	"bad_request":    {400, "Invalid request (mock)"},
	"timeout":        {},
	"network":        {},
}

// Mock is a deterministic, scriptable langchaingo llms.Model: opened as
// "mock/NAME", it goes through the same Adapter as the real providers.
// Its usage counts tokens with the contextmgr tokenizer: input is every
// message and the tools' declarations, output the reply. It accepts tools
// (a reply may call them), images (ignored) and streaming (a scripted
// reply's reasoning, then its text, arrive in a few chunks each).
// A Mock is safe for concurrent use.
type Mock struct {
	cfg   MockConfig
	model string // "mock/NAME", for the encoding usage is counted with
	rules []mockRule
	next  atomic.Int64 // index of the next scripted reply

	mu          sync.Mutex
	seen, older map[uint64]uint64 // times each recent request was made, for ErrorRate (see count)
}

// mockSeenLimit is how many distinct requests a Mock's seen holds before
// it becomes older, so that a long-lived process does not keep an entry
// for every request it was ever sent.
const mockSeenLimit = 1 << 16

type mockRule struct {
	match, system string
	re            *regexp.Regexp
	times         int64
	used          *atomic.Int64 // calls answered, when times is set
	reply         MockReply
}

// NewMock returns a Mock scripted by cfg, or an error saying what in cfg
// is wrong (every problem Check finds).
func NewMock(cfg MockConfig) (*Mock, error) {
	rules, errs := cfg.compile()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Mock{cfg: cfg, rules: rules, seen: map[uint64]uint64{}}, nil
}

// MockProblem is a problem of a MockConfig: the setting at Path, such as
// ["rules", "0", "times"], under the config's mock section.
type MockProblem struct {
	Path []string
	Msg  string
}

func (p *MockProblem) Error() string { return "mock." + strings.Join(p.Path, ".") + ": " + p.Msg }

// Check returns every problem of c, each a *MockProblem, in the order of
// its settings; none when a Mock can be made of it.
func (c MockConfig) Check() []error {
	_, errs := c.compile()
	return errs
}

// compile checks c, as Check does, and makes its rules, each regex
// compiled once.
func (c MockConfig) compile() (rules []mockRule, errs []error) {
	add := func(msg string, path ...string) { errs = append(errs, &MockProblem{Path: path, Msg: msg}) }
	if !(c.ErrorRate >= 0 && c.ErrorRate <= 1) {
		add(fmt.Sprintf("%v is not between 0 and 1", c.ErrorRate), "error_rate")
	}
	if c.Latency < 0 {
		add(fmt.Sprintf("%v is negative", c.Latency), "latency")
	}
	for i, r := range c.Rules {
		at := func(key ...string) []string { return append([]string{"rules", strconv.Itoa(i)}, key...) }
		if r.Match == "" && r.Regex == "" && r.System == "" && r.Times == 0 {
			add("set match, regex or system, or times for the first calls whatever they are", at()...)
		}
		if r.Times < 0 {
			add(fmt.Sprintf("%d is negative: leave it out for a rule that always answers", r.Times), at("times")...)
		}
		rule := mockRule{match: r.Match, system: r.System, times: int64(r.Times), reply: r.Reply}
		if r.Times > 0 {
			rule.used = new(atomic.Int64)
		}
		if r.Regex != "" {
			var err error
			if rule.re, err = regexp.Compile(r.Regex); err != nil {
				add(err.Error(), at("regex")...)
			}
		}
		for _, p := range r.Reply.check() {
			add(p.Msg, append(at("reply"), p.Path...)...)
		}
		rules = append(rules, rule)
	}
	for i, r := range c.Replies {
		for _, p := range r.check() {
			add(p.Msg, append([]string{"replies", strconv.Itoa(i)}, p.Path...)...)
		}
	}
	return rules, errs
}

// check returns the problems of r, at paths within it.
func (r MockReply) check() []MockProblem {
	var out []MockProblem
	if r.Error != "" && (r.Text != "" || len(r.ToolCalls) > 0 || r.Reasoning != "") {
		out = append(out, MockProblem{[]string{"error"}, fmt.Sprintf("%q with text, tool_calls or reasoning: a reply is one or the other", r.Error)})
	} else if r.Error != "" {
		if _, ok := mockErrors[r.Error]; !ok {
			names := slices.Sorted(maps.Keys(mockErrors))
			out = append(out, MockProblem{[]string{"error"}, fmt.Sprintf("unknown error %q (want one of %s)", r.Error, strings.Join(names, ", "))})
		}
	}
	if r.RetryAfter < 0 {
		out = append(out, MockProblem{[]string{"retry_after"}, fmt.Sprintf("%v is negative", r.RetryAfter)})
	}
	for j, tc := range r.ToolCalls {
		at := []string{"tool_calls", strconv.Itoa(j)}
		if tc.Name == "" {
			out = append(out, MockProblem{append(at, "name"), "missing: the tool to call"})
		}
		if _, err := json.Marshal(tc.Arguments); err != nil {
			out = append(out, MockProblem{append(at, "arguments"), err.Error()})
		}
	}
	return out
}

// Call implements llms.Model.
func (m *Mock) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// GenerateContent implements llms.Model: it answers messages as
// MockConfig describes.
func (m *Mock) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("mock: %w", err)
	}
	h := m.hash(messages, opts)
	if m.cfg.Latency > 0 {
		t := time.NewTimer(m.cfg.Latency)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("mock: %w", ctx.Err())
		case <-t.C:
		}
	}
	if m.cfg.ErrorRate > 0 && m.injectError(h) {
		return nil, mockError(ctx, MockReply{Error: "server"})
	}
	last := textOf(messages, llms.ChatMessageTypeHuman)
	afterTools := len(messages) > 0 && messages[len(messages)-1].Role == llms.ChatMessageTypeTool
	reply, ok := m.scripted(messages, last, afterTools)
	if !ok {
		reply = MockReply{Text: m.defaultText(last, h)}
		if st := callStateFrom(ctx); st != nil && len(st.format) > 0 {
			reply.Text = schemaInstance(st.format)
		}
	}
	if reply.Error != "" {
		return nil, mockError(ctx, reply)
	}
	stop := ""
	reply.Text, stop = m.limit(reply.Text, opts)
	if opts.StreamingReasoningFunc != nil && reply.Reasoning != "" {
		for _, chunk := range chunks(reply.Reasoning, 4) {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("mock: %w", err)
			}
			if err := opts.StreamingReasoningFunc(ctx, []byte(chunk), nil); err != nil {
				return nil, fmt.Errorf("mock: streaming func returned an error: %w", err)
			}
		}
	}
	if opts.StreamingFunc != nil && reply.Text != "" {
		for _, chunk := range chunks(reply.Text, 4) {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("mock: %w", err)
			}
			if err := opts.StreamingFunc(ctx, []byte(chunk)); err != nil {
				return nil, fmt.Errorf("mock: streaming func returned an error: %w", err)
			}
		}
	}
	resp := m.response(reply, messages, opts.Tools)
	if stop != "" {
		resp.Choices[0].StopReason = stop
	}
	return resp, nil
}

// limit cuts text as the request's stop words and max_tokens would cut a
// model's reply, and says why ("stop" or "length"; "" when uncut).
func (m *Mock) limit(text string, opts llms.CallOptions) (string, string) {
	why := ""
	for _, w := range opts.StopWords {
		if i := strings.Index(text, w); w != "" && i >= 0 {
			text, why = text[:i], "stop"
		}
	}
	if opts.MaxTokens > 0 && m.tokens(text) > opts.MaxTokens {
		// The longest prefix of whole words within the limit, found by
		// bisection (a prefix has no fewer tokens than a shorter one):
		// a few counts, not one per word.
		ends := []int{0}
		for i, w := range strings.SplitAfter(text, " ") {
			ends = append(ends, ends[i]+len(w))
		}
		k := sort.Search(len(ends), func(k int) bool { return m.tokens(text[:ends[k]]) > opts.MaxTokens }) - 1
		text, why = text[:ends[k]], "length"
	}
	return text, why
}

// schemaInstance is a small JSON value that the JSON schema follows:
// every required property (every property, when none is required) with a
// value of its type, an enum's first value, an array's single item.
func schemaInstance(schema json.RawMessage) string {
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil {
		return "{}"
	}
	b, err := json.Marshal(instanceOf(s, 0))
	if err != nil {
		return "{}"
	}
	return string(b)
}

func instanceOf(s map[string]any, depth int) any {
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	if c, ok := s["const"]; ok {
		return c
	}
	typ, _ := s["type"].(string)
	if ts, ok := s["type"].([]any); ok && len(ts) > 0 {
		typ, _ = ts[0].(string)
	}
	if depth > 8 {
		return nil
	}
	switch typ {
	case "string":
		return "mock"
	case "integer", "number":
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	case "array":
		item, _ := s["items"].(map[string]any)
		if item == nil {
			return []any{}
		}
		return []any{instanceOf(item, depth+1)}
	}
	props, _ := s["properties"].(map[string]any)
	out := map[string]any{}
	names := slices.Sorted(maps.Keys(props))
	if req, ok := s["required"].([]any); ok && len(req) > 0 {
		names = names[:0]
		for _, r := range req {
			if n, ok := r.(string); ok {
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		out[n] = instanceOf(p, depth+1)
	}
	return out
}

// scripted picks the reply for a call of messages, whose last user
// message is last. Right after tool results, a rule that asks for tool
// calls does not answer: it answered the user's message already, and
// would loop.
func (m *Mock) scripted(messages []llms.MessageContent, last string, afterTools bool) (MockReply, bool) {
	system, systemRead := "", false
	for _, r := range m.rules {
		if afterTools && len(r.reply.ToolCalls) > 0 {
			continue
		}
		if r.match != "" && !strings.Contains(last, r.match) {
			continue
		}
		if r.re != nil && !r.re.MatchString(last) {
			continue
		}
		if r.system != "" {
			if !systemRead {
				system, systemRead = textOf(messages, llms.ChatMessageTypeSystem), true
			}
			if !strings.Contains(system, r.system) {
				continue
			}
		}
		if r.used != nil && r.used.Add(1) > r.times {
			continue
		}
		return r.reply, true
	}
	if len(m.cfg.Replies) > 0 {
		if i := m.next.Add(1) - 1; i < int64(len(m.cfg.Replies)) {
			return m.cfg.Replies[i], true
		}
	}
	return MockReply{}, false
}

// count returns how many times request h was made before, and counts
// this time. It remembers the last mockSeenLimit to 2*mockSeenLimit
// distinct requests: those since seen was last emptied, and those of the
// generation before (older). A retry, or the same request of another
// sample, comes long before its count is forgotten.
func (m *Mock) count(h uint64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.seen[h]
	if !ok {
		n = m.older[h]
		if len(m.seen) >= mockSeenLimit {
			m.older, m.seen = m.seen, make(map[uint64]uint64, len(m.seen))
		}
	}
	m.seen[h] = n + 1
	return n
}

// injectError decides whether this occurrence of request h fails.
func (m *Mock) injectError(h uint64) bool { return m.fails(h, m.count(h)) }

// fails decides whether occurrence n (from 0) of request h fails: a hash
// of the seed, the request and n, below the error rate.
func (m *Mock) fails(h, n uint64) bool {
	f := fnv.New64a()
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(m.cfg.Seed))
	binary.LittleEndian.PutUint64(b[8:], h)
	binary.LittleEndian.PutUint64(b[16:], n)
	f.Write(b[:])
	return float64(f.Sum64()>>11)/(1<<53) < m.cfg.ErrorRate
}

func (m *Mock) defaultText(last string, h uint64) string {
	preview := last
	if utf8.RuneCountInString(preview) > 40 {
		preview = string([]rune(preview)[:40])
	}
	preview = strings.Join(strings.Fields(preview), " ")
	return fmt.Sprintf("mock reply to: %s [%08x]", preview, uint32(h^h>>32))
}

// hash is a hash of the seed and everything the request sends.
func (m *Mock) hash(messages []llms.MessageContent, opts llms.CallOptions) uint64 {
	f := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(m.cfg.Seed))
	f.Write(b[:])
	sep := []byte{0}
	write := func(s string) {
		f.Write([]byte(s))
		f.Write(sep)
	}
	for _, mc := range messages {
		write(string(mc.Role))
		for _, p := range mc.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				write("t")
				write(p.Text)
			case llms.ImageURLContent:
				write("i")
				write(p.URL)
			case llms.BinaryContent:
				write("b")
				f.Write(p.Data)
			case llms.ToolCall:
				write("c")
				write(p.ID)
				if p.FunctionCall != nil {
					write(p.FunctionCall.Name)
					write(p.FunctionCall.Arguments)
				}
			case llms.ToolCallResponse:
				write("r")
				write(p.ToolCallID)
				write(p.Content)
			}
		}
	}
	for _, t := range opts.Tools {
		if t.Function != nil {
			write("f")
			write(t.Function.Name)
			write(t.Function.Description)
			params, _ := json.Marshal(t.Function.Parameters)
			f.Write(params)
			f.Write(sep)
		}
	}
	if opts.Model != "" {
		write("m")
		write(opts.Model)
	}
	if opts.Seed != 0 {
		write("s")
		write(strconv.Itoa(opts.Seed))
	}
	return f.Sum64()
}

// response builds the langchaingo response for reply to messages, sent
// with tools.
func (m *Mock) response(reply MockReply, messages []llms.MessageContent, tools []llms.Tool) *llms.ContentResponse {
	choice := &llms.ContentChoice{Content: reply.Text, ReasoningContent: reply.Reasoning, StopReason: "stop"}
	reasoning := m.tokens(reply.Reasoning)
	out := m.tokens(reply.Text) + reasoning
	// Ids go on from the calls already in the conversation, so that each
	// is unique in it, as a provider's are.
	earlier := 0
	for _, mc := range messages {
		for _, p := range mc.Parts {
			if _, ok := p.(llms.ToolCall); ok {
				earlier++
			}
		}
	}
	for i, tc := range reply.ToolCalls {
		args := []byte("{}")
		if tc.Arguments != nil {
			// Checked by NewMock; a map encodes with sorted keys.
			args, _ = json.Marshal(tc.Arguments)
		}
		choice.ToolCalls = append(choice.ToolCalls, llms.ToolCall{
			ID:           fmt.Sprintf("call_%d", earlier+i+1),
			Type:         "function",
			FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: string(args)},
		})
		out += m.tokens(tc.Name) + m.tokens(string(args))
	}
	choice.StopReason = "stop" // as OpenAI's models say it
	if len(choice.ToolCalls) > 0 {
		choice.StopReason = "tool_calls"
		choice.FuncCall = choice.ToolCalls[0].FunctionCall
	}
	in := m.toolTokens(tools)
	for _, mc := range messages {
		in += contextmgr.MessageOverhead
		var texts []string
		for _, p := range mc.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				if p.Text != "" {
					texts = append(texts, p.Text)
				}
			case llms.ImageURLContent:
				in += imageTokens(&dialog.Image{URL: p.URL})
			case llms.BinaryContent:
				in += imageTokens(&dialog.Image{Data: p.Data, MIME: p.MIMEType})
			case llms.ToolCall:
				if p.FunctionCall != nil {
					in += m.tokens(p.FunctionCall.Name) + m.tokens(p.FunctionCall.Arguments)
				}
			case llms.ToolCallResponse:
				in += m.tokens(p.Content)
			}
		}
		in += m.tokens(strings.Join(texts, "\n")) // as dialog.Message.Text joins them
	}
	choice.GenerationInfo = map[string]any{
		"PromptTokens":     in,
		"CompletionTokens": out,
		"TotalTokens":      in + out,
	}
	if reasoning > 0 {
		choice.GenerationInfo["ReasoningTokens"] = reasoning
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}
}

// toolTokens is what the declarations of tools cost, by the rule of
// contextmgr.Tokenizer.CountTools: for each, its name, description and
// parameter schema (the JSON sent) and contextmgr.MessageOverhead.
func (m *Mock) toolTokens(tools []llms.Tool) int {
	n := 0
	for _, t := range tools {
		f := t.Function
		if f == nil {
			continue
		}
		schema, ok := f.Parameters.(json.RawMessage)
		if !ok {
			schema, _ = json.Marshal(f.Parameters) // a decoded schema
		}
		n += contextmgr.MessageOverhead + m.tokens(f.Name) + m.tokens(f.Description) + m.tokens(string(schema))
	}
	return n
}

// mockError fails a call as the provider's HTTP API would: through the
// call's transport record (status and Retry-After) and an error in
// langchaingo's words.
func mockError(ctx context.Context, r MockReply) error {
	switch r.Error {
	case "timeout":
		return fmt.Errorf("mock: request timeout: %w", context.DeadlineExceeded)
	case "network":
		if st := callStateFrom(ctx); st != nil {
			st.mu.Lock()
			st.status, st.retry = 0, 0
			st.failed = errors.New("POST mock: connect: connection refused (mock)")
			st.mu.Unlock()
		}
		return errors.New("network error: failed to reach API server")
	}
	e, ok := mockErrors[r.Error]
	if !ok {
		return errors.New("mock: " + r.Error)
	}
	if st := callStateFrom(ctx); st != nil {
		st.mu.Lock()
		st.status, st.retry = e.status, r.RetryAfter
		st.mu.Unlock()
	}
	return fmt.Errorf("API returned unexpected status code: %d: %s", e.status, e.msg)
}

// textOf is the text of the last message of role.
func textOf(messages []llms.MessageContent, role llms.ChatMessageType) string {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role != role {
			continue
		}
		var b strings.Builder
		for _, p := range messages[i].Parts {
			if t, ok := p.(llms.TextContent); ok {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(t.Text)
			}
		}
		return b.String()
	}
	return ""
}

// chunks splits s into at most n pieces on rune boundaries.
func chunks(s string, n int) []string {
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}
