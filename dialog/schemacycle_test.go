package dialog

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

const draft7 = `"$schema":"http://json-schema.org/draft-07/schema#",`

// loopingSchemas are schemas whose $ref loops back to the same value:
// jsonschema-go's Validate of value recurses on them until the stack
// overflows. cycle is the loop NewPrompt names.
var loopingSchemas = []struct {
	schema, value, cycle string
}{
	{`{"anyOf":[{"$ref":"#"},{"$ref":"#"}]}`, `1`, `# -> #/anyOf/0 -> #`},
	{`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, `1`,
		`#/$defs/a -> #/$defs/b -> #/$defs/b/allOf/0 -> #/$defs/a`},
	{`{"$ref":"#"}`, `{}`, `# -> #`},
	{`{"type":"object","properties":{"a":{"type":"string"}},"allOf":[{"$ref":"#"}]}`, `{"a":"x"}`, `# -> #/allOf/0 -> #`},
	{`{"type":"object","oneOf":[{"type":"string"},{"$ref":"#"}]}`, `{}`, `# -> #/oneOf/1 -> #`},
	{`{"not":{"$ref":"#"}}`, `null`, `# -> #/not -> #`},
	{`{"if":{"type":"object"},"then":{"$ref":"#"}}`, `{}`, `# -> #/then -> #`},
	{`{"if":{"$ref":"#"}}`, `{}`, `# -> #/if -> #`},
	{`{"if":{"type":"object"},"else":{"$ref":"#"}}`, `1`, `# -> #/else -> #`},
	{`{"type":"object","dependentSchemas":{"a":{"$ref":"#"}}}`, `{"a":1}`, `# -> #/dependentSchemas/a -> #`},
	{`{` + draft7 + `"dependencies":{"a":{"$ref":"#"}}}`, `{"a":1}`, `# -> #/dependencies/a -> #`},
	// Reached through properties: the loop is then on the property's value.
	{`{` + draft7 + `"definitions":{"a":{"anyOf":[{"$ref":"#/definitions/a"}]}},"properties":{"x":{"$ref":"#/definitions/a"}}}`,
		`{"x":1}`, `#/definitions/a -> #/definitions/a/anyOf/0 -> #/definitions/a`},
	{`{"type":"object","properties":{"a":{"allOf":[{"$ref":"#/properties/a"}]}}}`, `{"a":1}`,
		`#/properties/a -> #/properties/a/allOf/0 -> #/properties/a`},
	{`{"type":"array","items":{"anyOf":[{"$ref":"#/items"}]}}`, `[1]`, `#/items -> #/items/anyOf/0 -> #/items`},
	// Anchors, $id and escaped pointers.
	{`{"$defs":{"a":{"$anchor":"node","allOf":[{"$ref":"#node"}]}},"$ref":"#/$defs/a"}`, `1`,
		`#/$defs/a -> #/$defs/a/allOf/0 -> #/$defs/a`},
	{`{` + draft7 + `"definitions":{"a":{"$id":"#foo","anyOf":[{"$ref":"#foo"}]}},"$ref":"#/definitions/a"}`, `1`,
		`#/definitions/a -> #/definitions/a/anyOf/0 -> #/definitions/a`},
	{`{"$id":"https://example.com/root.json","$defs":{"a":{"$id":"a.json","anyOf":[{"$ref":"root.json"}]}},"allOf":[{"$ref":"a.json"}]}`, `1`,
		`# -> #/allOf/0 -> #/$defs/a -> #/$defs/a/anyOf/0 -> #`},
	{`{"$id":"https://example.com/root.json","$defs":{"a":{"$id":"sub/a.json","$defs":{"b":{"anyOf":[{"$ref":"#/$defs/b"}]}}}},"$ref":"sub/a.json#/$defs/b"}`, `1`,
		`#/$defs/a/$defs/b -> #/$defs/a/$defs/b/anyOf/0 -> #/$defs/a/$defs/b`},
	{`{"$defs":{"a/b":{"allOf":[{"$ref":"#/$defs/a~1b"}]}},"$ref":"#/$defs/a~1b"}`, `1`,
		`#/$defs/a~1b -> #/$defs/a~1b/allOf/0 -> #/$defs/a~1b`},
	{`{"$defs":{"a b":{"allOf":[{"$ref":"#/$defs/a%20b"}]}},"$ref":"#/$defs/a%20b"}`, `1`,
		`#/$defs/a b -> #/$defs/a b/allOf/0 -> #/$defs/a b`},
	// $dynamicRef, lexical and dynamic.
	{`{"$id":"https://example.com/t","$dynamicAnchor":"node","anyOf":[{"$dynamicRef":"#node"}]}`, `1`,
		`# -> #/anyOf/0 -> #`},
	{`{"$defs":{"a":{"allOf":[{"$dynamicRef":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, `1`,
		`#/$defs/a -> #/$defs/a/allOf/0 -> #/$defs/a`},
}

// workingSchemas are schemas whose $refs end: they loop only through
// keywords that descend into the value, form a DAG, or are never applied.
// value follows the schema.
var workingSchemas = []struct {
	schema, value string
}{
	// a tree
	{`{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`,
		`{"children":[{"children":[]},{"children":[{"children":[]}]}]}`},
	// the same $defs used twice, and by each other: a DAG
	{`{"type":"object","$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/b"}]},"b":{"type":"object"}},"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/b"}],"properties":{"x":{"$ref":"#/$defs/a"},"y":{"$ref":"#/$defs/a"}}}`,
		`{"x":{},"y":{}}`},
	{`{"type":"object","$defs":{"pt":{"type":"number"}},"properties":{"x":{"$ref":"#/$defs/pt"},"y":{"$ref":"#/$defs/pt"}},"required":["x","y"]}`,
		`{"x":1,"y":2}`},
	// mutual recursion through properties
	{`{"type":"object","$defs":{"a":{"type":"object","properties":{"b":{"$ref":"#/$defs/b"}}},"b":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`,
		`{"b":{"b":{"b":null}}}`},
	// every other keyword that descends into the value
	{`{"type":"object","additionalProperties":{"$ref":"#"}}`, `{"a":{"b":{}}}`},
	{`{"type":"object","patternProperties":{"^x":{"$ref":"#"}},"propertyNames":{"$ref":"#/$defs/name"},"$defs":{"name":{"type":"string","maxLength":3}}}`, `{"x":{"xy":{}}}`},
	{`{"type":"object","unevaluatedProperties":{"$ref":"#"}}`, `{"a":{}}`},
	{`{"type":"object","properties":{"l":{"$ref":"#/$defs/l"}},"$defs":{"l":{"type":"array","prefixItems":[{"$ref":"#/$defs/l"}],"contains":{"$ref":"#/$defs/l"},"unevaluatedItems":{"$ref":"#/$defs/l"},"minContains":0}}}`,
		`{"l":[[],[[]]]}`},
	{`{` + draft7 + `"type":"object","properties":{"l":{"$ref":"#/definitions/l"}},"definitions":{"l":{"type":"array","items":[{"$ref":"#/definitions/l"}],"additionalItems":{"$ref":"#/definitions/l"}}}}`,
		`{"l":[[],[[]]]}`},
	// a loop in $defs that nothing refers to is never applied
	{`{"type":"object","$defs":{"loop":{"$ref":"#/$defs/loop"}}}`, `{}`},
	// draft-07: $ref hides its siblings, the allOf too
	{`{` + draft7 + `"definitions":{"a":{"type":"object"}},"$ref":"#/definitions/a","allOf":[{"$ref":"#"}]}`, `{}`},
	// the $dynamicRef tree of the 2020-12 specification
	{`{"$id":"https://example.com/tree","$dynamicAnchor":"node","type":"object","properties":{"children":{"type":"array","items":{"$dynamicRef":"#node"}}}}`,
		`{"children":[{"children":[]}]}`},
	// $id, anchors and pointers that do not loop
	{`{"$id":"https://example.com/root.json","type":"object","$defs":{"a":{"$id":"a.json","$anchor":"x","type":"object","properties":{"r":{"$ref":"root.json"}}}},"allOf":[{"$ref":"a.json#x"}]}`,
		`{"r":{"r":{}}}`},
	// the schemas of the other tests that hold a $ref
	{`{"$defs":{"pt":{"type":"object","properties":{"x":{"type":"number","exclusiveMinimum":0}},"required":["x"]}},"type":"object","properties":{"points":{"type":"array","items":{"$ref":"#/$defs/pt"}}}}`,
		`{"points":[{"x":1}]}`},
	{`{"type":"object","$defs":{"when":{"type":"string","format":"date-time"}},"properties":{"at":{"$ref":"#/$defs/when"}}}`,
		`{"at":"2024-01-01T00:00:00Z"}`},
}

// NewPrompt refuses a format whose $ref loops back to the same value, on
// which checking a reply would overflow the stack and kill the process,
// and names the loop.
func TestNewPromptRefusesSchemaCycle(t *testing.T) {
	for _, tc := range loopingSchemas {
		_, err := NewPrompt("p", "Answer.", WithFormat(json.RawMessage(tc.schema)))
		want := `dialog: prompt "p": format schema: $ref cycle on the same value: ` + tc.cycle + "; "
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "descends into the value") {
			t.Errorf("NewPrompt with format %s\n got %v\nwant %s...", tc.schema, err, want)
		}
	}
}

// NewFunctionSchema refuses such a parameter schema: Call would check
// the model's arguments against it.
func TestNewFunctionSchemaRefusesSchemaCycle(t *testing.T) {
	fn := func(context.Context, json.RawMessage) (any, error) { return "ok", nil }
	n := 0
	for _, tc := range loopingSchemas {
		if strings.Contains(tc.schema, `"type":`) {
			continue // another type, or one already
		}
		n++
		schema := `{"type":"object",` + tc.schema[1:]
		_, err := NewFunctionSchema("f", "", json.RawMessage(schema), fn)
		want := `dialog: function "f": parameter schema: $ref cycle on the same value: ` + tc.cycle + "; "
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("NewFunctionSchema(%s)\n got %v\nwant %s...", schema, err, want)
		}
	}
	if n < 10 {
		t.Errorf("only %d schemas checked", n)
	}
}

