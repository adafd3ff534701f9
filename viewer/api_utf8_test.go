package viewer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lllm-go/lllm/logs"
)

// Bytes of a log that are not UTF-8 (in a message, the task, an owner)
// reach the API's JSON as U+FFFD, as the CLI writes them; the rest of the
// text is as it was.
func TestAPIRepairsInvalidUTF8(t *testing.T) {
	root := t.TempDir()
	id := "20261120T100011.000000Z-utf8bd"
	log := strings.Join([]string{
		`{"seq":1,"ts":"2026-11-20T10:00:11Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":"` + id + `","tactic":"bad<FF>","task":"t<FE> ask"}}`,
		`{"seq":2,"ts":"2026-11-20T10:00:11Z","kind":"dialog_open","dialog":"b1","dialog_open":{"id":"b1","owner":"o<FF>","alias":"main"}}`,
		`{"seq":3,"ts":"2026-11-20T10:00:11Z","kind":"message","dialog":"b1","index":0,"message":{"role":"user","content":"raw <FF><FE> bytes, é and 日本 kept","name":"n<C3>"}}`,
		`{"seq":4,"ts":"2026-11-20T10:00:11Z","kind":"message","dialog":"b1","index":1,"message":{"role":"assistant","content":"all valid: é"}}`,
		`{"seq":5,"ts":"2026-11-20T10:00:11Z","kind":"run_end","run_end":{"status":"ok"}}`,
	}, "\n") + "\n"
	log = strings.NewReplacer("<FF>", "\xff", "<FE>", "\xfe", "<C3>", "\xc3").Replace(log)
	if err := os.MkdirAll(filepath.Join(root, id), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, id, logs.EventsFile), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
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
