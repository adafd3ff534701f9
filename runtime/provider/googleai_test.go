package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// fakeReply is one answer of fakeGemini. A 200 answer to
// streamGenerateContent sends chunks (or body) as the elements of a JSON
// array, which is what the REST client asks for ($alt=json).
type fakeReply struct {
	status int
	body   string
	chunks []string
}

// fakeGemini is a minimal Gemini REST server: it answers with its queued
// replies, then with status and body, and records every request.
type fakeGemini struct {
	mu      sync.Mutex
	status  int
	body    string
	replies []fakeReply
	// gate, when set, holds each streamed chunk after the first until it
	// receives; stalled records a chunk sent after waiting 2s in vain.
	gate    chan struct{}
	stalled bool
	reqs    []map[string]any
	paths   []string
	last    map[string]any
	header  http.Header
	path    string
	calls   int
}

func (f *fakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.last, f.header, f.path = nil, r.Header.Clone(), r.URL.Path
	_ = json.Unmarshal(b, &f.last)
	f.reqs, f.paths = append(f.reqs, f.last), append(f.paths, r.URL.Path)
	f.calls++
	reply := fakeReply{status: f.status, body: f.body}
	if len(f.replies) > 0 {
		reply, f.replies = f.replies[0], f.replies[1:]
	}
	gate := f.gate
	f.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(reply.status)
	if reply.status != http.StatusOK || !strings.Contains(r.URL.Path, ":streamGenerateContent") {
		io.WriteString(w, reply.body)
		return
	}
	chunks := reply.chunks
	if chunks == nil {
		chunks = []string{reply.body}
	}
	io.WriteString(w, "[")
	for i, c := range chunks {
		if i > 0 {
			if gate != nil {
				select {
				case <-gate:
				case <-time.After(2 * time.Second):
					f.mu.Lock()
					f.stalled = true
					f.mu.Unlock()
				}
			}
			io.WriteString(w, ",\r\n")
		}
		io.WriteString(w, c)
		w.(http.Flusher).Flush()
	}
	io.WriteString(w, "]")
}

// requests returns the bodies and paths of the requests so far.
func (f *fakeGemini) requests() ([]map[string]any, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.reqs...), append([]string(nil), f.paths...)
}

// openGemini serves f and opens googleai/gemini-2.0-flash against it.
func openGemini(t *testing.T, f *fakeGemini) Model {
	t.Helper()
	clearEnv(t)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	m, err := Open(context.Background(), "googleai/gemini-2.0-flash", Config{APIKey: "g-key", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.(*Adapter).Close() })
	return m
}

// jsonAt walks v through map keys (string) and slice indexes (int), and
// returns what is there, or nil.
func jsonAt(v any, steps ...any) any {
	for _, s := range steps {
		switch s := s.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[s]
		case int:
			a, _ := v.([]any)
			if s >= len(a) {
				return nil
			}
			v = a[s]
		}
	}
	return v
}

