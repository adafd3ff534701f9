package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		v    any
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"0", 0},
		{30, 30 * time.Second},
		{int64(2), 2 * time.Second},
		{uint64(3), 3 * time.Second},
		{0.25, 250 * time.Millisecond},
	} {
		if d, err := ParseDuration(c.v); err != nil || d != c.want {
			t.Errorf("ParseDuration(%#v) = %v, %v; want %v", c.v, d, err, c.want)
		}
	}
	for _, v := range []any{"soon", "-1s", -1, -0.5, 1e300, -1e300, true, nil, []any{1}, map[string]any{}} {
		d, err := ParseDuration(v)
		if err == nil || !strings.HasPrefix(err.Error(), "must be a duration such as 90s or 10m (0 for none), not ") {
			t.Errorf("ParseDuration(%#v) = %v, %v; want an error", v, d, err)
		}
	}
}
