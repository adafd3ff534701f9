package sweep

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/runtime/config"
)

// A spec's timeout takes what a tactic config's call_timeout takes: a
// duration's text, or a number of seconds.
func TestSpecTimeoutAsConfigDurations(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want time.Duration
	}{
		{"30", 30 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{"0", 0},
		{"2m", 2 * time.Minute},
		{`"90s"`, 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"~", 0},
	} {
		spec := "config: c.yaml\ndataset: rows.jsonl\ntimeout: " + c.yaml + "\n"
		s, err := ParseSpec("s.yaml", []byte(spec))
		if err != nil {
			t.Errorf("timeout: %s: %v", c.yaml, err)
			continue
		}
		if s.Timeout != c.want {
			t.Errorf("timeout: %s is %v, want %v", c.yaml, s.Timeout, c.want)
		}
		// The same value as a tactic config's call_timeout.
		cfg, err := config.Parse("c.yaml", []byte("tactic_type: chat\nglobal:\n  model_name: mock/m\n  call_timeout: "+c.yaml+
			"\nagent_configs:\n  - name: a\n    system_prompt: hi\n"), nil)
		if err != nil {
			t.Errorf("call_timeout: %s: %v", c.yaml, err)
			continue
		}
		var got time.Duration
		if d := cfg.Agents[0].CallTimeout; d != nil {
			got = *d
		}
		if got != s.Timeout {
			t.Errorf("%s: call_timeout %v, timeout %v", c.yaml, got, s.Timeout)
		}
	}
}

// A timeout that is no duration is one problem at its line, saying what
// to write, worded as a tactic config's call_timeout problem is.
func TestSpecTimeoutErrors(t *testing.T) {
	for _, c := range []struct{ yaml, what string }{
		{`"2 minutes"`, `the string "2 minutes"`},
		{"soon", `the string "soon"`},
		{"-3", "the integer -3"},
		{"-1s", `the string "-1s"`},
		{"[30]", "a list"},
		{"{s: 30}", "a mapping"},
		{"true", "the bool true"},
		{"1e300", "the number 1e+300"},
	} {
		spec := "config: c.yaml\ndataset: rows.jsonl\nrepeats: 2\ntimeout: " + c.yaml + "\nretries: 1\n"
		_, err := ParseSpec("s.yaml", []byte(spec))
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("timeout: %s: %v, want a *SpecError", c.yaml, err)
			continue
		}
		problems := unjoin(se.Err)
		want := fmt.Sprintf("s.yaml:4: timeout must be a duration such as 90s or 10m (0 for none), not %s", c.what)
		if len(problems) != 1 || problems[0].Error() != want {
			t.Errorf("timeout: %s: %q\nwant %q", c.yaml, err, want)
			continue
		}
		var pe *config.Error
		if !errors.As(problems[0], &pe) || pe.Line != 4 || strings.Contains(err.Error(), "unmarshal") {
			t.Errorf("timeout: %s: %#v, want a *config.Error at line 4", c.yaml, problems[0])
		}
	}
}