// schemaType names a genai Schema type as the REST client sends it: an enum
// number ($alt=json;enum-encoding=int) or a name.
func schemaType(v any) string {
	if n, ok := v.(float64); ok {
		names := []string{"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}
		if n >= 0 && int(n) < len(names) {
			return names[int(n)]
		}
	}
	s, _ := v.(string)
	return strings.ToUpper(s)
}
func TestGoogleAIThroughTransport(t *testing.T) {
	clearEnv(t)
	fake := &fakeGemini{status: 200, body: `{"candidates":[{"content":{"parts":[{"text":"Bonjour."}],"role":"model"},
		"finishReason":1,"index":0}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":3,"totalTokenCount":15}}`}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	m, err := Open(context.Background(), "googleai/gemini-2.0-flash", Config{APIKey: "g-key", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer m.(*Adapter).Close()

	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{systemMsg("Answer in French."), userMsg("Hello"), {Role: dialog.RoleAssistant, Content: "Salut"}, userMsg("Again")},
		Params:   Params{Temperature: ptr(0.3)},
	})
	if resp.Message.Content != "Bonjour." || resp.Message.Usage.InputTokens != 12 || resp.Message.Usage.OutputTokens != 3 ||
		resp.Message.Model != "googleai/gemini-2.0-flash" {
		t.Errorf("message = %+v", resp.Message)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.header.Get("X-Goog-Api-Key") != "g-key" || !strings.Contains(fake.path, "models/gemini-2.0-flash:") {
		t.Errorf("key header %q, path %q", fake.header.Get("X-Goog-Api-Key"), fake.path)
	}
	gen, _ := fake.last["generationConfig"].(map[string]any)
	if gen["temperature"] != 0.3 {
		t.Errorf("generationConfig = %v, want temperature 0.3", gen)
	}
	for _, k := range []string{"topP", "topK", "maxOutputTokens"} {
		if v, ok := gen[k]; ok {
			t.Errorf("generationConfig.%s = %v, want it unset", k, v)
		}
	}
}

func TestGoogleAIServiceUnavailableIsNotRetried(t *testing.T) {
	clearEnv(t)
	fake := &fakeGemini{status: 503, body: `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	m, err := Open(context.Background(), "googleai/gemini-2.0-flash", Config{APIKey: "g-key", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pe := generateErr(t, ctx, m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if pe.Kind != ErrServer || pe.Status != 503 {
		t.Errorf("error = %v (kind %s, status %d)", pe, pe.Kind, pe.Status)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.calls != 1 {
		t.Errorf("%d requests, want 1 (no retries)", fake.calls)
	}
}

// A tool round: the declaration reaches the wire with its schema, Gemini's
// functionCall comes back as a call with an id, and the call and its
// result go back as functionCall and functionResponse parts.
func TestGoogleAIToolRound(t *testing.T) {
	fake := &fakeGemini{replies: []fakeReply{
		{status: 200, body: `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}],"role":"model"},
			"finishReason":1,"index":0}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":5,"totalTokenCount":25}}`},
		{status: 200, body: `{"candidates":[{"content":{"parts":[{"text":"18C in Paris."}],"role":"model"},"finishReason":1,"index":0}]}`},
	}}
	m := openGemini(t, fake)
	tools := []*dialog.Function{weatherTool(t)}
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Weather in Paris?")}, Tools: tools})
	msg := resp.Message
	if len(msg.FunctionCalls) != 1 {
		t.Fatalf("reply = %+v, want one function call", msg)
	}
	fc := msg.FunctionCalls[0]
	if fc.ID != "call_1" || fc.Name != "get_weather" || !jsonEqual(t, fc.Arguments, `{"city":"Paris"}`) ||
		msg.Role != dialog.RoleToolCall || msg.Content != "" {
		t.Errorf("reply = %+v, call = %+v", msg, fc)
	}
	reqs, _ := fake.requests()
	decl := jsonAt(reqs[0], "tools", 0, "functionDeclarations", 0)
	params := jsonAt(decl, "parameters")
	if jsonAt(decl, "name") != "get_weather" || jsonAt(decl, "description") != "Weather in a city." ||
		schemaType(jsonAt(params, "type")) != "OBJECT" || schemaType(jsonAt(params, "properties", "city", "type")) != "STRING" ||
		!jsonEqual(t, jsonAt(params, "required"), `["city"]`) {
		t.Errorf("tools on the wire = %v", reqs[0]["tools"])
	}

	resp = generate(t, m, &Request{Tools: tools, Messages: []*dialog.Message{
		userMsg("Weather in Paris?"),
		{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{fc}},
		{Role: dialog.RoleTool, ToolCallID: fc.ID, Name: "get_weather", Content: "18C"},
	}})
	if resp.Message.Content != "18C in Paris." || resp.Message.Role != dialog.RoleAssistant {
		t.Errorf("second reply = %+v", resp.Message)
	}
	reqs, _ = fake.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	contents, _ := reqs[1]["contents"].([]any)
	if len(contents) != 3 {
		t.Fatalf("contents = %v, want user, model call, tool result", contents)
	}
	call := jsonAt(contents[1], "parts", 0, "functionCall")
	if jsonAt(contents[1], "role") != "model" || jsonAt(call, "name") != "get_weather" || !jsonEqual(t, jsonAt(call, "args"), `{"city":"Paris"}`) {
		t.Errorf("call turn = %v", contents[1])
	}
	result := jsonAt(contents[2], "parts", 0, "functionResponse")
	if role := jsonAt(contents[2], "role"); (role != "user" && role != "function") || jsonAt(result, "name") != "get_weather" ||
		!jsonEqual(t, jsonAt(result, "response"), `{"response":"18C"}`) {
		t.Errorf("result turn = %v", contents[2])
	}
	if jsonAt(reqs[1], "tools", 0, "functionDeclarations", 0, "name") != "get_weather" {
		t.Errorf("follow-up tools = %v", reqs[1]["tools"])
	}
}

