package server

import (
	"strings"
	"testing"
	"time"
)

// TestBodyNotObject: a body that is JSON but not an object is refused on
// every JSON endpoint by what it is, never with Go's type names.
func TestBodyNotObject(t *testing.T) {
	f := edgeFixture(t, t.TempDir(), scripted, time.Minute, Options{})
	bodies := map[string]string{
		`[]`:      "not an array",
		`[1, 2]`:  "not an array",
		`"x"`:     "not a string",
		`5`:       "not a number",
		`true`:    "not a boolean",
		` null `:  "not null",
		`{"a":1}`: "", // an object: refused for its field, not its kind
	}
	for _, path := range []string{"/v1/stream", "/v1/kill", "/v1/compact", "/v1/reply", "/v1/mark-read"} {
		for body, what := range bodies {
			code, out := f.do("POST", path, body)
			msg, _ := out["error"].(string)
			if what == "" {
				if strings.Contains(msg, "JSON object") {
					t.Errorf("POST %s %s: %q", path, body, msg)
				}
				continue
			}
			want := "malformed JSON: the body must be a JSON object, " + what
			if code != 400 || out["code"] != "malformed_json" || msg != want {
				t.Errorf("POST %s %s: %d %v, want 400 malformed_json %q", path, body, code, out, want)
			}
			if strings.Contains(msg, "Go value") || strings.Contains(msg, "map[") {
				t.Errorf("POST %s %s: Go type names in %q", path, body, msg)
			}
		}
	}
	if ents := stored(f.dir); len(ents) != 0 {
		t.Fatalf("bad bodies stored something: %v", ents)
	}
}
