package jsontext

import "testing"

func TestInvalidUTF8(t *testing.T) {
	for in, want := range map[string]int{"": -1, "café \ufffd": -1, "\xff": 0, "ab\xe9cd": 2, "é\xc3": 2, "日本\x80": 6} {
		if got := InvalidUTF8([]byte(in)); got != want {
			t.Errorf("InvalidUTF8(%q) = %d, want %d", in, got, want)
		}
	}
}
