package viewer

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/logs"
)

// A message whose JSON escapes a lone UTF-16 surrogate ("\ud800": valid
// JSON, not Unicode) reaches the API as lllm show -o json prints it: its
// text with U+FFFD, as Go reads it, and its raw values (tool arguments) as
// the log has them. Surrogate pairs and an escaped backslash before "ud800"
// are text, kept.
func TestAPIMessagesLoneSurrogate(t *testing.T) {
	root := t.TempDir()
	id := "20261120T100011.000000Z-surr"
	log := strings.Join([]string{
		`{"seq":1,"ts":"2026-11-20T10:00:11Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":"` + id + `","tactic":"t"}}`,
		`{"seq":2,"ts":"2026-11-20T10:00:11Z","kind":"dialog_open","dialog":"b1","dialog_open":{"id":"b1","owner":"o\udc00","alias":"main"}}`,
		`{"seq":3,"ts":"2026-11-20T10:00:11Z","kind":"message","dialog":"b1","index":0,"message":{"role":"user","content":"lone \ud800, pair \ud83d\ude00, text \\ud800","name":"n\ud83d"}}`,
		`{"seq":4,"ts":"2026-11-20T10:00:11Z","kind":"message","dialog":"b1","index":1,"message":{"role":"assistant","content":"call \udc00","function_calls":[{"id":"c1","name":"f","arguments":{"x":"\udc00\ud800"}}]}}`,
		`{"seq":5,"ts":"2026-11-20T10:00:11Z","kind":"message","dialog":"b1","index":2,"message":{"role":"user","content":"no surrogate: \\ud800 é"}}`,
		`{"seq":6,"ts":"2026-11-20T10:00:11Z","kind":"run_end","run_end":{"status":"ok"}}`,
	}, "\n") + "\n"
	path := filepath.Join(root, id, logs.EventsFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}

	// What lllm show -o json prints: each message as the logs reader
	// decodes it, encoded again.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	for rd := logs.NewReader(f, path); ; {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Kind == logs.KindMessage {
			b, err := json.Marshal(rec.Message)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, string(b))
		}
	}

	h := New(root, Options{})
	var page struct {
		Messages []struct {
			Message json.RawMessage `json:"message"`
			Error   string          `json:"error"`
		} `json:"messages"`
	}
	body := get(t, h, "/api/runs/"+id+"/dialogs/b1/messages", 200, &page)
	if len(page.Messages) != len(want) {
		t.Fatalf("%d messages, want %d:\n%s", len(page.Messages), len(want), body)
	}
	for i, m := range page.Messages {
		if m.Error != "" || string(m.Message) != want[i] {
			t.Errorf("message %d: %s (error %q)\nwant as lllm show: %s", i, m.Message, m.Error, want[i])
		}
	}
	if !strings.Contains(want[0], `"lone �, pair 😀, text \\ud800"`) || !strings.Contains(want[1], `"arguments":{"x":"\udc00\ud800"}`) {
		t.Errorf("the reader's messages are not as this test expects: %s", want)
	}
	// The node's owner is text: U+FFFD.
	var d struct {
		Node struct {
			Owner string `json:"owner"`
		} `json:"node"`
	}
	body = get(t, h, "/api/runs/"+id+"/dialogs/b1", 200, &d)
	if d.Node.Owner != "o\ufffd" || jsontext.LoneSurrogate([]byte(body)) {
		t.Errorf("dialog: owner %q:\n%s", d.Node.Owner, body)
	}
}
