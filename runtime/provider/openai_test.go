package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

func TestOpenAITextReplyAndUsage(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{
		Text:  "Hello there.",
		Usage: providertest.Usage{Input: 1000, Cached: 600, Output: 400, Reasoning: 250},
	})
	m := openFake(t, "openai/gpt-4o-mini", srv)
	resp := generate(t, m, &Request{Messages: []*dialog.Message{systemMsg("Be brief."), userMsg("Hi")}})

	msg := resp.Message
	if msg.Role != dialog.RoleAssistant || msg.Content != "Hello there." {
		t.Errorf("message = %s %q, want assistant %q", msg.Role, msg.Content, "Hello there.")
	}
	want := dialog.Usage{InputTokens: 1000, CachedInputTokens: 600, OutputTokens: 400, ReasoningTokens: 250}
	if msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}
	if msg.Model != "openai/gpt-4o-mini" || msg.APIType != dialog.APICompletion {
		t.Errorf("model, api type = %q, %q", msg.Model, msg.APIType)
	}
	// gpt-4o-mini: 0.15 in, 0.075 cached, 0.60 out per million.
	wantUSD := (400*0.15 + 600*0.075 + 400*0.60) / 1e6
	if math.Abs(msg.USD-wantUSD) > 1e-12 {
		t.Errorf("USD = %v, want %v", msg.USD, wantUSD)
	}
	if resp.FinishReason != "stop" || resp.Latency <= 0 {
		t.Errorf("finish %q, latency %v", resp.FinishReason, resp.Latency)
	}

	req := srv.LastRequest()
	if got := req.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	body := req.JSON()
	if body["model"] != "gpt-4o-mini" {
		t.Errorf("model on the wire = %v", body["model"])
	}
	msgs := providertest.Messages(body)
	if len(msgs) != 2 || msgs[0]["role"] != "system" || msgs[0]["content"] != "Be brief." ||
		msgs[1]["role"] != "user" || msgs[1]["content"] != "Hi" {
		t.Errorf("messages on the wire = %v", msgs)
	}
}

