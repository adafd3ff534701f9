package dialog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Function is a tool the model may call: its declaration and the Go code that
// runs it. Build one with [NewFunction] or [NewFunctionSchema]; a Function
// is safe for concurrent use if its code is.
type Function struct {
	// Name is the name the model calls the function by: 1 to 64 ASCII
	// letters, digits, '_' or '-'.
	Name string
	// Description tells the model what the function does.
	Description string
	// Parameters is the JSON schema of the arguments, an object schema.
	Parameters json.RawMessage
	// Required lists the parameters that must be given.
	Required []string
	// Strict asks the provider to make the model's arguments follow the
	// schema exactly.
	Strict bool

	fn     func(context.Context, json.RawMessage) (any, error)
	schema *jsonschema.Resolved // validates the arguments
}

var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// MustFunction is like NewFunction but panics on error. It is meant for
// tools declared in init functions and package-level variables, where a
// bad name or parameter type is a programming error:
//
//	func init() {
//		tactics.RegisterTool(dialog.MustFunction("lookup", "Looks a term up.", lookup))
//	}
func MustFunction[In, Out any](name, description string, fn func(context.Context, In) (Out, error)) *Function {
	f, err := NewFunction(name, description, fn)
	if err != nil {
		panic(err)
	}
	return f
}

// NewFunction returns the function name that runs fn. The parameter schema
// is inferred from In, which must be a struct (or a map with string keys),
// with github.com/google/jsonschema-go: properties are named by the json
// tags, fields without omitempty or omitzero are required, and a jsonschema
// tag is the property's description.
func NewFunction[In, Out any](name, description string, fn func(context.Context, In) (Out, error)) (*Function, error) {
	if fn == nil {
		return nil, fmt.Errorf("dialog: function %q: nil implementation", name)
	}
	s, err := jsonschema.For[In](schemaOptions)
	if err != nil {
		return nil, fmt.Errorf("dialog: function %q: inferring the parameter schema: %w", name, err)
	}
	params, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("dialog: function %q: encoding the parameter schema: %w", name, err)
	}
	call := func(ctx context.Context, args json.RawMessage) (any, error) {
		var in In
		if err := json.Unmarshal(integralNumbers(args), &in); err != nil {
			return nil, fmt.Errorf("invalid arguments: %w", err)
		}
		return fn(ctx, in)
	}
	return newFunction(name, description, params, s, call)
}

// NewFunctionSchema returns the function name that runs fn, with a
// hand-written parameter schema, which must be a JSON schema of type
// "object" whose references are all local, none of them looping back to
// the same value (see [NewPrompt]). Its "required" list becomes
// Required. fn gets the arguments as the model wrote them, once they are
// checked against the schema.
func NewFunctionSchema(name, description string, parameters json.RawMessage, fn func(context.Context, json.RawMessage) (any, error)) (*Function, error) {
	if fn == nil {
		return nil, fmt.Errorf("dialog: function %q: nil implementation", name)
	}
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(parameters, s); err != nil {
		return nil, fmt.Errorf("dialog: function %q: parameter schema: %w", name, err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, parameters); err != nil {
		return nil, fmt.Errorf("dialog: function %q: parameter schema: %w", name, err)
	}
	return newFunction(name, description, buf.Bytes(), s, fn)
}

// schemaOptions fix the schemas of types that encoding/json decodes
// differently from their Go shape.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {}, // any JSON value
	reflect.TypeFor[time.Time](): {Type: "string", Format: "date-time",
		Pattern: `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$`},
}}

// integralNumbers rewrites numbers like 2.0, which JSON Schema counts as
// integers, as 2 so that they decode into Go integers.
func integralNumbers(args json.RawMessage) json.RawMessage {
	if !bytes.Contains(args, []byte(".0")) {
		return args
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return args
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		case json.Number:
			if i := strings.IndexByte(string(t), '.'); i > 0 && strings.Trim(string(t[i+1:]), "0") == "" {
				return t[:i]
			}
		}
		return x
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		return args
	}
	return b
}

