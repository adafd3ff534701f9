package provider

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

func TestOllamaNative(t *testing.T) {
	clearEnv(t)
	var (
		mu   sync.Mutex
		last map[string]any
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = nil
		json.Unmarshal(b, &last)
		mu.Unlock()
		if r.URL.Path != "/api/chat" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"model":"llama3.1","message":{"role":"assistant","content":"Hi from Ollama."},"done":true,"done_reason":"length","prompt_eval_count":14,"eval_count":5}`)
	}))
	defer srv.Close()
	t.Setenv("OLLAMA_HOST", srv.Listener.Addr().String()) // host:port, as Ollama takes it
	m, err := Open(context.Background(), "ollama/llama3.1", Config{})
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object"}`)
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{
			userMsg("Weather?"),
			{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{{ID: "c1", Name: "get_weather", Arguments: []byte(`{"city":"Oslo"}`)}}},
			{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "c1", Content: "-3C"},
			{Role: dialog.RoleUser, Parts: []dialog.Part{{Type: dialog.PartText, Text: "and"}, {Type: dialog.PartText, Text: "tomorrow?"}}},
		},
		Format: schema,
		Params: Params{Seed: ptr(0)},
	})
	if resp.Message.Content != "Hi from Ollama." || resp.Message.Usage.InputTokens != 14 || resp.Message.Usage.OutputTokens != 5 {
		t.Errorf("message = %+v", resp.Message)
	}
	if resp.FinishReason != "length" { // langchaingo's client drops done_reason
		t.Errorf("finish reason %q, want Ollama's done_reason %q", resp.FinishReason, "length")
	}
	mu.Lock()
	body := last
	mu.Unlock()
	opts, _ := body["options"].(map[string]any)
	if _, ok := opts["temperature"]; ok || opts["seed"] != 0.0 {
		t.Errorf("options = %v, want no temperature and seed 0", opts)
	}
	if !jsonEqual(t, body["format"], schema) {
		t.Errorf("format = %v", body["format"])
	}
	msgs := providertest.Messages(body)
	if len(msgs) != 4 || msgs[1]["content"] != `[tool call get_weather({"city":"Oslo"})]` || msgs[2]["role"] != "tool" ||
		msgs[2]["content"] != "-3C" || msgs[3]["content"] != "and\ntomorrow?" {
		t.Errorf("messages = %v", msgs)
	}

	// With tools, they go as Ollama's "tools", and the history's calls and
	// results as an assistant's "tool_calls" and "tool" messages.
	generate(t, m, &Request{Messages: []*dialog.Message{
		userMsg("Weather?"),
		{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{{ID: "c1", Name: "get_weather", Arguments: []byte(`{"city":"Oslo"}`)}}},
		{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "c1", Content: "-3C"},
	}, Tools: []*dialog.Function{weatherTool(t)}})
	mu.Lock()
	body = last
	mu.Unlock()
	msgs = providertest.Messages(body)
	if jsonAt(body, "tools", 0, "type") != "function" || jsonAt(body, "tools", 0, "function", "name") != "get_weather" ||
		!jsonEqual(t, jsonAt(body, "tools", 0, "function", "parameters"), weatherTool(t).Parameters) {
		t.Errorf("tools = %v", body["tools"])
	}
	if len(msgs) != 3 || msgs[1]["role"] != "assistant" || jsonAt(msgs[1], "tool_calls", 0, "function", "name") != "get_weather" ||
		!jsonEqual(t, jsonAt(msgs[1], "tool_calls", 0, "function", "arguments"), `{"city":"Oslo"}`) ||
		msgs[2]["role"] != "tool" || msgs[2]["content"] != "-3C" || msgs[2]["tool_name"] != "get_weather" {
		t.Errorf("messages with tools = %v", msgs)
	}

	// An image goes in the message's images, as base64.
	img, err := dialog.ImageBytes([]byte{0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3}).Load()
	if err != nil {
		t.Fatal(err)
	}
	generate(t, m, &Request{Messages: []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{
		{Type: dialog.PartText, Text: "What is it?"}, {Type: dialog.PartImage, Image: img},
	}}}})
	mu.Lock()
	msgs = providertest.Messages(last)
	mu.Unlock()
	if len(msgs) != 1 || msgs[0]["content"] != "What is it?" || !jsonEqual(t, msgs[0]["images"], []string{"/9j/4AECAw=="}) {
		t.Errorf("image message = %v", msgs)
	}
}

