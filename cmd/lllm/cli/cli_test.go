package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// result is what one run of the command line did.
type result struct {
	code           int
	stdout, stderr string
}

func lllm(t *testing.T, args ...string) result {
	t.Helper()
	return lllmCtx(t, context.Background(), args...)
}

func lllmCtx(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Execute(ctx, args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// wantError checks a failed command: the exit code, nothing on stdout, and
// one "lllm: " line on stderr (plus the usage hint for a usage error)
// containing every one of subs.
func wantError(t *testing.T, r result, code int, subs ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\n%v", r.code, code, r)
	}
	if r.stdout != "" {
		t.Errorf("stdout is not empty:\n%s", r.stdout)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	wantLines := 1
	if code == ExitUsage {
		wantLines = 2
		if !strings.HasPrefix(lines[len(lines)-1], "Run 'lllm") {
			t.Errorf("usage error without the usage hint:\n%s", r.stderr)
		}
	}
	if len(lines) != wantLines || !strings.HasPrefix(lines[0], "lllm: ") {
		t.Errorf("stderr is not %d line(s) starting with \"lllm: \":\n%s", wantLines, r.stderr)
	}
	for _, s := range subs {
		if !strings.Contains(lines[0], s) {
			t.Errorf("error %q does not mention %q", lines[0], s)
		}
	}
}

// fixture is a finished run with five dialogs:
//
//	main (coder) ── draft (partial fork) ── grand (full fork, an image)
//	             └─ tools (full fork, a tool call)
//	judge
type fixture struct {
	root, runID                      string
	main, draft, grand, tools, judge *dialog.Dialog
	imageBytes                       int
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func newFixture(t *testing.T, root string) *fixture {
	t.Helper()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "fixture"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{root: root, runID: run.ID}
	d := must[*dialog.Dialog](t)
	m := must[*dialog.Message](t)

	f.main = d(dialog.New("coder", dialog.WithSink(w), dialog.WithAlias("main")))
	m(f.main.PutText("You are a coder.", dialog.AsRole(dialog.RoleSystem), dialog.From("system")))
	m(f.main.PutText("What is 2+2?"))
	m(f.main.Append(dialog.Message{
		Role: dialog.RoleAssistant, Name: "coder", Content: "<answer>4</answer>",
		Parsed: json.RawMessage(`{"answer": "4"}`), Model: "m1",
		Usage: dialog.Usage{InputTokens: 100, OutputTokens: 20}, USD: 0.0012,
	}))
	m(f.main.PutText("line one\nline two"))

	// first 1 + last 2 of 4 messages: split at 3.
	f.draft = d(f.main.Fork(2, 1, dialog.WithAlias("draft")))
	m(f.draft.PutText("Shorter, please."))
	f.tools = d(f.main.Fork(0, 0))
	m(f.tools.Append(dialog.Message{
		Role: dialog.RoleToolCall, Name: "coder",
		FunctionCalls: []dialog.FunctionCall{{ID: "call_1", Name: "search", Arguments: json.RawMessage(`{"q": "x"}`), Result: "found x"}},
		Usage:         dialog.Usage{InputTokens: 50, OutputTokens: 5}, USD: 0.0005,
	}))
	m(f.tools.Append(dialog.Message{Role: dialog.RoleTool, Name: "search", ToolCallID: "call_1", Content: "found x"}))
	f.grand = d(f.draft.Fork(0, 0))
	png := pngBytes(t)
	f.imageBytes = len(png)
	m(f.grand.PutImage(dialog.ImageBytes(png), "the loss curve"))
	f.judge = d(dialog.New("judge", dialog.WithSink(w)))
	m(f.judge.PutText("Judge this."))

	// The two replies' model calls; run_end sums them.
	for _, c := range []struct {
		d     *dialog.Dialog
		usage dialog.Usage
		usd   float64
	}{{f.main, dialog.Usage{InputTokens: 100, OutputTokens: 20}, 0.0012}, {f.tools, dialog.Usage{InputTokens: 50, OutputTokens: 5}, 0.0005}} {
		rec := &logs.Record{Kind: logs.KindModelCall, Dialog: c.d.ID(), ModelCall: &logs.ModelCall{Agent: "coder", Model: "m1", Usage: c.usage, USD: c.usd}}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	return f
}

func short(d *dialog.Dialog) string { return d.ID()[:8] }

func TestTreeText(t *testing.T) {
	f := newFixture(t, t.TempDir())
	r := lllm(t, "tree", f.runID, "--log-dir", f.root)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("tree failed:\n%v", r)
	}
	want := []string{
		fmt.Sprintf("[%s] owner=coder alias=main msgs=4 tokens=120 usd=$0.0012", short(f.main)),
		fmt.Sprintf("  [%s] owner=coder alias=draft msgs=4 split@3 (last_n=2, first_k=1)", short(f.draft)),
		fmt.Sprintf("    [%s] owner=coder msgs=5 split@4 (last_n=0, first_k=0)", short(f.grand)),
		fmt.Sprintf("  [%s] owner=coder msgs=6 split@4 (last_n=0, first_k=0) tokens=55 usd=$0.0005", short(f.tools)),
		fmt.Sprintf("[%s] owner=judge msgs=1", short(f.judge)),
	}
	if got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The same run by "latest", by its run directory and by its suffix.
	for _, ref := range []string{"latest", filepath.Join(f.root, f.runID), f.runID[len(f.runID)-6:]} {
		if r2 := lllm(t, "tree", ref, "--log-dir", f.root); r2.stdout != r.stdout {
			t.Errorf("tree %s:\n%v\nwant the same as by id", ref, r2)
		}
	}
}

func TestTreeDialogAndDepth(t *testing.T) {
	f := newFixture(t, t.TempDir())
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--depth", "0"}, []string{
			fmt.Sprintf("[%s] owner=coder alias=main msgs=4 tokens=120 usd=$0.0012", short(f.main)),
			fmt.Sprintf("[%s] owner=judge msgs=1", short(f.judge)),
		}},
		{[]string{"--depth", "1"}, []string{
			fmt.Sprintf("[%s] owner=coder alias=main msgs=4 tokens=120 usd=$0.0012", short(f.main)),
			fmt.Sprintf("  [%s] owner=coder alias=draft msgs=4 split@3 (last_n=2, first_k=1)", short(f.draft)),
			fmt.Sprintf("  [%s] owner=coder msgs=6 split@4 (last_n=0, first_k=0) tokens=55 usd=$0.0005", short(f.tools)),
			fmt.Sprintf("[%s] owner=judge msgs=1", short(f.judge)),
		}},
		// A subtree starts unindented, by full id or by prefix.
		{[]string{"--dialog", f.draft.ID()}, []string{
			fmt.Sprintf("[%s] owner=coder alias=draft msgs=4 split@3 (last_n=2, first_k=1)", short(f.draft)),
			fmt.Sprintf("  [%s] owner=coder msgs=5 split@4 (last_n=0, first_k=0)", short(f.grand)),
		}},
		{[]string{"--dialog", short(f.draft), "--depth", "0"}, []string{
			fmt.Sprintf("[%s] owner=coder alias=draft msgs=4 split@3 (last_n=2, first_k=1)", short(f.draft)),
		}},
		{[]string{"--dialog", short(f.tools), "--depth", "-1"}, []string{
			fmt.Sprintf("[%s] owner=coder msgs=6 split@4 (last_n=0, first_k=0) tokens=55 usd=$0.0005", short(f.tools)),
		}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := lllm(t, append([]string{"tree", f.runID, "--log-dir", f.root}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("%v", r)
			}
			if got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"); !slices.Equal(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}

	r := lllm(t, "tree", f.runID, "--log-dir", f.root, "--dialog", "ffffffffff")
	wantError(t, r, ExitError, `"ffffffffff"`, f.runID, "lllm tree "+f.runID)
}

type treeNodeJSON struct {
	ID         string         `json:"id"`
	Owner      string         `json:"owner"`
	Alias      string         `json:"alias"`
	ParentID   string         `json:"parent_id"`
	SplitPoint int            `json:"split_point"`
	LastN      int            `json:"last_n"`
	FirstK     int            `json:"first_k"`
	Depth      int            `json:"depth"`
	Messages   int            `json:"messages"`
	Children   []treeNodeJSON `json:"children"`
	Cost       dialog.Cost    `json:"cost"`
}

func TestTreeJSON(t *testing.T) {
	f := newFixture(t, t.TempDir())
	r := lllm(t, "tree", "latest", "--log-dir", f.root, "--format", "json")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	var got struct {
		RunID   string         `json:"run_id"`
		Dir     string         `json:"dir"`
		Dialogs []treeNodeJSON `json:"dialogs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if got.RunID != f.runID || got.Dir != filepath.Join(f.root, f.runID) {
		t.Errorf("run_id %q, dir %q, want %q in %s", got.RunID, got.Dir, f.runID, f.root)
	}
	if len(got.Dialogs) != 2 || got.Dialogs[0].ID != f.main.ID() || got.Dialogs[1].ID != f.judge.ID() {
		t.Fatalf("roots %+v, want main then judge", got.Dialogs)
	}
	main := got.Dialogs[0]
	if main.Owner != "coder" || main.Alias != "main" || main.ParentID != "" || main.Messages != 4 || main.Depth != 0 ||
		main.Cost.USD != 0.0012 || main.Cost.Total() != 120 {
		t.Errorf("main node %+v", main)
	}
	if len(main.Children) != 2 {
		t.Fatalf("main has %d children, want 2", len(main.Children))
	}
	draft, tools := main.Children[0], main.Children[1]
	if draft.ID != f.draft.ID() || draft.ParentID != f.main.ID() || draft.SplitPoint != 3 || draft.LastN != 2 ||
		draft.FirstK != 1 || draft.Depth != 1 || draft.Messages != 4 || draft.Alias != "draft" {
		t.Errorf("draft node %+v", draft)
	}
	if tools.ID != f.tools.ID() || tools.Messages != 6 || len(tools.Children) != 0 {
		t.Errorf("tools node %+v", tools)
	}
	if len(draft.Children) != 1 || draft.Children[0].ID != f.grand.ID() || draft.Children[0].Depth != 2 {
		t.Errorf("draft's children %+v, want grand at depth 2", draft.Children)
	}

	// Every key is there, children an array even when empty.
	var raw struct {
		Dialogs []map[string]json.RawMessage `json:"dialogs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	judge := raw.Dialogs[1]
	for _, k := range []string{"id", "owner", "alias", "parent_id", "split_point", "last_n", "first_k", "depth", "messages", "children", "cost"} {
		if _, ok := judge[k]; !ok {
			t.Errorf("judge node lacks %q: %v", k, judge)
		}
	}
	if string(judge["children"]) != "[]" {
		t.Errorf("judge children = %s, want []", judge["children"])
	}
	if !strings.HasPrefix(r.stdout, "{\n  \"run_id\"") {
		t.Errorf("JSON is not pretty-printed:\n%s", r.stdout)
	}

	// --dialog and --depth apply to JSON too.
	r = lllm(t, "tree", f.runID, "--log-dir", f.root, "-o", "json", "--dialog", short(f.draft), "--depth", "0")
	got.Dialogs = nil
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%v", err, r)
	}
	if len(got.Dialogs) != 1 || got.Dialogs[0].ID != f.draft.ID() || len(got.Dialogs[0].Children) != 0 {
		t.Errorf("subtree JSON %+v, want only draft", got.Dialogs)
	}
}

func TestShowText(t *testing.T) {
	f := newFixture(t, t.TempDir())
	r := lllm(t, "show", f.runID, "--log-dir", f.root)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%v", r)
	}
	// Headers in tree order.
	headers := []string{
		fmt.Sprintf("── dialog %s owner=coder alias=main ──", short(f.main)),
		fmt.Sprintf("── dialog %s owner=coder alias=draft (fork of %s at 3: first 1 + last 2 of 4) ──", short(f.draft), short(f.main)),
		fmt.Sprintf("── dialog %s owner=coder (fork of %s at 4) ──", short(f.grand), short(f.draft)),
		fmt.Sprintf("── dialog %s owner=coder (fork of %s at 4) ──", short(f.tools), short(f.main)),
		fmt.Sprintf("── dialog %s owner=judge ──", short(f.judge)),
	}
	var gotHeaders []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "── ") {
			gotHeaders = append(gotHeaders, l)
		}
	}
	if !slices.Equal(gotHeaders, headers) {
		t.Errorf("headers:\n%s\nwant:\n%s", strings.Join(gotHeaders, "\n"), strings.Join(headers, "\n"))
	}

	mainTranscript := strings.Join([]string{
		headers[0],
		"[0] system: You are a coder.",
		"[1] user: What is 2+2?",
		"[2] assistant coder: <answer>4</answer>",
		`    parsed: {"answer":"4"}`,
		"    (model=m1 in=100 out=20 usd=$0.0012)",
		"[3] user:",
		"    line one",
		"    line two",
		"",
	}, "\n")
	if !strings.HasPrefix(r.stdout, mainTranscript) {
		t.Errorf("show starts:\n%s\nwant:\n%s", r.stdout[:min(len(r.stdout), len(mainTranscript)+200)], mainTranscript)
	}
	// A blank line between transcripts.
	if !strings.Contains(r.stdout, "    line two\n\n"+headers[1]+"\n") {
		t.Errorf("no blank line before the draft's header:\n%s", r.stdout)
	}
	toolsTranscript := strings.Join([]string{
		"[4] tool_call coder:",
		`    → search({"q":"x"}) [call_1]`,
		"      ← found x",
		"    (in=50 out=5 usd=$0.0005)",
		"[5] tool search (call call_1): found x",
	}, "\n")
	if !strings.Contains(r.stdout, toolsTranscript) {
		t.Errorf("show lacks the tool call:\n%s\nin:\n%s", toolsTranscript, r.stdout)
	}
	image := strings.Join([]string{
		"[4] user:",
		"    the loss curve",
		fmt.Sprintf("    [image image/png, %d bytes]", f.imageBytes),
	}, "\n")
	if !strings.Contains(r.stdout, image) {
		t.Errorf("show lacks the image:\n%s\nin:\n%s", image, r.stdout)
	}
	// The draft keeps the system prompt and the last two messages.
	draft := strings.Join([]string{
		headers[1],
		"[0] system: You are a coder.",
		"[1] assistant coder: <answer>4</answer>",
	}, "\n")
	if !strings.Contains(r.stdout, draft) {
		t.Errorf("show lacks the draft's start:\n%s", draft)
	}

	// One dialog, by prefix.
	r = lllm(t, "show", f.runID, short(f.judge), "--log-dir", f.root)
	if want := headers[4] + "\n[0] user: Judge this.\n"; r.code != 0 || r.stdout != want {
		t.Errorf("show judge:\n%v\nwant stdout:\n%s", r, want)
	}
}

