package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/tactics"
)

// removesLogRoot is a tactic that deletes the log root its run writes in,
// as a user cleaning the wrong folder would.
type removesLogRoot struct{ root string }

func (removesLogRoot) Agents() []string { return []string{"assistant"} }
func (t removesLogRoot) Call(context.Context, *tactics.Session, string) (any, error) {
	return "done", os.RemoveAll(t.root)
}

func init() {
	tactics.Register("cli_test_removes_log_root", func(p map[string]any) (tactics.Tactic, error) {
		root, _ := p["root"].(string)
		return removesLogRoot{root}, nil
	})
}

// A run whose log could not be finished does not say only "status ok",
// alone (--task) or one of several (--tasks): the text and the JSON say
// the log is unfinished, and the exit status is 1.
func TestRunSaysLogUnfinished(t *testing.T) {
	for _, many := range []bool{false, true} {
		for _, format := range []string{"text", "json"} {
			t.Run(fmt.Sprintf("tasks=%v/%s", many, format), func(t *testing.T) {
				cfg, logDir := writeConfig(t, "")
				src := strings.Replace(chatConfig, "tactic_type: chat", "tactic_type: cli_test_removes_log_root\nparams: {root: "+logDir+"}", 1)
				if err := os.WriteFile(cfg, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				task := []string{"--task", "x"}
				if many {
					tasks := filepath.Join(t.TempDir(), "tasks.jsonl")
					if err := os.WriteFile(tasks, []byte("{\"task\": \"x\"}\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					task = []string{"--tasks", tasks}
				}
				r := lllm(t, append([]string{"run", cfg, "--log-dir", logDir, "-o", format}, task...)...)
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
				out := r.stdout
				if !many {
					out = "[" + out + "]"
				}
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || got[0].Status != "ok" || !strings.Contains(got[0].LogError, "deleted or moved") {
					t.Errorf("JSON %+v: want status ok and log_error saying the log was deleted", got)
				}
			})
		}
	}
}
