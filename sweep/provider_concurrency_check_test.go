package sweep

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
)

// A provider_concurrency key that is not a registered provider (a typo)
// is a problem at its line, naming the providers there are.
func TestSpecProviderConcurrencyUnknown(t *testing.T) {
	spec := "config: c.yaml\ndataset: rows.jsonl\nprovider_concurrency:\n  openai: 8\n  opneai: 4\n  openai/gpt-4o: 2\n  OpenAI: 3\n"
	_, err := ParseSpec("s.yaml", []byte(spec))
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("%v, want a *SpecError", err)
	}
	known := strings.Join(provider.Providers(), ", ")
	want := []struct {
		line int
		msg  string
	}{
		{5, `provider_concurrency: unknown provider "opneai" (did you mean "openai"?); known providers: ` + known},
		{6, `provider_concurrency: "openai/gpt-4o" is a model name: name its provider, such as "openai"`},
		{7, `provider_concurrency: provider "OpenAI" twice`},
	}
	problems := unjoin(se.Err)
	if len(problems) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(problems), len(want), err)
	}
	for i, w := range want {
		var pe *config.Error
		if !errors.As(problems[i], &pe) || pe.File != "s.yaml" || pe.Line != w.line || pe.Msg != w.msg {
			t.Errorf("problem %d: %q, want s.yaml:%d: %s", i+1, problems[i], w.line, w.msg)
		}
	}
	if !strings.Contains(known, "mock") || !strings.Contains(known, "openai") {
		t.Errorf("known providers %q", known)
	}
}

// Every registered provider is accepted, in any case, and its limit
// applies to the model calls of that provider.
func TestSpecProviderConcurrencyKnown(t *testing.T) {
	var b strings.Builder
	b.WriteString("config: c.yaml\ndataset: rows.jsonl\nprovider_concurrency:\n")
	for _, p := range provider.Providers() {
		b.WriteString("  " + p + ": 2\n")
	}
	if _, err := ParseSpec("s.yaml", []byte(b.String())); err != nil {
		t.Fatal(err)
	}
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\nconcurrency: 8\nprovider_concurrency: {Mock: 1}\n", map[string]string{})
	s := newSweep(t, path, Options{})
	if _, err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := s.lastLimiter("mock"); l == nil || l.Max() != 1 {
		t.Errorf("the mock's limiter is %v, want one of at most 1 (provider_concurrency: {Mock: 1})", l)
	}
}
