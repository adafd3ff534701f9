package jsontext

import "testing"

func TestCompactAndUnescape(t *testing.T) {
	for in, want := range map[string]string{
		"{\n \"a\": \"\\u003cb\\u003e \\u0026 \\\\u003c\"\n}": `{"a":"<b> & \\u003c"}`,
		`["\u00e9", "x\u003E"]`:                               `["\u00e9","x>"]`,
		`"plain"`:                                             `"plain"`,
	} {
		got, ok := Compact([]byte(in))
		if !ok || got != want {
			t.Errorf("Compact(%s) = %s, %v; want %s", in, got, ok, want)
		}
	}
	if _, ok := Compact([]byte("{nope")); ok {
		t.Error("Compact accepted bad JSON")
	}
	if got := Unescape(`tail\`); got != `tail\` {
		t.Errorf("a trailing backslash: %q", got)
	}
}

// Marshal leaves <, > and & as they are, on one line without a newline.
func TestMarshal(t *testing.T) {
	b, err := Marshal(map[string]any{"text": "<answer>1 & 2</answer>"})
	if err != nil || string(b) != `{"text":"<answer>1 & 2</answer>"}` {
		t.Errorf("%s %v", b, err)
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Error("a func was encoded")
	}
}

func TestKind(t *testing.T) {
	for v, want := range map[string]string{"array": "an array", "number 5": "a number", "bool": "a boolean", "string": "a string"} {
		if got := Kind(v); got != want {
			t.Errorf("Kind(%q) = %q, want %q", v, got, want)
		}
	}
}