func newFunction(name, description string, params []byte, s *jsonschema.Schema, fn func(context.Context, json.RawMessage) (any, error)) (*Function, error) {
	if !functionName.MatchString(name) {
		return nil, fmt.Errorf("dialog: invalid function name %q: want 1 to 64 ASCII letters, digits, '_' or '-'", name)
	}
	if s.Type != "object" {
		typ := s.Type
		if typ == "" {
			typ = strings.Join(s.Types, ",")
		}
		return nil, fmt.Errorf(`dialog: function %q: parameter schema must have type "object", not %q`, name, typ)
	}
	switch s.Schema {
	case "", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2020-12/schema":
	default:
		return nil, fmt.Errorf("dialog: function %q: parameter schema: unsupported $schema %q (use draft-07 or 2020-12, or omit it)", name, s.Schema)
	}
	rs, err := s.Resolve(nil)
	if err == nil {
		err = checkSchemaCycles(rs) // Call validates the arguments with rs
	}
	if err != nil {
		return nil, fmt.Errorf("dialog: function %q: parameter schema: %w", name, err)
	}
	return &Function{
		Name:        name,
		Description: description,
		Parameters:  params,
		Required:    append([]string(nil), s.Required...),
		fn:          fn,
		schema:      rs,
	}, nil
}

// MarshalJSON encodes the function's declaration: its name, description,
// parameters and strictness.
func (f *Function) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      bool            `json:"strict,omitempty"`
	}{f.Name, f.Description, f.Parameters, f.Strict})
}

// Call runs the function for call and returns call with its result. The
// arguments are checked against the parameter schema and decoded; a failure
// there, an error from the function or a panic in it sets Error to the
// message and Result to "Error: " and the message. Arguments that are not
// valid JSON, the broken JSON a provider adapter keeps as a JSON string
// among them (see FunctionCall.Arguments), are refused as that, with the
// JSON parser's error. On success Result is
//
//	Return of calling function NAME with arguments ARGS:
//	VALUE
//
// where a string VALUE is verbatim and any other is JSON. A call naming
// another function is an error; an empty name is taken as f's. Call never
// panics.
func (f *Function) Call(ctx context.Context, call FunctionCall) FunctionCall {
	if f == nil {
		return failCall(call, errors.New("no such function"))
	}
	if call.Name == "" {
		call.Name = f.Name
	}
	out, err := f.run(ctx, call)
	if err != nil {
		return failCall(call, err)
	}
	text, ok := out.(string)
	if !ok {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return failCall(call, fmt.Errorf("function %s returned a value that cannot be encoded: %w", f.Name, err))
		}
		text = strings.TrimSuffix(buf.String(), "\n")
	}
	call.Error = ""
	call.Result = fmt.Sprintf("Return of calling function %s with arguments %s:\n%s", call.Name, argsText(call.Arguments), text)
	return call
}

// run checks the call and runs the function, turning a panic into an error.
func (f *Function) run(ctx context.Context, call FunctionCall) (out any, err error) {
	if call.Name != f.Name {
		return nil, fmt.Errorf("function %s cannot answer a call to %s", f.Name, call.Name)
	}
	if f.fn == nil {
		return nil, fmt.Errorf("function %s has no implementation", f.Name)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	args := call.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, notJSON(err)
	}
	if s, ok := v.(string); ok {
		if err := brokenJSON(s); err != nil {
			return nil, err
		}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("invalid arguments: not a JSON object")
	}
	if f.schema != nil {
		if err := f.schema.Validate(v); err != nil {
			// Every violation, in a stable order: the model reads it, and a
			// replay must get the same text (see violationText).
			return nil, fmt.Errorf("invalid arguments: %s", violationText(f.schema, v, err))
		}
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("function %s panicked: %v", f.Name, r)
		}
	}()
	return f.fn(ctx, args)
}

// brokenJSON returns the error of arguments that a model wrote as broken
// JSON, which the provider adapters keep as a JSON string of the text the
// model wrote (see FunctionCall.Arguments): a string that starts as an
// object or array does but is not JSON. Any other string is nil: the
// model sent a JSON string, which is not a JSON object.
func brokenJSON(s string) error {
	s = strings.TrimSpace(s)
	if s == "" || s[0] != '{' && s[0] != '[' {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return notJSON(err)
	}
	return nil
}

// notJSON is the error of arguments that are not valid JSON, err being
// the parser's.
func notJSON(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid arguments: not valid JSON (%w, at byte %d): send the arguments as one JSON object", err, se.Offset)
	}
	return fmt.Errorf("invalid arguments: not valid JSON (%w): send the arguments as one JSON object", err)
}

// failCall returns call with err as its result.
func failCall(call FunctionCall, err error) FunctionCall {
	call.Error = err.Error()
	call.Result = "Error: " + call.Error
	return call
}

// argsText is the arguments as shown in a result: compact JSON if valid.
func argsText(args json.RawMessage) string {
	if len(bytes.TrimSpace(args)) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return string(args)
	}
	return buf.String()
}