// An image, given as bytes or as a data URL, is sent as an inlineData part
// with its MIME type and base64 data; an http URL is refused before any
// request (Google's client would fetch it itself).
func TestGoogleAIImageAsInlineData(t *testing.T) {
	fake := &fakeGemini{status: 200, body: `{"candidates":[{"content":{"parts":[{"text":"A cat."}],"role":"model"},"finishReason":1,"index":0}]}`}
	m := openGemini(t, fake)
	jpeg, err := dialog.ImageBytes([]byte{0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3}).Load()
	if err != nil {
		t.Fatal(err)
	}
	png := &dialog.Image{URL: "data:image/png;base64,iVBORw0KGgo="}
	generate(t, m, &Request{Messages: []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{
		{Type: dialog.PartText, Text: "What is it?"}, {Type: dialog.PartImage, Image: jpeg}, {Type: dialog.PartImage, Image: png},
	}}}})
	reqs, _ := fake.requests()
	parts, _ := jsonAt(reqs[0], "contents", 0, "parts").([]any)
	if len(parts) != 3 || jsonAt(parts, 0, "text") != "What is it?" {
		t.Fatalf("parts = %v", parts)
	}
	for i, want := range []map[string]any{{"mimeType": "image/jpeg", "data": "/9j/4AECAw=="}, {"mimeType": "image/png", "data": "iVBORw0KGgo="}} {
		if got := jsonAt(parts, i+1, "inlineData"); !jsonEqual(t, got, want) {
			t.Errorf("image %d = %v, want inlineData %v", i+1, parts[i+1], want)
		}
	}
	pe := generateErr(t, context.Background(), m, &Request{Messages: []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{
		{Type: dialog.PartImage, Image: &dialog.Image{URL: "https://example.com/cat.png"}},
	}}}})
	if reqs, _ = fake.requests(); pe.Kind != ErrBadRequest || len(reqs) != 1 {
		t.Errorf("URL image: %v after %d requests, want a bad request and none sent", pe, len(reqs)-1)
	}
}

// usageMetadata becomes the message's usage (cached tokens are part of the
// prompt count) and its cost at gemini-2.0-flash's prices.
func TestGoogleAIUsageAndCost(t *testing.T) {
	fake := &fakeGemini{status: 200, body: `{"candidates":[{"content":{"parts":[{"text":"Done."}],"role":"model"},"finishReason":1,"index":0}],
		"usageMetadata":{"promptTokenCount":1000,"cachedContentTokenCount":400,"candidatesTokenCount":200,"totalTokenCount":1200}}`}
	m := openGemini(t, fake)
	msg := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Summarise.")}}).Message
	want := dialog.Usage{InputTokens: 1000, CachedInputTokens: 400, OutputTokens: 200}
	if msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}
	// 600 fresh at $0.10, 400 cached at $0.025, 200 out at $0.40 per million.
	if usd := (600*0.10 + 400*0.025 + 200*0.40) / 1e6; math.Abs(msg.USD-usd) > 1e-12 {
		t.Errorf("USD = %g, want %g", msg.USD, usd)
	}
}

// A Gemini reply's finish reason is spelt as the API spells it
// (MAX_TOKENS), not as Google's client names its enum
// (FinishReasonMaxTokens), streamed or not.
func TestGoogleAIFinishReason(t *testing.T) {
	for _, name := range []string{"STOP", "MAX_TOKENS", "OTHER"} {
		for _, stream := range []bool{false, true} {
			srv := providertest.NewGeminiServer(t, providertest.Reply{Text: "Done.", FinishReason: name})
			req := &Request{Messages: []*dialog.Message{userMsg("Summarise.")}}
			var r recorder
			if stream {
				req.Stream = r.stream
			}
			if got := generate(t, openFake(t, "googleai/gemini-2.5-flash", srv), req).FinishReason; got != name {
				t.Errorf("finishReason %s, streamed %v: FinishReason %q", name, stream, got)
			}
		}
	}
}

