package provider

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// clearEnv unsets the variables Open reads, for the test.
func clearEnv(t *testing.T) {
	for _, v := range []string{
		"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
		"GOOGLE_API_KEY", "GEMINI_API_KEY", "MISTRAL_API_KEY", "MISTRAL_BASE_URL", "OLLAMA_HOST",
	} {
		t.Setenv(v, "")
	}
}

func TestOpenNames(t *testing.T) {
	clearEnv(t)
	ctx := context.Background()
	for _, name := range []string{"gpt-4o", "openai/", "/gpt-4o", "", "  "} {
		_, err := Open(ctx, name, Config{})
		if err == nil || !strings.Contains(err.Error(), `must be "provider/model"`) {
			t.Errorf("Open(%q) = %v, want a provider/model error", name, err)
		}
	}
	m, err := Open(ctx, "MOCK/some/model", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := m.(*Adapter); !ok || a.Name() != "mock/some/model" {
		t.Errorf("opened %T %v", m, m)
	}
}

func TestOpenUnknownProvider(t *testing.T) {
	for name, want := range map[string]string{
		"opnai/gpt-4o":          `did you mean "openai"?`,
		"antropic/claude":       `did you mean "anthropic"?`,
		"gemini/gemini-2.0":     `did you mean "googleai"?`,
		"zzzzzzzzzz/some-model": "known providers: anthropic, bedrock, googleai, mistral, mock, ollama, openai",
	} {
		_, err := Open(context.Background(), name, Config{})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "unknown provider") {
			t.Errorf("Open(%q) = %v, want it to say %q", name, err, want)
		}
	}
}

func TestOpenMissingKey(t *testing.T) {
	clearEnv(t)
	for name, env := range map[string]string{
		"openai/gpt-4o-mini":           "OPENAI_API_KEY",
		"anthropic/claude-sonnet-4-5":  "ANTHROPIC_API_KEY",
		"googleai/gemini-2.0-flash":    "GOOGLE_API_KEY",
		"mistral/mistral-small-latest": "MISTRAL_API_KEY",
	} {
		_, err := Open(context.Background(), name, Config{})
		if !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "set the "+env+" environment variable") ||
			!strings.Contains(err.Error(), "export "+env+"=") {
			t.Errorf("Open(%q) = %v, want a missing %s error", name, err, env)
		}
	}
	_, err := Open(context.Background(), "openai/gpt-4o", Config{APIKeyEnv: "MY_KEY"})
	if !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "MY_KEY") {
		t.Errorf("APIKeyEnv: %v", err)
	}
}

func TestOpenAIBaseURLFromEnv(t *testing.T) {
	clearEnv(t)
	srv := providertest.NewOpenAIServer(t, providertest.Reply{Text: "from env"})
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	// A local server needs no key: a placeholder is sent.
	m, err := Open(context.Background(), "openai/llama-3.1-8b", Config{})
	if err != nil {
		t.Fatal(err)
	}
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if resp.Message.Content != "from env" {
		t.Errorf("reply = %q", resp.Message.Content)
	}
	if got := srv.LastRequest().Header.Get("Authorization"); got != "Bearer "+placeholderKey {
		t.Errorf("Authorization = %q", got)
	}
}

