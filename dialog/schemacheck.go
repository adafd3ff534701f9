package dialog

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// maxViolations caps the violations a schema message lists.
const maxViolations = 10

// schemaViolations lists, for the model to read, every way v breaks the
// resolved schema rs, such as "age: 11 is greater than the maximum 10", in a
// stable order: the schema's keywords in a fixed order, and an object's
// properties by name. rs.Validate decides whether v is valid; this only
// explains a failure, so call it once Validate has failed. It returns nil
// when it cannot explain the failure (a keyword it does not cover, such as
// $dynamicRef, or unevaluatedProperties beside allOf).
func schemaViolations(rs *jsonschema.Resolved, v any) []string {
	root := rs.Schema()
	c := &schemaCheck{root: root, draft7: strings.Contains(root.Schema, "draft-07")}
	c.check(v, root, "", 0)
	return c.out
}

// schemaCheck walks an instance along a schema, collecting violations.
type schemaCheck struct {
	root    *jsonschema.Schema
	draft7  bool     // "$ref" hides its siblings; "items" may be an array
	out     []string // the violations found, "path: problem"
	unknown bool     // a keyword was met that the walk does not check
}

// maxSchemaDepth bounds the walk, whatever cycles of $ref a schema holds.
const maxSchemaDepth = 64

// add records a violation at path ("" for the reply itself).
func (c *schemaCheck) add(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	c.out = append(c.out, msg)
}

// matches reports whether v follows s, and whether that is known for sure
// (false when s holds a keyword the walk does not check).
func (c *schemaCheck) matches(v any, s *jsonschema.Schema, depth int) (ok, known bool) {
	sub := &schemaCheck{root: c.root, draft7: c.draft7}
	sub.check(v, s, "", depth)
	return len(sub.out) == 0, !sub.unknown
}

// check adds every violation of s by v, the value at path.
func (c *schemaCheck) check(v any, s *jsonschema.Schema, path string, depth int) {
	if s == nil {
		return
	}
	if depth > maxSchemaDepth || s.DynamicRef != "" || !plainUnevaluated(s) {
		c.unknown = true
		return
	}
	if isFalseSchema(s) {
		c.add(path, "not allowed")
		return
	}
	if s.Ref != "" {
		ref := c.resolveRef(s.Ref)
		if ref == nil {
			c.unknown = true
			return
		}
		c.check(v, ref, path, depth+1)
		if c.draft7 {
			return
		}
	}
	if (s.Type != "" || s.Types != nil) && !typeMatches(v, s) {
		want := s.Types
		if s.Type != "" {
			want = []string{s.Type}
		}
		if len(want) == 0 {
			c.add(path, "%s is not allowed: the schema's type list is empty", short(v))
			return
		}
		c.add(path, "%s is %s, want %s", short(v), article(jsonTypeOf(v)), orList(want, article))
		return // the other keywords would only repeat it
	}
	if s.Enum != nil && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonschema.Equal(e, v) }) {
		c.add(path, "%s is not one of %s", short(v), orList(s.Enum, short))
	}
	if s.Const != nil && !jsonschema.Equal(*s.Const, v) {
		c.add(path, "%s is not the required value %s", short(v), short(*s.Const))
	}
	switch v := v.(type) {
	case float64:
		c.checkNumber(v, s, path)
	case string:
		c.checkString(v, s, path)
	case []any:
		c.checkArray(v, s, path, depth)
	case map[string]any:
		c.checkObject(v, s, path, depth)
	}
	c.checkLogic(v, s, path, depth)
}

func (c *schemaCheck) checkNumber(n float64, s *jsonschema.Schema, path string) {
	if m := s.MultipleOf; m != nil {
		if _, f := math.Modf(n / *m); f != 0 {
			c.add(path, "%s is not a multiple of %s", num(n), num(*m))
		}
	}
	if m := s.Minimum; m != nil && n < *m {
		c.add(path, "%s is less than the minimum %s", num(n), num(*m))
	}
	if m := s.Maximum; m != nil && n > *m {
		c.add(path, "%s is greater than the maximum %s", num(n), num(*m))
	}
	if m := s.ExclusiveMinimum; m != nil && n <= *m {
		c.add(path, "%s is not greater than the exclusive minimum %s", num(n), num(*m))
	}
	if m := s.ExclusiveMaximum; m != nil && n >= *m {
		c.add(path, "%s is not less than the exclusive maximum %s", num(n), num(*m))
	}
}

