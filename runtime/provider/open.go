package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/googleai"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
	"google.golang.org/api/option"

	"github.com/lllm-go/lllm/internal/registry"
	suggestpkg "github.com/lllm-go/lllm/internal/suggest"
)

// Config is how Open reaches a provider. The zero value reads everything
// from the provider's usual environment variables.
type Config struct {
	// APIKey is the API key. It is never read from or written to config
	// files or logs (no yaml or json tag): prefer APIKeyEnv.
	APIKey string `json:"-" yaml:"-"`
	// APIKeyEnv names the environment variable holding the API key, instead
	// of the provider's usual one (OPENAI_API_KEY, ANTHROPIC_API_KEY,
	// GOOGLE_API_KEY, MISTRAL_API_KEY).
	APIKeyEnv string `json:"api_key_env,omitempty" yaml:"api_key_env,omitempty"`
	// BaseURL is the API's address, instead of the provider's environment
	// variable (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OLLAMA_HOST,
	// MISTRAL_BASE_URL) or default. For openai it points at any
	// OpenAI-compatible server (vLLM, llama.cpp, Ollama's /v1, LM Studio),
	// which then needs no API key.
	BaseURL string `json:"base_url,omitempty" yaml:"base_url,omitempty"`
	// Region is the AWS region for bedrock, instead of AWS_REGION.
	Region string `json:"region,omitempty" yaml:"region,omitempty"`
	// HTTPClient is the client to send requests with; nil is a client
	// without a timeout of its own (the call's context bounds each call).
	// Open wraps its transport and never changes the client given.
	HTTPClient *http.Client `json:"-" yaml:"-"`
	// Prices override the built-in price table, by model name.
	Prices map[string]Price `json:"prices,omitempty" yaml:"prices,omitempty"`
	// Mock scripts the mock provider; nil is an unscripted mock.
	Mock *MockConfig `json:"mock,omitempty" yaml:"mock,omitempty"`
}

// Factory opens model (the part of the name after "provider/") with cfg.
// It must not touch the network: a client that would is built lazily, on
// the first call.
type Factory func(ctx context.Context, model string, cfg Config) (Model, error)

// ErrNoAPIKey is wrapped by the error Open returns when a provider's API
// key is missing.
var ErrNoAPIKey = errors.New("no API key")

var providers = func() *registry.Registry[Factory] {
	r := registry.New[Factory]("provider", "providers", nil)
	for name, f := range map[string]Factory{
		"openai": openOpenAI, "anthropic": openAnthropic, "googleai": openGoogleAI,
		"ollama": openOllama, "mistral": openMistral, "bedrock": openBedrock, "mock": openMock,
	} {
		r.MustRegister(name, f)
	}
	return r
}()

// Register makes f open the models of provider, so "provider/model" names
// them; provider may be package-qualified ("mylab:vllm/model"). It replaces
// a provider already registered under that name, the built-in ones
// included; a nil f removes the provider. Provider names are
// case-insensitive and must not contain '/'; Register ignores an empty or
// invalid name. It is safe for concurrent use.
func Register(provider string, f Factory) {
	provider = strings.ToLower(strings.TrimSpace(provider))
	if provider == "" || strings.Contains(provider, "/") {
		return
	}
	if f == nil {
		providers.Delete(provider)
		return
	}
	_ = providers.Set(provider, f)
}

// Providers returns the registered provider names, sorted.
func Providers() []string { return providers.Names() }