func TestOpenAIToolCallAndResult(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{
		ToolCalls: []providertest.ToolCall{{ID: "call_abc", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		Usage:     providertest.Usage{Input: 50, Output: 12},
	}, providertest.Reply{Text: "It is 18C in Paris."})
	m := openFake(t, "openai/gpt-4o", srv)
	tool := weatherTool(t)
	history := []*dialog.Message{userMsg("Weather in Paris?")}

	resp := generate(t, m, &Request{Messages: history, Tools: []*dialog.Function{tool}})
	msg := resp.Message
	if msg.Role != dialog.RoleToolCall || msg.Content != "" {
		t.Errorf("role, content = %s, %q; want tool_call and no text", msg.Role, msg.Content)
	}
	if len(msg.FunctionCalls) != 1 {
		t.Fatalf("function calls = %+v", msg.FunctionCalls)
	}
	fc := msg.FunctionCalls[0]
	if fc.ID != "call_abc" || fc.Name != "get_weather" || !jsonEqual(t, fc.Arguments, `{"city":"Paris"}`) {
		t.Errorf("call = %+v", fc)
	}
	if resp.FinishReason != "tool_calls" {
		t.Errorf("finish = %q", resp.FinishReason)
	}
	tools, _ := srv.LastRequest().JSON()["tools"].([]any)
	if len(tools) != 1 {
		t.Fatalf("tools on the wire = %v", tools)
	}
	decl := tools[0].(map[string]any)
	fn := decl["function"].(map[string]any)
	if decl["type"] != "function" || fn["name"] != "get_weather" || !jsonEqual(t, fn["parameters"], tool.Parameters) {
		t.Errorf("tool on the wire = %v", decl)
	}

	// The result goes back as a tool message answering the call's id.
	result := tool.Call(context.Background(), fc)
	history = append(history, &msg, &dialog.Message{
		Role: dialog.RoleTool, Name: fc.Name, ToolCallID: fc.ID, Content: result.Result,
		FunctionCalls: []dialog.FunctionCall{result},
	})
	resp = generate(t, m, &Request{Messages: history, Tools: []*dialog.Function{tool}})
	if resp.Message.Content != "It is 18C in Paris." {
		t.Errorf("final reply = %q", resp.Message.Content)
	}
	msgs := providertest.Messages(srv.LastRequest().JSON())
	if len(msgs) != 3 {
		t.Fatalf("messages on the wire = %v", msgs)
	}
	calls, _ := msgs[1]["tool_calls"].([]any)
	if msgs[1]["role"] != "assistant" || len(calls) != 1 {
		t.Fatalf("assistant message on the wire = %v", msgs[1])
	}
	call := calls[0].(map[string]any)
	callFn := call["function"].(map[string]any)
	if call["id"] != "call_abc" || call["type"] != "function" || callFn["name"] != "get_weather" ||
		!jsonEqual(t, callFn["arguments"], `{"city":"Paris"}`) {
		t.Errorf("tool call on the wire = %v", call)
	}
	if msgs[2]["role"] != "tool" || msgs[2]["tool_call_id"] != "call_abc" || msgs[2]["content"] != result.Result {
		t.Errorf("tool message on the wire = %v", msgs[2])
	}
}

func TestOpenAIImageAsDataURL(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	m := openFake(t, "openai/gpt-4o", srv)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	img, err := dialog.ImageBytes(png).Load()
	if err != nil {
		t.Fatal(err)
	}
	generate(t, m, &Request{Messages: []*dialog.Message{{
		Role: dialog.RoleUser, Modality: dialog.ModalityImage,
		Parts: []dialog.Part{{Type: dialog.PartText, Text: "What is this?"}, {Type: dialog.PartImage, Image: img}},
	}}})
	msgs := providertest.Messages(srv.LastRequest().JSON())
	content, _ := msgs[0]["content"].([]any)
	if len(content) != 2 {
		t.Fatalf("content on the wire = %v", msgs[0]["content"])
	}
	text := content[0].(map[string]any)
	image := content[1].(map[string]any)
	url, _ := image["image_url"].(map[string]any)["url"].(string)
	if text["type"] != "text" || text["text"] != "What is this?" || image["type"] != "image_url" ||
		url != img.DataURL() || !strings.HasPrefix(url, "data:image/png;base64,") {
		t.Errorf("content on the wire = %v", content)
	}
}

func TestOpenAITemperatureOnTheWire(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	for _, tc := range []struct {
		model string
		temp  *float64
		want  any // nil: absent
	}{
		{"gpt-4o-mini", nil, nil},
		{"gpt-4o-mini", ptr(0.0), 0.0},
		{"gpt-4o-mini", ptr(0.7), 0.7},
		{"o1", nil, nil}, // langchaingo would send 0, which o1 rejects
		{"gpt-5", ptr(1.0), 1.0},
	} {
		m := openFake(t, "openai/"+tc.model, srv)
		generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")}, Params: Params{Temperature: tc.temp}})
		body := srv.LastRequest().JSON()
		got, ok := body["temperature"]
		switch {
		case tc.want == nil && ok:
			t.Errorf("%s, unset: temperature %v on the wire, want none", tc.model, got)
		case tc.want != nil && got != tc.want:
			t.Errorf("%s, set %v: temperature on the wire = %v", tc.model, *tc.temp, got)
		}
	}
}

// TestEditedBodySurvivesARedirect follows a 307, for which net/http sends
// the body again from the client's own buffer, which the transport edits
// where it lies: both requests must carry the same edited body.
func TestEditedBodySurvivesARedirect(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	var mu sync.Mutex
	var first []byte
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/old"); ok {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			first = body
			mu.Unlock()
			http.Redirect(w, r, rest, http.StatusTemporaryRedirect)
			return
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer front.Close()
	m, err := Open(context.Background(), "openai/gpt-4o-mini", Config{BaseURL: front.URL + "/old/v1", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
	second := srv.LastRequest().Body
	mu.Lock()
	defer mu.Unlock()
	if string(first) != string(second) {
		t.Fatalf("the redirected request sent\n%s\nafter\n%s", second, first)
	}
	if body := srv.LastRequest().JSON(); body == nil || body["temperature"] != nil || body["model"] != "gpt-4o-mini" {
		t.Errorf("redirected body = %s", second)
	}
}

func TestOpenAIParamsOnTheWire(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	m := openFake(t, "openai/gpt-4o-mini", srv)
	generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")}, Params: Params{
		Stop: []string{"END", "STOP"}, Seed: ptr(42), MaxTokens: ptr(100), TopP: ptr(0.9), TopK: ptr(20),
	}})
	body := srv.LastRequest().JSON()
	if !jsonEqual(t, body["stop"], []string{"END", "STOP"}) || body["seed"] != 42.0 || body["max_tokens"] != 100.0 ||
		body["top_p"] != 0.9 || body["top_k"] != 20.0 {
		t.Errorf("body = %v", body)
	}
	if _, ok := body["max_completion_tokens"]; ok {
		t.Errorf("max_completion_tokens sent to a compatible server: %v", body)
	}

	// Unset params are not sent; a seed of 0 is.
	generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")}, Params: Params{Seed: ptr(0)}})
	body = srv.LastRequest().JSON()
	for _, k := range []string{"stop", "max_tokens", "max_completion_tokens", "top_p", "top_k", "temperature"} {
		if v, ok := body[k]; ok {
			t.Errorf("%s = %v on the wire, want absent", k, v)
		}
	}
	if body["seed"] != 0.0 {
		t.Errorf("seed = %v, want 0", body["seed"])
	}
}