func TestOpenKeyFromAPIKeyEnv(t *testing.T) {
	clearEnv(t)
	srv := providertest.NewAnthropicServer(t)
	t.Setenv("MY_ANTHROPIC_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL) // without /v1, as Anthropic's SDKs take it
	m, err := Open(context.Background(), "anthropic/claude-haiku-4-5", Config{APIKeyEnv: "MY_ANTHROPIC_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if got := srv.LastRequest().Header.Get("X-Api-Key"); got != "sk-from-env" {
		t.Errorf("x-api-key = %q", got)
	}
}

// noNetwork is an HTTP transport that fails the test if used.
type noNetwork struct{ t *testing.T }

func (n noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("network use: %s %s", r.Method, r.URL)
	return nil, errors.New("no network in this test")
}

func TestOpenTouchesNoNetwork(t *testing.T) {
	clearEnv(t)
	t.Setenv("GOOGLE_API_KEY", "test-key")
	t.Setenv("AWS_REGION", "us-east-1")
	client := &http.Client{Transport: noNetwork{t}}
	for _, name := range []string{
		"googleai/gemini-2.0-flash", "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
		"ollama/llama3.1", "mock/x",
	} {
		m, err := Open(context.Background(), name, Config{HTTPClient: client})
		if err != nil {
			t.Errorf("Open(%q): %v", name, err)
			continue
		}
		if c, ok := m.(interface{ Close() error }); ok {
			if err := c.Close(); err != nil {
				t.Errorf("Close(%q): %v", name, err)
			}
		}
	}
	if _, err := Open(context.Background(), "ollama/x", Config{BaseURL: "::bad"}); err == nil {
		t.Error("Open with a bad Ollama host succeeded")
	}
}

func TestRegister(t *testing.T) {
	calls := 0
	Register("Custom", func(ctx context.Context, model string, cfg Config) (Model, error) {
		calls++
		return Open(ctx, "mock/"+model, cfg)
	})
	defer Register("custom", nil)
	m, err := Open(context.Background(), "custom/thing", Config{})
	if err != nil || m == nil || calls != 1 {
		t.Fatalf("Open(custom/thing) = %v, %v after %d calls", m, err, calls)
	}
	Register("custom", nil)
	if _, err := Open(context.Background(), "custom/thing", Config{}); err == nil {
		t.Error("removed provider still opens")
	}
	Register("", nil)    // ignored
	Register("a/b", nil) // ignored
	if got := len(Providers()); got != 7 {
		t.Errorf("%d providers: %v", got, Providers())
	}
}

// IsZero notices every field of Params, including one added later: each
// field set on its own makes the params non-zero.
func TestParamsIsZero(t *testing.T) {
	if !(Params{}).IsZero() || !(Params{Stop: []string{}}).IsZero() {
		t.Fatal("empty params are not zero")
	}
	typ := reflect.TypeFor[Params]()
	for i := range typ.NumField() {
		var p Params
		f := reflect.ValueOf(&p).Elem().Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		default:
			t.Fatalf("field %s: kind %s not covered by this test", typ.Field(i).Name, f.Kind())
		}
		if p.IsZero() {
			t.Errorf("Params with only %s set is zero", typ.Field(i).Name)
		}
	}
}

// A refused key is an auth error that says where the key came from.
func TestAuthErrorNamesTheKey(t *testing.T) {
	clearEnv(t)
	ctx := context.Background()
	req := &Request{Messages: []*dialog.Message{userMsg("hi")}}
	srv := providertest.NewOpenAIServer(t)
	srv.SetDefault(providertest.Unauthorized())
	anth := providertest.NewAnthropicServer(t)
	anth.SetDefault(providertest.Unauthorized())

	t.Setenv("MY_KEY", "sk-wrong")
	for _, tc := range []struct {
		model string
		cfg   Config
		want  string
	}{
		{"openai/gpt-4o-mini", Config{BaseURL: srv.BaseURL(), APIKeyEnv: "MY_KEY"}, "(check the key in MY_KEY)"},
		{"openai/llama3.1", Config{BaseURL: srv.BaseURL()},
			"(check whether the server at " + srv.BaseURL() + " wants an API key: none was sent, as OPENAI_API_KEY is not set)"},
		{"anthropic/claude-sonnet-4-5", Config{BaseURL: anth.BaseURL(), APIKey: "sk-ant-wrong"}, "(check the API key given in the provider config)"},
	} {
		m, err := Open(ctx, tc.model, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		pe := generateErr(t, ctx, m, req)
		if pe.Kind != ErrAuth || !strings.HasSuffix(pe.Error(), tc.want) {
			t.Errorf("%s: %s: %v, want an auth error ending %q", tc.model, pe.Kind, pe, tc.want)
		}
	}
}
