// Package params decodes a map of settings, as a config gives them, into a
// struct: the one implementation behind tactics.DecodeParams (a tactic's
// params) and contextmgr.DecodeConfig (a context manager's keys).
package params

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/lllm-go/lllm/internal/suggest"
	"github.com/lllm-go/lllm/runtime/config"
)

// Options say how a caller's errors name things.
type Options struct {
	Caller string   // the exported function, for a v that is no pointer to a struct: "tactics: DecodeParams"
	Noun   string   // what one setting is called: "param", "key"
	Plural string   // and several: "params", "keys"
	Skip   []string // settings accepted but not decoded (a context manager's "type"), listed before the fields' among the accepted ones
}

// KeyError is a problem with the setting Key (the first, when several
// are at fault). Err says what it is, naming the setting.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return e.Err.Error() }

func (e *KeyError) Unwrap() error { return e.Err }

// Decode decodes m into v, a pointer to a struct whose json tags name the
// settings; fields keep their values for settings m lacks. A setting v has
// no field for, or a value of the wrong type, is a *KeyError. Whole numbers
// written as 2.0 decode into integer fields; a time.Duration field (or a
// pointer to one) reads its value as config.ParseDuration does. m itself is
// left as it is.
func Decode(m map[string]any, v any, o Options) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%s needs a pointer to a struct, not %T", o.Caller, v)
	}
	t := rv.Elem().Type()
	names := fieldNames(t)
	var unknown []string
	for k := range m {
		if !slices.Contains(names, k) && !slices.Contains(o.Skip, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		for _, u := range unknown {
			if f := untagged(t, u); f != "" {
				// The caller's bug, not the config's.
				return &KeyError{Key: u, Err: fmt.Errorf("%s %q: field %s of %s has no json tag: tag it `json:%q`", o.Noun, u, f, t, u)}
			}
		}
		accepted := names
		for _, s := range slices.Backward(o.Skip) {
			if !slices.Contains(accepted, s) {
				accepted = append([]string{s}, accepted...)
			}
		}
		return &KeyError{Key: unknown[0], Err: unknownError(unknown, accepted, o)}
	}
	m, err := durations(without(m, o.Skip), t, o)
	if err != nil {
		return err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Plural, err)
	}
	err = json.Unmarshal(b, v)
	if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Field != "" {
		key, _, _ := strings.Cut(te.Field, ".")
		got := m[key]
		if s, ok := got.(string); ok {
			got = fmt.Sprintf("%q", s)
		}
		return &KeyError{Key: key, Err: fmt.Errorf("%s %s must be %s, not %v", o.Noun, te.Field, kindName(te.Type), got)}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", o.Plural, err)
	}
	return nil
}

// fieldNames are the json names of t's exported fields.
func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if name, ok := fieldName(t.Field(i)); ok {
			names = append(names, name)
		}
	}
	return names
}

// fieldName is the json name of f, and false when f takes no setting.
func fieldName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch name {
	case "-":
		return "", false
	case "":
		name = f.Name
	}
	return name, true
}

// untagged is the name of the exported field of t without a json name
// that key names but for case, or "".
func untagged(t reflect.Type, key string) string {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && name == "" && strings.EqualFold(f.Name, key) {
			return f.Name
		}
	}
	return ""
}

// without returns m without the keys in skip, a copy if it has any.
func without(m map[string]any, skip []string) map[string]any {
	for _, s := range skip {
		if _, ok := m[s]; ok {
			m = maps.Clone(m)
			for _, s := range skip {
				delete(m, s)
			}
			return m
		}
	}
	return m
}

// durations returns m with the value of each setting that t, a struct,
// decodes into a time.Duration (or a pointer to one) read as
// config.ParseDuration reads it and written in nanoseconds, as
// encoding/json decodes a time.Duration. m itself is left as it is. A
// value that is no duration is a *KeyError.
func durations(m map[string]any, t reflect.Type, o Options) (map[string]any, error) {
	out, cloned := m, false
	for i := range t.NumField() {
		f := t.Field(i)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		name, ok := fieldName(f)
		if !ok || ft != reflect.TypeFor[time.Duration]() || m[name] == nil {
			continue
		}
		d, err := config.ParseDuration(m[name])
		if err != nil {
			return nil, &KeyError{Key: name, Err: fmt.Errorf("%s %s %w", o.Noun, name, err)}
		}
		if !cloned {
			out, cloned = maps.Clone(m), true
		}
		out[name] = int64(d)
	}
	return out, nil
}

// unknownError is the error for settings no field takes.
func unknownError(unknown, accepted []string, o Options) error {
	quoted := make([]string, len(unknown))
	for i, u := range unknown {
		quoted[i] = fmt.Sprintf("%q", u)
	}
	msg := "unknown " + o.Noun + " " + quoted[0]
	if len(unknown) > 1 {
		msg = "unknown " + o.Plural + " " + strings.Join(quoted, ", ")
	}
	if len(unknown) == 1 {
		if c, ok := suggest.Closest(unknown[0], accepted); ok {
			return fmt.Errorf("%s (did you mean %q?)", msg, c)
		}
	}
	if len(accepted) == 0 {
		return fmt.Errorf("%s (it takes none)", msg)
	}
	return fmt.Errorf("%s (accepted: %s)", msg, strings.Join(accepted, ", "))
}

// kindName says what a value of t is, for an error.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(kindName(t.Elem()), "an "), "a ") + "s"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return t.String()
}
