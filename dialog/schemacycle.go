package dialog

import (
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaCycleError is a schema whose $ref (or $dynamicRef) loops back to a
// schema that applies to the same value, through keywords such as allOf and
// anyOf that do not descend into the value: jsonschema-go's Validate would
// recurse on it until the stack overflows, which kills the process.
type schemaCycleError struct {
	cycle []string // the schema locations, "#" and JSON pointers; the last is the first
}

func (e *schemaCycleError) Error() string {
	return "$ref cycle on the same value: " + strings.Join(e.cycle, " -> ") +
		"; a $ref that loops back must go through properties, items, additionalProperties" +
		" or another keyword that descends into the value, or validating would never end"
}

// checkSchemaCycles returns a *schemaCycleError if validating a value
// against rs could recurse forever: if a schema that the validation of the
// root can reach applies, through $ref, $dynamicRef, allOf, anyOf, oneOf,
// not, if/then/else or dependentSchemas (dependencies in draft-07), to the
// same value as one of those schemas again. A loop through properties,
// items and the other keywords that descend into the value (a tree's
// children) ends with the value, and is fine.
//
// It follows the references as jsonschema-go v0.4 resolves them (see
// resolve.go there): JSON pointers and anchors, relative to the base that
// $id sets. rs is resolved without a loader, so every reference is local.
func checkSchemaCycles(rs *jsonschema.Resolved) error {
	g := newSchemaGraph(rs.Schema())
	const (
		unseen = iota
		onPath
		done
	)
	state := map[*jsonschema.Schema]int{}
	var path []*jsonschema.Schema
	var cycle []*jsonschema.Schema
	var visit func(s *jsonschema.Schema) bool
	visit = func(s *jsonschema.Schema) bool {
		state[s] = onPath
		path = append(path, s)
		for _, t := range g.sameValue(s) {
			switch state[t] {
			case onPath:
				i := slices.Index(path, t)
				cycle = append(slices.Clone(path[i:]), t)
				return true
			case unseen:
				if visit(t) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		state[s] = done
		return false
	}
	for _, s := range g.reachable() {
		if state[s] == unseen && visit(s) {
			e := &schemaCycleError{}
			for _, c := range cycle {
				e.cycle = append(e.cycle, "#"+g.path[c])
			}
			return e
		}
	}
	return nil
}

// schemaGraph is a schema tree with its references resolved.
type schemaGraph struct {
	root   *jsonschema.Schema
	draft7 bool
	path   map[*jsonschema.Schema]string // the JSON pointer from the root
	at     map[string]*jsonschema.Schema // the schema at a JSON pointer
	base   map[*jsonschema.Schema]*jsonschema.Schema
	uri    map[*jsonschema.Schema]*url.URL // of the root and of the schemas with an $id
	uris   map[string]*jsonschema.Schema   // the schemas by their URI
	// anchors are the anchors of each base, and whether they are dynamic.
	anchors map[*jsonschema.Schema]map[string]schemaAnchor
	dynamic map[string][]*jsonschema.Schema // the schemas with each $dynamicAnchor
}

type schemaAnchor struct {
	s       *jsonschema.Schema
	dynamic bool
}

func newSchemaGraph(root *jsonschema.Schema) *schemaGraph {
	g := &schemaGraph{
		root:    root,
		draft7:  root.Schema == "http://json-schema.org/draft-07/schema#" || root.Schema == "https://json-schema.org/draft-07/schema#",
		path:    map[*jsonschema.Schema]string{},
		at:      map[string]*jsonschema.Schema{},
		base:    map[*jsonschema.Schema]*jsonschema.Schema{},
		uri:     map[*jsonschema.Schema]*url.URL{root: {}},
		uris:    map[string]*jsonschema.Schema{"": root},
		anchors: map[*jsonschema.Schema]map[string]schemaAnchor{},
		dynamic: map[string][]*jsonschema.Schema{},
	}
	g.walk(root, "", root)
	return g
}

// walk records s, at path, and its subschemas, as jsonschema-go's
// checkStructure and resolveURIs do; base is the enclosing base schema.
func (g *schemaGraph) walk(s *jsonschema.Schema, path string, base *jsonschema.Schema) {
	g.path[s] = path
	g.at[path] = s
	if s.ID != "" && !(g.draft7 && s.Ref != "") {
		// Resolve has accepted the $id, so it parses and is absolute.
		if id, err := url.Parse(s.ID); err == nil {
			if g.draft7 && id.Fragment != "" {
				g.anchor(base, strings.TrimPrefix(s.ID, "#"), s, false)
			} else {
				u := g.uri[base].ResolveReference(id)
				g.uri[s] = u
				g.uris[u.String()] = s
				base = s
			}
		}
	}
	g.base[s] = base
	if !g.draft7 {
		g.anchor(base, s.Anchor, s, false)
		g.anchor(base, s.DynamicAnchor, s, true)
		if s.DynamicAnchor != "" {
			g.dynamic[s.DynamicAnchor] = append(g.dynamic[s.DynamicAnchor], s)
		}
	}
	for _, c := range subschemas(s) {
		g.walk(c.s, path+"/"+c.name, base)
	}
}

func (g *schemaGraph) anchor(base *jsonschema.Schema, name string, s *jsonschema.Schema, dynamic bool) {
	if name == "" {
		return
	}
	if g.anchors[base] == nil {
		g.anchors[base] = map[string]schemaAnchor{}
	}
	if _, ok := g.anchors[base][name]; !ok {
		g.anchors[base][name] = schemaAnchor{s, dynamic}
	}
}

// resolve returns the schema that ref, the $ref or $dynamicRef of s, names
// (nil if none), and the dynamic anchor it names, if any.
func (g *schemaGraph) resolve(s *jsonschema.Schema, ref string) (*jsonschema.Schema, string) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, ""
	}
	u = g.uri[g.base[s]].ResolveReference(u)
	doc := *u
	doc.Fragment = ""
	d := g.uris[doc.String()]
	if d == nil {
		return nil, "" // remote: Resolve loads none
	}
	frag := u.Fragment
	if frag != "" && !strings.HasPrefix(frag, "/") {
		a, ok := g.anchors[d][frag]
		if !ok {
			return nil, ""
		}
		if a.dynamic {
			return a.s, frag
		}
		return a.s, ""
	}
	// A JSON pointer from d: the schema at d's path and the pointer's
	// segments, escaped as paths are.
	p := g.path[d]
	if frag != "" {
		for _, seg := range strings.Split(frag[1:], "/") {
			p += "/" + pointerEscaper.Replace(pointerUnescaper.Replace(seg))
		}
	}
	return g.at[p], ""
}

var (
	pointerEscaper   = strings.NewReplacer("~", "~0", "/", "~1")
	pointerUnescaper = strings.NewReplacer("~0", "~", "~1", "/")
)

// refs returns the schemas the $ref and $dynamicRef of s stand for: for a
// $dynamicRef to a $dynamicAnchor, every schema with that dynamic anchor,
// since which one applies depends on the validation's path.
func (g *schemaGraph) refs(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	if s.Ref != "" {
		if t, _ := g.resolve(s, s.Ref); t != nil {
			out = append(out, t)
		}
	}
	if s.DynamicRef != "" {
		t, anchor := g.resolve(s, s.DynamicRef)
		if anchor != "" {
			out = append(out, g.dynamic[anchor]...)
		} else if t != nil {
			out = append(out, t)
		}
	}
	return out
}

// sameValue returns the schemas that Validate applies to the value it
// validates against s (see validate.go in jsonschema-go).
func (g *schemaGraph) sameValue(s *jsonschema.Schema) []*jsonschema.Schema {
	out := g.refs(s)
	if g.draft7 && s.Ref != "" {
		return out // draft-07: $ref hides its siblings
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	if s.Not != nil {
		out = append(out, s.Not)
	}
	if s.If != nil {
		out = append(out, s.If)
		if s.Then != nil {
			out = append(out, s.Then)
		}
		if s.Else != nil {
			out = append(out, s.Else)
		}
	}
	dependent := s.DependentSchemas
	if g.draft7 {
		dependent = s.DependencySchemas
	}
	for _, k := range slices.Sorted(maps.Keys(dependent)) {
		out = append(out, dependent[k])
	}
	return out
}

// reachable lists the schemas that validating a value against the root may
// apply, to that value or to a part of it: the root, the subschemas of
// each one but its $defs and definitions, and their references.
func (g *schemaGraph) reachable() []*jsonschema.Schema {
	seen := map[*jsonschema.Schema]bool{}
	var out []*jsonschema.Schema
	var visit func(s *jsonschema.Schema)
	visit = func(s *jsonschema.Schema) {
		if seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
		for _, t := range g.refs(s) {
			visit(t)
		}
		for _, c := range subschemas(s) {
			if c.field != "$defs" && c.field != "definitions" {
				visit(c.s)
			}
		}
	}
	visit(g.root)
	return out
}

// subschema is a schema's child: the keyword it is under, and its path
// segment below the parent ("items", "allOf/0", "properties/a~1b").
type subschema struct {
	field, name string
	s           *jsonschema.Schema
}

// subschemas returns the children of s in a stable order, named as
// jsonschema-go names them in schema paths and JSON pointers: every field
// of type *Schema, []*Schema or map[string]*Schema, by its JSON name
// (Items and ItemsArray are "items", DependencySchemas is "dependencies").
func subschemas(s *jsonschema.Schema) []subschema {
	var out []subschema
	v := reflect.ValueOf(s).Elem()
	for _, f := range schemaFields {
		fv := v.FieldByIndex(f.index)
		switch x := fv.Interface().(type) {
		case *jsonschema.Schema:
			if x != nil {
				out = append(out, subschema{f.name, f.name, x})
			}
		case []*jsonschema.Schema:
			for i, c := range x {
				if c != nil {
					out = append(out, subschema{f.name, f.name + "/" + strconv.Itoa(i), c})
				}
			}
		case map[string]*jsonschema.Schema:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if c := x[k]; c != nil {
					out = append(out, subschema{f.name, f.name + "/" + pointerEscaper.Replace(k), c})
				}
			}
		}
	}
	return out
}

type schemaField struct {
	name  string
	index []int
}

// schemaFields are the fields of jsonschema.Schema that hold subschemas.
var schemaFields = func() []schemaField {
	var out []schemaField
	for _, sf := range reflect.VisibleFields(reflect.TypeFor[jsonschema.Schema]()) {
		switch sf.Type {
		case reflect.TypeFor[*jsonschema.Schema](), reflect.TypeFor[[]*jsonschema.Schema](), reflect.TypeFor[map[string]*jsonschema.Schema]():
		default:
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		switch sf.Name {
		case "Items", "ItemsArray":
			name = "items"
		case "DependencySchemas":
			name = "dependencies"
		}
		if name == "" || name == "-" {
			name = sf.Name
		}
		out = append(out, schemaField{name, sf.Index})
	}
	return out
}()
