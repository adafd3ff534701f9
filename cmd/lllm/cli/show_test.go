package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

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

// show prints a reply's reasoning under it, each block's lines indented
// alike, and a redacted block as such (never its data).
func TestShowReasoning(t *testing.T) {
	m := &dialog.Message{Role: dialog.RoleAssistant, Content: "42", Reasoning: []dialog.Reasoning{
		{Text: "six times seven\nis 42", Signature: "sig-abc"},
		{Redacted: "EmwKAhgBEgy3va3pzix"},
	}}
	var b strings.Builder
	writeMessage(&b, 3, m)
	want := "[3] assistant: 42\n" +
		"    reasoning: six times seven\n" +
		"               is 42\n" +
		"    reasoning: [redacted by the provider]\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
