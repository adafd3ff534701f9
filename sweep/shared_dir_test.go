package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two specs of the same name (two sweep.yaml files) on other datasets
// share a directory: the second is warned, a spec run again on its own
// changed dataset is not.
func TestSweepWarnsOfAnotherSpecInItsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	spec := "name: shared\nconfig: config.yaml\ndataset: rows.jsonl\nscorers: [numeric]\n"
	a := writeSweep(t, spec, map[string]string{"rows.jsonl": rowsJSONL(3)})
	run(t, a, Options{Dir: dir})
	b := writeSweep(t, spec, map[string]string{"rows.jsonl": rowsJSONL(4)})
	w := strings.Join(newSweep(t, b, Options{Dir: dir}).Warnings(), "\n")
	if !strings.Contains(w, "was last run by "+a) || !strings.Contains(w, `has the same name "shared"`) {
		t.Errorf("warnings %q: want the other spec named", w)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(a), "rows.jsonl"), []byte(rowsJSONL(5)), 0o644); err != nil {
		t.Fatal(err)
	}
	if w := newSweep(t, a, Options{Dir: dir}).Warnings(); len(w) != 0 {
		t.Errorf("the same spec on its edited dataset: warnings %q", w)
	}
}