// Format asks Gemini for JSON: generationConfig.responseMimeType is
// application/json, next to the params the caller set.
func TestGoogleAIFormatAsksForJSON(t *testing.T) {
	fake := &fakeGemini{status: 200, body: `{"candidates":[{"content":{"parts":[{"text":"{\"city\":\"Paris\"}"}],"role":"model"},"finishReason":1,"index":0}]}`}
	m := openGemini(t, fake)
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{userMsg("Where?")},
		Format:   json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		Params:   Params{MaxTokens: ptr(100)},
	})
	if resp.Message.Content != `{"city":"Paris"}` {
		t.Errorf("content = %q", resp.Message.Content)
	}
	reqs, _ := fake.requests()
	gen, _ := reqs[0]["generationConfig"].(map[string]any)
	if gen["responseMimeType"] != "application/json" || gen["maxOutputTokens"] != 100.0 {
		t.Errorf("generationConfig = %v, want responseMimeType application/json and maxOutputTokens 100", gen)
	}
}

// Format's schema itself reaches Gemini, as generationConfig.responseJsonSchema
// (the JSON schema as given) or responseSchema (Gemini's OpenAPI subset), so
// that the reply is held to it as it is for openai and ollama.
func TestGoogleAIFormatSendsSchema(t *testing.T) {
	fake := &fakeGemini{status: 200, body: `{"candidates":[{"content":{"parts":[{"text":"{\"city\":\"Paris\"}"}],"role":"model"},"finishReason":1,"index":0}]}`}
	m := openGemini(t, fake)
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Where?")}, Format: schema})
	reqs, _ := fake.requests()
	gen, _ := reqs[0]["generationConfig"].(map[string]any)
	js, rs := gen["responseJsonSchema"], gen["responseSchema"]
	switch {
	case js != nil:
		if !jsonEqual(t, js, schema) {
			t.Errorf("responseJsonSchema = %v, want %s", js, schema)
		}
	case rs != nil:
		if schemaType(jsonAt(rs, "type")) != "OBJECT" || schemaType(jsonAt(rs, "properties", "city", "type")) != "STRING" {
			t.Errorf("responseSchema = %v", rs)
		}
	default:
		t.Errorf("generationConfig = %v: the format's schema is not sent", gen)
	}
}

// Gemini's errors are classified by status and message, each after one
// request: the client retries none of them.
func TestGoogleAIErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		kind   ErrorKind
		retry  time.Duration
	}{
		{"rate limit", 429, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED",
			"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}`, ErrRateLimit, 7 * time.Second},
		{"rate limit without delay", 429, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`,
			ErrRateLimit, 0},
		{"bad request", 400, `{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"foo\": Cannot find field.","status":"INVALID_ARGUMENT"}}`,
			ErrBadRequest, 0},
		{"context length", 400, `{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`,
			ErrContextLength, 0},
		{"permission denied", 403, `{"error":{"code":403,"message":"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.","status":"PERMISSION_DENIED"}}`,
			ErrAuth, 0},
		// A wrong key is a 400 from Gemini, told apart by its ErrorInfo reason.
		{"invalid key", 400, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",
			"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}`,
			ErrAuth, 0},
		{"server", 500, `{"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}`,
			ErrServer, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeGemini{status: tc.status, body: tc.body}
			m := openGemini(t, fake)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			pe := generateErr(t, ctx, m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
			if pe.Kind != tc.kind || pe.Status != tc.status || pe.Retry != tc.retry {
				t.Errorf("error = %v (kind %s, status %d, retry %v), want kind %s, status %d, retry %v",
					pe, pe.Kind, pe.Status, pe.Retry, tc.kind, tc.status, tc.retry)
			}
			if reqs, _ := fake.requests(); len(reqs) != 1 {
				t.Errorf("%d requests, want 1", len(reqs))
			}
		})
	}
}

// A streamed reply reaches Stream chunk by chunk, each before the next is
// sent; the message is their concatenation, with the usage of the last
// chunk (Gemini's counts are running totals).
func TestGoogleAIStream(t *testing.T) {
	fake := &fakeGemini{gate: make(chan struct{}, 1), replies: []fakeReply{{status: 200, chunks: []string{
		`{"candidates":[{"content":{"parts":[{"text":"Bon"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":1,"totalTokenCount":9}}`,
		`{"candidates":[{"content":{"parts":[{"text":"jour."}],"role":"model"},"finishReason":1,"index":0}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":3,"totalTokenCount":11}}`,
	}}}}
	m := openGemini(t, fake)
	var chunks []string
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{userMsg("Hello")},
		Stream: func(_ context.Context, c Chunk) error {
			chunks = append(chunks, c.Text)
			select {
			case fake.gate <- struct{}{}:
			default:
			}
			return nil
		},
	})
	if len(chunks) != 2 || chunks[0] != "Bon" || chunks[1] != "jour." {
		t.Errorf("chunks = %q, want [Bon jour.]", chunks)
	}
	if resp.Message.Content != "Bonjour." {
		t.Errorf("content = %q", resp.Message.Content)
	}
	if want := (dialog.Usage{InputTokens: 8, OutputTokens: 3}); resp.Message.Usage != want {
		t.Errorf("usage = %+v, want %+v (the last chunk's)", resp.Message.Usage, want)
	}
	_, paths := fake.requests()
	fake.mu.Lock()
	stalled := fake.stalled
	fake.mu.Unlock()
	if len(paths) != 1 || !strings.HasSuffix(paths[0], "models/gemini-2.0-flash:streamGenerateContent") || stalled {
		t.Errorf("paths %q, stalled %v: want one streamed request, read chunk by chunk", paths, stalled)
	}
}

