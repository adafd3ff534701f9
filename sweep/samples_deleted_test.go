package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// deleteOnScore is the samples file the test_delete_samples scorer removes
// the first time it scores, as a user cleaning up the wrong folder would.
var deleteOnScore struct {
	path atomic.Pointer[string]
	once sync.Once
	err  error
}

func init() {
	RegisterScorer("test_delete_samples", func(map[string]any, Env) (Scorer, error) {
		return ScorerFunc(func(context.Context, *Sample) (float64, error) {
			if p := deleteOnScore.path.Load(); p != nil {
				deleteOnScore.once.Do(func() { deleteOnScore.err = os.Remove(*p) })
			}
			return 1, nil
		}), nil
	})
}

// A sweep whose samples file is deleted while it runs must not report its
// samples as recorded: the records went to a file no reader will find.
func TestRunReportsDeletedSamplesFile(t *testing.T) {
	spec := "config: config.yaml\ndataset: rows.jsonl\nscorers: [test_delete_samples]\n"
	path := writeSweep(t, spec, map[string]string{})
	samples := filepath.Join(resultsDir(path), "samples.jsonl")
	deleteOnScore.path.Store(&samples)
	defer deleteOnScore.path.Store(nil)

	rep, err := newSweep(t, path, Options{}).Run(context.Background())
	if deleteOnScore.err != nil {
		t.Fatalf("removing the samples file: %v", deleteOnScore.err)
	}
	if err == nil {
		t.Fatalf("the sweep succeeded (%d of %d samples done) although its samples file was deleted", rep.Done, rep.Samples)
	}
	for _, want := range []string{samples, "deleted or moved", "6 samples", "run the sweep again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// Untouched, the same sweep succeeds and its samples are on disk.
	deleteOnScore.path.Store(nil)
	rep = run(t, path, Options{})
	if rep.Done != 6 || rep.Ran != 6 {
		t.Errorf("the sweep run again: %d done, %d ran; want 6 and 6", rep.Done, rep.Ran)
	}
}
