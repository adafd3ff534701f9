package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

func TestLoadServeYAML(t *testing.T) {
	cfg, err := LoadConfig(context.Background(), "../../configs/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Agents) < 2 || cfg.AskUserTimeout == 0 || cfg.Agents[0].CompactTokens != 6000 || cfg.Agents[1].Guests == nil {
		t.Fatalf("%+v", cfg)
	}
	a := cfg.Agents[0]
	if a.Name != "assistant" || a.Model == nil || a.ModelName != "mock/serve" || a.System == nil ||
		a.Limits.MaxInterruptSteps != 1 || a.Context == nil || a.ContextName != "default" || cfg.Tokens == nil {
		t.Fatalf("assistant built as %+v", a)
	}
	if !strings.HasSuffix(cfg.DataDir, "conversations") || cfg.MaxContentBytes != 65536 || cfg.TrashRetention != 720*time.Hour {
		t.Fatalf("settings %+v", cfg)
	}
}

// writeServeConfig writes body as serve.yaml in a new directory, with a
// prompts folder holding greet.md.
func writeServeConfig(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "prompts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts", "greet.md"), []byte("You greet {sender}."), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigBuildsAgentsAsTactics(t *testing.T) {
	path := writeServeConfig(t, `tactic_type: serve
global: {model_name: mock/x}
agent_configs:
  - name: greeter
    system_prompt_path: greet
    model_args: {temperature: 0.5, max_tokens: 64}
    max_llm_recall: 3
  - name: other
    system_prompt: Hi.
`)
	cfg, err := LoadConfig(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Agents[0]
	if g.System.Template != "You greet {sender}." || g.Params.Temperature == nil || *g.Params.Temperature != 0.5 ||
		g.Params.MaxTokens == nil || *g.Params.MaxTokens != 64 || g.Limits.MaxLLMRecall != 3 || g.Context != nil {
		t.Fatalf("greeter %+v", g)
	}
	if cfg.Agents[1].Guests != nil || cfg.Agents[1].CompactTokens != 0 {
		t.Fatalf("other %+v", cfg.Agents[1])
	}
}

func TestConfigErrorsAllAtOnce(t *testing.T) {
	path := writeServeConfig(t, `tactic_type: chat
global: {model_name: mock/x}
agent_configs:
  - name: a
    system_prompt: Hi.
    model_args: {temprature: 0.5}
  - name: b
    system_prompt_path: nowhere
  - name: c
    system_prompt: Hi.
    model_name: nosuch/model
params:
  ask_user_timeout: soon
  agents:
    a: {compact_tokens: -1, guests: [b, cc]}
    z: {guests: []}
`)
	_, err := LoadConfig(context.Background(), path)
	if !errors.As(err, new(*tactics.ConfigError)) {
		t.Fatalf("want a *tactics.ConfigError, got %T %v", err, err)
	}
	msg := err.Error()
	for _, want := range []string{
		`tactic_type is "chat"`,
		`agent a: model_args: unknown key "temprature" (did you mean "temperature"?)`,
		`agent b: system_prompt_path`, "nowhere",
		"agent c:", "nosuch",
		`:13:3: params.ask_user_timeout "soon"`,
		":15:9: params.agents.a.compact_tokens is -1",
		`:15:41: params.agents.a.guests: "cc": no such agent in agent_configs (a, b, c)`,
		":16:5: params.agents.z: no such agent in agent_configs (a, b, c)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"no agents":       {"tactic_type: serve\nglobal: {model_name: mock/x}\n", "agent_configs is empty"},
		"unknown param":   {"tactic_type: serve\nglobal: {model_name: mock/x}\nagent_configs: [{name: a, system_prompt: Hi.}]\nparams: {bogus: 1}\n", `serve.yaml:4:10: unknown key "bogus" in params (one of: agents, ask_user_timeout, data_dir, max_content_bytes, trash_retention)`},
		"bad mock":        {"tactic_type: serve\nglobal: {model_name: mock/x}\nagent_configs: [{name: a, system_prompt: Hi.}]\nmock: {latncy: 1s}\n", `serve.yaml:4:8: unknown key "latncy" in mock (did you mean "latency"?)`},
		"bad agent name":  {"tactic_type: serve\nglobal: {model_name: mock/x}\nagent_configs:\n  - {name: a, system_prompt: Hi.}\n  - {name: ../b, system_prompt: Hi.}\n", `serve.yaml:5:6: agent_configs[1].name: bad name: agent "../b"`},
		"prompt variable": {"tactic_type: serve\nglobal: {model_name: mock/x}\nagent_configs:\n  - name: a\n    system_prompt: \"Hi {sender}, I am {agent} in {cwd}; today is {date}, {{literal}}.\"\n", `serve.yaml:5:5: agent a: system_prompt uses {date}: a served agent's prompt may use only {agent}, {sender} and {cwd}`},
		"no prompts dir":  {"tactic_type: serve\nglobal: {model_name: mock/x}\nprompts_dir: missing\nagent_configs: [{name: a, system_prompt_path: greet}]\n", "missing"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := config.Parse(filepath.Join(t.TempDir(), "serve.yaml"), []byte(tc.body), nil)
			if err == nil {
				_, err = FromConfig(context.Background(), cfg)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
}

// params.trash_retention is a duration, 30 days when unset, 0 to keep
// the trash for ever; anything else is an error at its place.
func TestConfigTrashRetention(t *testing.T) {
	const head = "tactic_type: serve\nglobal: {model_name: mock/x}\nagent_configs: [{name: a, system_prompt: Hi.}]\n"
	for _, tc := range []struct {
		params string
		want   time.Duration
		err    string
	}{
		{"", 30 * 24 * time.Hour, ""},
		{"params: {trash_retention: 48h}\n", 48 * time.Hour, ""},
		{"params: {trash_retention: 0}\n", 0, ""},
		{"params: {trash_retention: 30d}\n", 0, `serve.yaml:4:10: params.trash_retention "30d": want a duration such as 720h (30 days), or 0 to keep deleted conversations for ever`},
		{"params: {trash_retention: -1h}\n", 0, `params.trash_retention "-1h"`},
	} {
		got, err := fromYAML(t, head+tc.params)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: want an error with %q, got %v", tc.params, tc.err, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.params, err)
		case got.TrashRetention != tc.want:
			t.Errorf("%q: TrashRetention %v, want %v", tc.params, got.TrashRetention, tc.want)
		}
	}
}