func (c *schemaCheck) checkString(str string, s *jsonschema.Schema, path string) {
	n := utf8.RuneCountInString(str)
	if m := s.MinLength; m != nil && n < *m {
		c.add(path, "%s has %s, fewer than the minimum %d", short(str), plural(n, "character"), *m)
	}
	if m := s.MaxLength; m != nil && n > *m {
		c.add(path, "%s has %s, more than the maximum %d", short(str), plural(n, "character"), *m)
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			c.unknown = true
		} else if !re.MatchString(str) {
			c.add(path, "%s does not match the pattern %s", short(str), strconv.Quote(s.Pattern))
		}
	}
}

func (c *schemaCheck) checkArray(a []any, s *jsonschema.Schema, path string, depth int) {
	prefix, rest := s.PrefixItems, s.Items
	if c.draft7 {
		prefix, rest = nil, s.Items
		if s.ItemsArray != nil {
			prefix, rest = s.ItemsArray, s.AdditionalItems
		}
	}
	if rest == nil {
		rest = s.UnevaluatedItems // see plainUnevaluated
	}
	for i, item := range a {
		if i < len(prefix) {
			c.check(item, prefix[i], path+"["+strconv.Itoa(i)+"]", depth+1)
		} else if rest != nil {
			c.check(item, rest, path+"["+strconv.Itoa(i)+"]", depth+1)
		}
	}
	if m := s.MinItems; m != nil && len(a) < *m {
		c.add(path, "the array has %s, fewer than the minimum %d", plural(len(a), "item"), *m)
	}
	if m := s.MaxItems; m != nil && len(a) > *m {
		c.add(path, "the array has %s, more than the maximum %d", plural(len(a), "item"), *m)
	}
	if s.UniqueItems {
	unique:
		for i := range a {
			for j := range i {
				if jsonschema.Equal(a[i], a[j]) {
					c.add(path, "items %d and %d are equal, but items must be unique", j, i)
					break unique
				}
			}
		}
	}
	if s.Contains != nil {
		n := 0
		for _, item := range a {
			ok, known := c.matches(item, s.Contains, depth+1)
			if !known {
				c.unknown = true
				return
			}
			if ok {
				n++
			}
		}
		lo := 1
		if s.MinContains != nil {
			lo = *s.MinContains
		}
		if n < lo {
			c.add(path, "%s of the array match the contains schema, fewer than the minimum %d", plural(n, "item"), lo)
		}
		if m := s.MaxContains; m != nil && n > *m {
			c.add(path, "%s of the array match the contains schema, more than the maximum %d", plural(n, "item"), *m)
		}
	}
}