func TestOpenAIFormatAsJSONSchema(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{Text: `{"answer":4}`})
	m := openFake(t, "openai/gpt-4o-mini", srv)
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"integer"}}}`)
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("2+2?")}, Format: schema})
	if resp.Message.Content != `{"answer":4}` {
		t.Errorf("reply = %q", resp.Message.Content)
	}
	want := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "response", "schema": schema}}
	if got := srv.LastRequest().JSON()["response_format"]; !jsonEqual(t, got, want) {
		t.Errorf("response_format = %v", got)
	}
}

func TestOpenAIRequestModel(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	m := openFake(t, "openai/gpt-4o-mini", srv)
	for _, tc := range []struct{ req, wire, model string }{
		{"", "gpt-4o-mini", "openai/gpt-4o-mini"},
		{"openai/gpt-4o-mini", "gpt-4o-mini", "openai/gpt-4o-mini"},
		{"gpt-4o", "gpt-4o", "openai/gpt-4o"},
	} {
		resp := generate(t, m, &Request{Model: tc.req, Messages: []*dialog.Message{userMsg("hi")}})
		if got := srv.LastRequest().JSON()["model"]; got != tc.wire || resp.Message.Model != tc.model {
			t.Errorf("Request.Model %q: wire %v, message %q; want %q, %q", tc.req, got, resp.Message.Model, tc.wire, tc.model)
		}
	}
}

func TestOpenAIStreaming(t *testing.T) {
	text := "Streaming works one chunk at a time."
	srv := providertest.NewOpenAIServer(t, providertest.Reply{Text: text, Usage: providertest.Usage{Input: 9, Output: 8}})
	m := openFake(t, "openai/gpt-4o-mini", srv)
	var got []string
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{userMsg("stream please")},
		Stream:   func(ctx context.Context, c Chunk) error { got = append(got, c.Text); return nil },
	})
	if strings.Join(got, "") != text || len(got) < 2 {
		t.Errorf("chunks = %q, want %q in several chunks", got, text)
	}
	if resp.Message.Content != text || resp.Message.Usage.InputTokens != 9 || resp.Message.Usage.OutputTokens != 8 {
		t.Errorf("message = %q, usage %+v", resp.Message.Content, resp.Message.Usage)
	}
	if body := srv.LastRequest().JSON(); body["stream"] != true {
		t.Errorf("stream = %v on the wire", body["stream"])
	}
}

func TestOpenAIStreamErrorCancels(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{Text: "one two three four"})
	m := openFake(t, "openai/gpt-4o-mini", srv)
	stop := context.Canceled
	pe := generateErr(t, context.Background(), m, &Request{
		Messages: []*dialog.Message{userMsg("hi")},
		Stream:   func(context.Context, Chunk) error { return stop },
	})
	if pe.Kind != ErrCancelled {
		t.Errorf("kind = %s (%v), want cancelled", pe.Kind, pe)
	}
}

var twoCalls = []providertest.ToolCall{
	{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`},
	{ID: "call_2", Name: "get_weather", Arguments: `{"city":"Tokyo","unit":"celsius"}`},
}