// A dialog of several messages goes, even unstreamed, through the chat
// session's streamGenerateContent: a reply in two chunks is one message
// with the usage of the last chunk.
func TestGoogleAIChatReplyInChunks(t *testing.T) {
	fake := &fakeGemini{replies: []fakeReply{{status: 200, chunks: []string{
		`{"candidates":[{"content":{"parts":[{"text":"Bon"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":14,"candidatesTokenCount":1,"totalTokenCount":15}}`,
		`{"candidates":[{"content":{"parts":[{"text":"jour."}],"role":"model"},"finishReason":1,"index":0}],"usageMetadata":{"promptTokenCount":14,"candidatesTokenCount":3,"totalTokenCount":17}}`,
	}}}}
	m := openGemini(t, fake)
	msg := generate(t, m, &Request{Messages: []*dialog.Message{systemMsg("Answer in French."), userMsg("Hello")}}).Message
	if msg.Content != "Bonjour." {
		t.Errorf("content = %q", msg.Content)
	}
	if want := (dialog.Usage{InputTokens: 14, OutputTokens: 3}); msg.Usage != want {
		t.Errorf("usage = %+v, want %+v (the last chunk's)", msg.Usage, want)
	}
	reqs, paths := fake.requests()
	if len(paths) != 1 || !strings.HasSuffix(paths[0], ":streamGenerateContent") ||
		jsonAt(reqs[0], "systemInstruction", "parts", 0, "text") != "Answer in French." {
		t.Errorf("paths %q, request %v", paths, reqs)
	}
}

// Gemini 3 signs a reply's first function call; the signature, which
// Google's client drops, is kept on the message (as a reasoning block
// naming the call) and goes back on that call's part in the next request,
// which Gemini 3 refuses without it. Streamed or not, with or without text
// before the calls.
func TestGeminiThoughtSignatures(t *testing.T) {
	calls := []providertest.ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}, {Name: "get_weather", Arguments: `{"city":"Rome"}`}}
	for _, tc := range []struct {
		name     string
		text     string
		streamed bool
	}{{"whole", "", false}, {"streamed", "", true}, {"with text", "Let me check.", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewGeminiServer(t,
				providertest.Reply{Text: tc.text, Thinking: []providertest.Thinking{{Text: "two cities"}}, ToolCalls: calls},
				providertest.Reply{Text: "Sunny in both."})
			m := openFake(t, "googleai/gemini-3-pro-preview", srv)
			var stream func(context.Context, Chunk) error
			if tc.streamed {
				stream = func(context.Context, Chunk) error { return nil }
			}
			req := &Request{Messages: []*dialog.Message{userMsg("Weather in Paris and Rome?")}, Tools: []*dialog.Function{weatherTool(t)}, Stream: stream}
			first := generate(t, m, req).Message
			want := []dialog.Reasoning{{Signature: providertest.Signature("two cities"), Call: first.FunctionCalls[0].ID}}
			if !reflect.DeepEqual(first.Reasoning, want) {
				t.Fatalf("reasoning %+v, want %+v", first.Reasoning, want)
			}
			msgs := []*dialog.Message{req.Messages[0], &first}
			for _, fc := range first.FunctionCalls {
				msgs = append(msgs, &dialog.Message{Role: dialog.RoleTool, Name: fc.Name, ToolCallID: fc.ID, Content: "sunny"})
			}
			second := generate(t, m, &Request{Messages: msgs, Tools: req.Tools, Stream: stream}).Message
			if second.Content != "Sunny in both." {
				t.Fatalf("second reply %q", second.Content)
			}
			parts := providertest.GeminiParts(providertest.GeminiContents(srv.LastRequest().JSON())[1])
			var sigs []any
			for _, p := range parts {
				sigs = append(sigs, p["thoughtSignature"])
			}
			wantSigs := []any{providertest.Signature("two cities"), nil}
			if tc.text != "" {
				wantSigs = append([]any{nil}, wantSigs...)
			}
			if !reflect.DeepEqual(sigs, wantSigs) {
				t.Errorf("the model turn's parts carry signatures %v, want %v", sigs, wantSigs)
			}
		})
	}
}

