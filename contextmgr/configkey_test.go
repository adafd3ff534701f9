package contextmgr

import (
	"errors"
	"fmt"
	"testing"
)

// A ConfigError names the key at fault, when one is: of a built-in
// manager, or of a manager of a user's own that reads its keys with
// DecodeConfig, however it wraps the error; not a key of a map under the
// config, nor one for a problem with the whole config.
func TestConfigErrorKey(t *testing.T) {
	Register("keylab:wraps", func(cfg map[string]any) (Manager, error) {
		c := struct {
			N int `json:"n"`
		}{}
		if err := DecodeConfig(cfg, &c); err != nil {
			return nil, fmt.Errorf("reading the keys: %w", err)
		}
		return nullManager{}, nil
	})
	Register("keylab:nested", func(cfg map[string]any) (Manager, error) {
		inner, _ := cfg["inner"].(map[string]any)
		return nil, DecodeConfig(inner, &struct{}{})
	})
	Register("keylab:refuses", func(map[string]any) (Manager, error) { return nil, errors.New("no") })
	t.Cleanup(func() {
		for _, name := range []string{"keylab:wraps", "keylab:nested", "keylab:refuses"} {
			factories.Delete(name)
		}
	})
	for _, c := range []struct {
		cfg map[string]any
		key string
	}{
		{map[string]any{"type": "default", "buffer": -5}, "buffer"},
		{map[string]any{"max_tokens": "lots"}, "max_tokens"},
		{map[string]any{"type": "summary", "bufer": 1}, "bufer"},
		{map[string]any{"type": "window", "n": 0}, "n"},
		{map[string]any{"type": "window", "n": 2.5}, "n"},
		{map[string]any{"type": "none", "n": 1}, "n"},
		{map[string]any{"type": "keylab:wraps", "n": "two"}, "n"},
		{map[string]any{"type": "keylab:wraps", "m": 1}, "m"},
		{map[string]any{"type": "keylab:nested", "inner": map[string]any{"x": 1}}, ""},
		{map[string]any{"type": "keylab:refuses"}, ""},
		{map[string]any{"type": 7}, ""},
		{map[string]any{"type": "windwo", "n": 1}, ""},
	} {
		_, err := New(c.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != c.key {
			t.Errorf("New(%v) = %v; want a *ConfigError of key %q", c.cfg, err, c.key)
		}
	}
}
