package contextmgr

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// lastTurns is a context manager of a user's own, configured by
// DecodeConfig.
type lastTurns struct {
	N    int           `json:"n"`
	Wait time.Duration `json:"wait"`
}

func (lastTurns) Fit(_ context.Context, in Input) (Result, error) {
	return Result{Messages: in.Messages}, nil
}

func TestDecodeConfig(t *testing.T) {
	Register("decodelab:lastturns", func(cfg map[string]any) (Manager, error) {
		m := lastTurns{N: 6}
		if err := DecodeConfig(cfg, &m); err != nil {
			return nil, err
		}
		return m, nil
	})
	Register("decodelab:plain", func(cfg map[string]any) (Manager, error) {
		if err := DecodeConfig(cfg, &struct{}{}); err != nil {
			return nil, err
		}
		return lastTurns{}, nil
	})
	t.Cleanup(func() { // so that the tests can run again, and others see the built-ins alone
		factories.Delete("decodelab:lastturns")
		factories.Delete("decodelab:plain")
	})
	m, err := New(map[string]any{"type": "lastturns", "n": 4.0, "wait": 1.5})
	if err != nil {
		t.Fatal(err)
	}
	if m != (lastTurns{N: 4, Wait: 1500 * time.Millisecond}) {
		t.Errorf("got %+v; want n 4 from 4.0 and a wait of 1.5s", m)
	}
	if m, err := New(map[string]any{"type": "lastturns"}); err != nil || m != (lastTurns{N: 6}) {
		t.Errorf("no keys but type: %+v, %v; want the defaults", m, err)
	}
	if _, err := New(map[string]any{"type": "plain"}); err != nil {
		t.Errorf("a manager of no keys, given none: %v", err)
	}
	for _, c := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"type": "lastturns", "wiat": 4}, `contextmgr: decodelab:lastturns: unknown key "wiat" (did you mean "wait"?)`},
		{map[string]any{"type": "lastturns", "x": 1, "y": 2}, `contextmgr: decodelab:lastturns: unknown keys "x", "y" (accepted: type, n, wait)`},
		{map[string]any{"type": "lastturns", "n": 2.5}, `contextmgr: decodelab:lastturns: key n must be an integer, not 2.5`},
		{map[string]any{"type": "lastturns", "n": "4"}, `contextmgr: decodelab:lastturns: key n must be an integer, not "4"`},
		{map[string]any{"type": "lastturns", "wait": "soon"}, `contextmgr: decodelab:lastturns: key wait must be a duration such as 90s or 10m (0 for none), not the string "soon"`},
		{map[string]any{"type": "plain", "n": 1}, `contextmgr: decodelab:plain: unknown key "n" (accepted: type)`},
	} {
		_, err := New(c.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || err.Error() != c.want {
			t.Errorf("New(%v) = %v; want a ConfigError %q", c.cfg, err, c.want)
		}
	}
	// The map is the caller's: DecodeConfig leaves it as it is.
	cfg := map[string]any{"type": "lastturns", "wait": "2s"}
	if _, err := New(cfg); err != nil || len(cfg) != 2 || cfg["wait"] != "2s" {
		t.Errorf("New: %v; the config became %v", err, cfg)
	}
	if err := DecodeConfig(nil, lastTurns{}); err == nil || !strings.HasPrefix(err.Error(), "contextmgr: DecodeConfig needs a pointer to a struct") {
		t.Errorf("a struct, not a pointer to one: %v", err)
	}
}
