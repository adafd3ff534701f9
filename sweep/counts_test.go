package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Manifest.Counts keeps the samples of the sweep as its last run left it:
// not those of a row since removed or changed, of a repeat past the
// spec's, or without a score of a scorer since added; and LoadReport
// counts exactly those.
func TestManifestCounts(t *testing.T) {
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\nrepeats: 2\nscorers: [numeric]\n", map[string]string{})
	dir := filepath.Join(filepath.Dir(path), "results")
	if rep := run(t, path, Options{}); rep.Done != 12 {
		t.Fatalf("first run: %d done, want 12", rep.Done)
	}
	// counted lists the samples Counts keeps, as row/repeat, and checks
	// that the report counts as many.
	counted := func(t *testing.T) []string {
		t.Helper()
		m, err := ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		if _, err := EachRecord(dir, func(r *Record) error {
			if m.Counts(r) {
				keys = append(keys, fmt.Sprintf("%s/%d", r.Row, r.Repeat))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		rep, _, err := LoadReport(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range rep.Cells {
			n += c.N
		}
		if n != len(keys) {
			t.Errorf("the report counts %d samples, Counts keeps %d: %v", n, len(keys), keys)
		}
		return keys
	}
	if got := counted(t); len(got) != 12 {
		t.Fatalf("after the first run Counts keeps %v, want all 12 samples", got)
	}

	// Row r6 removed, r2's expected answer changed, one repeat. A run that
	// is stopped before it starts anything writes the manifest of the
	// sweep as it is now, and nothing else: the old records stand.
	stopped := func(t *testing.T) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := newSweep(t, path, Options{}).Run(ctx); err == nil {
			t.Fatal("a cancelled run returned no error")
		}
	}
	rows := strings.Replace(rowsJSONL(5), `"expected": 4}`, `"expected": 5}`, 1)
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "rows.jsonl"), []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("config: config.yaml\ndataset: rows.jsonl\nrepeats: 1\nscorers: [numeric]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stopped(t)
	if got, want := counted(t), []string{"r1/0", "r3/0", "r4/0", "r5/0"}; !slices.Equal(got, want) {
		t.Errorf("after the change Counts keeps %v, want %v", got, want)
	}

	// A scorer added: no record has its score until it is re-scored.
	if err := os.WriteFile(path, []byte("config: config.yaml\ndataset: rows.jsonl\nrepeats: 1\nscorers: [numeric, exact]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stopped(t)
	if got := counted(t); len(got) != 0 {
		t.Errorf("with a scorer no record has, Counts keeps %v", got)
	}
}
