package config

import (
	"encoding/json"
	"testing"
)

// TestClone checks that a clone equals its config and that changing the
// clone, by Set or through its fields, leaves the config as it was.
func TestClone(t *testing.T) {
	c, err := Parse("c.yaml", []byte(`tactic_type: chat
global: {model_name: mock/m, model_args: {temperature: 0}, context_manager: {type: default}}
agent_configs: [{name: a, max_retries: 2, model_args: {max_tokens: 10}}]
params: {n: 1}
mock: {rules: [{match: x, reply: {text: y}}]}
prices: {m: {input: 1, output: 2}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	text := func(c *Config) string {
		b, err := json.Marshal([]any{c.Resolved(), c.Global, c.Agents, c.Params, c.Mock, c.Prices, c.Files})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := text(c)
	d := c.Clone()
	if got := text(d); got != want {
		t.Fatalf("clone\n got %s\nwant %s", got, want)
	}
	d.Global.ModelArgs["temperature"] = 1
	d.Global.ContextManager["type"] = "none"
	d.Agents[0].ModelArgs["max_tokens"] = 20
	*d.Agents[0].MaxRetries = 5
	d.Params["n"] = 2
	d.Mock["rules"] = nil
	d.Prices["m"] = Price{Input: 9}
	d.Files[0] = "other.yaml"
	if err := d.Set("agent_configs.a.model_args.max_tokens", "30"); err != nil {
		t.Fatal(err)
	}
	if got := text(c); got != want {
		t.Errorf("the config changed with its clone\n got %s\nwant %s", got, want)
	}
	if (*Config)(nil).Clone() != nil {
		t.Error("a nil config's clone is not nil")
	}
}