func TestMistralSpeaksOpenAI(t *testing.T) {
	clearEnv(t)
	srv := providertest.NewOpenAIServer(t, providertest.Reply{Text: "Bonjour", Usage: providertest.Usage{Input: 7, Output: 2}})
	t.Setenv("MISTRAL_API_KEY", "mk")
	t.Setenv("MISTRAL_BASE_URL", srv.BaseURL())
	m, err := Open(context.Background(), "mistral/mistral-small-latest", Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{userMsg("Salut")},
		Params:   Params{Seed: ptr(7), MaxTokens: ptr(64)},
		Stream:   func(context.Context, Chunk) error { return nil },
	})
	if resp.Message.Content != "Bonjour" || resp.Message.Model != "mistral/mistral-small-latest" {
		t.Errorf("message = %+v", resp.Message)
	}
	body := srv.LastRequest().JSON()
	if body["random_seed"] != 7.0 || body["max_tokens"] != 64.0 || body["stream"] != true {
		t.Errorf("body = %v", body)
	}
	for _, k := range []string{"seed", "stream_options", "temperature", "max_completion_tokens"} {
		if v, ok := body[k]; ok {
			t.Errorf("%s = %v sent to Mistral", k, v)
		}
	}
	if got := srv.LastRequest().Header.Get("Authorization"); got != "Bearer mk" {
		t.Errorf("Authorization = %q", got)
	}
}

// A reply's tool calls, which langchaingo's ollama client drops, come back
// as the message's calls, streamed or not, with Ollama's id or call_N.
func TestOllamaNativeToolCalls(t *testing.T) {
	clearEnv(t)
	srv := providertest.NewOllamaServer(t, providertest.Reply{
		ToolCalls: []providertest.ToolCall{{Name: "get_weather", Arguments: `{"city":"Oslo"}`}, {ID: "call_x", Name: "get_weather", Arguments: `{"city":"Rome"}`}},
		Usage:     providertest.Usage{Input: 30, Output: 12},
	}, providertest.Reply{Text: "-3C in Oslo, 21C in Rome.", Usage: providertest.Usage{Input: 60, Output: 9}})
	m, err := Open(context.Background(), "ollama/llama3.1", Config{BaseURL: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	tools := []*dialog.Function{weatherTool(t)}
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Oslo and Rome?")}, Tools: tools})
	msg := resp.Message
	if msg.Role != dialog.RoleToolCall || msg.Content != "" || len(msg.FunctionCalls) != 2 ||
		msg.FunctionCalls[0].ID != "call_1" || !jsonEqual(t, msg.FunctionCalls[0].Arguments, `{"city":"Oslo"}`) ||
		msg.FunctionCalls[1].ID != "call_x" || !jsonEqual(t, msg.FunctionCalls[1].Arguments, `{"city":"Rome"}`) ||
		msg.Usage != (dialog.Usage{InputTokens: 30, OutputTokens: 12}) {
		t.Fatalf("reply = %s %q %+v %+v", msg.Role, msg.Content, msg.FunctionCalls, msg.Usage)
	}
	resp = generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Oslo and Rome?"), &msg,
		{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "call_1", Content: "-3C"},
		{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "call_x", Content: "21C"},
	}, Tools: tools})
	if resp.Message.Content != "-3C in Oslo, 21C in Rome." || len(resp.Message.FunctionCalls) != 0 {
		t.Errorf("second reply = %+v", resp.Message)
	}
	msgs := providertest.Messages(srv.LastRequest().JSON())
	var calls []any
	if len(msgs) > 1 {
		calls, _ = msgs[1]["tool_calls"].([]any)
	}
	if len(msgs) != 4 || len(calls) != 2 || msgs[2]["content"] != "-3C" || msgs[3]["content"] != "21C" {
		t.Errorf("messages = %v", msgs)
	}
}

// An Ollama stream served without the ndjson content type (by a proxy, or
// an Ollama-compatible server) streams its thinking as reasoning all the
// same, in order, and its pieces add up to the reply's.
func TestOllamaStreamContentType(t *testing.T) {
	const lines = `{"model":"qwen3","message":{"role":"assistant","content":"","thinking":"Think A. "},"done":false}
{"model":"qwen3","message":{"role":"assistant","content":"","thinking":"Think B."},"done":false}
{"model":"qwen3","message":{"role":"assistant","content":"Hello"},"done":false}
{"model":"qwen3","message":{"role":"assistant","content":" world"},"done":false}
{"model":"qwen3","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":4}
`
	for _, ct := range []string{"application/x-ndjson", "application/json; charset=utf-8", "text/plain; charset=utf-8"} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", ct)
			io.WriteString(w, lines)
		}))
		m, err := Open(context.Background(), "ollama/qwen3", Config{BaseURL: s.URL})
		if err != nil {
			t.Fatal(err)
		}
		var r recorder
		msg := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Hi")}, Stream: r.stream}).Message
		if msg.Content != "Hello world" || msg.ReasoningText() != "Think A. Think B." {
			t.Errorf("%s: reply %q, reasoning %q", ct, msg.Content, msg.ReasoningText())
		}
		r.check(t, &msg, 2)
		s.Close()
	}
}
