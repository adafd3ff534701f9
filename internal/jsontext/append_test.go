package jsontext

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"unicode/utf8"
)

// stdJSON is v as encoding/json writes it without HTML escaping.
func stdJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

func checkString(t *testing.T, s string) {
	t.Helper()
	want, _ := stdJSON(s)
	if got := string(AppendString([]byte("x"), s)); got != "x"+want {
		t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain ascii, long enough to skip eight at a time",
		`<a href="x">&amp;</a>`, `quote " and backslash \`, "\x00\x01\x1f\b\f\n\r\t\x7f",
		"line\u2028para\u2029", "héllo 世界 🎉", "\xff\xfe", "a\xc3", "12345678\"", "1234567\n"} {
		checkString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "abc", "\u2028", "\xff", `"\`} {
		f.Add(s)
	}
	f.Fuzz(checkString)
}

func TestAppendFloatMatchesEncodingJSON(t *testing.T) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -2.5, 0.1, 1.0 / 3, 1e-6, 1e-7, 123.456,
		1e20, 1e21, -2.5e-10, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		want, _ := stdJSON(v)
		got, err := AppendFloat(nil, v)
		if err != nil || string(got) != want {
			t.Errorf("AppendFloat(%v) = %s, %v; want %s", v, got, err, want)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got, err := AppendFloat([]byte("x"), v); err == nil || string(got) != "x" {
			t.Errorf("AppendFloat(%v) = %q, %v; want the buffer unchanged and an error", v, got, err)
		}
	}
}

// ValidUTF8 makes of a string what its JSON text reads as, which is valid
// UTF-8 (a valid string unchanged).
func TestValidUTF8(t *testing.T) {
	for _, s := range []string{"", "plain", "ééé", "éé\xc3", "\xff\xfe end", "a\xe2\x82b", "€\x80€"} {
		v := ValidUTF8(s)
		var read string
		if err := json.Unmarshal(AppendString(nil, s), &read); err != nil || read != v || !utf8.ValidString(v) {
			t.Errorf("ValidUTF8(%q) = %q; its JSON text %s reads %q (%v)", s, v, AppendString(nil, s), read, err)
		}
		if utf8.ValidString(s) && v != s {
			t.Errorf("ValidUTF8(%q) changed a valid string to %q", s, v)
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	for in, want := range map[string]int{"": -1, "café \ufffd": -1, "\xff": 0, "ab\xe9cd": 2, "é\xc3": 2, "日本\x80": 6} {
		if got := InvalidUTF8([]byte(in)); got != want {
			t.Errorf("InvalidUTF8(%q) = %d, want %d", in, got, want)
		}
	}
}
