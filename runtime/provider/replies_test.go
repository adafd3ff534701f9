package provider

// The openai and anthropic paths at their edges: refusals, replies cut at
// max tokens, streamed usage, error events inside a stream, reasoning
// models, and what reaches the wire. A case the
// providertest servers cannot express is answered by a rawServer with the
// exact body the provider sends.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
	"github.com/tmc/langchaingo/llms/openai"
)

// rawServer answers every request with one status and body (as
// server-sent events when the body starts with "event:" or "data:").
type rawServer struct {
	*httptest.Server
}

func newRawServer(t *testing.T, status int, body string) *rawServer {
	t.Helper()
	s := &rawServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		ct := "application/json"
		if strings.HasPrefix(body, "event:") || strings.HasPrefix(body, "data:") {
			ct = "text/event-stream"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// openRaw opens name against s (Open adds anthropic's /v1 itself).
func openRaw(t *testing.T, name string, s *rawServer) Model {
	t.Helper()
	base := s.URL
	if strings.HasPrefix(name, "openai/") {
		base += "/v1"
	}
	m, err := Open(context.Background(), name, Config{BaseURL: base, APIKey: "sk-test"})
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	return m
}

// openAIDirect is an adapter over langchaingo's openai client with our
// transport, as Open builds it for api.openai.com (which a test cannot
// reach), so legacy sets LegacyMaxTokens freely.
func openAIDirect(t *testing.T, model string, srv *providertest.Server, legacy bool) Model {
	t.Helper()
	llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(srv.BaseURL()), openai.WithModel(model),
		openai.WithHTTPClient(wrapClient(nil, &transport{})))
	if err != nil {
		t.Fatal(err)
	}
	return NewAdapter(llm, AdapterConfig{Provider: "openai", Model: model, LegacyMaxTokens: legacy})
}

// generateSafely is generate that turns a panic into a test failure.
func generateSafely(t *testing.T, m Model, req *Request) (resp *Response, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("Generate panicked: %v", p)
			resp, err = nil, nil
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return m.Generate(ctx, req)
}

func usd(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func collect(chunks *[]string) func(context.Context, Chunk) error {
	return func(_ context.Context, c Chunk) error { *chunks = append(*chunks, c.Text); return nil }
}

// --- OpenAI ---

// TestOpenAIStreamedUsageDetails checks that a streamed reply asks for usage and takes cached and reasoning tokens from its last chunk.
func TestOpenAIStreamedUsageDetails(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{
		Text:  "Cached and streamed.",
		Usage: providertest.Usage{Input: 1000, Cached: 600, Output: 400, Reasoning: 250},
	})
	m := openFake(t, "openai/gpt-4o-mini", srv)
	var chunks []string
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")}, Stream: collect(&chunks)})
	body := srv.LastRequest().JSON()
	if opts, _ := body["stream_options"].(map[string]any); body["stream"] != true || opts["include_usage"] != true {
		t.Errorf("stream %v, stream_options %v on the wire", body["stream"], body["stream_options"])
	}
	want := dialog.Usage{InputTokens: 1000, CachedInputTokens: 600, OutputTokens: 400, ReasoningTokens: 250}
	if resp.Message.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Message.Usage, want)
	}
	if wantUSD := (400*0.15 + 600*0.075 + 400*0.60) / 1e6; !usd(resp.Message.USD, wantUSD) {
		t.Errorf("USD = %v, want %v", resp.Message.USD, wantUSD)
	}
	if strings.Join(chunks, "") != "Cached and streamed." || resp.FinishReason != "stop" {
		t.Errorf("chunks %q, finish %q", chunks, resp.FinishReason)
	}
}

