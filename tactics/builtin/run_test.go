package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	c, err := config.Parse("test.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const chatYAML = `
tactic_type: chat
global:
  model_name: mock/demo
  model_args: {temperature: 0.2, max_tokens: 100}
  context_manager: {type: default, max_tokens: 64000}
agent_configs:
  - name: assistant
    system_prompt: You are concise.
mock:
  replies:
    - text: "Paris."
`

func TestRunChatFromConfig(t *testing.T) {
	dir := t.TempDir()
	res, err := tactics.Run(t.Context(), parse(t, chatYAML), "Capital of France?", tactics.RunOptions{LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != logs.StatusOK || string(res.Result) != `"Paris."` || res.Totals.ModelCalls != 1 || res.Totals.Cost.InputTokens == 0 {
		t.Fatalf("result %+v", res)
	}
	run, err := logs.Open(dir, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	json.Unmarshal(run.Start.Config, &cfg)
	if run.Start.Tactic != "chat" || string(run.Start.Task) != `"Capital of France?"` || cfg["tactic_type"] != "chat" {
		t.Fatalf("run start = %+v", run.Start)
	}
	f, _, err := run.Forest(t.Context())
	if err != nil || len(f.Roots()) != 1 || f.Dialog(f.Roots()[0]).Tail().Content != "Paris." {
		t.Fatalf("forest: %v", err)
	}
	rd, _ := run.Reader()
	defer rd.Close()
	kinds := map[logs.Kind]int{}
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		kinds[rec.Kind]++
		if rec.Kind == logs.KindModelCall && string(rec.ModelCall.Params) != `{"temperature":0.2,"max_tokens":100}` {
			t.Fatalf("params = %s", rec.ModelCall.Params)
		}
	}
	if kinds[logs.KindTacticStart] != 1 || kinds[logs.KindTacticEnd] != 1 || kinds[logs.KindContext] != 1 || kinds[logs.KindRunEnd] != 1 {
		t.Fatalf("record kinds = %v", kinds)
	}
}

func TestRunConfigErrors(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"unknown tactic": {strings.Replace(chatYAML, "tactic_type: chat", "tactic_type: chta", 1), `unknown tactic "chta" (did you mean "chat"?)`},
		"missing agent":  {strings.Replace(chatYAML, "name: assistant", "name: helper", 1), "assistant"},
		"bad model_args": {strings.Replace(chatYAML, "temperature: 0.2", "temprature: 0.2", 1), `unknown key "temprature" (did you mean "temperature"?)`},
		"bad provider":   {strings.Replace(chatYAML, "mock/demo", "opneai/gpt-4o", 1), "opneai"},
		"bad manager":    {strings.Replace(chatYAML, "type: default", "type: defualt", 1), "defualt"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := tactics.Run(t.Context(), parse(t, c.yaml), "x", tactics.RunOptions{LogDir: dir})
			var ce *tactics.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want a ConfigError containing %q", err, c.want)
			}
			if runs, _ := logs.List(dir); len(runs) != 0 {
				t.Fatal("a config error started a run")
			}
		})
	}
}

func TestRunFailureAndCancelAreLogged(t *testing.T) {
	dir := t.TempDir()
	failing := strings.Replace(chatYAML, `- text: "Paris."`, `- error: auth`, 1)
	res, err := tactics.Run(t.Context(), parse(t, failing), "x", tactics.RunOptions{LogDir: dir})
	if err != nil || res.Status != logs.StatusFailed || !strings.Contains(res.Error, "auth") {
		t.Fatalf("res %+v err %v", res, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err = tactics.Run(ctx, parse(t, chatYAML), "x", tactics.RunOptions{LogDir: dir})
	if err != nil || res.Status != logs.StatusCancelled {
		t.Fatalf("cancelled run: res %+v err %v", res, err)
	}
	list, _ := logs.List(dir)
	if len(list) != 2 || list[0].Status() != logs.StatusFailed || list[1].Status() != logs.StatusCancelled || list[0].End.Error == "" {
		t.Fatalf("runs = %+v", list)
	}
}
