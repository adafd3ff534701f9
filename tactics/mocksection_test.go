package tactics

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
)

// mockYAML is a config whose mock section has n rules.
func mockYAML(n int, extra string) string {
	var b strings.Builder
	b.WriteString("tactic_type: chat\nglobal: {model_name: mock/m}\nagent_configs:\n  - {name: assistant, system_prompt: hi}\nmock:\n  latency: 5ms\n" + extra + "  rules:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - {match: \"q%d\", reply: {text: \"a%d\"}}\n", i, i)
	}
	return b.String()
}

// A mock section met before is not decoded again: what ProviderConfig
// gives for it is what decoding it gives, for a fraction of the work.
func TestProviderConfigMockSectionOnce(t *testing.T) {
	text := mockYAML(50, "")
	cfg := parseConfig(t, "a.yaml", text)
	want := new(provider.MockConfig)
	if err := cfg.DecodeSection("mock", want); err != nil {
		t.Fatal(err)
	}
	decode := testing.AllocsPerRun(20, func() {
		var m provider.MockConfig
		if err := cfg.DecodeSection("mock", &m); err != nil {
			t.Fatal(err)
		}
	})
	// The same content in another config (a sweep's next cell).
	other := parseConfig(t, "b.yaml", text)
	var got provider.Config
	allocs := testing.AllocsPerRun(20, func() {
		var err error
		if got, err = ProviderConfig(other); err != nil {
			t.Fatal(err)
		}
	})
	if !reflect.DeepEqual(got.Mock, want) {
		t.Errorf("ProviderConfig's mock %+v\nwant %+v", got.Mock, want)
	}
	if allocs > decode/4 {
		t.Errorf("ProviderConfig of a section met before: %.0f allocations, decoding it %.0f: want at most a quarter", allocs, decode)
	}
	// Each caller gets its own copy.
	got.Mock.Latency = time.Hour
	again, err := ProviderConfig(other)
	if err != nil || again.Mock.Latency != 5*time.Millisecond {
		t.Errorf("a caller's change reached the next: latency %v, %v", again.Mock.Latency, err)
	}
	// Another content is decoded afresh.
	third, err := ProviderConfig(parseConfig(t, "c.yaml", mockYAML(2, "  seed: 9\n")))
	if err != nil || third.Mock.Seed != 9 || len(third.Mock.Rules) != 2 {
		t.Errorf("another section: %+v, %v", third.Mock, err)
	}
}

// A mock section with a problem is reported each time, at its place in
// the config at hand, however often the same content was seen.
func TestProviderConfigMockProblemsPlaced(t *testing.T) {
	for _, name := range []string{"x.yaml", "y.yaml", "x.yaml"} {
		_, err := ProviderConfig(parseConfig(t, name, mockYAML(1, "  sede: 9\n")))
		if err == nil || !strings.HasPrefix(err.Error(), name+":7:3: unknown key \"sede\" in mock") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The mock's durations take a number of seconds, as call_timeout does.
func TestMockSectionDurationsInSeconds(t *testing.T) {
	cfg := parseConfig(t, "c.yaml", "tactic_type: chat\nmock:\n  latency: 0.05\n  replies: [{error: rate_limit, retry_after: 2}]\n")
	m, err := mockConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m.Latency != 50*time.Millisecond || len(m.Replies) != 1 || m.Replies[0].RetryAfter != 2*time.Second {
		t.Errorf("latency %v, replies %+v; want 50ms and a retry_after of 2s", m.Latency, m.Replies)
	}
}

// Every problem of a config's mock script is reported at once, each at
// the line that wrote it, under its path in the config.
func TestProviderConfigMockProblems(t *testing.T) {
	src := `tactic_type: chat
global: {model_name: mock/m}
agent_configs:
  - {name: assistant, system_prompt: hi}
mock:
  rules:
    - {reply: {text: x}}
    - {match: a, times: -2, reply: {text: y}}
  replies:
    - {error: ratelimit}
    - {tool_calls: [{arguments: {x: 1}}]}
`
	cfg, err := config.Parse("c.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ProviderConfig(cfg)
	if err == nil {
		t.Fatal("a mock script with four problems was accepted")
	}
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *config.Error
		if !errors.As(e, &ce) || ce.Line == 0 {
			t.Errorf("%v: not placed at a line of c.yaml", e)
		}
		got = append(got, e.Error())
	}
	want := []string{
		"c.yaml:7:7: mock.rules.0: set match",
		"c.yaml:8:18: mock.rules.1.times: -2 is negative",
		"c.yaml:10:8: mock.replies.0.error: unknown error \"ratelimit\"",
		"c.yaml:11:21: mock.replies.1.tool_calls.0",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d: %q, want it to start %q", i, got[i], w)
		}
	}
}
