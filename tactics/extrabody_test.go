package tactics

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// A config's model_args.extra_body reaches the provider's wire, merged
// into the body, and the log's model_call params hold it, so that a
// replay sends the same request.
func TestExtraBodyFromConfig(t *testing.T) {
	srv := providertest.NewOpenAIServer(t)
	cfg, err := config.Parse("t.yaml", []byte(`
tactic_type: chat
global:
  model_name: openai/gpt-5-mini
  base_url: `+srv.BaseURL()+`
  model_args: {max_tokens: 64, extra_body: {reasoning_effort: minimal, metadata: {study: s1}}}
agent_configs: [{name: solver, system_prompt: Be brief.}]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	makers, err := Agents(t.Context(), cfg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := makers["solver"]()
	run := &testRun{}
	if run.w, err = logs.NewWriter(&run.buf, logs.RunStart{}, logs.Options{}); err != nil {
		t.Fatal(err)
	}
	a.Log = run.w
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Receive("hi"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	body := srv.LastRequest().JSON()
	meta, _ := body["metadata"].(map[string]any)
	if body["reasoning_effort"] != "minimal" || meta["study"] != "s1" || body["max_tokens"] != 64.0 {
		t.Fatalf("body %v: want reasoning_effort, metadata and max tokens", body)
	}
	_, recs := run.forest(t)
	for _, r := range recs {
		if r.Kind == logs.KindModelCall {
			var p struct {
				ExtraBody map[string]any `json:"extra_body"`
			}
			if err := json.Unmarshal(r.ModelCall.Params, &p); err != nil || p.ExtraBody["reasoning_effort"] != "minimal" {
				t.Fatalf("model_call params %s: want extra_body in them", r.ModelCall.Params)
			}
			return
		}
	}
	t.Fatal("no model_call record")
}

// An extra_body that would change what lllm-go sends is a problem at the
// line of the member that would, before any call; every such member is.
func TestExtraBodyRefusedInConfig(t *testing.T) {
	y := `tactic_type: chat
global:
  model_name: mock/m
  model_args:
    extra_body:
      metadata: {study: s1}
      messages: []
      "a\"b": 2
agent_configs: [{name: assistant, system_prompt: x}]
`
	cfg := parseConfig(t, "eb.yaml", y)
	_, err := Prepare(t.Context(), cfg, RunOptions{LogDir: t.TempDir()})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Prepare: %v; want a *ConfigError", err)
	}
	for _, want := range []string{"eb.yaml:7:", "extra_body: messages: lllm-go sets this member itself", "eb.yaml:8:", `extra_body: "a\"b": write keys without quotes`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Prepare: %v\nwant %q in it: each member's problem at its line", err, want)
		}
	}
}
