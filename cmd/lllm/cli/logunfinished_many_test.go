package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With --tasks, a run whose log could not be finished says so too: on
// its status line, and as log_error in its JSON; the exit status is 1.
func TestRunManySaysLogUnfinished(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			cfg, logDir := writeConfig(t, "")
			src := strings.Replace(chatConfig, "tactic_type: chat", "tactic_type: cli_test_removes_log_root\nparams: {root: "+logDir+"}", 1)
			if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			tasks := filepath.Join(t.TempDir(), "tasks.jsonl")
			if err := os.WriteFile(tasks, []byte("{\"task\": \"x\"}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := lllm(t, "run", cfg, "--tasks", tasks, "--log-dir", logDir, "-o", format)
			if r.code != ExitError || !strings.Contains(r.stderr, "deleted or moved") {
				t.Fatalf("%v", r)
			}
			if format == "text" {
				if !strings.Contains(r.stdout, "status ok (log unfinished)") {
					t.Errorf("stdout %q does not say the log is unfinished", r.stdout)
				}
				return
			}
			var got []resultJSON
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Status != "ok" || !strings.Contains(got[0].LogError, "deleted or moved") {
				t.Errorf("JSON %+v: want status ok and log_error saying the log was deleted", got)
			}
		})
	}
}
