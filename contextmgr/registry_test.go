package contextmgr

import (
	"errors"
	"fmt"
	"testing"
)

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

// A ConfigError names the key at fault, when one is: of a built-in
// manager, or of a manager of a user's own that reads its keys with
// DecodeConfig, however it wraps the error; not a key of a map under the
// config, nor one for a problem with the whole config. A factory's own
// check of a key's value names the key with a ConfigError of its own: New
// places it there, with its own Type, and says the problem once.
func TestConfigErrorKey(t *testing.T) {
	for name, f := range map[string]Factory{
		"keylab:wraps": func(cfg map[string]any) (Manager, error) {
			c := struct {
				N int `json:"n"`
			}{}
			if err := DecodeConfig(cfg, &c); err != nil {
				return nil, fmt.Errorf("reading the keys: %w", err)
			}
			return nullManager{}, nil
		},
		"keylab:nested": func(cfg map[string]any) (Manager, error) {
			inner, _ := cfg["inner"].(map[string]any)
			return nil, DecodeConfig(inner, &struct{}{})
		},
		"keylab:refuses": func(map[string]any) (Manager, error) { return nil, errors.New("no") },
		"keylab:bounded": func(cfg map[string]any) (Manager, error) {
			c := struct {
				N int `json:"n"`
			}{N: 6}
			if err := DecodeConfig(cfg, &c); err != nil {
				return nil, err
			}
			if c.N < 1 {
				return nil, &ConfigError{Key: "n", Err: fmt.Errorf("key n must be at least 1, not %d", c.N)}
			}
			return nullManager{}, nil
		},
		"keylab:wrapsown": func(map[string]any) (Manager, error) {
			return nil, fmt.Errorf("checking: %w", &ConfigError{Key: "n", Err: errors.New("n is odd")})
		},
		"keylab:notakey": func(map[string]any) (Manager, error) {
			return nil, &ConfigError{Key: "absent", Err: errors.New("absent must be set")}
		},
	} {
		Register(name, f)
		t.Cleanup(func() { factories.Delete(name) })
	}
	for _, c := range []struct {
		cfg  map[string]any
		key  string
		text string // the whole error, when the case checks it
	}{
		{cfg: map[string]any{"type": "default", "buffer": -5}, key: "buffer"},
		{cfg: map[string]any{"max_tokens": "lots"}, key: "max_tokens"},
		{cfg: map[string]any{"type": "summary", "bufer": 1}, key: "bufer"},
		{cfg: map[string]any{"type": "window", "n": 0}, key: "n"},
		{cfg: map[string]any{"type": "window", "n": 2.5}, key: "n"},
		{cfg: map[string]any{"type": "none", "n": 1}, key: "n"},
		{cfg: map[string]any{"type": "keylab:wraps", "n": "two"}, key: "n"},
		{cfg: map[string]any{"type": "keylab:wraps", "m": 1}, key: "m"},
		{cfg: map[string]any{"type": "keylab:nested", "inner": map[string]any{"x": 1}}, key: ""},
		{cfg: map[string]any{"type": "keylab:refuses"}, key: ""},
		{cfg: map[string]any{"type": 7}, key: ""},
		{cfg: map[string]any{"type": "windwo", "n": 1}, key: ""},
		{cfg: map[string]any{"type": "bounded", "n": 0}, key: "n", text: "contextmgr: keylab:bounded: key n must be at least 1, not 0"},
		{cfg: map[string]any{"type": "keylab:wrapsown", "n": 3}, key: "n", text: "contextmgr: keylab:wrapsown: checking: contextmgr: n is odd"},
		// A key the config does not have is no place to report at.
		{cfg: map[string]any{"type": "keylab:notakey"}, key: "", text: "contextmgr: keylab:notakey: absent must be set"},
	} {
		_, err := New(c.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != c.key || c.text != "" && err.Error() != c.text {
			t.Errorf("New(%v) = %v; want a *ConfigError of key %q reading %q", c.cfg, err, c.key, c.text)
		}
	}
}