func TestOpenAIParallelToolCalls(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{ToolCalls: twoCalls})
	m := openFake(t, "openai/gpt-4o", srv)
	var chunks []string
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{userMsg("Paris and Tokyo?")},
		Tools:    []*dialog.Function{weatherTool(t)},
		// Streamed, with the calls assembled from the stream, which
		// langchaingo would mix up.
		Stream: func(ctx context.Context, c Chunk) error { chunks = append(chunks, c.Text); return nil },
	})
	if stream, _ := srv.LastRequest().JSON()["stream"].(bool); !stream {
		t.Error("the request declaring tools was not streamed")
	}
	calls := resp.Message.FunctionCalls
	if len(calls) != 2 {
		t.Fatalf("calls = %+v", calls)
	}
	for i, want := range twoCalls {
		if calls[i].ID != want.ID || calls[i].Name != want.Name || !jsonEqual(t, calls[i].Arguments, want.Arguments) {
			t.Errorf("call %d = %+v, want %+v", i, calls[i], want)
		}
	}
	if len(chunks) != 0 {
		t.Errorf("chunks = %q for a reply without text", chunks)
	}
}

// TestLangchaingoStreamedToolCallsAreCorrupt documents why the transport
// assembles streamed tool calls itself: langchaingo v0.1.14 appends every
// argument fragment of a streamed parallel call to the last call.
func TestLangchaingoStreamedToolCallsAreCorrupt(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{ToolCalls: twoCalls})
	llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(srv.BaseURL()), openai.WithModel("gpt-4o"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := llm.GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Paris and Tokyo?")},
		llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Choices[0].ToolCalls
	intact := len(calls) == 2 &&
		calls[0].FunctionCall.Arguments == twoCalls[0].Arguments &&
		calls[1].FunctionCall.Arguments == twoCalls[1].Arguments
	for _, c := range calls {
		t.Logf("streamed call %s %s(%s)", c.ID, c.FunctionCall.Name, c.FunctionCall.Arguments)
	}
	if intact {
		t.Error("langchaingo now assembles streamed parallel tool calls: the transport need not (wireReply.streamed), and other providers could stream with tools (see the Adapter doc)")
	}
}

func TestOpenAIErrors(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name   string
		reply  providertest.Reply
		kind   ErrorKind
		status int
		retry  time.Duration // checked when > 0
	}{
		{"429 seconds", providertest.RateLimited("2"), ErrRateLimit, 429, 2 * time.Second},
		{"429 date", providertest.RateLimited(date), ErrRateLimit, 429, 85 * time.Second},
		{"500", providertest.ServerError(), ErrServer, 500, 0},
		{"503", providertest.Reply{Status: 503, ErrorMessage: "unavailable"}, ErrServer, 503, 0},
		{"400 context length", providertest.ContextLengthExceeded(), ErrContextLength, 400, 0},
		{"400 other", providertest.Reply{Status: 400, ErrorMessage: "Invalid value for 'n'"}, ErrBadRequest, 400, 0},
		{"401", providertest.Unauthorized(), ErrAuth, 401, 0},
		{"403", providertest.Reply{Status: 403, ErrorMessage: "country not supported"}, ErrAuth, 403, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewOpenAIServer(t, tc.reply)
			m := openFake(t, "openai/gpt-4o-mini", srv)
			pe := generateErr(t, context.Background(), m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
			if pe.Kind != tc.kind || pe.Status != tc.status || pe.Provider != "openai" {
				t.Errorf("error = %v (kind %s, status %d), want %s %d", pe, pe.Kind, pe.Status, tc.kind, tc.status)
			}
			if tc.retry > 0 && (pe.Retry < tc.retry || pe.Retry > tc.retry+10*time.Second) {
				t.Errorf("retry = %v, want about %v", pe.Retry, tc.retry)
			}
			if tc.retry == 2*time.Second && pe.Retry != tc.retry {
				t.Errorf("retry = %v, want exactly 2s", pe.Retry)
			}
			if pe.Err == nil || pe.Unwrap() == nil {
				t.Errorf("error wraps nothing")
			}
		})
	}
}

