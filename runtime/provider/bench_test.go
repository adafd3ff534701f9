package provider

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// BenchmarkOverhead measures what the adapter adds to a model call: the
// same local fake OpenAI server, the same ten-message dialog, called with
// langchaingo's openai client directly and through Open's adapter (message
// conversion, body edits, status recording, reply conversion, usage and
// cost). Compare the two ns/op; the goal is an adapter within 5%.
func BenchmarkOverhead(b *testing.B) {
	srv := providertest.NewOpenAIServer(b)
	srv.SetMaxRecorded(1)
	srv.SetDefault(providertest.Reply{
		Text:  "The answer is 4, because two and two make four.",
		Usage: providertest.Usage{Input: 420, Cached: 128, Output: 12},
	})
	ctx := context.Background()

	dlg := []*dialog.Message{systemMsg("You are a careful assistant. Answer in one sentence.")}
	for i := range 9 {
		role := dialog.RoleUser
		if i%2 == 1 {
			role = dialog.RoleAssistant
		}
		dlg = append(dlg, &dialog.Message{Role: role, Content: fmt.Sprintf("Turn %d: %s", i, strings.Repeat("some words of context ", 8))})
	}
	var msgs []llms.MessageContent
	for _, m := range dlg {
		typ := map[dialog.Role]llms.ChatMessageType{
			dialog.RoleSystem: llms.ChatMessageTypeSystem, dialog.RoleUser: llms.ChatMessageTypeHuman, dialog.RoleAssistant: llms.ChatMessageTypeAI,
		}[m.Role]
		msgs = append(msgs, llms.TextParts(typ, m.Content))
	}

	llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(srv.BaseURL()),
		openai.WithModel("gpt-4o-mini"), openai.WithHTTPClient(&http.Client{}))
	if err != nil {
		b.Fatal(err)
	}
	raw := func(b *testing.B) {
		resp, err := llm.GenerateContent(ctx, msgs)
		if err != nil || resp.Choices[0].Content == "" {
			b.Fatal(err)
		}
	}
	m, err := Open(ctx, "openai/gpt-4o-mini", Config{BaseURL: srv.BaseURL(), APIKey: "sk-test"})
	if err != nil {
		b.Fatal(err)
	}
	req := &Request{Messages: dlg}
	adapted := func(b *testing.B) {
		resp, err := m.Generate(ctx, req)
		if err != nil || resp.Message.Content == "" {
			b.Fatal(err)
		}
	}

	b.Run("langchaingo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			raw(b)
		}
	})
	b.Run("adapter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			adapted(b)
		}
	})
	// Alternating blocks of 16 calls cancels the drift of a noisy machine
	// while each path pays for its own garbage: adapter/langchaingo is the
	// ratio of their total times.
	b.Run("interleaved", func(b *testing.B) {
		var tRaw, tAdapter time.Duration
		for b.Loop() {
			start := time.Now()
			for range 16 {
				raw(b)
			}
			mid := time.Now()
			for range 16 {
				adapted(b)
			}
			tRaw += mid.Sub(start)
			tAdapter += time.Since(mid)
		}
		b.ReportMetric(float64(tAdapter)/float64(tRaw), "adapter/langchaingo")
	})
}