func (c *schemaCheck) checkObject(o map[string]any, s *jsonschema.Schema, path string, depth int) {
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		if v, ok := o[name]; ok {
			c.check(v, s.Properties[name], propPath(path, name), depth+1)
		}
	}
	var patterns []*regexp.Regexp
	for _, p := range slices.Sorted(maps.Keys(s.PatternProperties)) {
		re, err := regexp.Compile(p)
		if err != nil {
			c.unknown = true
			return
		}
		patterns = append(patterns, re)
	}
	var extra []string // the properties neither properties nor patternProperties name
	for _, name := range slices.Sorted(maps.Keys(o)) {
		matched := false
		for _, re := range patterns {
			if re.MatchString(name) {
				c.check(o[name], s.PatternProperties[re.String()], propPath(path, name), depth+1)
				matched = true
			}
		}
		if _, ok := s.Properties[name]; !ok && !matched {
			extra = append(extra, name)
		}
	}
	ap := s.AdditionalProperties
	if ap == nil {
		ap = s.UnevaluatedProperties // see plainUnevaluated
	}
	if ap != nil {
		for _, name := range extra {
			if isFalseSchema(ap) {
				c.add(propPath(path, name), "unexpected property%s", allowed(s))
			} else {
				c.check(o[name], ap, propPath(path, name), depth+1)
			}
		}
	}
	if s.PropertyNames != nil {
		for _, name := range slices.Sorted(maps.Keys(o)) {
			if ok, known := c.matches(name, s.PropertyNames, depth+1); !known {
				c.unknown = true
			} else if !ok {
				c.add(propPath(path, name), "the property name is not allowed by propertyNames")
			}
		}
	}
	if m := s.MinProperties; m != nil && len(o) < *m {
		c.add(path, "the object has %s, fewer than the minimum %d", plural(len(o), "property"), *m)
	}
	if m := s.MaxProperties; m != nil && len(o) > *m {
		c.add(path, "the object has %s, more than the maximum %d", plural(len(o), "property"), *m)
	}
	for _, name := range s.Required {
		if _, ok := o[name]; !ok {
			c.add(propPath(path, name), "required, but missing")
		}
	}
	dependent := s.DependentRequired
	if c.draft7 {
		dependent = s.DependencyStrings
	}
	for _, name := range slices.Sorted(maps.Keys(dependent)) {
		if _, ok := o[name]; !ok {
			continue
		}
		for _, req := range dependent[name] {
			if _, ok := o[req]; !ok {
				c.add(propPath(path, req), "required when %s is present, but missing", strconv.Quote(name))
			}
		}
	}
	schemas := s.DependentSchemas
	if c.draft7 {
		schemas = s.DependencySchemas
	}
	for _, name := range slices.Sorted(maps.Keys(schemas)) {
		if _, ok := o[name]; ok {
			c.check(o, schemas[name], path, depth+1)
		}
	}
}

func (c *schemaCheck) checkLogic(v any, s *jsonschema.Schema, path string, depth int) {
	for _, sub := range s.AllOf {
		c.check(v, sub, path, depth+1)
	}
	if s.AnyOf != nil {
		n, known := c.count(v, s.AnyOf, depth)
		if known && n == 0 {
			c.add(path, "%s matches none of the %d schemas of anyOf", short(v), len(s.AnyOf))
		}
	}
	if s.OneOf != nil {
		n, known := c.count(v, s.OneOf, depth)
		switch {
		case known && n == 0:
			c.add(path, "%s matches none of the %d schemas of oneOf", short(v), len(s.OneOf))
		case known && n > 1:
			c.add(path, "%s matches %d of the schemas of oneOf, want exactly one", short(v), n)
		}
	}
	if s.Not != nil {
		if ok, known := c.matches(v, s.Not, depth+1); !known {
			c.unknown = true
		} else if ok {
			c.add(path, "%s matches the schema under not", short(v))
		}
	}
	if s.If != nil {
		ok, known := c.matches(v, s.If, depth+1)
		switch {
		case !known:
			c.unknown = true
		case ok:
			c.check(v, s.Then, path, depth+1)
		default:
			c.check(v, s.Else, path, depth+1)
		}
	}
}

// count returns how many of ss v matches, and whether that is known.
func (c *schemaCheck) count(v any, ss []*jsonschema.Schema, depth int) (n int, known bool) {
	for _, s := range ss {
		ok, k := c.matches(v, s, depth+1)
		if !k {
			c.unknown = true
			return 0, false
		}
		if ok {
			n++
		}
	}
	return n, true
}

