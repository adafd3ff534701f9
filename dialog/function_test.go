package dialog

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type addArgs struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b"`
	// Note is optional.
	Note string `json:"note,omitempty"`
}

func mustAddFunction(t testing.TB) *Function {
	t.Helper()
	f, err := NewFunction("add", "Add two integers.", func(_ context.Context, in addArgs) (int, error) {
		switch {
		case in.A < 0:
			return 0, errors.New("negative a")
		case in.A == 666:
			panic("the beast")
		}
		return in.A + in.B, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNewFunctionSchema(t *testing.T) {
	f := mustAddFunction(t)
	if !reflect.DeepEqual(f.Required, []string{"a", "b"}) {
		t.Errorf("Required = %q, want [a b]", f.Required)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
		Additional *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(f.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || len(schema.Properties) != 3 || schema.Additional == nil || *schema.Additional {
		t.Errorf("Parameters = %s", f.Parameters)
	}
	if !strings.Contains(string(schema.Properties["a"]), "the first addend") {
		t.Errorf("property a = %s, want its description", schema.Properties["a"])
	}

	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var decl map[string]json.RawMessage
	json.Unmarshal(b, &decl)
	if len(decl) != 3 || string(decl["name"]) != `"add"` || string(decl["description"]) != `"Add two integers."` ||
		string(decl["parameters"]) != string(f.Parameters) {
		t.Errorf("MarshalJSON = %s", b)
	}
	f2 := *f
	f2.Strict = true
	if b, _ := json.Marshal(&f2); !strings.Contains(string(b), `"strict":true`) {
		t.Errorf("MarshalJSON of strict function = %s", b)
	}
}

func TestNewFunctionErrors(t *testing.T) {
	okFn := func(context.Context, addArgs) (int, error) { return 0, nil }
	for _, name := range []string{"", "has space", "dot.name", "ü", strings.Repeat("x", 65)} {
		if _, err := NewFunction(name, "", okFn); err == nil || !strings.Contains(err.Error(), "invalid function name") {
			t.Errorf("NewFunction(%q) error = %v", name, err)
		}
	}
	if _, err := NewFunction(strings.Repeat("x", 64), "", okFn); err != nil {
		t.Errorf("64-character name: %v", err)
	}
	if _, err := NewFunction("f", "", func(context.Context, int) (int, error) { return 0, nil }); err == nil {
		t.Error("non-object parameters accepted")
	}
	if _, err := NewFunction("f", "", func(context.Context, *addArgs) (int, error) { return 0, nil }); err == nil {
		t.Error("nullable parameters accepted")
	}
	if _, err := NewFunction("f", "", func(context.Context, struct{ C chan int }) (int, error) { return 0, nil }); err == nil {
		t.Error("un-schemable parameters accepted")
	}
	if _, err := NewFunction[addArgs, int]("f", "", nil); err == nil {
		t.Error("nil implementation accepted")
	}
	if _, err := NewFunction("f", "", func(context.Context, map[string]int) (int, error) { return 0, nil }); err != nil {
		t.Errorf("map parameters: %v", err)
	}
}

func TestFunctionCall(t *testing.T) {
	f := mustAddFunction(t)
	ctx := context.Background()
	call := func(args string) FunctionCall {
		return f.Call(ctx, FunctionCall{ID: "c1", Name: "add", Arguments: json.RawMessage(args), Error: "stale"})
	}

	got := call(`{"a": 1, "b": 2}`)
	want := "Return of calling function add with arguments {\"a\":1,\"b\":2}:\n3"
	if got.Result != want || got.Error != "" || got.ID != "c1" || got.Name != "add" {
		t.Errorf("good call = %+v, want Result %q", got, want)
	}

	for _, tt := range []struct{ args, errSub string }{
		{`{"a": 1,`, "invalid arguments"},
		{`[1, 2]`, "not a JSON object"},
		{`{"a": 1}`, "b"},                 // a required property is missing
		{`{"a": 1, "b": 2, "c": 3}`, "c"}, // no additional properties
		{`{"a": 1.5, "b": 2}`, "invalid arguments"},
		{`{"a": -1, "b": 2}`, "negative a"},
		{`{"a": 666, "b": 0}`, "the beast"},
	} {
		got := call(tt.args)
		if got.Error == "" || !strings.Contains(got.Error, tt.errSub) || got.Result != "Error: "+got.Error {
			t.Errorf("Call(%s) = %+v, want error containing %q", tt.args, got, tt.errSub)
		}
	}
	// Every violation, in a stable order: the model reads the error, and
	// a replay must get the same text each time.
	first := call(`{"a": 1.5, "b": "x", "c": 3}`).Error
	for range 20 {
		if got := call(`{"a": 1.5, "b": "x", "c": 3}`).Error; got != first {
			t.Fatalf("the same bad arguments gave %q, then %q", first, got)
		}
	}
	for _, part := range []string{"a: ", "b: ", "c: "} {
		if !strings.Contains(first, part) {
			t.Errorf("error %q does not name %q", first, strings.TrimSuffix(part, ": "))
		}
	}
	if got := f.Call(ctx, FunctionCall{Name: "sub", Arguments: json.RawMessage(`{"a":1,"b":2}`)}); got.Error == "" {
		t.Errorf("call to another name ran: %+v", got)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if got := f.Call(canceled, FunctionCall{Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`)}); !strings.Contains(got.Error, "canceled") {
		t.Errorf("call with canceled context = %+v", got)
	}
	var nilf *Function
	if got := nilf.Call(ctx, FunctionCall{Name: "x"}); got.Error == "" {
		t.Error("nil function call: no error")
	}
	if got := (&Function{Name: "decl"}).Call(ctx, FunctionCall{Name: "decl"}); got.Error == "" {
		t.Error("declaration-only function call: no error")
	}
}

// Arguments a model wrote as broken JSON, which the provider adapters
// keep as a JSON string of its text, are refused as not valid JSON, with
// the parser's error and what to send instead; arguments that are valid
// JSON but no object (a string, an array, a number, a string holding
// valid JSON) are refused as not a JSON object.
func TestBrokenJSONArguments(t *testing.T) {
	f := mustAddFunction(t)
	asString := func(text string) string {
		b, _ := json.Marshal(text)
		return string(b)
	}
	const notObject = "invalid arguments: not a JSON object"
	for _, c := range []struct{ args, want string }{
		{asString(`{"a": 1`), "invalid arguments: not valid JSON (unexpected end of JSON input, at byte 7): send the arguments as one JSON object"},
		{asString(` {"a": 1, "b": 2,} `), "invalid arguments: not valid JSON (invalid character '}' looking for beginning of object key string, at byte 17): send the arguments as one JSON object"},
		{asString(`[1, 2`), "invalid arguments: not valid JSON (unexpected end of JSON input, at byte 5): send the arguments as one JSON object"},
		{`{"a": 1,`, "invalid arguments: not valid JSON (unexpected end of JSON input, at byte 8): send the arguments as one JSON object"},
		{asString(`hello`), notObject},
		{asString(`{"a": 1, "b": 2}`), notObject},
		{`[1, 2]`, notObject},
		{`3`, notObject},
		{`null`, notObject},
	} {
		got := f.Call(context.Background(), FunctionCall{Name: "add", Arguments: json.RawMessage(c.args)})
		if got.Error != c.want || got.Result != "Error: "+c.want {
			t.Errorf("arguments %s: error %q, want %q", c.args, got.Error, c.want)
		}
	}
}

func TestFunctionResultText(t *testing.T) {
	ctx := context.Background()
	type out struct {
		S string `json:"s"`
	}
	str, _ := NewFunction("s", "", func(context.Context, struct{}) (string, error) { return "a <b> & \"c\"", nil })
	obj, _ := NewFunction("o", "", func(context.Context, struct{}) (out, error) { return out{"<x>"}, nil })
	bad, _ := NewFunction("b", "", func(context.Context, struct{}) (any, error) { return make(chan int), nil })
	tests := []struct {
		f    *Function
		want string
	}{
		{str, "Return of calling function s with arguments {}:\na <b> & \"c\""},
		{obj, "Return of calling function o with arguments {}:\n{\"s\":\"<x>\"}"},
	}
	for _, tt := range tests {
		if got := tt.f.Call(ctx, FunctionCall{}); got.Result != tt.want || got.Name != tt.f.Name {
			t.Errorf("Result = %q, want %q", got.Result, tt.want)
		}
	}
	if got := bad.Call(ctx, FunctionCall{}); !strings.Contains(got.Error, "cannot be encoded") {
		t.Errorf("unencodable result: %+v", got)
	}
}

func TestNewFunctionSchemaHandWritten(t *testing.T) {
	params := json.RawMessage(`{
		"type": "object",
		"properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
		"required": ["q"]
	}`)
	var gotArgs json.RawMessage
	f, err := NewFunctionSchema("search", "Search.", params, func(_ context.Context, args json.RawMessage) (any, error) {
		gotArgs = args
		return []string{"r1"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.Required, []string{"q"}) || strings.ContainsAny(string(f.Parameters), "\n\t") {
		t.Errorf("Required = %q, Parameters = %s", f.Required, f.Parameters)
	}
	got := f.Call(context.Background(), FunctionCall{Name: "search", Arguments: json.RawMessage(`{"q": "go"}`)})
	if got.Result != "Return of calling function search with arguments {\"q\":\"go\"}:\n[\"r1\"]" || string(gotArgs) != `{"q": "go"}` {
		t.Errorf("Call = %+v, fn got %s", got, gotArgs)
	}
	if got := f.Call(context.Background(), FunctionCall{Name: "search", Arguments: json.RawMessage(`{"n": 1}`)}); got.Error == "" {
		t.Error("missing required argument accepted")
	}

	for _, bad := range []string{`{`, `{"type": "string"}`, `{"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"}`, `{"type": "object", "properties": {"x": {"$ref": "#/nope"}}}`} {
		if _, err := NewFunctionSchema("f", "", json.RawMessage(bad), func(context.Context, json.RawMessage) (any, error) { return nil, nil }); err == nil {
			t.Errorf("NewFunctionSchema(%s): no error", bad)
		}
	}
	if _, err := NewFunctionSchema("f", "", params, nil); err == nil {
		t.Error("nil implementation accepted")
	}
}

// MustFunction returns what NewFunction does, and panics where NewFunction errs.
func TestMustFunction(t *testing.T) {
	f := MustFunction("sq", "squares", func(_ context.Context, in struct {
		N int `json:"n"`
	}) (int, error) {
		return in.N * in.N, nil
	})
	if got := f.Call(t.Context(), FunctionCall{Arguments: []byte(`{"n":3}`)}); got.Error != "" || !strings.HasSuffix(got.Result, "9") {
		t.Fatalf("call = %+v", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a bad name did not panic")
		}
	}()
	MustFunction("bad name", "", func(context.Context, struct{}) (int, error) { return 0, nil })
}
