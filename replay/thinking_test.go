package replay_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// A react run on Claude with extended thinking (turned on by extra_body):
// the thinking blocks of the tool round, a redacted one among them, go
// back to the fake Anthropic server, which refuses a tool round without
// them as the API does; the log keeps them on the messages with their
// signatures; and the run replays exactly.
func TestRoundTripAnthropicThinking(t *testing.T) {
	thinking := []providertest.Thinking{{Text: "I need the product."}, {Redacted: "redacted-Eq4BCkYIBhgCKkA"}}
	srv := providertest.NewAnthropicServer(t,
		providertest.Reply{Thinking: thinking,
			ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "calculator", Arguments: `{"expression":"6*7"}`}},
			Usage:     providertest.Usage{Input: 120, Output: 60}},
		providertest.Reply{Thinking: []providertest.Thinking{{Text: "The tool said 42."}}, Text: "<answer>42</answer>",
			Usage: providertest.Usage{Input: 200, Output: 30}})
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	y := fmt.Sprintf(`tactic_type: react
params: {max_steps: 3, tools: [calculator]}
agent_configs:
  - {name: agent, system_prompt: You use tools for arithmetic.}
global:
  model_name: anthropic/claude-sonnet-4-5
  base_url: %s
  model_args: {max_tokens: 2048, extra_body: {thinking: {type: enabled, budget_tokens: 1024}}}
`, srv.BaseURL())
	cfg, err := config.Parse("thinking.yaml", []byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, run := recordRun(t, cfg, "What is 6*7?", logs.StatusOK)
	if res.Totals.ModelCalls != 2 || res.Totals.ToolCalls != 1 {
		t.Fatalf("totals %+v, want 2 model calls and a tool call", res.Totals)
	}

	f, warnings, err := run.Forest(t.Context())
	if err != nil || len(warnings) != 0 {
		t.Fatalf("rebuild: %v %v", err, warnings)
	}
	var calls, answers []*dialog.Message
	for _, id := range f.IDs() {
		for _, m := range f.Dialog(id).Messages() {
			switch {
			case m.IsFunctionCall():
				calls = append(calls, m)
			case m.Role == dialog.RoleAssistant:
				answers = append(answers, m)
			}
		}
	}
	want := []dialog.Reasoning{{Text: thinking[0].Text, Signature: providertest.Signature(thinking[0].Text)}, {Redacted: thinking[1].Redacted}}
	if len(calls) == 0 || !reflect.DeepEqual(calls[0].Reasoning, want) {
		t.Fatalf("the tool call turns rebuilt from the log: %v, want one with reasoning %+v", calls, want)
	}
	if len(answers) == 0 || answers[len(answers)-1].ReasoningText() != "The tool said 42." {
		t.Errorf("the answer rebuilt from the log: %+v", answers)
	}

	sent := len(srv.Requests())
	_, rep := rtReplay(t, run)
	rtAssertExact(t, run, res, rep)
	if len(srv.Requests()) != sent {
		t.Errorf("the replay sent %d requests to the server", len(srv.Requests())-sent)
	}
}

// A react run on Gemini 3: the thought signature of its tool round goes
// back on the call (the fake refuses the round without it, as Gemini 3
// does), the log keeps it, and the run replays exactly.
func TestRoundTripGeminiThoughtSignature(t *testing.T) {
	srv := providertest.NewGeminiServer(t,
		providertest.Reply{Thinking: []providertest.Thinking{{Text: "the product"}},
			ToolCalls: []providertest.ToolCall{{Name: "calculator", Arguments: `{"expression":"6*7"}`}},
			Usage:     providertest.Usage{Input: 120, Output: 60}},
		providertest.Reply{Text: "<answer>42</answer>", Usage: providertest.Usage{Input: 200, Output: 30}})
	t.Setenv("GOOGLE_API_KEY", "test-key")
	y := fmt.Sprintf(`tactic_type: react
params: {max_steps: 3, tools: [calculator]}
agent_configs:
  - {name: agent, system_prompt: You use tools for arithmetic.}
global:
  model_name: googleai/gemini-3-pro-preview
  base_url: %s
`, srv.BaseURL())
	cfg, err := config.Parse("gemini3.yaml", []byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, run := recordRun(t, cfg, "What is 6*7?", logs.StatusOK)
	if res.Totals.ModelCalls != 2 || res.Totals.ToolCalls != 1 {
		t.Fatalf("totals %+v, want 2 model calls and a tool call", res.Totals)
	}
	f, _, err := run.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var signed []dialog.Reasoning
	for _, id := range f.IDs() {
		for _, m := range f.Dialog(id).Messages() {
			if m.IsFunctionCall() {
				signed = append(signed, m.Reasoning...)
			}
		}
	}
	if len(signed) == 0 || signed[0].Signature != providertest.Signature("the product") || signed[0].Call == "" {
		t.Fatalf("the tool call turn's reasoning rebuilt from the log: %+v", signed)
	}
	sent := len(srv.Requests())
	_, rep := rtReplay(t, run)
	rtAssertExact(t, run, res, rep)
	if len(srv.Requests()) != sent {
		t.Errorf("the replay sent %d requests to the server", len(srv.Requests())-sent)
	}
}
