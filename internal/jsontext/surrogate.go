package jsontext

import (
	"bytes"
	"unicode/utf16"
)

// LoneSurrogate reports whether the JSON text b holds a \u escape of a
// UTF-16 surrogate that is not half of a pair, such as "\ud800": valid
// JSON that encoding/json decodes to U+FFFD, not to a character.
func LoneSurrogate(b []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return false
		}
		i += j
		r, ok := escapedRune(b[i:])
		if !ok {
			i += 2 // \" \\ \n and the like
			continue
		}
		i += 6
		if !utf16.IsSurrogate(r) {
			continue
		}
		if low, ok := escapedRune(b[i:]); r < 0xdc00 && ok && low >= 0xdc00 && utf16.IsSurrogate(low) {
			i += 6
			continue
		}
		return true
	}
}

// escapedRune reads the \uXXXX escape at the start of b.
func escapedRune(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
