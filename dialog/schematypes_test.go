package dialog

import (
	"encoding/json"
	"testing"
)

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