// Schemas that recurse through the value, or share their $defs, are
// accepted, and checking a value against them ends.
func TestSchemaCycleAcceptsRecursion(t *testing.T) {
	for _, tc := range workingSchemas {
		p, err := NewPrompt("p", "Answer.", WithFormat(json.RawMessage(tc.schema)))
		if err != nil {
			t.Errorf("NewPrompt with format %s: %v", tc.schema, err)
			continue
		}
		if err := p.CheckFormat(json.RawMessage(tc.value)); err != nil {
			t.Errorf("CheckFormat(%s) against %s: %v", tc.value, tc.schema, err)
		}
		var top struct{ Type any }
		if json.Unmarshal([]byte(tc.schema), &top) != nil || top.Type != "object" {
			continue // not a parameter schema
		}
		f, err := NewFunctionSchema("f", "", json.RawMessage(tc.schema), func(context.Context, json.RawMessage) (any, error) { return "ok", nil })
		if err != nil {
			t.Errorf("NewFunctionSchema(%s): %v", tc.schema, err)
			continue
		}
		if got := f.Call(t.Context(), FunctionCall{Name: "f", Arguments: json.RawMessage(tc.value)}); got.Error != "" {
			t.Errorf("Call(%s) with parameters %s: %s", tc.value, tc.schema, got.Error)
		}
	}
}

