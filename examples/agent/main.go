// Command agent runs one agent on any provider: it asks a question that
// needs a tool, and records the run. It runs offline on the mock provider by
// default; pass -model to use a real one:
//
//	go run ./examples/agent
//	OPENAI_API_KEY=... go run ./examples/agent -model openai/gpt-4o-mini
//	go run ./examples/agent -model openai/llama3.1 -base-url http://127.0.0.1:8080/v1
//	go run ./cmd/lllm tree latest
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// mockScript makes the offline run show a tool round.
var mockScript = &provider.MockConfig{Replies: []provider.MockReply{
	{ToolCalls: []provider.MockToolCall{{Name: "multiply", Arguments: map[string]any{"a": 17, "b": 23}}}},
	{Text: "17 times 23 is <answer>391</answer>."},
}}

func main() {
	model := flag.String("model", "mock/demo", "provider/model to call")
	baseURL := flag.String("base-url", "", "API base URL (for OpenAI-compatible servers)")
	logDir := flag.String("log-dir", logs.DefaultRoot, "log root")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *model, *baseURL, *logDir); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, modelName, baseURL, logDir string) (err error) {
	model, err := provider.Open(ctx, modelName, provider.Config{BaseURL: baseURL, Mock: mockScript})
	if err != nil {
		return err
	}
	start, err := logs.NewRunStart(ctx, "examples/agent", map[string]string{"model": modelName}, "17*23", 0)
	if err != nil {
		return err
	}
	w, run, err := logs.Create(logDir, start, logs.Options{})
	if err != nil {
		return err
	}
	defer func() {
		end := logs.RunEnd{Status: logs.StatusOK}
		if err != nil {
			end = logs.RunEnd{Status: logs.StatusFailed, Error: err.Error()}
		}
		if ferr := w.Finish(end); err == nil {
			err = ferr
		}
	}()

	multiply, err := dialog.NewFunction("multiply", "Multiplies two integers.",
		func(_ context.Context, in struct {
			A int `json:"a"`
			B int `json:"b"`
		}) (int, error) {
			return in.A * in.B, nil
		})
	if err != nil {
		return err
	}
	ask, err := dialog.NewPrompt("demo/ask", "What is {a} times {b}? Use the multiply tool, then answer inside <answer></answer>.",
		dialog.WithFunctions(multiply), dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
	if err != nil {
		return err
	}
	cm, err := contextmgr.New(map[string]any{"type": "default"})
	if err != nil {
		return err
	}
	agent := &tactics.Agent{
		Name: "calculator", System: dialog.MustPrompt("demo/system", "You are a careful calculator."),
		Model: model, ModelName: modelName,
		Context: cm, ContextName: "default", Log: w,
	}
	if err := agent.Open("main", nil); err != nil {
		return err
	}
	if err := agent.ReceivePrompt(ask, map[string]any{"a": 17, "b": 23}); err != nil {
		return err
	}
	reply, session, err := agent.Respond(ctx)
	if err != nil {
		return err
	}
	var parsed dialog.TagResult
	if err := reply.ParsedInto(&parsed); err != nil {
		return err
	}
	fmt.Printf("answer: %s\n", parsed.XML["answer"][0])
	fmt.Printf("run %s: %d model calls, %d tool calls, %d tokens, $%.6f\n",
		run.ID, len(session.Calls), len(session.ToolCalls), session.Cost.Total(), session.Cost.USD)
	return nil
}
