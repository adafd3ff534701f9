package provider

import (
	"context"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, name := range []string{"openai", "OpenAI", " mock ", "bedrock"} {
		if err := Check(name); err != nil {
			t.Errorf("Check(%q): %v", name, err)
		}
	}
	for name, want := range map[string]string{
		"opneai":        `unknown provider "opneai" (did you mean "openai"?); known providers: anthropic, bedrock, googleai, mistral, mock, ollama, openai`,
		"gemini":        `unknown provider "gemini" (did you mean "googleai"?)`,
		"zzzzzzzz":      `unknown provider "zzzzzzzz"; known providers: `,
		"":              `unknown provider ""`,
		"openai/gpt-4o": `"openai/gpt-4o" is a model name: name its provider, such as "openai"`,
	} {
		if err := Check(name); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Check(%q) = %v, want %s", name, err, want)
		}
	}

	// A package-qualified provider, by its full or its bare name; two of
	// the same bare name make it ambiguous.
	f := func(context.Context, string, Config) (Model, error) { return nil, nil }
	Register("checktest:vllm", f)
	t.Cleanup(func() { Register("checktest:vllm", nil); Register("checktest2:vllm", nil) })
	for _, name := range []string{"checktest:vllm", "vllm", "CheckTest:VLLM"} {
		if err := Check(name); err != nil {
			t.Errorf("Check(%q): %v", name, err)
		}
	}
	Register("checktest2:vllm", f)
	if err := Check("vllm"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("Check(vllm) with two: %v, want it ambiguous", err)
	}
}
