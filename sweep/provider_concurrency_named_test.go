package sweep

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
)

// registerVLLM registers the package-qualified providers names, each
// answering as the mock does, until the test ends.
func registerVLLM(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		provider.Register(n, func(ctx context.Context, model string, cfg provider.Config) (provider.Model, error) {
			return provider.Open(ctx, "mock/"+model, cfg)
		})
		t.Cleanup(func() { provider.Register(n, nil) })
	}
}

// A provider_concurrency key may name a package-qualified provider, or
// its bare name, which caps every provider of that name (even when
// several packages have one, which a model name could not say); the
// qualified key wins. A typo of a bare name gets a suggestion.
func TestProviderConcurrencyNamedProviders(t *testing.T) {
	registerVLLM(t, "sweeptest:vllm", "other:vllm")
	spec := "config: c.yaml\ndataset: rows.jsonl\nprovider_concurrency:\n  vllm: 3\n  Sweeptest:VLLM: 1\n  other:vllm: 2\n  vllmm: 4\n  nolab:vllm: 5\n  openai: 6\n"
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
		{7, `provider_concurrency: unknown provider "vllmm" (did you mean "vllm"?); known providers: ` + known},
		{8, `provider_concurrency: unknown provider "nolab:vllm"; known providers: ` + known},
	}
	problems := unjoin(se.Err)
	if len(problems) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(problems), len(want), err)
	}
	for i, w := range want {
		var pe *config.Error
		if !errors.As(problems[i], &pe) || pe.Line != w.line || pe.Msg != w.msg {
			t.Errorf("problem %d: %q, want s.yaml:%d: %s", i+1, problems[i], w.line, w.msg)
		}
	}

	s := &Spec{ProviderConcurrency: map[string]int{"vllm": 3, "Sweeptest:VLLM": 1, "openai": 6}}
	for p, want := range map[string]int{"sweeptest:vllm": 1, "other:vllm": 3, "openai": 6, "mock": 8} {
		if got := s.providerLimit(p, 8); got != want {
			t.Errorf("the limit of %s is %d, want %d", p, got, want)
		}
	}
}

// Models named through a package-qualified provider, with or without its
// package, share its limiter, capped by the most specific key.
func TestProviderConcurrencyOfAQualifiedProvider(t *testing.T) {
	registerVLLM(t, "sweeptest:vllm")
	for _, c := range []struct {
		keys string
		want int
	}{
		{"{vllm: 3}", 3},
		{"{vllm: 3, sweeptest:vllm: 1}", 1},
		{"{sweeptest:vllm: 2}", 2},
	} {
		cfg := strings.Replace(chatConfig, "model_name: mock/m", "model_name: vllm/m", 1)
		spec := "config: config.yaml\ndataset: rows.jsonl\nconcurrency: 8\nzip:\n  global.model_name: [vllm/m, sweeptest:vllm/m]\nprovider_concurrency: " + c.keys + "\n"
		s := newSweep(t, writeSweep(t, spec, map[string]string{"config.yaml": cfg}), Options{})
		rep, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Cells) != 2 {
			t.Fatalf("%s: %d cells, want 2", c.keys, len(rep.Cells))
		}
		l := s.lastLimiter("sweeptest:vllm")
		if l == nil || l.Max() != c.want || s.lastLimiter("vllm") != l || s.lastLimiter("SweepTest:vllm") != l {
			t.Errorf("%s: the limiter of sweeptest:vllm is %v, want one of at most %d that vllm/m and sweeptest:vllm/m share", c.keys, l, c.want)
		}
	}
}
