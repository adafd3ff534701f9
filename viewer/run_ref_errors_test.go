package viewer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
)

// A run named by a prefix or suffix, as the CLI names it: a log that
// cannot be read says why (422, as for its full id), a prefix of several
// runs says so (400), and only a name no run has is "no run" (404).
func TestRunRefErrors(t *testing.T) {
	root := t.TempDir()
	for range 2 {
		w, _, err := logs.Create(root, logs.RunStart{Tactic: "idle"}, logs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
			t.Fatal(err)
		}
	}
	major := "20261120T100006.000000Z-major2"
	if err := os.MkdirAll(filepath.Join(root, major), 0o755); err != nil {
		t.Fatal(err)
	}
	start := `{"seq":1,"ts":"2026-11-20T10:00:06Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"2.0","run_id":"` + major + `","tactic":"future"}}` + "\n"
	if err := os.WriteFile(filepath.Join(root, major, logs.EventsFile), []byte(start), 0o644); err != nil {
		t.Fatal(err)
	}
	h := New(root, Options{})

	var full, suffix errBody
	get(t, h, "/api/runs/"+major, 422, &full)
	get(t, h, "/api/runs/major2", 422, &suffix)
	if !strings.Contains(full.Error, "2.0") || suffix.Error != full.Error {
		t.Errorf("by suffix: %q; by full id: %q; want the same, naming version 2.0", suffix.Error, full.Error)
	}

	var amb errBody
	get(t, h, "/api/runs/20", 400, &amb)
	if !strings.Contains(amb.Error, `"20" matches 3 runs`) {
		t.Errorf("a prefix of three runs: %q", amb.Error)
	}

	var none errBody
	get(t, h, "/api/runs/nosuch", 404, &none)
	if !strings.Contains(none.Error, `no run "nosuch"`) {
		t.Errorf("no such run: %q", none.Error)
	}
}
