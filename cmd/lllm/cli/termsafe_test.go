package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// termSafe escapes the C0 controls but tab and newline, DEL and the C1
// controls, wherever the writes that carry them are split (a C1 control
// is two bytes in UTF-8), and passes everything else as it is: other
// two-byte characters beginning like a C1 control (£, é), wide ones, tabs
// and newlines.
func TestTermSafe(t *testing.T) {
	in := "a\x1b[2Jb\rc\u009b2Jd\u0085e\x7f£é漢\t\n\u0080"
	want := `a\u001b[2Jb\u000dc\u009b2Jd\u0085e\u007f£é漢` + "\t\n" + `\u0080`
	for split := range len(in) + 1 {
		var b strings.Builder
		ts := &termSafe{w: &b}
		for _, part := range []string{in[:split], in[split:]} {
			if n, err := ts.Write([]byte(part)); n != len(part) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", part, n, err)
			}
		}
		if err := ts.flush(); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("split at %d: wrote %q, want %q", split, b.String(), want)
		}
	}
	var b strings.Builder
	ts := &termSafe{w: &b}
	ts.Write([]byte("x\xc2"))
	if err := ts.flush(); err != nil || b.String() != "x\xc2" {
		t.Errorf("a last 0xC2 byte: wrote %q, %v; want it written by flush", b.String(), err)
	}
	// JSON through it stays JSON for the same text: encoding/json writes
	// DEL and the C1 controls as they are.
	raw, _ := json.Marshal(in)
	b.Reset()
	ts = &termSafe{w: &b}
	ts.Write(raw)
	var back string
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil || back != in || strings.ContainsAny(b.String(), "\x7f\u009b\u0085") {
		t.Errorf("JSON %s through termSafe: %s (%v), decodes to %q", raw, b.String(), err, back)
	}
	if got := escapeControls("k=v\u009b\r"); got != `k=v\u009b\u000d` {
		t.Errorf("escapeControls = %q", got)
	}
}