// TestOpenAICutAtMaxTokens checks that finish_reason "length" gives the partial text and the reason, not an error, streamed or not.
func TestOpenAICutAtMaxTokens(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := providertest.NewOpenAIServer(t, providertest.Reply{
			Text: "The answer is", FinishReason: "length", Usage: providertest.Usage{Input: 10, Output: 3},
		})
		m := openFake(t, "openai/gpt-4o-mini", srv)
		req := &Request{Messages: []*dialog.Message{userMsg("hi")}, Params: Params{MaxTokens: ptr(3)}}
		var chunks []string
		if stream {
			req.Stream = collect(&chunks)
		}
		resp := generate(t, m, req)
		if resp.Message.Content != "The answer is" || resp.FinishReason != "length" || resp.Message.Usage.OutputTokens != 3 {
			t.Errorf("stream %v: %q, finish %q, usage %+v", stream, resp.Message.Content, resp.FinishReason, resp.Message.Usage)
		}
	}
	// A reasoning model that spends the whole budget thinking: no text.
	srv := providertest.NewOpenAIServer(t, providertest.Reply{
		FinishReason: "length", Usage: providertest.Usage{Input: 10, Output: 100, Reasoning: 100},
	})
	resp := generate(t, openFake(t, "openai/gpt-5", srv), &Request{Messages: []*dialog.Message{userMsg("hi")}, Params: Params{MaxTokens: ptr(100)}})
	if resp.Message.Content != "" || resp.FinishReason != "length" || resp.Message.Usage.ReasoningTokens != 100 {
		t.Errorf("all reasoning: %q, finish %q, usage %+v", resp.Message.Content, resp.FinishReason, resp.Message.Usage)
	}
}

// TestOpenAIContentFilter checks that a reply stopped by the content filter (content null) comes back with its finish reason.
func TestOpenAIContentFilter(t *testing.T) {
	s := newRawServer(t, 200, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o",
		"choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"content_filter"}],
		"usage":{"prompt_tokens":12,"completion_tokens":0,"total_tokens":12}}`)
	resp, err := generateSafely(t, openRaw(t, "openai/gpt-4o", s), &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if resp.Message.Content != "" || resp.FinishReason != "content_filter" || resp.Message.Usage.InputTokens != 12 {
		t.Errorf("%q, finish %q, usage %+v", resp.Message.Content, resp.FinishReason, resp.Message.Usage)
	}
}

// TestOpenAIRefusal checks that a structured-output refusal (message.refusal, content null) reaches the caller.
func TestOpenAIRefusal(t *testing.T) {
	const refusal = "I'm sorry, I cannot help with that request."
	s := newRawServer(t, 200, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o",
		"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"`+refusal+`"},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29}}`)
	resp, err := generateSafely(t, openRaw(t, "openai/gpt-4o", s), &Request{
		Messages: []*dialog.Message{userMsg("something forbidden")},
		Format:   json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`),
	})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	// As Anthropic's stop_reason says it, with the model's words kept.
	if resp.FinishReason != "refusal" {
		t.Errorf("finish = %q, want refusal", resp.FinishReason)
	}
	if resp.Message.Content != refusal && resp.Message.Metadata["refusal"] != refusal {
		t.Errorf("the refusal is lost: content %q, metadata %v", resp.Message.Content, resp.Message.Metadata)
	}
}

// TestOpenAIReasoningModels checks temperature, the system prompt and a rejected temperature for o3-mini and gpt-5.
func TestOpenAIReasoningModels(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	for _, model := range []string{"o3-mini", "gpt-5"} {
		m := openFake(t, "openai/"+model, srv)
		msgs := []*dialog.Message{systemMsg("Answer in French."), userMsg("hi")}
		// langchaingo never sends temperature for these models; the
		// adapter sends what was set (see the Adapter doc) and nothing
		// when unset.
		generate(t, m, &Request{Messages: msgs, Params: Params{Temperature: ptr(0.2)}})
		body := srv.LastRequest().JSON()
		if body["temperature"] != 0.2 {
			t.Errorf("%s: temperature %v on the wire, want the 0.2 set", model, body["temperature"])
		}
		raw, _ := json.Marshal(providertest.Messages(body))
		if !strings.Contains(string(raw), "Answer in French.") {
			t.Errorf("%s: the system prompt is not on the wire: %s", model, raw)
		}
		generate(t, m, &Request{Messages: msgs})
		if v, ok := srv.LastRequest().JSON()["temperature"]; ok {
			t.Errorf("%s: temperature %v on the wire, want none", model, v)
		}
	}
	// OpenAI's answer to a temperature these models do not take.
	srv.Enqueue(providertest.Reply{Status: 400, ErrorType: "invalid_request_error", ErrorCode: "unsupported_value",
		ErrorMessage: "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported."})
	pe := generateErr(t, context.Background(), openFake(t, "openai/o3-mini", srv),
		&Request{Messages: []*dialog.Message{userMsg("hi")}, Params: Params{Temperature: ptr(0.2)}})
	if pe.Kind != ErrBadRequest || pe.Retryable() {
		t.Errorf("unsupported temperature: %v (kind %s)", pe, pe.Kind)
	}
}

// TestOpenAIMaxTokensField checks max_completion_tokens for OpenAI itself, max_tokens with LegacyMaxTokens, and that n is never sent.
func TestOpenAIMaxTokensField(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	for _, tc := range []struct {
		model      string
		legacy     bool
		want, none string
	}{
		{"gpt-4o", false, "max_completion_tokens", "max_tokens"},
		{"o3-mini", false, "max_completion_tokens", "max_tokens"},
		{"gpt-4o", true, "max_tokens", "max_completion_tokens"},
	} {
		m := openAIDirect(t, tc.model, srv, tc.legacy)
		generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")}, Params: Params{MaxTokens: ptr(100)}})
		body := srv.LastRequest().JSON()
		if _, bad := body[tc.none]; body[tc.want] != 100.0 || bad {
			t.Errorf("%s legacy=%v: %s = %v, %s = %v", tc.model, tc.legacy, tc.want, body[tc.want], tc.none, body[tc.none])
		}
		if n, ok := body["n"]; ok {
			t.Errorf("n = %v on the wire", n)
		}
	}
}

// TestOpenAIToolArgumentsNotJSON checks that arguments that are not JSON are kept as a JSON string, and empty ones become {}.
func TestOpenAIToolArgumentsNotJSON(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{ToolCalls: []providertest.ToolCall{
		{ID: "call_1", Name: "get_weather", Arguments: `{"city": "Par`},
		{ID: "call_2", Name: "get_weather", Arguments: ``},
	}})
	resp := generate(t, openFake(t, "openai/gpt-4o", srv), &Request{
		Messages: []*dialog.Message{userMsg("weather?")}, Tools: []*dialog.Function{weatherTool(t)},
	})
	calls := resp.Message.FunctionCalls
	if len(calls) != 2 {
		t.Fatalf("calls = %+v", calls)
	}
	var s string
	if err := json.Unmarshal(calls[0].Arguments, &s); err != nil || s != `{"city": "Par` {
		t.Errorf("broken arguments = %s, want them as a JSON string", calls[0].Arguments)
	}
	if string(calls[1].Arguments) != "{}" {
		t.Errorf("empty arguments = %s, want {}", calls[1].Arguments)
	}
}

