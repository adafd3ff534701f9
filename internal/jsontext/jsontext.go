// Package jsontext writes JSON text fast and makes it readable for people:
// strings and numbers appended byte for byte as encoding/json writes them,
// and raw JSON put on one line with the HTML escapes encoding/json writes
// undone.
package jsontext

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Compact returns raw on one line with HTML escapes undone (see
// Unescape), or ok false when raw is not JSON.
func Compact(raw []byte) (s string, ok bool) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", false
	}
	return Unescape(b.String()), true
}

// Unescape undoes the \u003c, \u003e and \u0026 escapes encoding/json
// writes for <, > and & in strings, which only make JSON harder to read.
// Every other escape, \\ included, is kept.
func Unescape(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch s[i+2 : i+6] {
			case "003c", "003C":
				b.WriteByte('<')
				i += 5
				continue
			case "003e", "003E":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2])
		i++
	}
	return b.String()
}

// Marshal is json.Marshal without escaping <, > and & (tactic results,
// parsed outputs and messages are often tagged text, which should read
// as written).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Kind names, with its article, the kind of JSON value that an
// encoding/json UnmarshalTypeError's Value describes: "an array" for
// "array", "a number" for "number 5", "a boolean" for "bool".
func Kind(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	switch kind {
	case "array":
		return "an array"
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}