// Check returns nil when name is a registered provider: case-insensitively,
// and a bare name may stand for the one package-qualified provider of that
// name, as in a model name. Otherwise its error names the providers there
// are, with a suggestion for a typo.
func Check(name string) error {
	prov := strings.ToLower(strings.TrimSpace(name))
	if p, _, ok := strings.Cut(prov, "/"); ok && p != "" {
		return fmt.Errorf("%q is a model name: name its provider, such as %q", name, p)
	}
	_, _, err := providers.Lookup(prov)
	if nf := new(registry.NotFoundError); errors.As(err, &nf) && len(nf.Ambiguous) == 0 {
		known := Providers()
		msg := fmt.Sprintf("unknown provider %q", name)
		if s := suggest(prov, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return errors.New(msg + "; known providers: " + strings.Join(known, ", "))
	}
	return err
}

// Open returns the model called name, which is "provider/model" (such as
// "openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5",
// "googleai/gemini-2.0-flash", "ollama/llama3.1",
// "mistral/mistral-large-latest",
// "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0" or
// "mock/anything"). The model part may itself contain '/'. Open never
// touches the network: googleai and bedrock clients are built on the first
// call, so their configuration errors (and bedrock's missing AWS
// credentials) surface there.
func Open(ctx context.Context, name string, cfg Config) (Model, error) {
	prov, model, ok := strings.Cut(strings.TrimSpace(name), "/")
	prov = strings.ToLower(strings.TrimSpace(prov))
	if !ok || prov == "" || strings.TrimSpace(model) == "" {
		return nil, fmt.Errorf(`provider: model name %q must be "provider/model", such as "openai/gpt-4o-mini" (providers: %s)`,
			name, strings.Join(Providers(), ", "))
	}
	f, _, err := providers.Lookup(prov)
	if err != nil {
		if nf := new(registry.NotFoundError); errors.As(err, &nf) && len(nf.Ambiguous) == 0 {
			return nil, unknownProvider(name, prov)
		}
		return nil, fmt.Errorf("provider: %w", err)
	}
	m, err := f(ctx, model, cfg)
	if err != nil {
		return nil, fmt.Errorf("provider: opening %s: %w", name, err)
	}
	return m, nil
}

// unknownProvider is the error for an unregistered provider, with a
// suggestion.
func unknownProvider(name, prov string) error {
	known := Providers()
	msg := fmt.Sprintf("provider: unknown provider %q in %q", prov, name)
	if s := suggest(prov, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return errors.New(msg + "; known providers: " + strings.Join(known, ", "))
}

// aliases are names people use for a provider.
var aliases = map[string]string{
	"google": "googleai", "gemini": "googleai", "vertex": "googleai",
	"claude": "anthropic", "gpt": "openai", "chatgpt": "openai",
	"aws": "bedrock", "llama": "ollama",
}

// suggest returns the known name closest to s, if close enough.
func suggest(s string, known []string) string {
	if a, ok := aliases[s]; ok && slices.Contains(known, a) {
		return a
	}
	best, _ := suggestpkg.Closest(s, known)
	return best
}

// apiKey returns the configured key, else the one in cfg.APIKeyEnv or the
// first of envs that is set, and the variable it names in errors.
func apiKey(cfg Config, envs ...string) (key, env string) {
	if cfg.APIKey != "" {
		return cfg.APIKey, ""
	}
	if cfg.APIKeyEnv != "" {
		return strings.TrimSpace(os.Getenv(cfg.APIKeyEnv)), cfg.APIKeyEnv
	}
	for _, e := range envs {
		if v := strings.TrimSpace(os.Getenv(e)); v != "" {
			return v, e
		}
	}
	return "", envs[0]
}

// keyHint is what an auth error asks to check, for a key found in env
// (empty when the key was given in Config.APIKey).
func keyHint(env string) string {
	if env == "" {
		return "the API key given in the provider config"
	}
	return "the key in " + env
}

// missingKey is the error for a missing API key in env.
func missingKey(env, hint string) error {
	msg := fmt.Sprintf("set the %s environment variable (export %s=...), or name another variable with api_key_env in the agent's config (Config.APIKeyEnv in Go)", env, env)
	if hint != "" {
		msg += "; " + hint
	}
	return fmt.Errorf("%w: %s", ErrNoAPIKey, msg)
}

// baseURL returns cfg.BaseURL, else the first of envs that is set.
func baseURL(cfg Config, envs ...string) string {
	if cfg.BaseURL != "" {
		return strings.TrimSpace(cfg.BaseURL)
	}
	for _, e := range envs {
		if v := strings.TrimSpace(os.Getenv(e)); v != "" {
			return v
		}
	}
	return ""
}

// checkURL reports a base URL that is not an absolute http(s) URL.
func checkURL(u, what string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("%s %q: %w", what, u, err)
	}
	if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("%s %q: want an http:// or https:// URL", what, u)
	}
	return nil
}

