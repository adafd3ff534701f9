package viewer

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/lllm-go/lllm/logs"
)

// A reply's reasoning is shown folded above its text, block after block,
// a redacted block as such (never its data), and as text, not markup.
func TestBrowserReasoning(t *testing.T) {
	root := t.TempDir()
	id := "20261126T100001.000000Z-think1"
	lines := []string{
		`{"seq":1,"ts":"2026-11-26T10:00:01Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.7","run_id":"` + id + `","tactic":"chat"}}`,
		`{"seq":2,"ts":"2026-11-26T10:00:01Z","kind":"dialog_open","dialog":"d1","dialog_open":{"id":"d1","owner":"a","alias":"main"}}`,
		`{"seq":3,"ts":"2026-11-26T10:00:01Z","kind":"message","dialog":"d1","index":0,"message":{"role":"user","content":"6*7?"}}`,
		`{"seq":4,"ts":"2026-11-26T10:00:01Z","kind":"message","dialog":"d1","index":1,"message":{"role":"assistant","content":"42",` +
			`"reasoning":[{"text":"six <b>times</b> seven","signature":"sig-1"},{"redacted":"EmwKSECRET"},{"text":"is 42"}]}}`,
		`{"seq":5,"ts":"2026-11-26T10:00:01Z","kind":"run_end","run_end":{"status":"ok"}}`,
	}
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, logs.EventsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := newBrowser(t)
	srv := httptest.NewServer(New(root, Options{}))
	defer srv.Close()

	do(t, ctx, "opening the dialog",
		chromedp.Navigate(srv.URL+"/#/run/"+id+"/dialog/d1"),
		chromedp.WaitVisible(chromedp.CSS(`#transcript[data-dialog="d1"] li.msg[data-index="1"]`)))
	if evalBool(t, ctx, `document.querySelector('li.msg[data-index="0"] details.reasoning') !== null`) {
		t.Error("a message without reasoning shows a reasoning fold")
	}
	want := "six <b>times</b> seven\n\n[redacted by the provider]\n\nis 42"
	if got := evalString(t, ctx, `document.querySelector('li.msg[data-index="1"] details.reasoning pre').textContent`); got != want {
		t.Errorf("reasoning reads %q, want %q", got, want)
	}
	if evalBool(t, ctx, `document.querySelector('li.msg[data-index="1"] details.reasoning').open`) {
		t.Error("the reasoning is open: it should start folded")
	}
	if evalBool(t, ctx, `document.querySelector('li.msg[data-index="1"] b') !== null`) {
		t.Error("the reasoning's markup was rendered")
	}
	if s := textOf(t, ctx, `li.msg[data-index="1"]`); strings.Contains(s, "SECRET") || !strings.Contains(s, "42") {
		t.Errorf("message 1 reads %q", s)
	}
}
