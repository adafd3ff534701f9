package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type testScript struct {
	Replies    []testReply   `yaml:"replies"`
	Latency    time.Duration `yaml:"latency"`
	Named      map[string]testReply
	testInline `yaml:",inline"`
}

type testReply struct {
	Text  string         `yaml:"text"`
	Calls []testCall     `yaml:"calls"`
	Free  map[string]any `yaml:"free"`
}

type testCall struct {
	Name string `yaml:"name"`
}

type testInline struct {
	Seed int `yaml:"seed"`
}

func TestDecodeSection(t *testing.T) {
	c, err := Parse("t.yaml", []byte(`mock:
  replies:
    - text: hi
      calls: [{name: a}]
      free: {anything: [1, 2]}
  named:
    x: {text: there}
  latency: 50ms
  seed: 3
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var s testScript
	if err := c.DecodeSection("mock", &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Replies) != 1 || s.Replies[0].Calls[0].Name != "a" || s.Named["x"].Text != "there" || s.Latency != 50*time.Millisecond || s.Seed != 3 {
		t.Errorf("decoded %+v", s)
	}
	var none testScript
	if err := c.DecodeSection("absent", &none); err != nil || none.Replies != nil {
		t.Errorf("absent section: %v, %+v", err, none)
	}

	// Every unknown key, however deep, at its place, in file order; then a
	// value of the wrong type, at its place too.
	c, err = Parse("t.yaml", []byte(`mock:
  replies:
    - txt: hi
      calls: [{nme: a}]
  named:
    x: {text: there, extra: 1}
  sed: 3
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = c.DecodeSection("mock", new(testScript))
	want := []string{
		`t.yaml:3:7: unknown key "txt" in mock.replies[0] (did you mean "text"?)`,
		`t.yaml:4:16: unknown key "nme" in mock.replies[0].calls[0] (did you mean "name"?)`,
		`t.yaml:6:22: unknown key "extra" in mock.named.x (one of: calls, free, text)`,
		`t.yaml:7:3: unknown key "sed" in mock (did you mean "seed"?)`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("unknown keys: %v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	c, err = Parse("t.yaml", []byte("mock:\n  latency: soon\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = c.DecodeSection("mock", new(testScript))
	if err == nil || err.Error() != `t.yaml:2:3: mock.latency must be a duration such as 90s or 10m (0 for none), not the string "soon"` {
		t.Errorf("type error: %v", err)
	}
}

// durationScript is a section with durations in every place a section's
// type may hold one.
type durationScript struct {
	Latency time.Duration            `yaml:"latency"`
	Wait    *time.Duration           `yaml:"wait"`
	Steps   []time.Duration          `yaml:"steps"`
	Named   map[string]time.Duration `yaml:"named"`
	Replies []struct {
		Text       string        `yaml:"text"`
		RetryAfter time.Duration `yaml:"retry_after"`
	} `yaml:"replies"`
}

// A section's durations read as call_timeout's do: text, or a number of
// seconds; the config itself (what a run log records) is left as written.
func TestDecodeSectionDurations(t *testing.T) {
	c, err := Parse("t.yaml", []byte(`mock:
  latency: 30
  wait: 0.25
  steps: [1, "2ms", 0]
  named: {a: 1.5, b: 1m}
  replies:
    - {text: hi, retry_after: 2}
    - {text: there, retry_after: 100ms}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(c.Resolved())
	var s durationScript
	if err := c.DecodeSection("mock", &s); err != nil {
		t.Fatal(err)
	}
	if s.Latency != 30*time.Second || s.Wait == nil || *s.Wait != 250*time.Millisecond ||
		len(s.Steps) != 3 || s.Steps[0] != time.Second || s.Steps[1] != 2*time.Millisecond || s.Steps[2] != 0 ||
		s.Named["a"] != 1500*time.Millisecond || s.Named["b"] != time.Minute ||
		len(s.Replies) != 2 || s.Replies[0].RetryAfter != 2*time.Second || s.Replies[1].RetryAfter != 100*time.Millisecond || s.Replies[0].Text != "hi" {
		t.Errorf("decoded %+v", s)
	}
	if after, _ := json.Marshal(c.Resolved()); string(after) != string(before) {
		t.Errorf("decoding changed the config: %s, was %s", after, before)
	}

	for _, bad := range []struct{ yaml, want string }{
		{"mock:\n  latency: -1\n", `t.yaml:2:3: mock.latency must be a duration such as 90s or 10m (0 for none), not the integer -1`},
		{"mock:\n  latency: -5ms\n", `t.yaml:2:3: mock.latency must be a duration such as 90s or 10m (0 for none), not the string "-5ms"`},
		{"mock:\n  steps: [1, true]\n", `t.yaml:2:14: mock.steps[1] must be a duration such as 90s or 10m (0 for none), not the bool true`},
		{"mock:\n  replies: [{retry_after: soon}]\n", `mock.replies[0].retry_after must be a duration such as 90s or 10m (0 for none), not the string "soon"`},
	} {
		c, err := Parse("t.yaml", []byte(bad.yaml), nil)
		if err != nil {
			t.Fatal(err)
		}
		err = c.DecodeSection("mock", new(durationScript))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.yaml, err, bad.want)
		}
	}
}
