package server

import (
	"context"
	"testing"
)

func TestLoadServeYAML(t *testing.T) {
	cfg, err := LoadConfig(context.Background(), "../../configs/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Agents) < 2 || cfg.AskUserTimeout == 0 || cfg.Agents[0].CompactTokens != 6000 || cfg.Agents[1].Guests == nil {
		t.Fatalf("%+v", cfg)
	}
}
