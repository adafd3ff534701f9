package tactics_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/prompts"
	"github.com/lllm-go/lllm/tactics"
	_ "github.com/lllm-go/lllm/tactics/builtin"
)

// promptsYAML runs chat with a system prompt from a prompt file whose front
// matter sets a parser and a tool: the model calls the calculator, answers
// without the required tag, is asked to fix it, then answers.
const promptsYAML = `
tactic_type: chat
global:
  model_name: mock/demo
agent_configs:
  - name: assistant
    system_prompt_path: math/solver
mock:
  replies:
    - tool_calls: [{name: calculator, arguments: {expression: "2+2"}}]
    - text: "It is four."
    - text: "<answer>4</answer>"
`

const solverMD = `---
description: Solves arithmetic with the calculator.
xml_tags: [answer]
tools: [calculator]
---

You solve arithmetic. Give the result as <answer>...</answer>.
`

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRunWithSystemPromptPath(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"run.yaml": promptsYAML, "prompts/math/solver.md": solverMD})
	cfg, err := config.Load(filepath.Join(dir, "run.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	res, err := tactics.Run(t.Context(), cfg, "What is 2+2?", tactics.RunOptions{LogDir: logDir})
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if res.Status != logs.StatusOK || json.Unmarshal(res.Result, &out) != nil || out != "<answer>4</answer>" {
		t.Fatalf("status %s, result %s, error %s", res.Status, res.Result, res.Error)
	}
	if res.Totals.ToolCalls != 1 || res.Totals.ModelCalls != 3 {
		t.Fatalf("totals %+v", res.Totals)
	}
	r, err := logs.Open(logDir, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := r.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var system, answer *dialog.Message
	for _, id := range f.Roots() {
		d := f.Dialog(id)
		system, answer = d.Head(), d.Tail()
	}
	if system == nil || system.Role != dialog.RoleSystem ||
		system.Content != "You solve arithmetic. Give the result as <answer>...</answer>." {
		t.Fatalf("system message %+v", system)
	}
	if answer == nil || !strings.Contains(string(answer.Parsed), `"answer":["4"]`) {
		t.Fatalf("answer %+v", answer)
	}
}

func TestRunSystemPromptPathErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no prompts dir", map[string]string{"run.yaml": promptsYAML},
			`system_prompt_path "math/solver" needs a prompts folder`},
		{"unknown prompt", map[string]string{"run.yaml": promptsYAML, "prompts/math/solvr.md": "x"},
			`unknown prompt "math/solver" (did you mean "math/solvr"?)`},
		{"explicit dir", map[string]string{"run.yaml": promptsYAML + "prompts_dir: elsewhere\n", "prompts/math/solver.md": solverMD},
			"elsewhere: no such file or directory"},
		{"bad prompt file", map[string]string{"run.yaml": promptsYAML,
			"prompts/math/solver.md": strings.Replace(solverMD, "[calculator]", "[calculater]", 1)},
			`solver.md:4:9: tools: unknown tool "calculater" (did you mean "calculator"?); registered tools: calculator, echo, word_count`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, c.files)
			cfg, err := config.Load(filepath.Join(dir, "run.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = tactics.Run(t.Context(), cfg, "x", tactics.RunOptions{LogDir: t.TempDir()})
			var ce *tactics.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a *ConfigError containing %q", err, c.want)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

func TestLookupTool(t *testing.T) {
	if f, err := tactics.LookupTool("calculator"); err != nil || f.Name != "calculator" {
		t.Fatalf("LookupTool = %v, %v", f, err)
	}
	if _, err := tactics.LookupTool("eco"); err == nil || !strings.Contains(err.Error(), `did you mean "echo"?`) {
		t.Fatalf("LookupTool(eco) = %v", err)
	}
}

func init() {
	prompts.RegisterPackage("mathlab", fstest.MapFS{"math/solver.md": {Data: []byte(solverMD)}})
}

// A config names a prompt a Go package ships as pkg:path, with no prompts
// folder of its own; a typo in either part is a config error.
func TestRunWithPromptPackage(t *testing.T) {
	yaml := strings.Replace(promptsYAML, "system_prompt_path: math/solver", "system_prompt_path: mathlab:math/solver", 1)
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "run.yaml"), []byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tactics.Run(t.Context(), cfg, "What is 2+2?", tactics.RunOptions{LogDir: t.TempDir()})
	if err != nil || res.Status != logs.StatusOK || string(res.Result) != `"<answer>4</answer>"` || res.Totals.ToolCalls != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	for ref, want := range map[string]string{
		"mathlab:math/solvr": `prompt package mathlab: unknown prompt "math/solvr" (did you mean "math/solver"?)`,
		"mathlb:math/solver": `unknown prompt package "mathlb" (did you mean "mathlab"?)`,
	} {
		_ = cfg.Set("agent_configs.assistant.system_prompt_path", ref)
		_, err := tactics.Run(t.Context(), cfg, "x", tactics.RunOptions{LogDir: t.TempDir()})
		var ce *tactics.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", ref, err, want)
		}
	}
}

// critic asks its agent with a prompt from the run's prompts folder, named
// by its param.
type critic struct{ prompt string }

func (critic) Agents() []string { return []string{"assistant"} }

func (c critic) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	p, err := s.Prompt(c.prompt)
	if err != nil {
		return nil, err
	}
	a, err := s.Agent("assistant")
	if err != nil {
		return nil, err
	}
	if err := a.Open("main", nil); err != nil {
		return nil, err
	}
	if err := a.ReceivePrompt(p, map[string]any{"task": task}); err != nil {
		return nil, err
	}
	reply, _, err := a.Respond(ctx)
	if err != nil {
		return nil, err
	}
	return reply.Parsed, nil
}

