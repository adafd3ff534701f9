package config

import (
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
