package replay_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/replay"
)

// A reply edited in the log is served as it now reads: every request
// still matches, so only the result can tell, and it must.
func TestReplayOfAnEditedReplyDiverges(t *testing.T) {
	root := t.TempDir()
	run := record(t, root, "react.yaml", "What is (17 + 25) * 3?")
	if rep := replayRun(t, run, replay.Options{}); rep.Divergence != nil {
		t.Fatalf("unedited: %v", rep.Divergence)
	}
	data, err := os.ReadFile(run.Path())
	if err != nil {
		t.Fatal(err)
	}
	// The last reply, in the working copy the model_call names.
	i := bytes.Index(data, []byte("<answer>126</answer>"))
	if i < 0 {
		t.Fatal("no answer in the log")
	}
	edited := append(append(append([]byte{}, data[:i]...), "<answer>127</answer>"...), data[i+len("<answer>126</answer>"):]...)
	if err := os.WriteFile(run.Path(), edited, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := replayRun(t, run, replay.Options{})
	d := rep.Divergence
	if d == nil || !strings.Contains(d.Reason, "result differs") || !strings.Contains(d.Diff, `+  "answer": "127"`) {
		t.Fatalf("divergence %+v, want the result's", d)
	}
	if !strings.HasPrefix(d.Error(), "replay diverged: every call") {
		t.Errorf("Error() = %q", d.Error())
	}
}