// placeholderKey is sent to OpenAI-compatible servers that need no key;
// langchaingo's client refuses to run without one.
const placeholderKey = "sk-no-key-required"

func openOpenAI(_ context.Context, model string, cfg Config) (Model, error) {
	base := baseURL(cfg, "OPENAI_BASE_URL", "OPENAI_API_BASE")
	if base != "" {
		if err := checkURL(base, "base URL"); err != nil {
			return nil, err
		}
	}
	key, env := apiKey(cfg, "OPENAI_API_KEY")
	hint := keyHint(env)
	if key == "" {
		if base == "" || cfg.APIKeyEnv != "" {
			return nil, missingKey(env, "a local OpenAI-compatible server (base_url or OPENAI_BASE_URL) needs no key")
		}
		key = placeholderKey
		hint = "whether the server at " + base + " wants an API key: none was sent, as OPENAI_API_KEY is not set"
	}
	return newOpenAIStyle("openai", model, key, base, hint, cfg)
}

func openMistral(_ context.Context, model string, cfg Config) (Model, error) {
	base := baseURL(cfg, "MISTRAL_BASE_URL")
	if base == "" {
		base = "https://api.mistral.ai/v1"
	}
	if err := checkURL(base, "base URL"); err != nil {
		return nil, err
	}
	key, env := apiKey(cfg, "MISTRAL_API_KEY")
	if key == "" {
		return nil, missingKey(env, "")
	}
	return newOpenAIStyle("mistral", model, key, base, keyHint(env), cfg)
}

// newOpenAIStyle opens a chat-completions API with langchaingo's openai
// client. Mistral goes this way too: its API speaks the same protocol, and
// langchaingo's mistral client (mistral-go) takes no context, has its own
// HTTP client with built-in retries and sleeps, and always sends a fixed
// random_seed and temperature.
func newOpenAIStyle(provider, model, key, base, hint string, cfg Config) (Model, error) {
	opts := []openai.Option{
		openai.WithToken(key),
		openai.WithModel(model),
		openai.WithHTTPClient(wrapClient(cfg.HTTPClient, &transport{replies: wireOpenAI})),
	}
	if base != "" {
		opts = append(opts, openai.WithBaseURL(base))
	}
	llm, err := openai.New(opts...)
	if err != nil {
		return nil, err
	}
	// OpenAI itself wants max_completion_tokens; compatible servers know
	// max_tokens.
	legacy := base != "" && !strings.Contains(base, "api.openai.com")
	return NewAdapter(llm, AdapterConfig{Provider: provider, Model: model, Prices: cfg.Prices, LegacyMaxTokens: legacy, KeyHint: hint}), nil
}

func openAnthropic(_ context.Context, model string, cfg Config) (Model, error) {
	key, env := apiKey(cfg, "ANTHROPIC_API_KEY")
	if key == "" {
		return nil, missingKey(env, "")
	}
	opts := []anthropic.Option{
		anthropic.WithToken(key),
		anthropic.WithModel(model),
		anthropic.WithHTTPClient(wrapClient(cfg.HTTPClient, &transport{replies: wireAnthropic})),
	}
	if base := baseURL(cfg, "ANTHROPIC_BASE_URL"); base != "" {
		if err := checkURL(base, "base URL"); err != nil {
			return nil, err
		}
		// Anthropic's own SDKs take the URL without /v1; langchaingo
		// wants it.
		base = strings.TrimRight(base, "/")
		if !strings.HasSuffix(base, "/v1") {
			base += "/v1"
		}
		opts = append(opts, anthropic.WithBaseURL(base))
	}
	llm, err := anthropic.New(opts...)
	if err != nil {
		return nil, err
	}
	return NewAdapter(llm, AdapterConfig{Provider: "anthropic", Model: model, Prices: cfg.Prices, KeyHint: keyHint(env)}), nil
}

