// Command dialogtree builds a small dialog tree by hand and records it in a
// run log, to show the foundation of lllm-go without any model: a prompt
// template, aliased dialogs, forks that share their parent's messages, and
// the log they leave behind. Look at the result with
//
//	go run ./cmd/lllm tree latest
//	go run ./cmd/lllm show latest
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

func main() {
	logDir := flag.String("log-dir", logs.DefaultRoot, "log root")
	flag.Parse()
	if err := run(context.Background(), *logDir); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, logDir string) error {
	task := "Write a haiku about forks."
	start, err := logs.NewRunStart(ctx, "dialogtree", nil, task, 0)
	if err != nil {
		return err
	}
	w, run, err := logs.Create(logDir, start, logs.Options{})
	if err != nil {
		return err
	}
	solve, err := dialog.NewPrompt("poet/solve", "Task: {task}\nAnswer inside <answer></answer>.",
		dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
	if err != nil {
		return err
	}

	// The poet's main dialog: system prompt, task, first draft.
	main, err := dialog.New("poet", dialog.WithSink(w), dialog.WithAlias("main"))
	if err != nil {
		return err
	}
	if _, err := main.PutText("You are a poet.", dialog.AsRole(dialog.RoleSystem), dialog.From("system")); err != nil {
		return err
	}
	if _, err := main.PutPrompt(solve, map[string]any{"task": task}); err != nil {
		return err
	}
	draft := dialog.Message{Role: dialog.RoleAssistant, Name: "poet",
		Content: "<answer>one road splits in two / each branch keeps the trunk it grew / none carries the weight</answer>"}
	// The governing prompt's parser reads the reply, as an agent would.
	parsed, err := main.TopPrompt().Parser.Parse(draft.Content)
	if err != nil {
		return err
	}
	if draft.Parsed, err = json.Marshal(parsed); err != nil {
		return err
	}
	if _, err := main.Append(draft); err != nil {
		return err
	}

	// Two variations forked from the draft: a full fork shares every message,
	// a partial fork keeps only the system prompt and the draft.
	for i, keep := range []int{0, 1} {
		branch, err := main.Fork(keep, 1, dialog.WithAlias(fmt.Sprintf("variation%d", i+1)))
		if err != nil {
			return err
		}
		if _, err := branch.PutText("Make it more playful."); err != nil {
			return err
		}
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		return err
	}
	fmt.Printf("run %s written to %s\n", run.ID, run.Path())
	fmt.Print(main.Overview(80))
	return nil
}
