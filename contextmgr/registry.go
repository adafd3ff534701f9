package contextmgr

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lllm-go/lllm/internal/registry"
)

// A Factory builds a Manager from its configuration, the map given to [New]
// (including its "type" key).
type Factory func(cfg map[string]any) (Manager, error)

// ErrUnknownType is returned by [New] for a type no factory is registered
// under.
var ErrUnknownType = errors.New("unknown context manager type")

// A ConfigError is a configuration [New] builds no manager from: a type
// that is not a string or not registered (Type is then ""), or one the
// factory of Type refused. It reads "contextmgr: TYPE: problem".
type ConfigError struct {
	Type string // the registered name of the manager type
	Err  error  // the problem
}

func (e *ConfigError) Error() string {
	if e.Type == "" {
		return "contextmgr: " + e.Err.Error()
	}
	return "contextmgr: " + e.Type + ": " + e.Err.Error()
}

// Unwrap returns the problem.
func (e *ConfigError) Unwrap() error { return e.Err }

// A FitError is an error of a built-in manager's Fit: the type of the
// manager that failed and the problem, which wraps a context's error, a
// summarizer's error or [ErrNoSummarizer]. It reads "contextmgr: TYPE:
// problem"; a caller that names the manager itself shows Err.
type FitError struct {
	Type string // the registered name of the manager type
	Err  error  // the problem
}

func (e *FitError) Error() string { return "contextmgr: " + e.Type + ": " + e.Err.Error() }

// Unwrap returns the problem.
func (e *FitError) Unwrap() error { return e.Err }

var factories = registry.New[Factory]("context manager type", "context manager types", ErrUnknownType)

// Register makes a context manager available to [New] under name, a path
// or a package-qualified "pkg:path". It is meant to be called from init
// functions and, like database/sql's Register, panics if name is empty or
// malformed, f is nil or name is already registered: these are
// programming errors, found when the program starts.
func Register(name string, f Factory) {
	if f == nil {
		panic("contextmgr: Register " + name + " with a nil factory")
	}
	factories.MustRegister(name, f)
}

// Names returns the registered type names, sorted.
func Names() []string { return factories.Names() }

// New builds the context manager that cfg describes, as found under an
// agent's context_manager key. cfg["type"] names a registered manager:
//
//   - a nil cfg, or a type of "null", "none" or nil (YAML null): the
//     pass-through manager, which returns the messages unchanged;
//   - no type key, or "default": the default token-budget manager;
//   - any other registered name: that manager.
//
// A type is looked up as registered, then in lower case. An unknown type
// is an error wrapping [ErrUnknownType] that lists the registered names
// and suggests the closest one. The built-in managers
// reject keys they do not know. Every error is a *[ConfigError].
func New(cfg map[string]any) (Manager, error) {
	if cfg == nil {
		return nullManager{}, nil
	}
	name, f, err := lookup(cfg)
	if err != nil {
		return nil, err
	}
	m, err := f(cfg)
	if err != nil {
		return nil, &ConfigError{Type: name, Err: err}
	}
	return m, nil
}

// TypeOf returns the registered name of the manager New builds from cfg
// ("window" for a type written "Window", "default" for none written,
// "none" for a nil cfg), or "" when cfg names none that is registered.
func TypeOf(cfg map[string]any) string {
	if cfg == nil {
		return "none"
	}
	name, _, _ := lookup(cfg)
	return name
}

// lookup finds the factory of the type cfg names, and its registered
// name.
func lookup(cfg map[string]any) (string, Factory, error) {
	name := "default"
	if v, ok := cfg["type"]; ok {
		switch v := v.(type) {
		case nil:
			name = "none"
		case string:
			name = strings.TrimSpace(v)
		default:
			return "", nil, &ConfigError{Err: fmt.Errorf("type must be a string, got %T %v", v, v)}
		}
	}
	if strings.EqualFold(name, "null") {
		name = "none"
	}
	// As registered, else in lower case: "Window" is the built-in window.
	f, found, err := factories.Lookup(name)
	if err != nil {
		if lf, lfound, lerr := factories.Lookup(strings.ToLower(name)); lerr == nil {
			f, found, err = lf, lfound, nil
		}
	}
	if err != nil {
		return "", nil, &ConfigError{Err: err}
	}
	return found, f, nil
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
