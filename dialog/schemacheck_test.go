package dialog

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// CheckFormat names every violation of the schema, plainly and in a
// stable order, for the model to fix them all in one retry.
func TestCheckFormatViolations(t *testing.T) {
	const prefix = "the reply does not follow the required JSON schema: "
	for _, tc := range []struct {
		schema, reply, want string
	}{
		{`{"type":"object","properties":{"age":{"type":"integer","maximum":10}}}`,
			`{"age":11}`, "age: 11 is greater than the maximum 10"},
		{`{"type":"object","properties":{"age":{"type":"integer","minimum":0.5,"maximum":10},"name":{"type":"string","minLength":2}},"required":["age","name","id"],"additionalProperties":false}`,
			`{"age":-1,"name":"a","zz":1,"q":true}`,
			`age: -1 is less than the minimum 0.5; name: "a" has 1 character, fewer than the minimum 2; q: unexpected property (allowed: age, name); zz: unexpected property (allowed: age, name); id: required, but missing`},
		{`{"type":"object","properties":{"x":{"type":"integer"}}}`,
			`{"x":"3"}`, `x: "3" is a string, want an integer`},
		{`{"type":"object"}`, `[1]`, `[1] is an array, want an object`},
		{`{"type":"object","properties":{"n":{"type":["integer","null"]}}}`,
			`{"n":1.5}`, `n: 1.5 is a number, want an integer or null`},
		{`{"type":"object","properties":{"color":{"enum":["red","green","blue"]},"k":{"const":"a"}}}`,
			`{"color":"pink","k":"b"}`, `color: "pink" is not one of "red", "green" or "blue"; k: "b" is not the required value "a"`},
		{`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","pattern":"^[a-z]+$"},"maxItems":2,"uniqueItems":true}}}`,
			`{"tags":["ok","Bad","ok"]}`, `tags[1]: "Bad" does not match the pattern "^[a-z]+$"; tags: the array has 3 items, more than the maximum 2; tags: items 0 and 2 are equal, but items must be unique`},
		{`{"$defs":{"pt":{"type":"object","properties":{"x":{"type":"number","exclusiveMinimum":0}},"required":["x"]}},"type":"object","properties":{"points":{"type":"array","items":{"$ref":"#/$defs/pt"}}}}`,
			`{"points":[{"x":1},{"x":0},{}]}`, `points[1].x: 0 is not greater than the exclusive minimum 0; points[2].x: required, but missing`},
		{`{"type":"object","properties":{"a b":{"type":"object","properties":{"c":{"type":"boolean"}}}}}`,
			`{"a b":{"c":1}}`, `["a b"].c: 1 is an integer, want a boolean`},
		{`{"type":"object","properties":{"a":{}},"unevaluatedProperties":false}`,
			`{"a":1,"b":2}`, `b: unexpected property (allowed: a)`},
		{`{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`,
			`{"v":true}`, `v: true matches none of the 2 schemas of oneOf`},
		{`{"type":"object","properties":{"s":{"type":"string","maxLength":3}}}`,
			`{"s":"` + strings.Repeat("x", 50) + `"}`, `s: "` + strings.Repeat("x", 38) + `… has 50 characters, more than the maximum 3`},
	} {
		p := MustPrompt("p", "Answer.", WithFormat(json.RawMessage(tc.schema)))
		err := p.CheckFormat(json.RawMessage(tc.reply))
		if err == nil || err.Error() != prefix+tc.want {
			t.Errorf("CheckFormat(%s) against %s\n got %v\nwant %s", tc.reply, tc.schema, err, prefix+tc.want)
		}
	}
}

// A schema's type list that is empty or names no JSON type is explained,
// not a panic ("type": [""] indexed an empty name) or "want " with nothing.
func TestCheckFormatOddTypes(t *testing.T) {
	const prefix = "the reply does not follow the required JSON schema: "
	for _, tc := range []struct{ schema, reply, want string }{
		{`{"type":[""]}`, `1`, `1 is an integer, want ""`},
		{`{"type":["string",""]}`, `1`, `1 is an integer, want a string or ""`},
		{`{"type":"date"}`, `"x"`, `"x" is a string, want "date"`},
		{`{"type":[]}`, `1`, `1 is not allowed: the schema's type list is empty`},
		{`{"properties":{"a":{"type":[]}}}`, `{"a":null}`, `a: null is not allowed: the schema's type list is empty`},
	} {
		p, err := NewPrompt("p", "Answer.", WithFormat(json.RawMessage(tc.schema)))
		if err != nil {
			t.Errorf("%s: %v", tc.schema, err)
			continue
		}
		err = p.CheckFormat(json.RawMessage(tc.reply))
		if err == nil || err.Error() != prefix+tc.want {
			t.Errorf("CheckFormat(%s) against %s\n got %v\nwant %s", tc.reply, tc.schema, err, prefix+tc.want)
		}
	}
}

// The message is the same every time, although the schema's properties
// are a map: the model sees the same retry for the same reply.
func TestCheckFormatViolationsStable(t *testing.T) {
	var props, reply []string
	for i := range 8 {
		props = append(props, fmt.Sprintf(`"p%d":{"type":"integer","maximum":1}`, i))
		reply = append(reply, fmt.Sprintf(`"p%d":2`, i))
	}
	p := MustPrompt("p", "Answer.", WithFormat(json.RawMessage(`{"type":"object","properties":{`+strings.Join(props, ",")+`}}`)))
	first := p.CheckFormat(json.RawMessage(`{` + strings.Join(reply, ",") + `}`)).Error()
	if !strings.Contains(first, "p0: 2 is greater than the maximum 1; p1:") {
		t.Errorf("violations not in name order: %s", first)
	}
	for range 50 {
		if got := p.CheckFormat(json.RawMessage(`{` + strings.Join(reply, ",") + `}`)).Error(); got != first {
			t.Fatalf("CheckFormat changed from\n%s\nto\n%s", first, got)
		}
	}
}

// At most ten violations are listed, then how many more there are.
func TestCheckFormatViolationsCapped(t *testing.T) {
	var req []string
	for i := range 13 {
		req = append(req, fmt.Sprintf(`"r%02d"`, i))
	}
	p := MustPrompt("p", "Answer.", WithFormat(json.RawMessage(`{"type":"object","required":[`+strings.Join(req, ",")+`]}`)))
	got := p.CheckFormat(json.RawMessage(`{}`)).Error()
	if n := strings.Count(got, "required, but missing"); n != 10 || !strings.HasSuffix(got, "r09: required, but missing; and 3 more") {
		t.Errorf("CheckFormat = %s, want the first 10 violations and 'and 3 more'", got)
	}
}

// A keyword the explanation does not cover still gives jsonschema-go's
// reason, without its schema locations.
func TestCheckFormatViolationsFallback(t *testing.T) {
	p := MustPrompt("p", "Answer.", WithFormat(json.RawMessage(`{"type":"object","allOf":[{"properties":{"a":{}}}],"unevaluatedProperties":false}`)))
	got := p.CheckFormat(json.RawMessage(`{"a":1,"b":2}`)).Error()
	if strings.Contains(got, "validating") || !strings.HasPrefix(got, "the reply does not follow the required JSON schema: ") || len(got) < len("the reply does not follow the required JSON schema: x") {
		t.Errorf("CheckFormat = %s", got)
	}
	t.Log(got)
}
