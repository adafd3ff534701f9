package dialog

import (
	"context"
	"encoding/json"
	"testing"
)

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
