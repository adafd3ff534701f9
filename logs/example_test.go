package logs_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// The model calls of the latest run under a log root: which agent asked
// which model, what each call cost, and why one failed.
func ExampleRun_ModelCalls() {
	root, err := os.MkdirTemp("", "lllm-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	writeRun(root)

	run, err := logs.Open(root, "latest")
	if err != nil {
		log.Fatal(err)
	}
	calls, _, err := run.ModelCalls(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	var spent dialog.Cost
	for _, rec := range calls {
		mc := rec.ModelCall
		spent = spent.Add(dialog.Cost{Usage: mc.Usage, USD: mc.USD})
		fmt.Printf("%s %s turn %d attempt %d: ", mc.Agent, mc.Model, mc.Turn, mc.Attempt)
		if mc.Error != nil {
			fmt.Println("failed,", mc.Error.Type)
			continue
		}
		fmt.Printf("%d tokens in, %d out\n", mc.Usage.InputTokens, mc.Usage.OutputTokens)
	}
	fmt.Printf("%d calls, $%.4f\n", len(calls), spent.USD)
	// Output:
	// solver openai/gpt-4o-mini turn 1 attempt 1: failed, rate_limit
	// solver openai/gpt-4o-mini turn 1 attempt 2: 21 tokens in, 6 out
	// 2 calls, $0.0012
}

// writeRun writes a run under root whose solver's first call was rate
// limited, and the second answered, as tactics.Agent logs them.
func writeRun(root string) {
	w, _, err := logs.Create(root, logs.RunStart{Tactic: "example"}, logs.Options{})
	if err != nil {
		log.Fatal(err)
	}
	d, _ := dialog.New("solver", dialog.WithSink(w), dialog.WithAlias("main"))
	d.PutText("What is 2+2?")
	call := logs.ModelCall{Agent: "solver", Provider: "openai", Model: "openai/gpt-4o-mini", Call: 1, Attempt: 1, Alias: "main", Turn: 1,
		Error: &logs.CallError{Type: "rate_limit", Message: "slow down", Status: 429}}
	w.Write(&logs.Record{Kind: logs.KindModelCall, Dialog: d.ID(), ModelCall: &call})
	reply, _ := d.Append(dialog.Message{Role: dialog.RoleAssistant, Content: "4", Name: "solver",
		Usage: dialog.Usage{InputTokens: 21, OutputTokens: 6}, USD: 0.0012})
	retry := call
	retry.Call, retry.Attempt, retry.Error = 2, 2, nil
	retry.Reply, retry.Usage, retry.USD = &logs.MessageRef{Dialog: d.ID(), Index: d.Len() - 1}, reply.Usage, reply.USD
	w.Write(&logs.Record{Kind: logs.KindModelCall, Dialog: d.ID(), ModelCall: &retry})
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		log.Fatal(err)
	}
}
