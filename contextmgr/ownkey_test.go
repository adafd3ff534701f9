package contextmgr

import (
	"errors"
	"fmt"
	"testing"
)

// A factory's own check of a key's value names the key with a ConfigError
// of its own: New places it there, with its own Type, and says the problem
// once.
func TestConfigErrorKeyOfFactory(t *testing.T) {
	Register("keylab:bounded", func(cfg map[string]any) (Manager, error) {
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
	})
	Register("keylab:wrapsown", func(cfg map[string]any) (Manager, error) {
		return nil, fmt.Errorf("checking: %w", &ConfigError{Key: "n", Err: errors.New("n is odd")})
	})
	Register("keylab:notakey", func(cfg map[string]any) (Manager, error) {
		return nil, &ConfigError{Key: "absent", Err: errors.New("absent must be set")}
	})
	t.Cleanup(func() {
		for _, name := range []string{"keylab:bounded", "keylab:wrapsown", "keylab:notakey"} {
			factories.Delete(name)
		}
	})
	for _, c := range []struct {
		cfg       map[string]any
		key, text string
	}{
		{map[string]any{"type": "bounded", "n": 0}, "n", "contextmgr: keylab:bounded: key n must be at least 1, not 0"},
		{map[string]any{"type": "keylab:wrapsown", "n": 3}, "n", "contextmgr: keylab:wrapsown: checking: contextmgr: n is odd"},
		// A key the config does not have is no place to report at.
		{map[string]any{"type": "keylab:notakey"}, "", "contextmgr: keylab:notakey: absent must be set"},
	} {
		_, err := New(c.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != c.key || err.Error() != c.text {
			t.Errorf("New(%v) = %v; want a *ConfigError of key %q reading %q", c.cfg, err, c.key, c.text)
		}
	}
}
