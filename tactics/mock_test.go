package tactics

import (
	"context"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
)

func openMock(t *testing.T, cfg provider.MockConfig) provider.Model {
	t.Helper()
	m, err := provider.Open(t.Context(), "mock/scripted", provider.Config{Mock: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The reference call loop on the mock provider, which goes through the same
// adapter as the real providers: a tool round, a parse failure answered
// with the exception prompt, then a parsed reply; usage counted by the
// tokenizer, and streaming to a callback.
func TestRespondOnMockProvider(t *testing.T) {
	m := openMock(t, provider.MockConfig{Replies: []provider.MockReply{
		{ToolCalls: []provider.MockToolCall{{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}}}},
		{Text: "three"},
		{Text: "<answer>3</answer>"},
	}})
	add := addTool(t)
	p := dialog.MustPrompt("calc", "What is {expr}? Answer in <answer></answer>.", dialog.WithFunctions(add),
		dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
	a, run := newAgent(t, m, dialog.MustPrompt("sys", "You add."))
	a.ModelName = "mock/scripted"
	var streamed strings.Builder
	a.Stream = func(_ context.Context, c provider.Chunk) error { streamed.WriteString(c.Text); return nil }
	a.ReceivePrompt(p, map[string]any{"expr": "1+2"})
	reply, s, err := a.Respond(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Content != "<answer>3</answer>" || len(s.Attempts) != 2 || len(s.Calls) != 3 || len(s.ToolCalls) != 1 {
		t.Fatalf("reply %q, session %+v", reply.Content, s)
	}
	if !strings.Contains(s.ToolCalls[0].Result, "3") || s.Cost.InputTokens == 0 || s.Cost.OutputTokens == 0 {
		t.Fatalf("tool result %q, cost %+v", s.ToolCalls[0].Result, s.Cost)
	}
	if !strings.Contains(streamed.String(), "<answer>3</answer>") {
		t.Fatalf("streamed %q", streamed.String())
	}
	for i, want := range []string{"tool_calls", "stop", "stop"} {
		if got := s.Calls[i].FinishReason; got != want {
			t.Errorf("call %d: finish reason %q, want %q", i+1, got, want)
		}
	}
	f, _ := run.forest(t)
	att := f.Dialog(s.Attempts[0]).Messages()
	tool := att[len(att)-2]
	if tool.Role != dialog.RoleTool || tool.ToolCallID != "call_1" || tool.Name != "add" {
		t.Fatalf("tool message = %+v", tool)
	}
}

// The summary manager folds the oldest messages into a model-written
// summary before a call, sends it again on later calls while it fits, and
// every summarising call is in the log.
func TestRespondWithSummaryManager(t *testing.T) {
	run, err := chatWithSummaries(t, "They chatted about numbers.", 600, 100)
	if err != nil {
		t.Fatal(err)
	}
	_, recs := run.forest(t)
	summaries, written := 0, 0
	for _, r := range recs {
		if r.Kind == logs.KindContext && r.Context.Action == "summary" {
			summaries++
			if strings.HasPrefix(r.Context.Note, "summarised") {
				written++
			}
			if r.Context.Archived == 0 || !strings.Contains(r.Context.Summary, "They chatted about numbers.") {
				t.Fatalf("summary record without the archive: %+v", r.Context)
			}
			if r.Context.TokensAfter >= r.Context.TokensBefore {
				t.Fatalf("summary did not shrink: %+v", r.Context)
			}
		}
	}
	// A summary is written once and sent again while it fits.
	if written == 0 || summaries <= written {
		t.Fatalf("%d summaries sent, %d written: want some sent again", summaries, written)
	}
	if count(recs, logs.KindModelCall) != 12+written {
		t.Fatalf("%d model calls for 12 turns and %d summaries written", count(recs, logs.KindModelCall), written)
	}
}

// A built-in context manager that fails is named once, as the agent
// names it: "context manager summary: summarising ...", not with the
// package's prefix under it.
func TestContextManagerErrorNamedOnce(t *testing.T) {
	_, err := chatWithSummaries(t, " ", 300, 0)
	const want = "context manager summary: summarising "
	if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "summary") != 2 || strings.Contains(err.Error(), "contextmgr") {
		t.Fatalf("err = %v, want one naming the manager once: %q...", err, want)
	}
}

// chatWithSummaries has an agent on the mock provider, with a summary
// manager of maxTokens and buffer, answer 12 long turns, the model
// writing summary for every summary asked; it returns the run and the
// error of the first turn that failed.
func chatWithSummaries(t *testing.T, summary string, maxTokens, buffer int) (*testRun, error) {
	t.Helper()
	m := openMock(t, provider.MockConfig{Rules: []provider.MockRule{
		{Match: "Summarise the conversation", Reply: provider.MockReply{Text: summary}},
	}})
	cm, err := contextmgr.New(map[string]any{"type": "summary", "max_tokens": maxTokens, "buffer": buffer})
	if err != nil {
		t.Fatal(err)
	}
	a, run := newAgent(t, m, dialog.MustPrompt("sys", "You chat."))
	a.ModelName, a.Context, a.ContextName = "mock/scripted", cm, "summary"
	for i := range 12 {
		a.Receive(strings.Repeat("number talk ", 20) + string(rune('a'+i)))
		if _, _, err := a.Respond(t.Context()); err != nil {
			return run, err
		}
	}
	return run, nil
}
