package tactics

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/lllm-go/lllm/runtime/config"
)

// DecodeParams decodes a tactic's params, as a [Factory] gets them, into
// v, a pointer to a struct whose json tags name the params; fields keep
// their values for params that are absent, so set the defaults first:
//
//	p := struct {
//		Rounds int `json:"rounds"`
//	}{Rounds: 2}
//	if err := tactics.DecodeParams(params, &p); err != nil {
//		return nil, err
//	}
//
// A param v has no field for is an error naming it and the accepted ones,
// suggesting the closest; a value of the wrong type is one naming the
// param and the type it wants; both are *ParamError. Whole numbers written as 2.0 decode into
// integer fields. A time.Duration field reads a duration as a config's
// others are read (config.ParseDuration): text such as "90s" or "10m", or
// a number of seconds.
func DecodeParams(params map[string]any, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("tactics: DecodeParams needs a pointer to a struct, not %T", v)
	}
	accepted := paramNames(rv.Elem().Type())
	var unknown []string
	for k := range params {
		if !slices.Contains(accepted, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		for _, u := range unknown {
			if f := untagged(rv.Elem().Type(), u); f != "" {
				// The tactic's bug, not the config's.
				return &ParamError{Param: u, Err: fmt.Errorf("param %q: field %s of %s has no json tag: tag it `json:%q`", u, f, rv.Elem().Type(), u)}
			}
		}
		return &ParamError{Param: unknown[0], Err: unknownParams(unknown, accepted)}
	}
	params, err := durationParams(params, rv.Elem().Type())
	if err != nil {
		return err
	}
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("params: %w", err)
	}
	err = json.Unmarshal(b, v)
	if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Field != "" {
		got := params[strings.SplitN(te.Field, ".", 2)[0]]
		if s, ok := got.(string); ok {
			got = fmt.Sprintf("%q", s)
		}
		return &ParamError{Param: strings.SplitN(te.Field, ".", 2)[0],
			Err: fmt.Errorf("param %s must be %s, not %v", te.Field, kindName(te.Type), got)}
	}
	if err != nil {
		return fmt.Errorf("params: %w", err)
	}
	return nil
}

// ParamError is a problem with a tactic's param, which a config reports
// at the line that sets it. DecodeParams returns them; a Factory may too.
type ParamError struct {
	Param string // the param at fault (the first, when several are)
	Err   error
}

func (e *ParamError) Error() string { return e.Err.Error() }

func (e *ParamError) Unwrap() error { return e.Err }

// paramNames are the json names of t's exported fields.
func paramNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if name, ok := paramName(t.Field(i)); ok {
			names = append(names, name)
		}
	}
	return names
}

// paramName is the json name of f, and false when f is no param.
func paramName(f reflect.StructField) (string, bool) {
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

// durationParams returns params with the value of each param that t, a
// struct, decodes into a time.Duration (or a pointer to one) read as
// config.ParseDuration reads it and written in nanoseconds, as
// encoding/json decodes a time.Duration. params itself is left as it is.
// A value that is no duration is a *ParamError.
func durationParams(params map[string]any, t reflect.Type) (map[string]any, error) {
	out, cloned := params, false
	for i := range t.NumField() {
		f := t.Field(i)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		name, ok := paramName(f)
		if !ok || ft != reflect.TypeFor[time.Duration]() || params[name] == nil {
			continue
		}
		d, err := config.ParseDuration(params[name])
		if err != nil {
			return nil, &ParamError{Param: name, Err: fmt.Errorf("param %s %w", name, err)}
		}
		if !cloned {
			out, cloned = maps.Clone(params), true
		}
		out[name] = int64(d)
	}
	return out, nil
}

// unknownParams is the error for params no field takes.
func unknownParams(unknown, accepted []string) error {
	quoted := make([]string, len(unknown))
	for i, u := range unknown {
		quoted[i] = fmt.Sprintf("%q", u)
	}
	msg := "unknown param " + quoted[0]
	if len(unknown) > 1 {
		msg = "unknown params " + strings.Join(quoted, ", ")
	}
	if len(unknown) == 1 {
		if c := closest(unknown[0], accepted); c != "" {
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
