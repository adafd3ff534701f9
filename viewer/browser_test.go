package viewer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/lllm-go/lllm/logs"
)

// chromium finds the browser for the browser tests: $LLLM_CHROMIUM, else
// Debian's chromium.
func chromium() string {
	if p := os.Getenv("LLLM_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts a headless Chromium for t, or skips t loudly when
// there is none.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromium()
	if path == "" {
		t.Skip("\n*****************************************************************\n" +
			"* BROWSER TESTS SKIPPED: no Chromium found (/usr/bin/chromium).  *\n" +
			"* Install the Debian package 'chromium' (.ci/run does) or set    *\n" +
			"* LLLM_CHROMIUM to a Chromium binary.                            *\n" +
			"*****************************************************************")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	t.Cleanup(cancel)
	// Without the background-networking flags, Chromium in a closed
	// network hangs on its own requests.
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
	)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return bctx
}

// textOf is the visible text of the first element matching sel.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		t.Fatalf("%s: %v\npage:\n%s", what, err, pageText(ctx))
	}
}

// waitFor waits until the JavaScript predicate holds.
func waitFor(t *testing.T, ctx context.Context, what, predicate string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, predicate, err)
	}
}

// The runs list, then a run, its tree, a forked dialog and its transcript,
// as a user clicks through them; then the failed attempts and an image.
func TestBrowserWalkthrough(t *testing.T) {
	f := newFixture(t)
	ctx := newBrowser(t)
	srv := httptest.NewServer(New(f.root, Options{}))
	defer srv.Close()

	// The runs list: three runs, filterable by status.
	do(t, ctx, "opening the runs list",
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`tr.run-row[data-run="`+f.bestOfN+`"] a.run-link`)))
	if s := textOf(t, ctx, "#runs-table"); !strings.Contains(s, "best_of_n") || !strings.Contains(s, "retrying") || !strings.Contains(s, "vision") {
		t.Fatalf("runs table:\n%s", s)
	}
	setSelect := `(v) => { const s = document.querySelector('#filter-status'); s.value = v; s.dispatchEvent(new Event('change')); return s.value === v; }`
	if !evalBool(t, ctx, `(`+setSelect+`)('failed')`) {
		t.Fatal("the status filter has no 'failed' option")
	}
	waitFor(t, ctx, "one failed run", `document.querySelectorAll('tr.run-row').length === 1 && document.querySelector('tr.run-row').dataset.run === '`+f.images+`'`)
	evalBool(t, ctx, `(`+setSelect+`)('')`)
	waitFor(t, ctx, "three runs again", `document.querySelectorAll('tr.run-row').length === 3`)
	// Sorting by tactic, ascending.
	do(t, ctx, "sorting by tactic", chromedp.Click(chromedp.CSS(`th[data-key="tactic"]`)))
	waitFor(t, ctx, "runs sorted by tactic", `[...document.querySelectorAll('tr.run-row')].map(r => r.dataset.tactic).join() === 'best_of_n,retrying,vision'`)

	// The text filter finds a run by the end of its run_id.
	setText := `(v) => { const i = document.querySelector('#filter-text'); i.value = v; i.dispatchEvent(new Event('input')); return i.value === v; }`
	evalBool(t, ctx, `(`+setText+`)('`+f.retries[len(f.retries)-6:]+`')`)
	waitFor(t, ctx, "the run with that run_id", `document.querySelectorAll('tr.run-row').length === 1 && document.querySelector('tr.run-row').dataset.run === '`+f.retries+`'`)
	evalBool(t, ctx, `(`+setText+`)('')`)
	waitFor(t, ctx, "three runs again", `document.querySelectorAll('tr.run-row').length === 3`)

	// Click the best_of_n run, expand the solver's root, click try2.
	do(t, ctx, "opening the run",
		chromedp.Click(chromedp.CSS(`tr.run-row[data-run="`+f.bestOfN+`"] a.run-link`)),
		chromedp.WaitVisible(chromedp.CSS(`#tree li.node`)))
	// The head names the run by its run_id, with its dir on hover.
	waitFor(t, ctx, "the run's head", fmt.Sprintf(`(() => { const h = document.querySelector('#run-head h2'); return h.textContent === %q && h.title === %q; })()`,
		f.bestOfN, filepath.Join(f.root, f.bestOfN)))
	solver := evalString(t, ctx, `document.querySelector('#tree li.node').dataset.id`)
	do(t, ctx, "expanding the solver's dialog",
		chromedp.Click(chromedp.CSS(`#tree li[data-id="`+solver+`"] > .node-row > button.toggle`)),
		chromedp.WaitVisible(chromedp.CSS(`#tree li[data-id="`+f.try2+`"]`)))
	if s := textOf(t, ctx, `#tree li[data-id="`+f.try2+`"] > .node-row`); !strings.Contains(s, "try2") || !strings.Contains(s, "split@2") {
		t.Fatalf("try2's tree row: %q", s)
	}
	do(t, ctx, "opening try2",
		chromedp.Click(chromedp.CSS(`#tree li[data-id="`+f.try2+`"] > .node-row > a.node-label`)),
		chromedp.WaitVisible(chromedp.CSS(`#transcript[data-dialog="`+f.try2+`"] li.msg[data-index="2"]`)))
	transcript := textOf(t, ctx, "#transcript")
	for _, want := range []string{
		"You solve tasks. Give the answer and one line of justification.", // inherited from the root
		"Name a prime between 10 and 20.",
		"13: it has no divisor but 1 and itself.", // try2's own reply
		"3 messages (1 own)",
		"in 31 · out 12", // usage
	} {
		if !strings.Contains(transcript, want) {
			t.Errorf("transcript lacks %q:\n%s", want, transcript)
		}
	}
	if n := evalInt(t, ctx, `document.querySelectorAll('#messages li.msg.inherited').length`); n != 2 {
		t.Errorf("%d inherited messages marked, want 2", n)
	}
	if strings.Contains(transcript, "15 is prime.") {
		t.Errorf("try2's transcript shows try1's reply:\n%s", transcript)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	savePNG(t, "transcript.png", shot)

	// The failed attempts: opening one by URL expands the tree down to it.
	goHash(t, ctx, "#/run/"+f.retries+"/dialog/"+f.parseFailed)
	do(t, ctx, "opening a failed attempt",
		chromedp.WaitVisible(chromedp.CSS(`#tree li.node.failed[data-id="`+f.parseFailed+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#transcript[data-dialog="`+f.parseFailed+`"] li.msg[data-index="2"]`)),
		chromedp.Click(chromedp.CSS(`#tree li[data-id="`+f.parseFailed+`"] > .node-row > button.toggle`)),
		chromedp.WaitVisible(chromedp.CSS(`#tree li[data-id="`+f.callFailed+`"]`)))
	if s := textOf(t, ctx, `#tree li[data-id="`+f.parseFailed+`"] > .node-row`); !strings.Contains(s, "✗ retried") || !strings.Contains(s, "1 reply cut at max_tokens") {
		t.Errorf("the unparsable attempt's row: %q", s)
	}
	if s := textOf(t, ctx, `#tree li[data-id="`+f.callFailed+`"] > .node-row`); !strings.Contains(s, "1 failed call") || !strings.Contains(s, "ok") || strings.Contains(s, "cut at max_tokens") {
		t.Errorf("the attempt with a failed call: %q", s)
	}
	if s := textOf(t, ctx, "#transcript"); !strings.Contains(s, "four, I think") || !strings.Contains(s, "1 reply cut at max_tokens on this dialog") {
		t.Errorf("the failed attempt's transcript:\n%s", s)
	}
	do(t, ctx, "opening the attempt whose call failed",
		chromedp.Click(chromedp.CSS(`#tree li[data-id="`+f.callFailed+`"] > .node-row > a.node-label`)),
		chromedp.WaitVisible(chromedp.CSS(`#transcript[data-dialog="`+f.callFailed+`"] li.msg[data-index="4"]`)))
	if s := textOf(t, ctx, "#transcript"); !strings.Contains(s, "server: mock: internal server error") || !strings.Contains(s, "parsed output") || !strings.Contains(s, "cached 16") {
		t.Errorf("the retried attempt's transcript:\n%s", s)
	}
	// The guest agent's turn.
	goHash(t, ctx, "#/run/"+f.retries+"/dialog/"+f.guest)
	do(t, ctx, "opening the notes fork",
		chromedp.WaitVisible(chromedp.CSS(`#transcript[data-dialog="`+f.guest+`"] li.msg[data-index="3"]`)))
	if s := textOf(t, ctx, `li.msg[data-index="3"]`); !strings.Contains(s, "agent critic") || !strings.Contains(s, "Correct, and well formatted.") {
		t.Errorf("the guest's message: %q", s)
	}

	// The image run: the image is an image, the tool round is shown.
	goHash(t, ctx, "#/run/"+f.images+"/dialog/"+f.imageDlg)
	do(t, ctx, "opening the image run",
		chromedp.WaitVisible(chromedp.CSS(`#transcript li.msg[data-index="4"]`)))
	waitFor(t, ctx, "the image to decode", `(() => { const i = document.querySelector('#messages img.msg-image'); return i && i.complete && i.naturalWidth === 1; })()`)
	if s := textOf(t, ctx, "#transcript"); !strings.Contains(s, `→ area({"w":3,"h":4})`) || !strings.Contains(s, "← 12") || !strings.Contains(s, "result of call_a") {
		t.Errorf("the tool round:\n%s", s)
	}
	if s := textOf(t, ctx, "#run-head"); !strings.Contains(s, "the judge was not reached") {
		t.Errorf("the failed run's head:\n%s", s)
	}
	shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	savePNG(t, "image-run.png", shot)

	// A run that cannot be read shows its error, and the page survives.
	dir := filepath.Join(f.root, "newer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, logs.EventsFile), []byte(`{"seq":1,"ts":"2030-01-01T00:00:00Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"2.0","run_id":"newer"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	goHash(t, ctx, "#/run/newer")
	do(t, ctx, "opening an unreadable run",
		chromedp.WaitVisible(chromedp.CSS(`#error`)))
	if s := textOf(t, ctx, "#error"); !strings.Contains(s, "log format version 2.0 is not readable") {
		t.Errorf("the error shown: %q", s)
	}
}

// A run still being written: new messages and forks appear on the page
// without a reload, and the live mark goes when the run ends.
func TestBrowserLiveUpdate(t *testing.T) {
	root := t.TempDir()
	_, run, d := liveRun(t, root, "the first message")

	ctx := newBrowser(t)
	srv := httptest.NewServer(New(root, Options{}))
	defer srv.Close()
	do(t, ctx, "opening the running run",
		chromedp.Navigate(srv.URL+"/#/run/"+run.ID+"/dialog/"+d.ID()),
		chromedp.WaitVisible(chromedp.CSS(`li.msg[data-index="0"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#live`)))

	// Half a record first, as a reader sees a write in progress.
	rec := fmt.Sprintf(`{"seq":3,"ts":"2026-01-01T00:00:00Z","kind":"message","dialog":%q,"index":1,"message":{"role":"assistant","name":"coder","content":"a reply written live"}}`+"\n", d.ID())
	appendLine(t, root, run.ID, rec[:50])
	time.Sleep(1500 * time.Millisecond) // a poll or two
	if n := evalInt(t, ctx, `document.querySelectorAll('#messages li.msg').length`); n != 1 {
		t.Fatalf("%d messages shown with a torn last line, want 1", n)
	}
	appendLine(t, root, run.ID, rec[50:])
	waitFor(t, ctx, "the live reply", `(document.querySelector('#messages').innerText || '').includes('a reply written live')`)

	// The Writer's own view of the file is now behind (we wrote a record
	// by hand), so continue with a fresh log line by line through it: a
	// fork appears in the tree.
	child := fmt.Sprintf(`{"seq":4,"ts":"2026-01-01T00:00:01Z","kind":"fork","dialog":"c0ffee0000000001","fork":{"id":"c0ffee0000000001","owner":"coder","alias":"main#1","parent_id":%q,"split_point":2,"last_n":0,"first_k":0,"parent_len":2,"depth":1}}`+"\n", d.ID())
	appendLine(t, root, run.ID, child)
	waitFor(t, ctx, "the new fork in the tree", `!!document.querySelector('#tree li[data-id="c0ffee0000000001"]') || (document.querySelector('#tree li[data-id="`+d.ID()+`"] button.toggle') || {}).textContent === '▸'`)
	do(t, ctx, "expanding the root", chromedp.Click(chromedp.CSS(`#tree li[data-id="`+d.ID()+`"] > .node-row > button.toggle`)),
		chromedp.WaitVisible(chromedp.CSS(`#tree li[data-id="c0ffee0000000001"]`)))
	if s := textOf(t, ctx, `#tree li[data-id="c0ffee0000000001"] > .node-row`); !strings.Contains(s, "pending") {
		t.Errorf("a working copy of a running run: %q", s)
	}
	appendLine(t, root, run.ID, `{"seq":5,"ts":"2026-01-01T00:00:02Z","kind":"run_end","run_end":{"status":"ok","totals":{"model_calls":0,"tool_calls":0,"dialogs":2,"messages":2,"cost":{},"duration_ms":1}}}`+"\n")
	waitFor(t, ctx, "the live mark to go", `document.querySelector('#live').hidden && document.querySelector('#run-head .status').textContent === 'ok'`)
	if s := textOf(t, ctx, `#tree li[data-id="c0ffee0000000001"] > .node-row`); !strings.Contains(s, "✗ failed") {
		t.Errorf("an unused working copy of an ended run: %q", s)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	savePNG(t, "live.png", shot)
}

// pageText is what the page shows, for failure messages.
func pageText(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
	if err != nil {
		return fmt.Sprintf("(unavailable: %v)", err)
	}
	return s
}

// goHash moves the page to another view by its URL fragment, as a link
// or the address bar would (Navigate waits for a page load that a
// fragment change never makes).
func goHash(t *testing.T, ctx context.Context, hash string) {
	t.Helper()
	evalBool(t, ctx, fmt.Sprintf(`(location.hash = %q, true)`, hash))
}

func evalString(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return s
}

func evalBool(t *testing.T, ctx context.Context, expr string) bool {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return b
}

func evalInt(t *testing.T, ctx context.Context, expr string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return n
}

// savePNG checks that data is a non-empty PNG and saves it under t's
// temporary directory.
func savePNG(t *testing.T, name string, data []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Fatalf("screenshot %s is %v", name, b)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() == 0 {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, st.Size())
	if dir := os.Getenv("LLLM_SCREENSHOT_DIR"); dir != "" {
		// To look at them after the test: the test's own directory goes.
		_ = os.WriteFile(filepath.Join(dir, name), data, 0o644)
	}
}

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