// TestOpenAITextAndToolCalls checks a reply with both text and tool calls: an assistant message with both, the text streamed as it came and nothing else.
func TestOpenAITextAndToolCalls(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{
		Text:      "Let me check.",
		ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
	})
	var chunks []string
	resp := generate(t, openFake(t, "openai/gpt-4o", srv), &Request{
		Messages: []*dialog.Message{userMsg("weather?")}, Tools: []*dialog.Function{weatherTool(t)}, Stream: collect(&chunks),
	})
	msg := resp.Message
	if msg.Role != dialog.RoleAssistant || msg.Content != "Let me check." || len(msg.FunctionCalls) != 1 ||
		msg.FunctionCalls[0].ID != "call_1" || resp.FinishReason != "tool_calls" {
		t.Errorf("message %s %q, calls %+v, finish %q", msg.Role, msg.Content, msg.FunctionCalls, resp.FinishReason)
	}
	if len(chunks) < 2 || strings.Join(chunks, "") != "Let me check." {
		t.Errorf("chunks = %q, want the text streamed", chunks)
	}
}

// TestOpenAIFunctionCallFinishWithToolCalls checks that finish_reason "function_call" without a function_call (tool_calls instead) does not crash the caller.
func TestOpenAIFunctionCallFinishWithToolCalls(t *testing.T) {
	s := newRawServer(t, 200, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o",
		"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		"finish_reason":"function_call"}],
		"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`)
	resp, err := generateSafely(t, openRaw(t, "openai/gpt-4o", s), &Request{
		Messages: []*dialog.Message{userMsg("weather?")}, Tools: []*dialog.Function{weatherTool(t)},
	})
	if err != nil {
		// An error would do; a panic would not.
		if pe := new(Error); !errors.As(err, &pe) {
			t.Errorf("error %T %v is not a *provider.Error", err, err)
		}
		return
	}
	if resp != nil && (len(resp.Message.FunctionCalls) != 1 || resp.Message.FunctionCalls[0].Name != "get_weather") {
		t.Errorf("calls = %+v", resp.Message.FunctionCalls)
	}
}

// TestOpenAIStreamErrorChunk checks that an error OpenAI sends inside a stream fails the call instead of passing for a short reply.
func TestOpenAIStreamErrorChunk(t *testing.T) {
	s := newRawServer(t, 200, "data: "+`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Partial"},"finish_reason":null}]}`+"\n\n"+
		"data: "+`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`+"\n\n")
	resp, err := generateSafely(t, openRaw(t, "openai/gpt-4o", s), &Request{
		Messages: []*dialog.Message{userMsg("hi")}, Stream: func(context.Context, Chunk) error { return nil },
	})
	if err == nil {
		t.Fatalf("Generate succeeded with %q (finish %q), want a server error", resp.Message.Content, resp.FinishReason)
	}
	if pe, ok := err.(*Error); !ok || pe.Kind != ErrServer || !pe.Retryable() {
		t.Errorf("error = %v, want a retryable server error", err)
	}
}

// TestOpenAIQuotaIsNotRetryable checks that OpenAI's 429 insufficient_quota, which no wait cures, is not retryable.
func TestOpenAIQuotaIsNotRetryable(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{Status: 429, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota",
		ErrorMessage: "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."})
	pe := generateErr(t, context.Background(), openFake(t, "openai/gpt-4o-mini", srv), &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if pe.Retryable() || pe.Status != 429 {
		t.Errorf("quota exhausted: kind %s, status %d, retryable %v; want a non-retryable error", pe.Kind, pe.Status, pe.Retryable())
	}
}

// --- Anthropic ---

// TestAnthropicStreamedUsageWithCache checks streamed usage: input and cache tokens from message_start, output from message_delta, and the cost.
func TestAnthropicStreamedUsageWithCache(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, providertest.Reply{
		Text: "From the cache.", Usage: providertest.Usage{Input: 1200, Cached: 1000, CacheWrite: 50, Output: 30},
	})
	var chunks []string
	resp := generate(t, openFake(t, "anthropic/claude-sonnet-4-5", srv), &Request{
		Messages: []*dialog.Message{userMsg("hi")}, Stream: collect(&chunks),
	})
	want := dialog.Usage{InputTokens: 1200, CachedInputTokens: 1000, CacheWriteTokens: 50, OutputTokens: 30}
	if resp.Message.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Message.Usage, want)
	}
	if wantUSD := (150*3.0 + 1000*0.30 + 50*3.75 + 30*15.0) / 1e6; !usd(resp.Message.USD, wantUSD) {
		t.Errorf("USD = %v, want %v", resp.Message.USD, wantUSD)
	}
	if strings.Join(chunks, "") != "From the cache." || resp.FinishReason != "end_turn" {
		t.Errorf("chunks %q, finish %q", chunks, resp.FinishReason)
	}
}

