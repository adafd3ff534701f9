package tactics

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

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

// A tactic's duration params read as a config's durations do; a value
// that is no duration is a ParamError naming the param, and the params
// given are left as they are.
func TestDecodeParamsDurations(t *testing.T) {
	type p struct {
		Wait    time.Duration  `json:"wait"`
		Max     *time.Duration `json:"max"`
		Rounds  int            `json:"rounds"`
		Default time.Duration  `json:"default"`
	}
	params := map[string]any{"wait": 30, "max": "1m30s", "rounds": 2}
	got := p{Default: time.Hour}
	if err := DecodeParams(params, &got); err != nil {
		t.Fatal(err)
	}
	if got.Wait != 30*time.Second || got.Max == nil || *got.Max != 90*time.Second || got.Rounds != 2 || got.Default != time.Hour {
		t.Errorf("decoded %+v", got)
	}
	if fmt.Sprint(params) != "map[max:1m30s rounds:2 wait:30]" {
		t.Errorf("params changed to %v", params)
	}
	for v, want := range map[any]string{
		"soon": `param wait must be a duration such as 90s or 10m (0 for none), not the string "soon"`,
		-2:     `param wait must be a duration such as 90s or 10m (0 for none), not the integer -2`,
	} {
		err := DecodeParams(map[string]any{"wait": v}, new(p))
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != "wait" || err.Error() != want {
			t.Errorf("wait: %v: %v, want a ParamError %q", v, err, want)
		}
	}
}