func TestShowJSON(t *testing.T) {
	f := newFixture(t, t.TempDir())
	r := lllm(t, "show", f.runID, "--log-dir", f.root, "-o", "json")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	var got []struct {
		RunID    string            `json:"run_id"`
		Node     dialog.TreeNode   `json:"node"`
		Messages []*dialog.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	wantIDs := []string{f.main.ID(), f.draft.ID(), f.grand.ID(), f.tools.ID(), f.judge.ID()}
	var ids []string
	for _, d := range got {
		ids = append(ids, d.Node.ID)
		if d.RunID != f.runID {
			t.Errorf("dialog %s: run_id %q, want %q", d.Node.ID, d.RunID, f.runID)
		}
	}
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("dialogs %v, want %v", ids, wantIDs)
	}
	if len(got[0].Messages) != 4 || got[0].Messages[2].Content != "<answer>4</answer>" || got[0].Messages[2].Usage.InputTokens != 100 {
		t.Errorf("main messages %+v", got[0].Messages)
	}
	var parsed map[string]string
	if err := got[0].Messages[2].ParsedInto(&parsed); err != nil || parsed["answer"] != "4" {
		t.Errorf("parsed %v, %v", parsed, err)
	}
	if img := got[2].Messages[4].Parts; len(img) != 2 || img[1].Image == nil || len(img[1].Image.Data) != f.imageBytes {
		t.Errorf("image message parts %+v", img)
	}

	r = lllm(t, "show", f.runID, f.tools.ID(), "--log-dir", f.root, "--output", "json")
	got = nil
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%v", err, r)
	}
	if len(got) != 1 || got[0].Node.ID != f.tools.ID() || len(got[0].Messages) != 6 ||
		got[0].Messages[4].FunctionCalls[0].Name != "search" {
		t.Errorf("show one dialog as JSON: %+v", got)
	}
}