// Without its signature, a Gemini 3 tool round is refused (the fake's
// check, which makes the tests of signatures prove something); a Gemini 2.5
// one is not, nor one with Google's placeholder.
func TestGeminiFakeChecksSignatures(t *testing.T) {
	srv := providertest.NewGeminiServer(t, providertest.Reply{Text: "ok"}, providertest.Reply{Text: "ok"})
	post := func(model, sig string) int {
		call := `{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}` + sig + `}`
		body := `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]},{"role":"model","parts":[` + call + `]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"sunny"}}}]}]}`
		req, err := http.NewRequest("POST", srv.URL+"/v1beta/models/"+model+":generateContent", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-goog-api-key", "k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		model, sig string
		want       int
	}{
		{"gemini-3-pro-preview", "", http.StatusBadRequest},
		{"gemini-3-pro-preview", `,"thoughtSignature":"forged"`, http.StatusBadRequest},
		{"gemini-3-pro-preview", `,"thoughtSignature":"skip_thought_signature_validator"`, http.StatusOK},
		{"gemini-2.5-flash", "", http.StatusOK},
	} {
		if got := post(tc.model, tc.sig); got != tc.want {
			t.Errorf("%s with signature %q: status %d, want %d", tc.model, tc.sig, got, tc.want)
		}
	}
}

// The results of a turn's parallel calls, one tool message each in the
// dialog, go to Gemini in one content, as it requires (it refuses a
// function call turn answered by fewer function responses).
func TestGeminiParallelResultsInOneContent(t *testing.T) {
	srv := providertest.NewGeminiServer(t)
	var calls []dialog.FunctionCall
	msgs := []*dialog.Message{userMsg("Weather in Paris and Rome?"), nil}
	for i, city := range []string{"Paris", "Rome"} {
		id := fmt.Sprintf("call_%d", i+1)
		calls = append(calls, dialog.FunctionCall{ID: id, Name: "get_weather", Arguments: json.RawMessage(`{"city":"` + city + `"}`)})
		msgs = append(msgs, &dialog.Message{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: id, Content: "sunny in " + city})
	}
	msgs[1] = &dialog.Message{Role: dialog.RoleToolCall, FunctionCalls: calls}
	generate(t, openFake(t, "googleai/gemini-2.5-flash", srv), &Request{Messages: append(msgs, userMsg("And tomorrow?")), Tools: []*dialog.Function{weatherTool(t)}})
	contents := providertest.GeminiContents(srv.LastRequest().JSON())
	if len(contents) != 4 || len(providertest.GeminiParts(contents[2])) != 2 {
		t.Fatalf("contents %v: want the two responses in the third", contents)
	}
	for i, p := range providertest.GeminiParts(contents[2]) {
		r, _ := p["functionResponse"].(map[string]any)
		if r["name"] != "get_weather" || !strings.Contains(fmt.Sprint(r["response"]), []string{"Paris", "Rome"}[i]) {
			t.Errorf("response %d: %v", i, p)
		}
	}
}

// Thought summaries (includeThoughts), which Google's client takes for
// text, are the reply's reasoning, not its text, streamed or not.
func TestGeminiThoughtSummaries(t *testing.T) {
	include := Params{ExtraBody: json.RawMessage(`{"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`)}
	for _, streamed := range []bool{false, true} {
		srv := providertest.NewGeminiServer(t, providertest.Reply{Text: "Paris.", Thinking: []providertest.Thinking{{Text: "The capital of France. "}, {Text: "That is Paris."}}})
		var stream func(context.Context, Chunk) error
		if streamed {
			stream = func(context.Context, Chunk) error { return nil }
		}
		msg := generate(t, openFake(t, "googleai/gemini-2.5-flash", srv), &Request{Messages: []*dialog.Message{userMsg("Capital of France?")}, Params: include, Stream: stream}).Message
		if msg.Content != "Paris." || msg.ReasoningText() != "The capital of France. That is Paris." {
			t.Errorf("streamed %v: reply %q, reasoning %q", streamed, msg.Content, msg.ReasoningText())
		}
	}
}

// firstCallSignatures is, for each model content of a Gemini request, the
// thoughtSignature of its first function call part (nil for none; contents
// without calls left out).
func firstCallSignatures(t *testing.T, body map[string]any) []any {
	t.Helper()
	var sigs []any
	contents, _ := body["contents"].([]any)
	for _, c := range contents {
		parts, _ := c.(map[string]any)["parts"].([]any)
		for _, p := range parts {
			if p := p.(map[string]any); p["functionCall"] != nil {
				sigs = append(sigs, p["thoughtSignature"])
				break
			}
		}
	}
	return sigs
}

// A tool round of the current turn that Gemini 3 did not make (here,
// another provider's) has no thought signature, which Gemini 3 refuses:
// its first call goes with Google's placeholder. Earlier turns, calls
// Gemini signed, and models before Gemini 3 (which a signature Gemini made
// still goes back to) are left as they are.
func TestGeminiPlaceholderSignature(t *testing.T) {
	round := func(id, model, text string, reasoning ...dialog.Reasoning) []*dialog.Message {
		calls := []dialog.FunctionCall{
			{ID: id + "a", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{ID: id + "b", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)},
		}
		role := dialog.RoleToolCall
		if text != "" {
			role = dialog.RoleAssistant
		}
		return []*dialog.Message{
			{Role: role, Content: text, FunctionCalls: calls, Model: model, Reasoning: reasoning},
			{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: id + "a", Content: "sunny"},
			{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: id + "b", Content: "rainy"},
		}
	}
	signed := dialog.Reasoning{Signature: providertest.Signature("two cities"), Call: "g1a"}
	var msgs []*dialog.Message
	msgs = append(msgs, userMsg("Weather in Paris and Rome?"))
	msgs = append(msgs, round("o1", "openai/gpt-4o", "")...) // an earlier turn: left alone
	msgs = append(msgs, userMsg("And now?"))
	msgs = append(msgs, round("o2", "openai/gpt-4o", "Let me look.")...)
	msgs = append(msgs, round("g1", "googleai/gemini-3-pro-preview", "", signed)...)
	msgs = append(msgs, round("o3", "anthropic/claude-sonnet-4-5", "")...)

	for _, tc := range []struct {
		model string
		want  []any
	}{
		{"gemini-3-pro-preview", []any{nil, placeholderSignature, providertest.Signature("two cities"), placeholderSignature}},
		{"gemini-2.5-flash", []any{nil, nil, providertest.Signature("two cities"), nil}},
	} {
		srv := providertest.NewGeminiServer(t, providertest.Reply{Text: "Sunny, then rain."})
		msg := generate(t, openFake(t, "googleai/"+tc.model, srv), &Request{Messages: msgs, Tools: []*dialog.Function{weatherTool(t)}}).Message
		if msg.Content != "Sunny, then rain." {
			t.Errorf("%s: reply %q", tc.model, msg.Content)
		}
		if got := firstCallSignatures(t, srv.LastRequest().JSON()); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: first calls' signatures %v, want %v", tc.model, got, tc.want)
		}
	}
	// The dialog is not changed: the placeholder is the request's only.
	if len(msgs[5].Reasoning) != 0 || len(msgs[8].Reasoning) != 1 {
		t.Errorf("the dialog's reasoning changed: %+v, %+v", msgs[5].Reasoning, msgs[8].Reasoning)
	}
}