func init() {
	tactics.Register("lab:critic", func(params map[string]any) (tactics.Tactic, error) {
		var c critic
		p := struct {
			Prompt string `json:"prompt"`
		}{Prompt: "research/critic"}
		err := tactics.DecodeParams(params, &p)
		c.prompt = p.Prompt
		return c, err
	})
}

// A tactic reads prompts of the config's prompts folder by path, with the
// format of their front matter, and gets a clear error for one that is
// not there.
func TestSessionPrompt(t *testing.T) {
	const cfgYAML = `
tactic_type: lab:critic
global:
  model_name: mock/demo
agent_configs:
  - name: assistant
    system_prompt: You critique.
`
	const criticMD = `---
format: {type: object, properties: {score: {type: integer}}, required: [score]}
---
Score this: {task}
`
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"run.yaml": cfgYAML, "prompts/research/critic.md": criticMD})
	cfg, err := config.Load(filepath.Join(dir, "run.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := tactics.Run(t.Context(), cfg, "an essay", tactics.RunOptions{LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Score *int `json:"score"`
	}
	if res.Status != logs.StatusOK || json.Unmarshal(res.Result, &out) != nil || out.Score == nil {
		t.Fatalf("status %s, result %s, error %s; want a reply in the prompt's format", res.Status, res.Result, res.Error)
	}
	if err := cfg.Set("params.prompt", "research/critik"); err != nil {
		t.Fatal(err)
	}
	res, err = tactics.Run(t.Context(), cfg, "an essay", tactics.RunOptions{LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != logs.StatusFailed || !strings.Contains(res.Error, `unknown prompt "research/critik" (did you mean "research/critic"?)`) {
		t.Fatalf("status %s, error %q", res.Status, res.Error)
	}
}

// Check, and so Batch, read the system prompt files from
// RunOptions.Prompts as Run does: a config whose prompts folder is gone
// (a replay's, run from elsewhere) passes when the files are given.
func TestCheckUsesGivenPrompts(t *testing.T) {
	dir := t.TempDir() // no prompts/ in it
	cfg, err := config.Parse(filepath.Join(dir, "c.yaml"), []byte(`
tactic_type: chat
global: {model_name: mock/demo}
agent_configs: [{name: assistant, system_prompt_path: sys}]
mock: {replies: [{text: "hi"}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := tactics.RunOptions{LogDir: t.TempDir(), Prompts: map[string]string{"sys": "You greet."}}
	res, err := tactics.Run(t.Context(), cfg, "hello", opts)
	if err != nil || res.Status != logs.StatusOK {
		t.Fatalf("Run with the prompt files given: %v %+v", err, res)
	}
	if err := tactics.Check(t.Context(), cfg, opts); err != nil {
		t.Errorf("Check with the prompt files given: %v, want nil as Run ran", err)
	}
	results, err := tactics.Batch(t.Context(), cfg, []string{"hello"}, tactics.BatchOptions{RunOptions: opts})
	if err != nil || len(results) != 1 || results[0].Status != logs.StatusOK {
		t.Errorf("Batch with the prompt files given: %v %+v", err, results)
	}
}
