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

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/spf13/cobra"
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

// An empty RUN is a usage mistake: every command taking one exits with
// ExitUsage, says that no run was given, and writes nothing on stdout.
func TestEmptyRunIsUsageError(t *testing.T) {
	logDir, _ := runConfig(t, retryConfig, "What is 3+4?")
	msg := strings.TrimPrefix(logs.ErrNoRun.Error(), "logs: ")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"tree", ""}, msg},
		{[]string{"tree", "", "-o", "json"}, msg},
		{[]string{"show", ""}, msg},
		{[]string{"show", "", "abc"}, msg},
		{[]string{"replay", ""}, msg},
		{[]string{"diff", "", "latest"}, "run A: " + msg},
		{[]string{"diff", "latest", ""}, "run B: " + msg},
		{[]string{"export", ""}, msg},
		{[]string{"export", "latest", ""}, msg},
		{[]string{"show", "latest", ""}, "the DIALOG_ID given is empty: give one, or leave it out"},
		{[]string{"show", "latest", " "}, "the DIALOG_ID given is empty: give one, or leave it out"},
	} {
		r := lllm(t, append(tt.args, "--log-dir", logDir)...)
		first, _, _ := strings.Cut(r.stderr, "\n")
		if r.code != ExitUsage || r.stdout != "" || first != "lllm: "+tt.want {
			t.Errorf("lllm %q: %v\nwant exit %d and %q", tt.args, r, ExitUsage, "lllm: "+tt.want)
		}
	}
}
