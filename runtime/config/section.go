package config

import (
	"errors"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DecodeSection decodes the free-form top-level section name (such as
// "mock") into v, a pointer to a value with yaml tags, as yaml.Unmarshal
// would, except that a time.Duration is read as ParseDuration reads it
// (text such as "50ms", or a number of seconds). A key v has no field for
// is an error at its place in the config's files, with a did-you-mean,
// and so is every other such key: a free-form section is checked as
// strictly as the rest of the config. An absent section leaves v as it
// is.
func (c *Config) DecodeSection(name string, v any) error {
	val, ok := c.tree[name]
	if !ok || val == nil {
		return nil
	}
	var errs []*Error
	c.checkFields(val, reflect.TypeOf(v), []string{name}, &errs)
	if len(errs) > 0 {
		return errors.Join(sortedErrors(errs)...)
	}
	val, _ = durationsAsText(val, reflect.TypeOf(v))
	b, err := yaml.Marshal(val)
	if err == nil {
		err = yaml.Unmarshal(b, v)
	}
	if err != nil {
		// The lines of the re-encoded section would mislead: name the
		// section instead.
		msg := yamlLines.ReplaceAllString(strings.TrimPrefix(err.Error(), "yaml: "), "")
		return c.pos.lookup(name).errorf("%s: %s", name, strings.Join(strings.Fields(msg), " "))
	}
	return nil
}

// yamlLines are the "line N: " prefixes of yaml's decoding errors.
var yamlLines = regexp.MustCompile(`line \d+: `)

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// checkFields reports every key of val, written at path, that the Go type
// t has no field for, and every value that is not of its field's type,
// walking structs, slices and maps alike. Types that decode themselves are
// left to their decoder.
func (c *Config) checkFields(val any, t reflect.Type, path []string, errs *[]*Error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		return
	}
	if want := mismatch(val, t); want != "" {
		*errs = append(*errs, c.pos.lookup(path...).errorf("%s must be %s, not %s",
			dotted(path[:len(path)-1], path[len(path)-1]), want, describe(val)))
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := val.(map[string]any)
		if !ok {
			return // a type error, which the decoding reports
		}
		fields := yamlFields(t)
		for _, k := range sortedKeys(m) {
			ft, ok := fields[k]
			if !ok {
				names := sortedKeys(fields)
				*errs = append(*errs, c.pos.lookup(append(path, k)...).errorf("unknown key %q in %s%s",
					k, dotted(path[:len(path)-1], path[len(path)-1]), hint(k, names)))
				continue
			}
			c.checkFields(m[k], ft, append(path, k), errs)
		}
	case reflect.Slice, reflect.Array:
		if items, ok := val.([]any); ok {
			for i, item := range items {
				c.checkFields(item, t.Elem(), append(path, strconv.Itoa(i)), errs)
			}
		}
	case reflect.Map:
		if m, ok := val.(map[string]any); ok {
			for _, k := range sortedKeys(m) {
				c.checkFields(m[k], t.Elem(), append(path, k), errs)
			}
		}
	}
}

// mismatch says what a value of type t must be when val is not that, and
// returns "" when it is (or is null). The durations, numbers, booleans,
// lists and mappings that YAML decodes into Go's types are checked;
// strings take any scalar, as yaml.v3 does.
func mismatch(val any, t reflect.Type) string {
	if val == nil {
		return ""
	}
	_, isMap := val.(map[string]any)
	_, isList := val.([]any)
	switch {
	case t == durationType:
		if _, err := ParseDuration(val); err != nil {
			return "a duration such as 90s or 10m (0 for none)"
		}
	case t.Kind() == reflect.Bool:
		if _, ok := val.(bool); !ok {
			return "true or false"
		}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		if _, ok := toInt(val); !ok {
			return "a whole number"
		}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		if _, ok := toFloat(val); !ok {
			return "a number"
		}
	case t.Kind() == reflect.String:
		if isMap || isList {
			return "text"
		}
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		if !isList {
			return "a list"
		}
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		if !isMap {
			return "a mapping (key: value)"
		}
	}
	return ""
}

var durationType = reflect.TypeFor[time.Duration]()

// durationsAsText returns val, which checkFields found right for t, with
// each number that t decodes into a time.Duration written as the
// duration ParseDuration reads it as (30 as "30s"), since yaml.v3 reads
// durations from text only, and whether it changed anything. val itself
// is left as it is: its maps and lists are copied where they change.
func durationsAsText(val any, t reflect.Type) (any, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if val == nil || reflect.PointerTo(t).Implements(unmarshaler) {
		return val, false
	}
	if t == durationType {
		if _, ok := val.(string); ok {
			return val, false
		}
		d, err := ParseDuration(val)
		if err != nil {
			return val, false // checkFields reported it
		}
		return d.String(), true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		m, ok := val.(map[string]any)
		if !ok {
			return val, false
		}
		var fields map[string]reflect.Type
		if t.Kind() == reflect.Struct {
			fields = yamlFields(t)
		}
		var out map[string]any
		for k, v := range m {
			var ft reflect.Type
			if fields == nil {
				ft = t.Elem()
			} else if ft, ok = fields[k]; !ok {
				continue
			}
			if nv, changed := durationsAsText(v, ft); changed {
				if out == nil {
					out = maps.Clone(m)
				}
				out[k] = nv
			}
		}
		if out == nil {
			return val, false
		}
		return out, true
	case reflect.Slice, reflect.Array:
		items, ok := val.([]any)
		if !ok {
			return val, false
		}
		var out []any
		for i, v := range items {
			if nv, changed := durationsAsText(v, t.Elem()); changed {
				if out == nil {
					out = slices.Clone(items)
				}
				out[i] = nv
			}
		}
		if out == nil {
			return val, false
		}
		return out, true
	}
	return val, false
}

// yamlFields are the keys a struct decodes, with their types, as
// yaml.v3 names them: the tag's name, else the lowercased field name;
// inline structs add theirs.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range yamlFields(ft) {
					out[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}
