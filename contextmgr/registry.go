package contextmgr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lllm-go/lllm/internal/params"
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
//
// A [Factory] whose own check of a key's value fails (a bound, say) names
// the key by returning a ConfigError with Key and Err set, as a tactic's
// factory returns a tactics.ParamError; New fills in Type:
//
//	if c.N < 1 {
//		return nil, &contextmgr.ConfigError{Key: "n", Err: fmt.Errorf("key n must be at least 1, not %d", c.N)}
//	}
type ConfigError struct {
	Type string // the registered name of the manager type
	Key  string // the key of the configuration at fault, if one is: see [DecodeConfig]
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
// reject keys they do not know. Every error is a *[ConfigError], whose
// Key names the key of cfg at fault when the factory's error is one of
// [DecodeConfig] about a key, or a ConfigError of the factory's own that
// names one, however wrapped.
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
		ce := &ConfigError{Type: name, Err: err}
		if own, ok := err.(*ConfigError); ok && own.Type == "" {
			ce.Err = own.Err // the factory's own, its Type left to New
		}
		// Only a key of cfg: not one of a map under it that the
		// factory decoded too.
		if key := keyOf(err); key != "" {
			if _, ok := cfg[key]; ok {
				ce.Key = key
			}
		}
		return nil, ce
	}
	return m, nil
}

// keyOf is the key a factory's error names, however wrapped: a
// [DecodeConfig] error's, or that of a [ConfigError] of the factory's own;
// "" when it names none.
func keyOf(err error) string {
	if ke := (*params.KeyError)(nil); errors.As(err, &ke) {
		return ke.Key
	}
	if ce := (*ConfigError)(nil); errors.As(err, &ce) {
		return ce.Key
	}
	return ""
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

// atLeast is the problem of the integer key n when it is under lo, or
// nil, in DecodeConfig's words.
func atLeast(key string, n, lo int) error {
	if n < lo {
		return &params.KeyError{Key: key, Err: fmt.Errorf("key %s must be at least %d, not %d", key, lo, n)}
	}
	return nil
}