// TestAnthropicCutAtMaxTokens checks that stop_reason "max_tokens" gives the partial text and the reason, not an error, streamed or not.
func TestAnthropicCutAtMaxTokens(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := providertest.NewAnthropicServer(t, providertest.Reply{
			Text: "The answer is", FinishReason: "max_tokens", Usage: providertest.Usage{Input: 10, Output: 3},
		})
		req := &Request{Messages: []*dialog.Message{userMsg("hi")}, Params: Params{MaxTokens: ptr(3)}}
		var chunks []string
		if stream {
			req.Stream = collect(&chunks)
		}
		resp := generate(t, openFake(t, "anthropic/claude-haiku-4-5", srv), req)
		if resp.Message.Content != "The answer is" || resp.FinishReason != "max_tokens" || resp.Message.Usage.OutputTokens != 3 {
			t.Errorf("stream %v: %q, finish %q, usage %+v", stream, resp.Message.Content, resp.FinishReason, resp.Message.Usage)
		}
		if body := srv.LastRequest().JSON(); body["max_tokens"] != 3.0 {
			t.Errorf("max_tokens = %v on the wire", body["max_tokens"])
		}
	}
}

// TestAnthropicThinkingAndTextBlocks checks that a thinking block stays out of the text (as reasoning) and text blocks are joined as they are.
func TestAnthropicThinkingAndTextBlocks(t *testing.T) {
	s := newRawServer(t, 200, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
		"content":[
			{"type":"thinking","thinking":"The user greets me; greet back.","signature":"EqQBCgIYAhIM"},
			{"type":"text","text":"Hello, "},
			{"type":"text","text":"world."}],
		"stop_reason":"end_turn","stop_sequence":null,
		"usage":{"input_tokens":40,"output_tokens":25,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`)
	resp, err := generateSafely(t, openRaw(t, "anthropic/claude-sonnet-4-5", s), &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	msg := resp.Message
	if msg.Content != "Hello, world." || msg.Role != dialog.RoleAssistant {
		t.Errorf("content = %s %q, want %q", msg.Role, msg.Content, "Hello, world.")
	}
	if msg.ReasoningText() != "The user greets me; greet back." {
		t.Errorf("reasoning = %q", msg.ReasoningText())
	}
	if want := (dialog.Usage{InputTokens: 40, OutputTokens: 25}); msg.Usage != want || resp.FinishReason != "end_turn" {
		t.Errorf("usage %+v, finish %q", msg.Usage, resp.FinishReason)
	}
}

// TestAnthropicToolUseEmptyInput checks a tool_use block with input {} and a tool declared without parameters.
func TestAnthropicToolUseEmptyInput(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, providertest.Reply{
		ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "list_files", Arguments: `{}`}},
	})
	tool := &dialog.Function{Name: "list_files", Description: "Lists the files."}
	resp := generate(t, openFake(t, "anthropic/claude-sonnet-4-5", srv), &Request{
		Messages: []*dialog.Message{userMsg("files?")}, Tools: []*dialog.Function{tool},
	})
	msg := resp.Message
	if msg.Role != dialog.RoleToolCall || len(msg.FunctionCalls) != 1 || string(msg.FunctionCalls[0].Arguments) != "{}" ||
		msg.FunctionCalls[0].ID != "toolu_1" || resp.FinishReason != "tool_use" {
		t.Errorf("message %s, calls %+v, finish %q", msg.Role, msg.FunctionCalls, resp.FinishReason)
	}
	tools, _ := srv.LastRequest().JSON()["tools"].([]any)
	if len(tools) != 1 || !jsonEqual(t, tools[0].(map[string]any)["input_schema"], emptySchema) {
		t.Errorf("tools on the wire = %v", tools)
	}
}

// TestAnthropicParamsOnTheWire checks stop_sequences, max_tokens, a temperature and top_p of 0, no seed, and the 2048 default.
func TestAnthropicParamsOnTheWire(t *testing.T) {
	srv := providertest.NewAnthropicServer(t)
	m := openFake(t, "anthropic/claude-sonnet-4-5", srv)
	generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")}, Params: Params{
		Stop: []string{"END"}, MaxTokens: ptr(100), Temperature: ptr(0.0), TopP: ptr(0.0), Seed: ptr(7),
	}})
	body := srv.LastRequest().JSON()
	if !jsonEqual(t, body["stop_sequences"], []string{"END"}) || body["max_tokens"] != 100.0 ||
		body["temperature"] != 0.0 || body["top_p"] != 0.0 {
		t.Errorf("body = %v", body)
	}
	for _, k := range []string{"seed", "random_seed", "stop", "top_k"} {
		if v, ok := body[k]; ok {
			t.Errorf("%s = %v on the wire", k, v)
		}
	}
	generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if body := srv.LastRequest().JSON(); body["max_tokens"] != 2048.0 {
		t.Errorf("unset max_tokens = %v on the wire, want langchaingo's 2048", body["max_tokens"])
	}
}

// TestAnthropicRefusalAndEmptyReply checks that a reply with no content blocks (a refusal, or an empty end_turn) comes back with its stop reason, not as an error.
func TestAnthropicRefusalAndEmptyReply(t *testing.T) {
	for _, stop := range []string{"refusal", "end_turn"} {
		t.Run(stop, func(t *testing.T) {
			s := newRawServer(t, 200, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
				"content":[],"stop_reason":"`+stop+`","stop_sequence":null,
				"usage":{"input_tokens":30,"output_tokens":2}}`)
			resp, err := generateSafely(t, openRaw(t, "anthropic/claude-sonnet-4-5", s), &Request{Messages: []*dialog.Message{userMsg("hi")}})
			if err != nil {
				t.Fatalf("Generate: %v, want an empty reply with stop reason %q", err, stop)
			}
			if resp.Message.Content != "" || resp.FinishReason != stop || resp.Message.Usage.InputTokens != 30 {
				t.Errorf("%q, finish %q, usage %+v", resp.Message.Content, resp.FinishReason, resp.Message.Usage)
			}
		})
	}
	// A refusal after some text keeps the text.
	srv := providertest.NewAnthropicServer(t, providertest.Reply{Text: "I can't", FinishReason: "refusal"})
	resp := generate(t, openFake(t, "anthropic/claude-sonnet-4-5", srv), &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if resp.Message.Content != "I can't" || resp.FinishReason != "refusal" {
		t.Errorf("%q, finish %q", resp.Message.Content, resp.FinishReason)
	}
}

