package provider

import (
	"context"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// A seed reaches Gemini as generationConfig.seed (langchaingo's client
// drops it), a seed of 0 too and a streamed request's too; a request
// without one carries none.
func TestGeminiSeed(t *testing.T) {
	for _, tc := range []struct {
		seed *int
		want any // generationConfig.seed; nil: absent
	}{{ptr(7), 7.0}, {ptr(0), 0.0}, {nil, nil}} {
		for _, stream := range []bool{false, true} {
			srv := providertest.NewGeminiServer(t, providertest.Reply{Text: "Hi."})
			req := &Request{Messages: []*dialog.Message{userMsg("Hello")}, Params: Params{Seed: tc.seed}}
			if stream {
				req.Stream = func(context.Context, Chunk) error { return nil }
			}
			generate(t, openFake(t, "googleai/gemini-2.5-flash", srv), req)
			gen, _ := srv.LastRequest().JSON()["generationConfig"].(map[string]any)
			if got, ok := gen["seed"]; ok != (tc.want != nil) || got != tc.want {
				t.Errorf("Params.Seed %v, stream %v: generationConfig = %v, want seed %v", tc.want, stream, gen, tc.want)
			}
		}
	}
}
