package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeChain writes, under a fresh log root, a run whose dialogs are a
// chain of forks depth deep, and returns the root and the run id.
func writeChain(t *testing.T, depth int) (logDir, id string) {
	t.Helper()
	id = fmt.Sprintf("20261120T100010.000000Z-deep%d", depth)
	lines := []string{
		`{"seq":1,"ts":"2026-11-20T10:00:10Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":"` + id + `","tactic":"deep"}}`,
		`{"seq":2,"ts":"2026-11-20T10:00:10Z","kind":"dialog_open","dialog":"f0","dialog_open":{"id":"f0","owner":"a","alias":"main"}}`,
	}
	for i := 1; i <= depth; i++ {
		lines = append(lines, fmt.Sprintf(`{"seq":%d,"ts":"2026-11-20T10:00:10Z","kind":"fork","dialog":"f%d","fork":{"id":"f%[2]d","owner":"a","alias":"main","parent_id":"f%d","depth":%[2]d}}`, i+2, i, i-1))
	}
	lines = append(lines, fmt.Sprintf(`{"seq":%d,"ts":"2026-11-20T10:00:10Z","kind":"run_end","run_end":{"status":"ok"}}`, depth+3))
	logDir = filepath.Join(t.TempDir(), "logs")
	ctWrite(t, filepath.Join(logDir, id, "events.jsonl"), strings.Join(lines, "\n")+"\n")
	return logDir, id
}

// flatTree is lllm tree -o json --flat with the fields this file checks.
type flatTree struct {
	RunID   string `json:"run_id"`
	Dialogs []struct {
		ID       string `json:"id"`
		ParentID string `json:"parent_id"`
		Failed   bool   `json:"failed"`
		Children any    `json:"children"`
	} `json:"dialogs"`
}

// --flat lists the dialogs of -o json flat, parents first, the failed
// attempts the same as in the nested form; without -o json it is a usage
// error.
func TestTreeFlat(t *testing.T) {
	logDir, runID := runConfig(t, retryConfig, "What is 3+4?")
	r := lllm(t, "tree", runID, "--log-dir", logDir, "-o", "json", "--flat")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	doc := decodeJSON[flatTree](t, r.stdout)
	nested := treeNodes(t, logDir, runID)
	if doc.RunID != runID || len(doc.Dialogs) != len(nested) || len(lines) != len(nested)+2 {
		t.Fatalf("run %q, %d dialogs on %d lines; the nested form has %d:\n%s", doc.RunID, len(doc.Dialogs), len(lines), len(nested), r.stdout)
	}
	var failed, nestedFailed []string
	seen := map[string]bool{}
	for i, d := range doc.Dialogs {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(strings.TrimSuffix(lines[i+1], ",")), &raw); err != nil {
			t.Fatalf("line %d is not one dialog: %v\n%s", i+2, err, lines[i+1])
		}
		parent, hasParent := raw["parent"]
		switch {
		case d.ID != nested[i].ID:
			t.Errorf("dialog %d is %s, nested %s", i, d.ID, nested[i].ID)
		case d.Children != nil:
			t.Errorf("dialog %s has children", d.ID)
		case d.ParentID == "" && hasParent:
			t.Errorf("root %s has a parent %s", d.ID, parent)
		case d.ParentID != "" && string(parent) != `"`+d.ParentID+`"`:
			t.Errorf("dialog %s: parent %s, parent_id %s", d.ID, parent, d.ParentID)
		case d.ParentID != "" && !seen[d.ParentID]:
			t.Errorf("dialog %s comes before its parent", d.ID)
		}
		seen[d.ID] = true
		if d.Failed {
			failed = append(failed, d.ID)
		}
		if nested[i].Failed {
			nestedFailed = append(nestedFailed, nested[i].ID)
		}
	}
	if len(failed) != 1 || !slices.Equal(failed, nestedFailed) {
		t.Errorf("failed attempts %q, nested %q", failed, nestedFailed)
	}

	for _, args := range [][]string{{"--flat"}, {"-o", "text", "--flat"}, {"--format", "dot", "--flat"}} {
		r := lllm(t, append([]string{"tree", runID, "--log-dir", logDir}, args...)...)
		if r.code != ExitUsage || r.stdout != "" || !strings.Contains(r.stderr, "add -o json") {
			t.Errorf("tree %s: %v", strings.Join(args, " "), r)
		}
	}
}

// The nested -o json of a tree deeper than jq 1.6 reads says on stderr to
// add --flat, and prints the same; a shallower one and --flat say nothing.
func TestTreeDeepJSONHint(t *testing.T) {
	deepDir, deep := writeChain(t, deepJSON+1)
	shallowDir, shallow := writeChain(t, deepJSON)
	for _, tt := range []struct {
		dir, id string
		flat    bool
		hint    bool
	}{{deepDir, deep, false, true}, {deepDir, deep, true, false}, {shallowDir, shallow, false, false}} {
		args := []string{"tree", tt.id, "--log-dir", tt.dir, "-o", "json"}
		if tt.flat {
			args = append(args, "--flat")
		}
		r := lllm(t, args...)
		if r.code != 0 {
			t.Fatalf("%s: %v", strings.Join(args, " "), r)
		}
		if got := strings.Contains(r.stderr, "--flat"); got != tt.hint || strings.Count(r.stderr, "\n") > 1 {
			t.Errorf("%s: stderr %q, want a hint: %v", strings.Join(args, " "), r.stderr, tt.hint)
		}
		var v struct {
			Dialogs []json.RawMessage `json:"dialogs"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Dialogs) == 0 {
			t.Errorf("%s: stdout is not the tree: %v", strings.Join(args, " "), err)
		}
	}
	// With --depth the nested form is shallow enough: no hint.
	if r := lllm(t, "tree", deep, "--log-dir", deepDir, "-o", "json", "--depth", "10"); r.code != 0 || r.stderr != "" {
		t.Errorf("--depth 10: %v", r)
	}
}
