package viewer

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/lllm-go/lllm/logs"
)

// writeRoles writes, under root, a run whose one dialog has a message of
// each real role and one whose role holds spaces and markup, and returns
// its id.
func writeRoles(t *testing.T, root string, roles []string) string {
	t.Helper()
	id := "20261120T100001.000000Z-roles1"
	lines := []string{
		`{"seq":1,"ts":"2026-11-20T10:00:01Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":"` + id + `","tactic":"roles"}}`,
		`{"seq":2,"ts":"2026-11-20T10:00:01Z","kind":"dialog_open","dialog":"d1","dialog_open":{"id":"d1","owner":"a","alias":"main"}}`,
	}
	for i, role := range roles {
		r, _ := json.Marshal(role)
		lines = append(lines, fmt.Sprintf(`{"seq":%d,"ts":"2026-11-20T10:00:01Z","kind":"message","dialog":"d1","index":%d,"message":{"role":%s,"content":"message %d"}}`, i+3, i, r, i))
	}
	lines = append(lines, fmt.Sprintf(`{"seq":%d,"ts":"2026-11-20T10:00:01Z","kind":"run_end","run_end":{"status":"ok"}}`, len(roles)+3))
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, logs.EventsFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return id
}

// A message whose role is not one word is drawn with the rest of the
// transcript, the real roles keep their colours; a link with a broken
// %-escape says so instead of leaving the run before it on the page.
func TestBrowserOddRoleAndBrokenLink(t *testing.T) {
	root := t.TempDir()
	odd := `assistant <img src=x onerror="document.title='pwned'">`
	roles := []string{"system", "user", odd, "assistant", "tool", "user"}
	id := writeRoles(t, root, roles)
	ctx := newBrowser(t)
	srv := httptest.NewServer(New(root, Options{}))
	defer srv.Close()

	do(t, ctx, "opening the dialog",
		chromedp.Navigate(srv.URL+"/#/run/"+id+"/dialog/d1"),
		chromedp.WaitVisible(chromedp.CSS(`#transcript[data-dialog="d1"] li.msg[data-index="0"]`)))
	waitFor(t, ctx, "every message", fmt.Sprintf(`document.querySelectorAll('#messages li.msg').length === %d`, len(roles)))
	if s := evalString(t, ctx, `document.getElementById('error').hidden ? '' : document.getElementById('error').textContent`); s != "" {
		t.Errorf("error shown: %q", s)
	}
	for i, role := range roles {
		got := evalString(t, ctx, fmt.Sprintf(`document.querySelector('li.msg[data-index="%d"]').dataset.role`, i))
		if got != role {
			t.Errorf("message %d: data-role %q, want %q", i, got, role)
		}
		if s := textOf(t, ctx, fmt.Sprintf(`li.msg[data-index="%d"]`, i)); !strings.Contains(s, fmt.Sprintf("message %d", i)) {
			t.Errorf("message %d reads %q", i, s)
		}
	}
	// The real roles have their own background, the odd one the plain one.
	bg := func(i int) string {
		return evalString(t, ctx, fmt.Sprintf(`getComputedStyle(document.querySelector('li.msg[data-index="%d"]')).backgroundColor`, i))
	}
	want := map[int]string{0: "rgb(241, 236, 250)", 1: "rgb(238, 245, 255)", 2: "rgb(255, 255, 255)", 3: "rgb(243, 248, 239)", 4: "rgb(255, 246, 229)", 5: "rgb(238, 245, 255)"}
	for i, w := range want {
		if got := bg(i); got != w {
			t.Errorf("message %d (%s): background %s, want %s", i, roles[i], got, w)
		}
	}
	if title := evalString(t, ctx, `document.title`); title == "pwned" {
		t.Error("the role's markup ran")
	}

	// A broken link: an error, and nothing of the run left on the page.
	goHash(t, ctx, "#/run/%E0%A4%A")
	waitFor(t, ctx, "the error", `!document.getElementById('error').hidden`)
	if s := textOf(t, ctx, "#error"); !strings.Contains(s, "#/run/%E0%A4%A") || !strings.Contains(s, "not a link of this viewer") {
		t.Errorf("the error shown: %q", s)
	}
	if n := evalInt(t, ctx, `document.querySelectorAll('#app *').length + document.querySelectorAll('#crumbs *').length`); n != 0 {
		t.Errorf("%d elements left on the page:\n%s", n, pageText(ctx))
	}
	// A good link after it works as ever.
	goHash(t, ctx, "#/run/"+id+"/dialog/d1")
	do(t, ctx, "opening the dialog again",
		chromedp.WaitVisible(chromedp.CSS(`#transcript[data-dialog="d1"] li.msg[data-index="5"]`)))
	if !evalBool(t, ctx, `document.getElementById('error').hidden`) {
		t.Errorf("the error stays:\n%s", pageText(ctx))
	}
}