// resolveRef returns the schema a local $ref ("#" or a JSON pointer such as
// "#/$defs/point") names, or nil if it names another.
func (c *schemaCheck) resolveRef(ref string) *jsonschema.Schema {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok || ptr != "" && ptr[0] != '/' {
		return nil
	}
	segs := strings.Split(ptr, "/")[1:]
	for i, seg := range segs {
		seg, err := url.PathUnescape(seg)
		if err != nil {
			return nil
		}
		segs[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
	}
	s := c.root
	for len(segs) > 0 && s != nil {
		var m map[string]*jsonschema.Schema
		switch segs[0] {
		case "$defs":
			m = s.Defs
		case "definitions":
			m = s.Definitions
		case "properties":
			m = s.Properties
		case "items":
			s, segs = s.Items, segs[1:]
			continue
		case "additionalProperties":
			s, segs = s.AdditionalProperties, segs[1:]
			continue
		default:
			return nil
		}
		if len(segs) < 2 {
			return nil
		}
		s, segs = m[segs[1]], segs[2:]
	}
	return s
}

// plainUnevaluated reports whether s has no unevaluatedItems or
// unevaluatedProperties, or has them where they act as additionalItems
// and additionalProperties: no subschema applies to the same instance.
func plainUnevaluated(s *jsonschema.Schema) bool {
	if s.UnevaluatedItems == nil && s.UnevaluatedProperties == nil {
		return true
	}
	return s.Ref == "" && s.AllOf == nil && s.AnyOf == nil && s.OneOf == nil && s.Not == nil &&
		s.If == nil && s.DependentSchemas == nil && s.DependencySchemas == nil && s.Contains == nil
}

// isFalseSchema reports whether s is the schema false, {"not": {}}.
func isFalseSchema(s *jsonschema.Schema) bool {
	if s.Not == nil {
		return false
	}
	return reflect.ValueOf(*s.Not).IsZero()
}

// typeMatches reports whether v is of a type s allows.
func typeMatches(v any, s *jsonschema.Schema) bool {
	got := jsonTypeOf(v)
	ok := func(want string) bool { return got == want || got == "integer" && want == "number" }
	if s.Type != "" {
		return ok(s.Type)
	}
	return slices.ContainsFunc(s.Types, ok)
}

// jsonTypeOf is the JSON schema type of v, a decoded JSON value.
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, f := math.Modf(v); f == 0 {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// article puts "a" or "an" before a JSON type name; null stays bare, and
// a name JSON Schema does not define (a schema may say "type": [""]) is
// quoted.
func article(typ string) string {
	switch typ {
	case "null":
		return typ
	case "array", "integer", "object":
		return "an " + typ
	case "boolean", "number", "string":
		return "a " + typ
	}
	return strconv.Quote(typ)
}

// orList joins the items, shown by show, as "x", "x or y" or "x, y or z".
func orList[T any](items []T, show func(T) string) string {
	var b strings.Builder
	for i, it := range items {
		switch {
		case i == 0:
		case i == len(items)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(show(it))
	}
	return b.String()
}

// allowed lists an object schema's properties for an unexpected one.
func allowed(s *jsonschema.Schema) string {
	if len(s.Properties) == 0 {
		return " (none is allowed)"
	}
	names := slices.Sorted(maps.Keys(s.Properties))
	return " (allowed: " + strings.Join(names, ", ") + ")"
}

// maxShown bounds how much of a value a violation quotes.
const maxShown = 40

// short is v as compact JSON, cut to about maxShown characters.
func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if utf8.RuneCountInString(s) <= maxShown {
		return s
	}
	r := []rune(s)
	return string(r[:maxShown-1]) + "…"
}

// num formats a number as JSON does: 11, 0.5, 1e+21.
func num(f float64) string {
	b, err := json.Marshal(f)
	if err != nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(b)
}

// plural is "1 item", "2 items"; "property" becomes "properties".
func plural(n int, noun string) string {
	if n != 1 {
		if s, ok := strings.CutSuffix(noun, "y"); ok {
			noun = s + "ie"
		}
		noun += "s"
	}
	return strconv.Itoa(n) + " " + noun
}

// propPath is the path of property name of the object at path: "a.b", or
// a["b c"] when name is not a plain identifier.
func propPath(path, name string) string {
	if identifier.MatchString(name) {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	return path + "[" + strconv.Quote(name) + "]"
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
