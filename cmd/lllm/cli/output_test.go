package cli

import (
	"encoding/json"
	"path/filepath"
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

// Text a log holds (a tactic, a label, a task, an owner, an alias, a
// message) reaches the terminal with its control characters escaped, so
// that it cannot clear the screen or retitle the window; -o json keeps it
// as it is.
func TestTerminalEscapesInLogText(t *testing.T) {
	const esc = "\x1b[2J\x1b]0;pwned\x07"
	const shown = `\u001b[2J\u001b]0;pwned\u0007`
	q, _ := json.Marshal(esc)
	e := string(q)
	id := "20261120T100009.000000Z-escap1"
	logDir := filepath.Join(t.TempDir(), "logs")
	ctWrite(t, filepath.Join(logDir, id, "events.jsonl"), strings.Join([]string{
		`{"seq":1,"ts":"2026-11-20T10:00:09Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":"` + id + `","tactic":` + e + `,"task":` + e + `,"labels":{"l":` + e + `}}}`,
		`{"seq":2,"ts":"2026-11-20T10:00:09Z","kind":"dialog_open","dialog":"e1","dialog_open":{"id":"e1","owner":` + e + `,"alias":` + e + `,"split_point":0,"last_n":0,"first_k":0,"parent_len":0,"depth":0}}`,
		`{"seq":3,"ts":"2026-11-20T10:00:09Z","kind":"message","dialog":"e1","message":{"role":"user","content":` + e + `,"name":"user"}}`,
		`{"seq":4,"ts":"2026-11-20T10:00:09Z","kind":"run_end","run_end":{"status":"ok","totals":{"model_calls":0,"tool_calls":0,"dialogs":1,"messages":1,"cost":{},"duration_ms":1}}}`,
	}, "\n")+"\n")

	for _, args := range [][]string{{"runs"}, {"tree", "latest"}, {"show", "latest"}, {"diff", "latest", "latest"}} {
		r := lllm(t, append(args, "--log-dir", logDir)...)
		if r.code != 0 {
			t.Fatalf("lllm %s:\n%v", strings.Join(args, " "), r)
		}
		if strings.ContainsAny(r.stdout, "\x1b\x07") {
			t.Errorf("lllm %s wrote control characters:\n%q", strings.Join(args, " "), r.stdout)
		}
		if !strings.Contains(r.stdout, shown) {
			t.Errorf("lllm %s does not show %s:\n%s", strings.Join(args, " "), shown, r.stdout)
		}
	}

	r := lllm(t, "show", "latest", "-o", "json", "--log-dir", logDir)
	var ds []struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ds); r.code != 0 || err != nil || len(ds) != 1 || len(ds[0].Messages) != 1 || ds[0].Messages[0].Content != esc {
		t.Errorf("show -o json: %v, %+v\n%v", err, ds, r)
	}
}