// TestAnthropicContextLimitError checks that Anthropic's "exceed context limit" 400 is a context-length error.
func TestAnthropicContextLimitError(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, providertest.Reply{Status: 400, ErrorType: "invalid_request_error",
		ErrorMessage: "input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000, decrease input length or `max_tokens` and try again"})
	pe := generateErr(t, context.Background(), openFake(t, "anthropic/claude-sonnet-4-5", srv), &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if pe.Kind != ErrContextLength || pe.Status != 400 {
		t.Errorf("error = %v (kind %s), want context_length", pe, pe.Kind)
	}
}

// TestAnthropicStreamErrorEvent checks that an error event inside a stream is classified by its type (overloaded: server; rate limit: rate limit).
func TestAnthropicStreamErrorEvent(t *testing.T) {
	for _, tc := range []struct {
		typ, message string
		kind         ErrorKind
	}{
		{"overloaded_error", "Overloaded", ErrServer},
		{"api_error", "Internal server error", ErrServer},
		{"rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", ErrRateLimit},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			s := newRawServer(t, 200,
				"event: message_start\ndata: "+`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`+"\n\n"+
					"event: content_block_start\ndata: "+`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+"\n\n"+
					"event: content_block_delta\ndata: "+`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Part"}}`+"\n\n"+
					"event: error\ndata: "+`{"type":"error","error":{"type":"`+tc.typ+`","message":"`+tc.message+`"}}`+"\n\n")
			resp, err := generateSafely(t, openRaw(t, "anthropic/claude-sonnet-4-5", s), &Request{
				Messages: []*dialog.Message{userMsg("hi")}, Stream: func(context.Context, Chunk) error { return nil },
			})
			if err == nil {
				t.Fatalf("Generate succeeded with %q, want an error", resp.Message.Content)
			}
			if pe, ok := err.(*Error); !ok || pe.Kind != tc.kind || !pe.Retryable() {
				t.Errorf("error = %v, want kind %s, retryable", err, tc.kind)
			}
		})
	}
}