func TestShowUnknownDialog(t *testing.T) {
	f := newFixture(t, t.TempDir())
	r := lllm(t, "show", "latest", "0123456789", "--log-dir", f.root)
	wantError(t, r, ExitError, `"0123456789"`, "lllm tree latest --log-dir "+f.root)
}

func TestRuns(t *testing.T) {
	root := t.TempDir()
	ok := newFixture(t, root)

	// A failed run, and one still running (no run_end).
	w, failed, err := logs.Create(root, logs.RunStart{Tactic: "broken"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusFailed, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	w, running, err := logs.Create(root, logs.RunStart{Tactic: "slow"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() }) // still being written while lllm runs looks
	// One whose log is not ours; it sorts last.
	junk := filepath.Join(root, "99991231T000000.000000Z-junk00")
	if err := os.Mkdir(junk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(junk, logs.EventsFile), []byte("hello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := lllm(t, "runs", "--log-dir", root)
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("want a header and 4 rows:\n%s", r.stdout)
	}
	if h := strings.Fields(lines[0]); !slices.Equal(h, []string{"ID", "TACTIC", "STATUS", "STARTED", "DURATION", "DIALOGS", "MODEL", "CALLS", "TOKENS", "COST", "TASK"}) {
		t.Errorf("header %q", lines[0])
	}
	for i, l := range lines {
		if strings.TrimRight(l, " ") != l {
			t.Errorf("line %d has trailing spaces: %q", i, l)
		}
	}
	// Newest last; the columns line up under the header.
	col := strings.Index(lines[0], "STATUS")
	for i, want := range []struct{ id, tactic, status string }{
		{ok.runID, "fixture", "ok"}, {failed.ID, "broken", "failed"}, {running.ID, "slow", "running"},
		{filepath.Base(junk), "-", "unreadable"},
	} {
		fs := strings.Fields(lines[i+1])
		if fs[0] != want.id || fs[1] != want.tactic || fs[2] != want.status {
			t.Errorf("row %d = %q, want %s %s %s", i, lines[i+1], want.id, want.tactic, want.status)
		}
		if !strings.HasPrefix(lines[i+1][col:], want.status) {
			t.Errorf("row %d: status not under STATUS: %q", i, lines[i+1])
		}
	}
	if fs := strings.Fields(lines[1]); !slices.Equal(fs[6:10], []string{"5", "2", "175", "$0.0017"}) {
		t.Errorf("ok row totals %q, want 5 dialogs, 2 calls, 175 tokens, $0.0017", lines[1])
	}
	if fs := strings.Fields(lines[3]); !slices.Equal(fs[5:10], []string{"-", "-", "-", "-", "-"}) {
		t.Errorf("running row %q, want no duration or totals", lines[3])
	}
	if !strings.Contains(r.stderr, "lllm: warning: run "+filepath.Base(junk)+" is unreadable") {
		t.Errorf("stderr does not warn about the unreadable run:\n%s", r.stderr)
	}

	r = lllm(t, "runs", "--log-dir", root, "-o", "json")
	var got []struct {
		RunID                      string `json:"run_id"`
		Dir, Tactic, Status, Error string
		DurationMS                 *float64 `json:"duration_ms"`
		Totals                     *logs.Totals
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%v", err, r)
	}
	if len(got) != 4 {
		t.Fatalf("%d runs, want 4: %+v", len(got), got)
	}
	if g := got[0]; g.RunID != ok.runID || g.Status != "ok" || g.Tactic != "fixture" || g.Totals == nil ||
		g.Totals.Dialogs != 5 || g.Totals.Cost.USD != 0.0017 || g.DurationMS == nil || g.Dir != filepath.Join(root, ok.runID) {
		t.Errorf("ok run %+v", g)
	}
	if g := got[1]; g.Status != "failed" || g.Error != "boom" {
		t.Errorf("failed run %+v", g)
	}
	if g := got[2]; g.Status != "running" || g.Totals != nil || g.DurationMS != nil {
		t.Errorf("running run %+v", g)
	}
	if g := got[3]; g.Status != "unreadable" || !strings.Contains(g.Error, filepath.Join(junk, logs.EventsFile)) {
		t.Errorf("unreadable run %+v", g)
	}
}

func TestRunsNone(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for dir, note := range map[string]string{t.TempDir(): "", missing: " (it does not exist; runs go under --log-dir, ./logs by default)"} {
		r := lllm(t, "runs", "--log-dir", dir)
		if r.code != 0 || r.stdout != "" || r.stderr != "no runs under "+dir+note+"\n" {
			t.Errorf("runs in an empty log root:\n%v", r)
		}
		r = lllm(t, "runs", "--log-dir", dir, "-o", "json")
		if r.code != 0 || r.stdout != "[]\n" {
			t.Errorf("runs -o json in an empty log root:\n%v", r)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("runs created the log root")
	}
}

// snapshot lists every file under root with its size.
func snapshot(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %d %v", p, info.Size(), info.ModTime()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeRun(t *testing.T, root, id, content string) string {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, logs.EventsFile)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBadLogs(t *testing.T) {
	root := t.TempDir()
	newer := `{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"2.0","run_id":"x"}}` + "\n"
	start := `{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.0","run_id":"x"}}` + "\n"
	cases := []struct {
		id, content string
		want        []string
	}{
		{"20200101T000000.000000Z-empty0", "", []string{"empty log"}},
		{"20200101T000000.000000Z-text00", "just some notes\nnot a log\n", []string{"not an lllm-go run log"}},
		{"20200101T000000.000000Z-newer0", newer, []string{"version 2.0"}},
		{"20200101T000000.000000Z-corrup", start + "{not json}\n" + start, []string{":2:", "corrupt record"}},
		{"20200101T000000.000000Z-dangle", start + `{"seq":2,"ts":"2026-01-01T00:00:00Z","kind":"message","dialog":"abc","message":{"role":"user","content":"hi"}}` + "\n",
			[]string{":2:", "unknown dialog abc"}},
	}
	for _, c := range cases {
		path := writeRun(t, root, c.id, c.content)
		for _, cmd := range []string{"tree", "show"} {
			t.Run(cmd+" "+c.id, func(t *testing.T) {
				before := snapshot(t, root)
				r := lllm(t, cmd, c.id[len(c.id)-6:], "--log-dir", root)
				wantError(t, r, ExitError, append([]string{path}, c.want...)...)
				if after := snapshot(t, root); !slices.Equal(before, after) {
					t.Errorf("the log root changed:\n%v\n%v", before, after)
				}
			})
		}
	}

	t.Run("missing run", func(t *testing.T) {
		before := snapshot(t, root)
		r := lllm(t, "tree", "nosuchrun", "--log-dir", root)
		wantError(t, r, ExitError, `"nosuchrun"`, root)
		r = lllm(t, "show", "nosuchrun", "--log-dir", root)
		wantError(t, r, ExitError, `"nosuchrun"`)
		if after := snapshot(t, root); !slices.Equal(before, after) {
			t.Errorf("the log root changed")
		}
	})
	t.Run("missing log root", func(t *testing.T) {
		missing := filepath.Join(root, "nope")
		r := lllm(t, "tree", "latest", "--log-dir", missing)
		wantError(t, r, ExitError, missing)
		if _, err := os.Stat(missing); err == nil {
			t.Error("tree created the log root")
		}
	})
}

func TestTornLastLine(t *testing.T) {
	f := newFixture(t, t.TempDir())
	path := filepath.Join(f.root, f.runID, logs.EventsFile)
	whole := lllm(t, "tree", f.runID, "--log-dir", f.root)

	file, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.WriteString(`{"seq":99,"ts":"2026-01-01T00:00:00Z","kind":"mess`); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}

	r := lllm(t, "tree", f.runID, "--log-dir", f.root)
	if r.code != 0 || r.stdout != whole.stdout {
		t.Fatalf("tree of a log with a torn last line:\n%v\nwant stdout:\n%s", r, whole.stdout)
	}
	if !strings.HasPrefix(r.stderr, "lllm: warning: "+path) || !strings.Contains(r.stderr, "torn") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("want one warning about the torn line, got:\n%s", r.stderr)
	}
	r = lllm(t, "show", f.runID, "--log-dir", f.root, "-o", "json")
	if r.code != 0 || !strings.Contains(r.stderr, "lllm: warning: ") || !json.Valid([]byte(r.stdout)) {
		t.Errorf("show of a log with a torn last line:\n%v", r)
	}
}

func TestUsageErrors(t *testing.T) {
	f := newFixture(t, t.TempDir())
	dir := "--log-dir=" + f.root
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"tree", dir}, "needs a RUN"},
		{[]string{"tree", "a", "b", dir}, "takes one RUN"},
		{[]string{"tree", "latest", "--format", "xml", dir}, `"xml"`},
		{[]string{"tree", "latest", "--depth", "deep", dir}, `"deep"`},
		{[]string{"tree", "latest", "--bogus", dir}, "--bogus"},
		{[]string{"show", dir}, "needs a RUN"},
		{[]string{"show", "latest", "a", "b", dir}, "at most one DIALOG_ID"},
		{[]string{"show", "latest", "-o", "yaml", dir}, `"yaml"`},
		{[]string{"runs", "extra", dir}, `"extra"`},
		{[]string{"runs", "--output", "yaml", dir}, `"yaml"`},
		{[]string{"version", "now"}, `"now"`},
		{[]string{"tre"}, `did you mean "tree"`},
		{[]string{"--nope"}, "--nope"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			wantError(t, lllm(t, c.args...), ExitUsage, c.want)
		})
	}
}

