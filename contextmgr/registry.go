package contextmgr

import (
	"errors"
	"fmt"
	suggestpkg "github.com/lllm-go/lllm/internal/suggest"
	"math"
	"slices"
	"strings"
	"sync"
)

// A Factory builds a Manager from its configuration, the map given to [New]
// (including its "type" key).
type Factory func(cfg map[string]any) (Manager, error)

// ErrUnknownType is returned by [New] for a type no factory is registered
// under.
var ErrUnknownType = errors.New("unknown context manager type")

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a context manager available to [New] under name. It is
// meant to be called from init functions and, like database/sql's Register,
// panics if name is empty, f is nil or name is already registered: these are
// programming errors, found when the program starts.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" {
		panic("contextmgr: Register with an empty name")
	}
	if f == nil {
		panic("contextmgr: Register " + name + " with a nil factory")
	}
	if _, dup := registry[name]; dup {
		panic("contextmgr: Register called twice for " + name)
	}
	registry[name] = f
}

// Names returns the registered type names, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New builds the context manager that cfg describes, as found under an
// agent's context_manager key. cfg["type"] names a registered manager:
//
//   - a nil cfg, or a type of "null", "none" or nil (YAML null): the
//     pass-through manager, which returns the messages unchanged;
//   - no type key, or "default": the default token-budget manager;
//   - any other registered name: that manager.
//
// An unknown type is an error wrapping [ErrUnknownType] that lists the
// registered names and suggests the closest one. The built-in managers
// reject keys they do not know.
func New(cfg map[string]any) (Manager, error) {
	if cfg == nil {
		return nullManager{}, nil
	}
	name := "default"
	if v, ok := cfg["type"]; ok {
		switch v := v.(type) {
		case nil:
			name = "none"
		case string:
			name = strings.ToLower(strings.TrimSpace(v))
		default:
			return nil, fmt.Errorf("contextmgr: type must be a string, got %T %v", v, v)
		}
	}
	if name == "null" {
		name = "none"
	}
	registryMu.RLock()
	f := registry[name]
	registryMu.RUnlock()
	if f == nil {
		names := Names()
		msg := fmt.Sprintf("%q", name)
		if s := suggest(name, append(names, "null")); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return nil, fmt.Errorf("contextmgr: %w %s; registered: %s", ErrUnknownType, msg, strings.Join(names, ", "))
	}
	m, err := f(cfg)
	if err != nil {
		return nil, fmt.Errorf("contextmgr: %s: %w", name, err)
	}
	return m, nil
}

// suggest returns the candidate closest to name by edit distance, if it is
// close enough to be a likely typo.
func suggest(name string, candidates []string) string {
	best, _ := suggestpkg.Closest(name, candidates)
	return best
}

// checkKeys reports the first key of cfg (in sorted order) that is not
// accepted. "type" is always accepted.
func checkKeys(cfg map[string]any, accepted ...string) error {
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k != "type" && !slices.Contains(accepted, k) {
			all := append([]string{"type"}, accepted...)
			slices.Sort(all)
			return fmt.Errorf("unknown key %q (accepted keys: %s)", k, strings.Join(all, ", "))
		}
	}
	return nil
}

// intKey reads cfg[key] as an integer no smaller than lo, or returns def
// when the key is absent. It accepts Go integers and integral floats (as
// JSON and YAML decoders produce).
func intKey(cfg map[string]any, key string, def, lo int) (int, error) {
	v, ok := cfg[key]
	if !ok {
		return def, nil
	}
	n, ok := toInt(v)
	if !ok {
		return 0, fmt.Errorf("%s must be an integer, got %T %v", key, v, v)
	}
	if n < lo {
		return 0, fmt.Errorf("%s must be at least %d, got %d", key, lo, n)
	}
	return n, nil
}

// toInt converts an integer or an integral float to int.
func toInt(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case int8:
		return int(v), true
	case int16:
		return int(v), true
	case int32:
		return int(v), true
	case int64:
		return int(v), true
	case uint:
		return int(min(v, math.MaxInt)), true
	case uint8:
		return int(v), true
	case uint16:
		return int(v), true
	case uint32:
		return int(v), true
	case uint64:
		return int(min(v, math.MaxInt)), true
	case float32:
		return toInt(float64(v))
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			return 0, false
		}
		return int(v), true
	}
	return 0, false
}