// The looping schemas do overflow jsonschema-go's stack, and the working
// ones do not: the check refuses exactly what would crash. Each schema is
// validated in a child process with a small stack, since a stack
// overflow cannot be recovered.
func TestSchemaCycleOverflowsLibrary(t *testing.T) {
	if schema := os.Getenv("DIALOG_SCHEMA_CYCLE"); schema != "" {
		debug.SetMaxStack(16 << 20)
		s := new(jsonschema.Schema)
		if err := json.Unmarshal([]byte(schema), s); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal([]byte(os.Getenv("DIALOG_SCHEMA_CYCLE_VALUE")), &v); err != nil {
			t.Fatal(err)
		}
		_ = rs.Validate(v)
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("starts a process per schema")
	}
	run := func(schema, value string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSchemaCycleOverflowsLibrary$", "-test.count=1")
		cmd.Env = append(os.Environ(), "DIALOG_SCHEMA_CYCLE="+schema, "DIALOG_SCHEMA_CYCLE_VALUE="+value)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, tc := range loopingSchemas {
		out, err := run(tc.schema, tc.value)
		if err == nil || !strings.Contains(out, "stack overflow") {
			t.Errorf("validating %s against %s: %v, no stack overflow:\n%.500s", tc.value, tc.schema, err, out)
		}
	}
	for _, tc := range workingSchemas {
		if out, err := run(tc.schema, tc.value); err != nil {
			t.Errorf("validating %s against %s: %v\n%.500s", tc.value, tc.schema, err, out)
		}
	}
}
