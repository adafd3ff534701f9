package provider

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
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
