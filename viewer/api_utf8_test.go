package viewer

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/logs"
)

// Bytes of a log that are not UTF-8 (in a message, the task, an owner)
// reach the API's JSON as U+FFFD, as the CLI writes them; the rest of the
// text is as it was.
func TestAPIRepairsInvalidUTF8(t *testing.T) {
	root := t.TempDir()
	id := "20261120T100011.000000Z-utf8bd"
	bad := strings.NewReplacer("<FF>", "\xff", "<FE>", "\xfe", "<C3>", "\xc3").Replace
	writeRawLog(t, root, id,
		bad(`{"seq":1,"ts":"2026-11-20T10:00:11Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":"`+id+`","tactic":"bad<FF>","task":"t<FE> ask"}}`),
		bad(`{"seq":2,"ts":"2026-11-20T10:00:11Z","kind":"dialog_open","dialog":"b1","dialog_open":{"id":"b1","owner":"o<FF>","alias":"main"}}`),
		bad(`{"seq":3,"ts":"2026-11-20T10:00:11Z","kind":"message","dialog":"b1","index":0,"message":{"role":"user","content":"raw <FF><FE> bytes, é and 日本 kept","name":"n<C3>"}}`),
		`{"seq":4,"ts":"2026-11-20T10:00:11Z","kind":"message","dialog":"b1","index":1,"message":{"role":"assistant","content":"all valid: é"}}`,
		`{"seq":5,"ts":"2026-11-20T10:00:11Z","kind":"run_end","run_end":{"status":"ok"}}`,
	)
	h := New(root, Options{})

	var page struct {
		Messages []struct {
			Message struct {
				Content string `json:"content"`
				Name    string `json:"name"`
			} `json:"message"`
			Error string `json:"error"`
		} `json:"messages"`
	}
	body := get(t, h, "/api/runs/"+id+"/dialogs/b1/messages", 200, &page)
	if !utf8.ValidString(body) {
		t.Errorf("messages: the body is not UTF-8:\n%q", body)
	}
	if len(page.Messages) != 2 {
		t.Fatalf("%d messages:\n%s", len(page.Messages), body)
	}
	if m := page.Messages[0]; m.Error != "" || m.Message.Content != "raw \ufffd\ufffd bytes, é and 日本 kept" || m.Message.Name != "n\ufffd" {
		t.Errorf("the message with bad bytes: %+v", m)
	}
	if m := page.Messages[1]; m.Message.Content != "all valid: é" {
		t.Errorf("the valid message: %+v", m)
	}

	var run struct {
		Tactic string `json:"tactic"`
		Task   string `json:"task"`
	}
	body = get(t, h, "/api/runs/"+id, 200, &run)
	if !utf8.ValidString(body) || run.Task != "t\ufffd ask" || run.Tactic != "bad\ufffd" {
		t.Errorf("run: task %q, tactic %q, UTF-8 %v:\n%q", run.Task, run.Tactic, utf8.ValidString(body), body)
	}
	for _, path := range []string{"/api/runs", "/api/runs/" + id + "/tree", "/api/runs/" + id + "/dialogs/b1"} {
		if body := get(t, h, path, 200, nil); !utf8.ValidString(body) || !strings.Contains(body, "\ufffd") {
			t.Errorf("%s: UTF-8 %v, U+FFFD %v:\n%q", path, utf8.ValidString(body), strings.Contains(body, "\ufffd"), body)
		}
	}
}

// A message whose JSON escapes a lone UTF-16 surrogate ("\ud800": valid
// JSON, not Unicode) reaches the API as lllm show -o json prints it: its
// text with U+FFFD, as Go reads it, and its raw values (tool arguments) as
// the log has them. Surrogate pairs and an escaped backslash before "ud800"
// are text, kept.
func TestAPIMessagesLoneSurrogate(t *testing.T) {
	root := t.TempDir()
	id := "20261120T100011.000000Z-surr"
	path := writeRawLog(t, root, id,
		`{"seq":1,"ts":"2026-11-20T10:00:11Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":"`+id+`","tactic":"t"}}`,
		`{"seq":2,"ts":"2026-11-20T10:00:11Z","kind":"dialog_open","dialog":"b1","dialog_open":{"id":"b1","owner":"o\udc00","alias":"main"}}`,
		`{"seq":3,"ts":"2026-11-20T10:00:11Z","kind":"message","dialog":"b1","index":0,"message":{"role":"user","content":"lone \ud800, pair \ud83d\ude00, text \\ud800","name":"n\ud83d"}}`,
		`{"seq":4,"ts":"2026-11-20T10:00:11Z","kind":"message","dialog":"b1","index":1,"message":{"role":"assistant","content":"call \udc00","function_calls":[{"id":"c1","name":"f","arguments":{"x":"\udc00\ud800"}}]}}`,
		`{"seq":5,"ts":"2026-11-20T10:00:11Z","kind":"message","dialog":"b1","index":2,"message":{"role":"user","content":"no surrogate: \\ud800 é"}}`,
		`{"seq":6,"ts":"2026-11-20T10:00:11Z","kind":"run_end","run_end":{"status":"ok"}}`,
	)

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
