package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A sweep's directory is its spec's: another spec file of the same name
// (two sweep.yaml files) is refused, on the same dataset or another, and
// nothing of it is written; the spec itself, edited, run from another
// directory or moved, goes on with it.
func TestSweepRefusesAnotherSpecInItsDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	spec := "name: shared\nconfig: config.yaml\ndataset: rows.jsonl\nscorers: [numeric]\n"
	a := writeSweep(t, spec, map[string]string{"rows.jsonl": rowsJSONL(3)})
	run(t, a, Options{Dir: dir})
	for _, rows := range []int{3, 4} {
		b := writeSweep(t, spec+"repeats: 2\n", map[string]string{"rows.jsonl": rowsJSONL(rows)})
		loaded, err := LoadSpec(b)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(context.Background(), loaded, Options{Dir: dir})
		if !errors.As(err, new(*SpecError)) || !strings.Contains(err.Error(), b+":1: ") ||
			!strings.Contains(err.Error(), `sweep "shared" in `+dir+" is the sweep of another spec, "+a) {
			t.Errorf("another spec on %d rows: error %v", rows, err)
		}
	}
	if m, err := ReadManifest(dir); err != nil || m.Spec != a || m.Repeats != 1 {
		t.Fatalf("manifest %+v, %v: want a's", m, err)
	}

	// Edited (its dataset too), and run by a relative path from another
	// directory: the same sweep.
	if err := os.WriteFile(filepath.Join(filepath.Dir(a), "rows.jsonl"), []byte(rowsJSONL(5)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(filepath.Dir(a)))
	rel := filepath.Join(filepath.Base(filepath.Dir(a)), "sweep.yaml")
	if w := newSweep(t, rel, Options{Dir: dir}).Warnings(); len(w) != 0 {
		t.Errorf("the same spec on its edited dataset, by a relative path: warnings %q", w)
	}
	run(t, rel, Options{Dir: dir})
	if m, err := ReadManifest(dir); err != nil || m.Spec != a {
		t.Fatalf("manifest %+v, %v: want the spec's absolute path %s", m, err, a)
	}

	// Moved: no spec is left where it was.
	moved := filepath.Join(filepath.Dir(a), "moved.yaml")
	if err := os.Rename(a, moved); err != nil {
		t.Fatal(err)
	}
	if w := newSweep(t, moved, Options{Dir: dir}).Warnings(); len(w) != 0 {
		t.Errorf("the spec moved: warnings %q", w)
	}
}

// A manifest from before the spec's path was absolute has it relative to
// a directory it does not say: another spec is warned of, not refused,
// and only on another dataset.
func TestSweepWarnsOfAnotherSpecInAnOldManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	spec := "name: shared\nconfig: config.yaml\ndataset: rows.jsonl\nscorers: [numeric]\n"
	a := writeSweep(t, spec, map[string]string{"rows.jsonl": rowsJSONL(3)})
	run(t, a, Options{Dir: dir})
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Spec = "elsewhere/sweep.yaml"
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if w := newSweep(t, a, Options{Dir: dir}).Warnings(); len(w) != 0 {
		t.Errorf("the same dataset: warnings %q", w)
	}
	other := writeSweep(t, spec, map[string]string{"rows.jsonl": rowsJSONL(4)})
	w := strings.Join(newSweep(t, other, Options{Dir: dir}).Warnings(), "\n")
	if !strings.Contains(w, "was last run by elsewhere/sweep.yaml") || !strings.Contains(w, `has the same name "shared"`) {
		t.Errorf("warnings %q: want the other spec named", w)
	}
}