func openOllama(_ context.Context, model string, cfg Config) (Model, error) {
	host := baseURL(cfg, "OLLAMA_HOST")
	if host == "" {
		host = "http://127.0.0.1:11434"
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	// ollama.WithServerURL exits the program on a bad URL: check first.
	if err := checkURL(host, "Ollama host"); err != nil {
		return nil, err
	}
	llm, err := ollama.New(
		ollama.WithModel(model),
		ollama.WithServerURL(host),
		ollama.WithHTTPClient(wrapClient(cfg.HTTPClient, &transport{replies: wireOllama})),
	)
	if err != nil {
		return nil, err
	}
	return NewAdapter(llm, AdapterConfig{Provider: "ollama", Model: model, Prices: cfg.Prices}), nil
}

func openGoogleAI(_ context.Context, model string, cfg Config) (Model, error) {
	key, env := apiKey(cfg, "GOOGLE_API_KEY", "GEMINI_API_KEY")
	if key == "" {
		return nil, missingKey(env, "")
	}
	base := baseURL(cfg)
	if base != "" {
		if err := checkURL(base, "base URL"); err != nil {
			return nil, err
		}
	}
	// Given an HTTP client, the Google client sends no key of its own:
	// the transport adds it. It also retries 503s by itself, until the
	// context ends; the transport fails them at once.
	client := wrapClient(cfg.HTTPClient, &transport{
		header:      http.Header{"X-Goog-Api-Key": {key}},
		fail503:     true,
		geminiUsage: true,
	})
	build := func(ctx context.Context) (llms.Model, error) {
		opts := []googleai.Option{
			googleai.WithAPIKey(key),
			googleai.WithDefaultModel(model),
			googleai.WithHTTPClient(client),
		}
		if base != "" {
			opts = append(opts, func(o *googleai.Options) {
				o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(base))
			})
		}
		return googleai.New(ctx, opts...)
	}
	return NewAdapter(&lazyLLM{build: build}, AdapterConfig{Provider: "googleai", Model: model, Prices: cfg.Prices, KeyHint: keyHint(env)}), nil
}

func openMock(_ context.Context, model string, cfg Config) (Model, error) {
	var mc MockConfig
	if cfg.Mock != nil {
		mc = *cfg.Mock
	}
	m, err := NewMock(mc)
	if err != nil {
		return nil, err
	}
	m.model = "mock/" + model
	return NewAdapter(m, AdapterConfig{Provider: "mock", Model: model, Prices: cfg.Prices}), nil
}

// lazyLLM builds its langchaingo model on the first call, so that opening
// one never touches the network. A failed build is tried again on the
// next call.
type lazyLLM struct {
	build func(context.Context) (llms.Model, error)
	mu    sync.Mutex
	llm   llms.Model
}

func (l *lazyLLM) get(ctx context.Context) (llms.Model, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.llm == nil {
		// The client may outlive this call's context.
		m, err := l.build(context.WithoutCancel(ctx))
		if err != nil {
			return nil, err
		}
		l.llm = m
	}
	return l.llm, nil
}

// GenerateContent implements llms.Model.
func (l *lazyLLM) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	m, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return m.GenerateContent(ctx, msgs, opts...)
}

// Call implements llms.Model.
func (l *lazyLLM) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, l, prompt, opts...)
}

// Close closes the built model, if it was built and can be closed.
func (l *lazyLLM) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.llm.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}
