package contextmgr

import "testing"

// TypeOf names the manager New builds, as registered.
func TestTypeOf(t *testing.T) {
	for _, tc := range []struct {
		cfg  map[string]any
		want string
	}{
		{nil, "none"},
		{map[string]any{}, "default"},
		{map[string]any{"type": nil}, "none"},
		{map[string]any{"type": "null"}, "none"},
		{map[string]any{"type": " Window "}, "window"},
		{map[string]any{"type": "summary", "keep": 2}, "summary"},
		{map[string]any{"type": "windw"}, ""},
		{map[string]any{"type": 3}, ""},
	} {
		if got := TypeOf(tc.cfg); got != tc.want {
			t.Errorf("TypeOf(%v) = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}
