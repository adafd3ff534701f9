package jsontext

import (
	"encoding/json"
	"strings"
	"testing"
)

// LoneSurrogate is true exactly when decoding the JSON text yields a
// U+FFFD that the text does not write (as itself or as \ufffd).
func TestLoneSurrogate(t *testing.T) {
	for _, s := range []string{
		`"plain"`, `"\ud800"`, `"\uD800"`, `"\udc00"`, `"a\ud83d\ude00b"`, `"\ud83d\uDE00"`,
		`"\udc00\ud800"`, `"\ud800\u0041"`, `"\ud800\ud800\udc00"`, `"\ud83d"`, `"\\ud800"`,
		`"\\\ud800"`, `"\\\\ud800"`, `"\n\t\"\/"`, `"\u00e9\u2028"`, `{"a":["\ud800x"]}`,
		`{"\ud800":1}`, `"x\ud800\\"`, `"\ufffd"`, `"\ud800\\udc00"`,
	} {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		out, _ := json.Marshal(v)
		want := strings.Count(string(out), "\ufffd") > strings.Count(s, `\ufffd`)
		if got := LoneSurrogate([]byte(s)); got != want {
			t.Errorf("LoneSurrogate(%s) = %v, want %v (decodes to %s)", s, got, want, out)
		}
	}
}
