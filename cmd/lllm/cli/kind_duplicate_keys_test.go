package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// kindOf tells a sweep spec, a serve config and a tactic config apart by
// their top-level keys even when one of them is written twice, so that
// lllm validate checks a sweep spec as one (not as a tactic config, which
// reports its keys config, dataset and axes wrongly) and lllm run names
// the command a spec or a serve config is for.
func TestKindOfWithDuplicateKeys(t *testing.T) {
	dir := t.TempDir()
	for file, tc := range map[string]struct{ yaml, want string }{
		"sweep.yaml":  {"config: c.yaml\ndataset: d.jsonl\nrepeats: 2\nrepeats: 3\n", "sweep"},
		"serve.yaml":  {"tactic_type: serve\nglobal: {model_name: mock/m}\nglobal: {model_name: mock/n}\n", "serve"},
		"tactic.yaml": {"tactic_type: chat\nparams: {}\nparams: {}\n", "tactic"},
		"alias.yaml":  {"x: &t serve\ntactic_type: *t\n", "serve"},
		"list.yaml":   {"- a\n- b\n", ""},
	} {
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := kindOf(path); got != tc.want {
			t.Errorf("%s: kind %q, want %q", file, got, tc.want)
		}
	}
}
