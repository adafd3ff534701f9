package tactics

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

// BenchmarkCallOverhead compares one model call made by an Agent (working
// fork, request digest, adapter, reply appended to two dialogs, every event
// written to a run log on disk) with the same call made directly with the
// langchaingo OpenAI client, both against one local OpenAI-wire server.
func BenchmarkCallOverhead(b *testing.B) {
	srv := providertest.NewOpenAIServer(b)
	srv.SetMaxRecorded(1)
	srv.SetDefault(providertest.Reply{Text: "The answer is 4, because two and two make four.",
		Usage: providertest.Usage{Input: 420, Output: 12}})
	ctx := context.Background()
	system := "You are a careful assistant. Answer in one sentence."
	turns := make([]string, 9)
	for i := range turns {
		turns[i] = fmt.Sprintf("Turn %d: %s", i, strings.Repeat("some words of context ", 8))
	}

	b.Run("langchaingo", func(b *testing.B) {
		llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(srv.BaseURL()),
			openai.WithModel("gpt-4o-mini"), openai.WithHTTPClient(&http.Client{}))
		if err != nil {
			b.Fatal(err)
		}
		msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, system)}
		for i, t := range turns {
			typ := llms.ChatMessageTypeHuman
			if i%2 == 1 {
				typ = llms.ChatMessageTypeAI
			}
			msgs = append(msgs, llms.TextParts(typ, t))
		}
		for b.Loop() {
			if _, err := llm.GenerateContent(ctx, msgs); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("agent+log", func(b *testing.B) {
		model, err := provider.Open(ctx, "openai/gpt-4o-mini", provider.Config{BaseURL: srv.BaseURL(), HTTPClient: &http.Client{}})
		if err != nil {
			b.Fatal(err)
		}
		w, _, err := logs.Create(b.TempDir(), logs.RunStart{Tactic: "bench"}, logs.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		a := &Agent{Name: "bench", System: dialog.MustPrompt("sys", system), Model: model,
			ModelName: "openai/gpt-4o-mini", Limits: DefaultLimits(), Log: w}
		if err := a.Open("base", nil); err != nil {
			b.Fatal(err)
		}
		for i, t := range turns {
			if i%2 == 1 {
				_, err = a.dialogs["base"].Append(dialog.Message{Role: dialog.RoleAssistant, Content: t})
			} else {
				err = a.Receive(t)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			if err := a.Fork("base", "turn", 0, 0, true); err != nil {
				b.Fatal(err)
			}
			if _, _, err := a.Respond(ctx); err != nil {
				b.Fatal(err)
			}
			if err := a.Close("turn"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