func TestSignsCalls(t *testing.T) {
	for model, want := range map[string]bool{
		"gemini-3-pro-preview": true, "gemini-3-flash": true, "gemini-4": true,
		"gemini-2.5-flash": false, "gemini-1.5-pro": false, "gemma-3-27b-it": false, "gemini-": false, "": false,
	} {
		if got := signsCalls(model); got != want {
			t.Errorf("signsCalls(%q) = %v, want %v", model, got, want)
		}
	}
}

// Google's client takes a model named "models/gemini-3-pro-preview" for
// gemini-3-pro-preview: a tool round of the current turn that another
// provider made goes to it with the placeholder signature all the same,
// not refused for a missing one.
func TestGeminiPlaceholderModelsPrefix(t *testing.T) {
	msgs := []*dialog.Message{
		userMsg("Weather in Paris?"),
		{Role: dialog.RoleToolCall, Model: "openai/gpt-4o", FunctionCalls: []dialog.FunctionCall{{ID: "c1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
		{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "c1", Content: "sunny"},
	}
	for model, want := range map[string][]any{
		"models/gemini-3-pro-preview": {placeholderSignature},
		"models/gemini-2.5-flash":     {nil},
	} {
		srv := providertest.NewGeminiServer(t, providertest.Reply{Text: "Sunny."})
		msg := generate(t, openFake(t, "googleai/"+model, srv), &Request{Messages: msgs, Tools: []*dialog.Function{weatherTool(t)}}).Message
		if msg.Content != "Sunny." {
			t.Errorf("%s: reply %q", model, msg.Content)
		}
		if got := firstCallSignatures(t, srv.LastRequest().JSON()); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: first calls' signatures %v, want %v", model, got, want)
		}
	}
	if !signsCalls("models/gemini-3-flash") || signsCalls("models/gemini-2.5-pro") || signsCalls("models/") {
		t.Error("signsCalls ignores models/ wrongly")
	}
}

// A Gemini stream (a JSON array of responses) that ends cleanly before
// its last response, the one with a finishReason, is a retryable network
// error, as on the other wires, not a reply made of the text that came. A
// whole one, and a blocked prompt's, are not.
func TestGeminiUnfinishedStreams(t *testing.T) {
	el := func(text, finish string) string {
		return `{"candidates":[{"content":{"role":"model","parts":[{"text":"` + text + `"}]},"index":0` + finish +
			`}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4}}`
	}
	first, last := el("The capital ", ""), el("is Paris.", `,"finishReason":1`)
	for _, tc := range []struct {
		name, body, want string // want: the reply's text, "" for an unfinished stream
	}{
		{"whole", "[" + first + ",\r\n" + last + "]", "The capital is Paris."},
		{"blocked", `[{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3}}]`, "blocked"},
		{"no closing bracket", "[" + first + ",\r\n", ""},
		{"cut in a response", "[" + first + ",\r\n" + last[:40], ""},
		{"no finishReason", "[" + first + "]", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := streamServer(t, "application/json; charset=UTF-8", tc.body, false)
			m, err := Open(context.Background(), "googleai/gemini-2.5-flash", Config{BaseURL: srv.URL, APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Generate(context.Background(), &Request{
				Messages: []*dialog.Message{userMsg("Capital of France?")},
				Stream:   func(context.Context, Chunk) error { return nil },
			})
			var pe *Error
			switch {
			case tc.want == "":
				if !errors.As(err, &pe) || pe.Kind != ErrNetwork || !pe.Retryable() || !strings.Contains(err.Error(), "finishReason") {
					t.Fatalf("an unfinished stream: %v (reply %+v), want a retryable network error naming the finishReason", err, resp)
				}
			case tc.want == "blocked":
				if errors.As(err, &pe) && pe.Kind == ErrNetwork {
					t.Fatalf("a blocked prompt taken for an unfinished stream: %v", err)
				}
			case err != nil:
				t.Fatalf("a whole stream: %v", err)
			case resp.Message.Text() != tc.want:
				t.Fatalf("reply %q, want %q", resp.Message.Text(), tc.want)
			}
		})
	}
}

// A seed reaches Gemini as generationConfig.seed (langchaingo's client
// drops it), a seed of 0 too and a streamed request's too; a request
// without one carries none.
func TestGeminiSeed(t *testing.T) {
	for _, tc := range []struct {
		seed *int
		want any // generationConfig.seed; nil: absent
	}{{ptr(7), 7.0}, {ptr(0), 0.0}, {nil, nil}} {
		for _, stream := range []bool{false, true} {
			srv := providertest.NewGeminiServer(t, providertest.Reply{Text: "Hi."})
			req := &Request{Messages: []*dialog.Message{userMsg("Hello")}, Params: Params{Seed: tc.seed}}
			if stream {
				req.Stream = func(context.Context, Chunk) error { return nil }
			}
			generate(t, openFake(t, "googleai/gemini-2.5-flash", srv), req)
			gen, _ := srv.LastRequest().JSON()["generationConfig"].(map[string]any)
			if got, ok := gen["seed"]; ok != (tc.want != nil) || got != tc.want {
				t.Errorf("Params.Seed %v, stream %v: generationConfig = %v, want seed %v", tc.want, stream, gen, tc.want)
			}
		}
	}
}