// TestAnthropicSystemMessagesKeptApart checks that two system messages reach Anthropic's one system prompt apart, not run together.
func TestAnthropicSystemMessagesKeptApart(t *testing.T) {
	srv := providertest.NewAnthropicServer(t)
	generate(t, openFake(t, "anthropic/claude-sonnet-4-5", srv), &Request{Messages: []*dialog.Message{
		systemMsg("Be brief."), systemMsg("Answer in French."), userMsg("hi"),
	}})
	system, _ := srv.LastRequest().JSON()["system"].(string)
	if !strings.Contains(system, "Be brief.") || !strings.Contains(system, "Answer in French.") ||
		strings.Contains(system, "Be brief.Answer") {
		t.Errorf("system = %q, want both prompts, apart", system)
	}
	// OpenAI keeps them as two messages.
	osrv := providertest.NewOpenAIServer(t)
	generate(t, openFake(t, "openai/gpt-4o", osrv), &Request{Messages: []*dialog.Message{
		systemMsg("Be brief."), systemMsg("Answer in French."), userMsg("hi"),
	}})
	if msgs := providertest.Messages(osrv.LastRequest().JSON()); len(msgs) != 3 || msgs[1]["content"] != "Answer in French." {
		t.Errorf("openai messages = %v", msgs)
	}
}

// A response whose connection is reset in the middle of its body is a
// network failure, retryable, whatever the client's decoder says of it.
func TestResponseCutShort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"id\":\"x\",\"choices\":[{\"message\":")
		buf.Flush()
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not a clean close
		}
		conn.Close()
	}))
	defer srv.Close()
	for _, tc := range []struct{ model, base string }{
		{"openai/gpt-4o-mini", srv.URL + "/v1"},
		{"anthropic/claude-sonnet-4-5", srv.URL},
		{"ollama/llama3.1", srv.URL},
	} {
		t.Run(tc.model, func(t *testing.T) {
			m, err := Open(context.Background(), tc.model, Config{BaseURL: tc.base, APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			pe := generateErr(t, ctx, m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
			if pe.Kind != ErrNetwork || !pe.Retryable() {
				t.Fatalf("kind %s (%v), want a retryable network error", pe.Kind, pe)
			}
		})
	}
}