func TestOpenAITimeoutAndCancel(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	srv.SetDefault(providertest.Reply{Text: "late", Delay: 5 * time.Second})
	m := openFake(t, "openai/gpt-4o-mini", srv)
	req := &Request{Messages: []*dialog.Message{userMsg("hi")}}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	pe := generateErr(t, ctx, m, req)
	if pe.Kind != ErrTimeout || !pe.Retryable() {
		t.Errorf("deadline: kind = %s (%v), want timeout", pe.Kind, pe)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timed out after %v", d)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if pe := generateErr(t, ctx, m, req); pe.Kind != ErrCancelled {
		t.Errorf("cancel: kind = %s (%v), want cancelled", pe.Kind, pe)
	}
}

func TestBadRequestsNeverReachTheServer(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	m := openFake(t, "openai/gpt-4o-mini", srv)
	for name, req := range map[string]*Request{
		"nil request":  nil,
		"nil message":  {Messages: []*dialog.Message{nil}},
		"unknown role": {Messages: []*dialog.Message{{Role: "narrator", Content: "x"}}},
		"NaN":          {Messages: []*dialog.Message{userMsg("x")}, Params: Params{Temperature: ptr(math.NaN())}},
		"bad format":   {Messages: []*dialog.Message{userMsg("x")}, Format: json.RawMessage("{")},
		"nil tool":     {Messages: []*dialog.Message{userMsg("x")}, Tools: []*dialog.Function{nil}},
	} {
		pe := generateErr(t, context.Background(), m, req)
		if pe.Kind != ErrBadRequest {
			t.Errorf("%s: kind = %s (%v)", name, pe.Kind, pe)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

func TestOpenAIConcurrentCallsKeepTheirOwnParams(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	m := openFake(t, "openai/gpt-4o-mini", srv)
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := Params{}
			if i%2 == 0 {
				p.Temperature = ptr(float64(i) / 100)
			}
			if _, err := m.Generate(context.Background(), &Request{Messages: []*dialog.Message{userMsg(fmt.Sprint(i))}, Params: p}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	reqs := srv.Requests()
	if len(reqs) != n {
		t.Fatalf("%d requests, want %d", len(reqs), n)
	}
	for _, r := range reqs {
		body := r.JSON()
		i, _ := strconv.Atoi(providertest.Messages(body)[0]["content"].(string))
		temp, ok := body["temperature"]
		if i%2 == 0 && temp != float64(i)/100 || i%2 == 1 && ok {
			t.Errorf("request %d: temperature %v", i, temp)
		}
	}
}

// OpenAI's replies are indented, with a space after each colon: a refusal
// there is read as in a compact reply.
func TestOpenAIRefusalSpaced(t *testing.T) {
	const spaced = `{
  "id": "chatcmpl-1",
  "object": "chat.completion",
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "refusal": "I'm sorry, I cannot help with that.",
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
}`
	var v any
	if err := json.Unmarshal([]byte(spaced), &v); err != nil {
		t.Fatal(err)
	}
	compact, _ := json.Marshal(v)
	for _, body := range []string{spaced, string(compact)} {
		s := newRawServer(t, 200, body)
		resp := generate(t, openRaw(t, "openai/gpt-4o", s), &Request{Messages: []*dialog.Message{userMsg("Hi")},
			Format: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)})
		if resp.FinishReason != "refusal" || resp.Message.Metadata["refusal"] != "I'm sorry, I cannot help with that." {
			t.Errorf("finish %q, metadata %v; want the refusal", resp.FinishReason, resp.Message.Metadata)
		}
	}
}
