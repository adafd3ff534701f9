package tactics

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

var onePixelPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// An agent on the real langchaingo OpenAI client, against a local server
// speaking the OpenAI wire format: an image, a tool round, a rate limit and
// a parse retry; the run's log rebuilds into the right tree with every
// attempt, its usage and its cost.
func TestAgentOnOpenAIWireEndToEnd(t *testing.T) {
	srv := providertest.NewOpenAIServer(t,
		providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "call_a", Name: "area", Arguments: `{"w":3,"h":4}`}},
			Usage: providertest.Usage{Input: 1000, Output: 20}},
		providertest.RateLimited("0"),
		providertest.Reply{Text: "The area is 12.", Usage: providertest.Usage{Input: 1100, Cached: 1000, Output: 8}},
		providertest.Reply{Text: "<answer>12</answer>", Usage: providertest.Usage{Input: 1200, Output: 6}},
	)
	model, err := provider.Open(t.Context(), "openai/gpt-4o-mini", provider.Config{BaseURL: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := contextmgr.New(map[string]any{"type": "default", "max_tokens": 100000})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "e2e"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	area := areaTool(t)
	lim := DefaultLimits()
	lim.BackoffBase = 1
	a := &Agent{Name: "geometer", System: dialog.MustPrompt("sys", "You measure shapes."),
		Model: model, ModelName: "openai/gpt-4o-mini", Limits: lim,
		Context: cm, ContextName: "default", Log: w}
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.ReceiveImage(dialog.ImageBytes(onePixelPNG), "the rectangle"); err != nil {
		t.Fatal(err)
	}
	ask := dialog.MustPrompt("ask", "What is the area of a {w} by {h} rectangle? Answer in <answer></answer>.",
		dialog.WithFunctions(area), dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
	if err := a.ReceivePrompt(ask, map[string]any{"w": 3, "h": 4}); err != nil {
		t.Fatal(err)
	}
	reply, s, err := a.Respond(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}

	// What went over the wire.
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("server saw %d requests, want 4", len(reqs))
	}
	first := string(reqs[0].Body)
	if !strings.Contains(first, `"url":"data:image/png;base64,iVBOR`) || !strings.Contains(first, `"name":"area"`) {
		t.Fatalf("first request lacks the image data URL or the tool: %s", first)
	}
	if !strings.Contains(string(reqs[1].Body), `"tool_call_id":"call_a"`) {
		t.Fatalf("second request lacks the tool result: %s", reqs[1].Body)
	}

	// The session and the reply.
	if reply.Content != "<answer>12</answer>" || s.State != "ok" || len(s.Attempts) != 2 || len(s.ToolCalls) != 1 || len(s.Calls) != 4 {
		t.Fatalf("reply %q, session %+v", reply.Content, s)
	}
	wantUsage := dialog.Usage{InputTokens: 3300, CachedInputTokens: 1000, OutputTokens: 34}
	if s.Cost.Usage != wantUsage || s.Cost.USD <= 0 {
		t.Fatalf("session cost = %+v, want usage %+v and dollars", s.Cost, wantUsage)
	}

	// The log rebuilds into the tree: main -> attempt 1 (tool round, failed
	// parse) -> attempt 2 (exception prompt, parsed reply).
	f, warnings, err := run.Forest(t.Context())
	if err != nil || len(warnings) != 0 {
		t.Fatalf("rebuild: %v %v", err, warnings)
	}
	main := f.Dialog(f.Roots()[0])
	if ids := f.SubtreeIDs(main.ID()); len(ids) != 3 || ids[1] != s.Attempts[0] || ids[2] != s.Attempts[1] {
		t.Fatalf("tree %v, attempts %v", ids, s.Attempts)
	}
	if main.Len() != 4 || main.Tail().Content != "<answer>12</answer>" || string(main.Tail().Parsed) == "" {
		t.Fatalf("main dialog:\n%s", main.Overview(60))
	}
	att1 := f.Dialog(s.Attempts[0])
	roles := []dialog.Role{}
	for _, m := range att1.Messages()[3:] {
		roles = append(roles, m.Role)
	}
	if len(roles) != 3 || roles[0] != dialog.RoleToolCall || roles[1] != dialog.RoleTool || roles[2] != dialog.RoleAssistant {
		t.Fatalf("attempt 1 roles after the prompt: %v", roles)
	}
	var total dialog.Cost
	for _, id := range f.SubtreeIDs(main.ID()) {
		total = total.Add(f.Dialog(id).OwnCost())
	}
	// Every reply's usage is in the tree once (the final reply also in main).
	if total.OutputTokens != 34+6 {
		t.Fatalf("output tokens over the tree = %d", total.OutputTokens)
	}
	list, _ := logs.List(root)
	tot := list[0].End.Totals
	if tot.ModelCalls != 4 || tot.ToolCalls != 1 || tot.Cost.Usage != wantUsage {
		t.Fatalf("run totals = %+v", tot)
	}
}

// The same agent on the real langchaingo Anthropic client, against a local
// server speaking the messages API: text and tool_use blocks come back as
// one reply, the image goes out as a base64 block, and usage is mapped.
func TestAgentOnAnthropicWire(t *testing.T) {
	srv := providertest.NewAnthropicServer(t,
		providertest.Reply{Text: "Let me compute.", ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "area", Arguments: `{"w":2,"h":5}`}},
			Usage: providertest.Usage{Input: 500, Output: 30}},
		providertest.Reply{Text: "<answer>10</answer>", Usage: providertest.Usage{Input: 560, Cached: 400, Output: 7}},
	)
	model, err := provider.Open(t.Context(), "anthropic/claude-sonnet-4-5", provider.Config{BaseURL: srv.BaseURL(), APIKey: "test"})
	if err != nil {
		t.Fatal(err)
	}
	area := areaTool(t)
	a, run := newAgent(t, model, dialog.MustPrompt("sys", "You measure shapes."))
	a.ModelName = "anthropic/claude-sonnet-4-5"
	if err := a.ReceiveImage(dialog.ImageBytes(onePixelPNG), "the rectangle"); err != nil {
		t.Fatal(err)
	}
	ask := dialog.MustPrompt("ask", "Area of {w} by {h}? Answer in <answer></answer>.",
		dialog.WithFunctions(area), dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
	a.ReceivePrompt(ask, map[string]any{"w": 2, "h": 5})
	reply, s, err := a.Respond(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Content != "<answer>10</answer>" || len(s.ToolCalls) != 1 || !strings.Contains(s.ToolCalls[0].Result, "10") {
		t.Fatalf("reply %q, tool calls %+v", reply.Content, s.ToolCalls)
	}
	if want := (dialog.Usage{InputTokens: 1060, CachedInputTokens: 400, OutputTokens: 37}); s.Cost.Usage != want || s.Cost.USD <= 0 {
		t.Fatalf("cost = %+v, want %+v", s.Cost, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[0].Body), `"type":"image"`) || !strings.Contains(string(reqs[1].Body), `"tool_use_id":"toolu_1"`) {
		t.Fatalf("wire: %d requests\n%s\n%s", len(reqs), reqs[0].Body, reqs[len(reqs)-1].Body)
	}
	f, _ := run.forest(t)
	att := f.Dialog(s.Attempts[0]).Messages()
	first := att[len(att)-3] // the merged reply: text and tool call in one message
	if first.Text() != "Let me compute." || len(first.FunctionCalls) != 1 || first.FunctionCalls[0].ID != "toolu_1" {
		t.Fatalf("merged reply = %+v", first)
	}
}
