package jsontext

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// AppendFloat appends f as encoding/json encodes a float64: like
// strconv's 'f' format, or 'e' for very small or large magnitudes, with
// the exponent's leading zero trimmed, as ES6 formats numbers. NaN and
// infinities have no JSON form: they are an error, with b unchanged.
func AppendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, &json.UnsupportedValueError{Value: reflect.ValueOf(f), Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	abs := math.Abs(f)
	fmt := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmt = 'e'
	}
	b = strconv.AppendFloat(b, f, fmt, -1, 64)
	if fmt == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// AppendString appends s as a JSON string, escaped as encoding/json
// escapes it without HTML escaping. The escaping follows appendString in
// Go's encoding/json/encode.go; runs of safe ASCII are skipped 8 bytes
// at a time.
func AppendString(b []byte, s string) []byte {
	const (
		lsb = 0x0101010101010101
		msb = 0x8080808080808080
	)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if len(s)-i >= 8 {
			w := s[i : i+8]
			x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
				uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
			// A byte's high bit is set in the result if the byte is
			// non-ASCII, below ' ', '"' or '\\', and borrows set it in
			// higher bytes only after such a byte.
			if (x|(x-' '*lsb)|((x^'"'*lsb)-lsb)|((x^'\\'*lsb)-lsb))&msb == 0 {
				i += 8
				continue
			}
		}
		if c := s[i]; c < utf8.RuneSelf {
			if safeSet[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				// Other bytes < 0x20.
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR are valid
		// JSON but not JavaScript; encoding/json always escapes them.
		if c == '\u2028' || c == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// safeSet[c] reports whether the ASCII byte c stands for itself inside a
// JSON string: all but the control bytes, '"' and '\\', as in
// encoding/json's safeSet (Go's encoding/json/tables.go).
var safeSet = func() (set [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		set[c] = c != '"' && c != '\\'
	}
	return set
}()

// InvalidUTF8 returns the offset of the first byte of b that is not part
// of a UTF-8 sequence, which JSON text would carry as U+FFFD, or -1 when b
// is UTF-8 text.
func InvalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// ValidUTF8 is s as JSON text carries it (see AppendString): each byte
// that is not part of a UTF-8 sequence a U+FFFD. It is s itself when s is
// valid.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}
