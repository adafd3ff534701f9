package provider

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

func TestAnthropicTextAndToolUseMerged(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, providertest.Reply{
		Text:      "Let me check.",
		ToolCalls: []providertest.ToolCall{{ID: "toolu_01", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		Usage:     providertest.Usage{Input: 1200, Cached: 1000, CacheWrite: 50, Output: 30},
	})
	m := openFake(t, "anthropic/claude-sonnet-4-5", srv)
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{systemMsg("You are helpful."), userMsg("Weather in Paris?")},
		Tools:    []*dialog.Function{weatherTool(t)},
	})
	msg := resp.Message
	if msg.Role != dialog.RoleAssistant || msg.Content != "Let me check." {
		t.Errorf("message = %s %q", msg.Role, msg.Content)
	}
	if len(msg.FunctionCalls) != 1 || msg.FunctionCalls[0].ID != "toolu_01" || msg.FunctionCalls[0].Name != "get_weather" ||
		!jsonEqual(t, msg.FunctionCalls[0].Arguments, `{"city":"Paris"}`) {
		t.Errorf("calls = %+v", msg.FunctionCalls)
	}
	want := dialog.Usage{InputTokens: 1200, CachedInputTokens: 1000, CacheWriteTokens: 50, OutputTokens: 30}
	if msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}
	if msg.Model != "anthropic/claude-sonnet-4-5" || resp.FinishReason != "tool_use" {
		t.Errorf("model %q, finish %q", msg.Model, resp.FinishReason)
	}
	// 150 fresh, 1000 read from the cache, 50 written to it (1.25x input).
	wantUSD := (150*3.0 + 1000*0.30 + 50*3.75 + 30*15.0) / 1e6
	if math.Abs(msg.USD-wantUSD) > 1e-12 {
		t.Errorf("USD = %v, want %v", msg.USD, wantUSD)
	}

	req := srv.LastRequest()
	if req.Header.Get("X-Api-Key") != "sk-test" || !strings.HasSuffix(req.Path, "/v1/messages") {
		t.Errorf("key %q, path %q", req.Header.Get("X-Api-Key"), req.Path)
	}
	body := req.JSON()
	if _, ok := body["temperature"]; ok {
		t.Errorf("temperature %v on the wire, want none", body["temperature"])
	}
	if body["system"] != "You are helpful." || body["model"] != "claude-sonnet-4-5" {
		t.Errorf("system %v, model %v", body["system"], body["model"])
	}
}

func TestAnthropicHistoryWithToolCalls(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, providertest.Reply{Text: "18C."})
	m := openFake(t, "anthropic/claude-haiku-4-5", srv)
	assistant := &dialog.Message{Role: dialog.RoleAssistant, Content: "Checking both.", FunctionCalls: []dialog.FunctionCall{
		{ID: "toolu_1", Name: "get_weather", Arguments: []byte(`{"city":"Paris"}`)},
		{ID: "toolu_2", Name: "get_weather", Arguments: []byte(`{"city":"Rome"}`)},
	}}
	generate(t, m, &Request{
		Messages: []*dialog.Message{
			userMsg("Paris and Rome?"), assistant,
			{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "toolu_1", Content: "18C"},
			{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "toolu_2", Content: "21C"},
		},
		Tools:  []*dialog.Function{weatherTool(t)},
		Params: Params{Temperature: ptr(0.2), TopK: ptr(5)},
	})
	body := srv.LastRequest().JSON()
	if body["temperature"] != 0.2 || body["top_k"] != 5.0 {
		t.Errorf("temperature %v, top_k %v", body["temperature"], body["top_k"])
	}
	// Every part of the assistant turn is on the wire (langchaingo alone
	// would send only the text), and each result answers its call.
	var texts, uses, results []string
	for _, msg := range providertest.Messages(body) {
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			block := b.(map[string]any)
			switch block["type"] {
			case "text":
				texts = append(texts, msg["role"].(string)+":"+block["text"].(string))
			case "tool_use":
				uses = append(uses, block["id"].(string))
			case "tool_result":
				results = append(results, block["tool_use_id"].(string)+"="+block["content"].(string))
			}
		}
	}
	if strings.Join(texts, "|") != "user:Paris and Rome?|assistant:Checking both." ||
		strings.Join(uses, ",") != "toolu_1,toolu_2" || strings.Join(results, ",") != "toolu_1=18C,toolu_2=21C" {
		t.Errorf("texts %q, tool uses %q, results %q", texts, uses, results)
	}
}

func TestAnthropicStreaming(t *testing.T) {
	srv := providertest.NewAnthropicServer(t, providertest.Reply{Text: "Streamed from Claude.", Usage: providertest.Usage{Input: 20, Output: 6}})
	m := openFake(t, "anthropic/claude-sonnet-4-5", srv)
	var got strings.Builder
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{userMsg("hi")},
		Stream:   func(ctx context.Context, c Chunk) error { got.WriteString(c.Text); return nil },
	})
	if got.String() != "Streamed from Claude." || resp.Message.Content != got.String() {
		t.Errorf("streamed %q, message %q", got.String(), resp.Message.Content)
	}
	if u := resp.Message.Usage; u.InputTokens != 20 || u.OutputTokens != 6 {
		t.Errorf("usage = %+v", u)
	}
}

func TestAnthropicErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply providertest.Reply
		kind  ErrorKind
		retry time.Duration
	}{
		{"rate limit", providertest.RateLimited("3"), ErrRateLimit, 3 * time.Second},
		{"overloaded", providertest.Overloaded(), ErrServer, 0},
		{"prompt too long", providertest.PromptTooLong(), ErrContextLength, 0},
		{"auth", providertest.Unauthorized(), ErrAuth, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.NewAnthropicServer(t, tc.reply)
			m := openFake(t, "anthropic/claude-sonnet-4-5", srv)
			pe := generateErr(t, context.Background(), m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
			if pe.Kind != tc.kind || pe.Retry != tc.retry || pe.Status != tc.reply.Status {
				t.Errorf("error = %v (kind %s, retry %v, status %d)", pe, pe.Kind, pe.Retry, pe.Status)
			}
		})
	}
}

func TestAnthropicImageAsBase64Block(t *testing.T) {
	srv := providertest.NewAnthropicServer(t)
	m := openFake(t, "anthropic/claude-sonnet-4-5", srv)
	img, err := dialog.ImageBytes([]byte{0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3}).Load()
	if err != nil {
		t.Fatal(err)
	}
	generate(t, m, &Request{Messages: []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{
		{Type: dialog.PartText, Text: "What is it?"}, {Type: dialog.PartImage, Image: img},
	}}}})
	blocks, _ := providertest.Messages(srv.LastRequest().JSON())[0]["content"].([]any)
	if len(blocks) != 2 {
		t.Fatalf("content = %v", blocks)
	}
	src, _ := blocks[1].(map[string]any)["source"].(map[string]any)
	if src["type"] != "base64" || src["media_type"] != "image/jpeg" || src["data"] != "/9j/4AECAw==" {
		t.Errorf("image block = %v", blocks[1])
	}
	// A URL image cannot be sent to Anthropic through langchaingo.
	pe := generateErr(t, context.Background(), m, &Request{Messages: []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{
		{Type: dialog.PartImage, Image: &dialog.Image{URL: "https://example.com/cat.png"}},
	}}}})
	if pe.Kind != ErrBadRequest {
		t.Errorf("URL image: %v", pe)
	}
}