func TestInterrupted(t *testing.T) {
	f := newFixture(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantError(t, lllmCtx(t, ctx, "tree", "latest", "--log-dir", f.root), ExitError, "interrupted")
}

func TestVersionAndHelp(t *testing.T) {
	r := lllm(t, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "lllm ") || !strings.Contains(r.stdout, runtime.Version()) {
		t.Errorf("version:\n%v", r)
	}
	if r2 := lllm(t, "--version"); r2.stdout != r.stdout {
		t.Errorf("--version %q, want %q", r2.stdout, r.stdout)
	}

	r = lllm(t)
	if r.code != 0 || !strings.Contains(r.stdout, "Available Commands:") {
		t.Errorf("bare lllm should print help:\n%v", r)
	}
	r = lllm(t, "tree", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "--log-dir") {
		t.Errorf("tree --help:\n%v", r)
	}
}

// chat and version read and write no run logs: their help shows no
// --log-dir, and giving one is a usage error saying why, not a flag
// silently ignored.
func TestNoLogDirWhereUnused(t *testing.T) {
	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"chat", "assistant"}, "lllm serve --log-dir"},
		{[]string{"version"}, "reads no runs"},
	} {
		r := lllm(t, append(c.args[:1:1], "--help")...)
		if r.code != 0 || strings.Contains(r.stdout, "--log-dir") {
			t.Errorf("%s --help shows --log-dir:\n%v", c.args[0], r)
		}
		wantError(t, lllm(t, append(c.args, "--log-dir", t.TempDir())...), ExitUsage, c.args[0]+" takes no --log-dir", c.why)
		wantError(t, lllm(t, append([]string{"--log-dir=" + t.TempDir()}, c.args...)...), ExitUsage, c.args[0]+" takes no --log-dir")
	}
}

func TestEveryCommandDocumented(t *testing.T) {
	var check func(c *cobra.Command)
	n := 0
	check = func(c *cobra.Command) {
		n++
		if c.Short == "" || c.Long == "" || c.Example == "" {
			t.Errorf("%q lacks Short, Long or Example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				check(sub)
			}
		}
	}
	check(NewRootCmd())
	if n < 6 {
		t.Errorf("checked only %d commands", n)
	}
}
