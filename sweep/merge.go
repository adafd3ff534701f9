package sweep

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lllm-go/lllm/internal/atomicfile"
)

// Merge combines the shards of a sweep into dir: the finished samples of
// every samples*.jsonl file of dir and of each of srcs (other copies of
// the sweep directory, such as one per machine) are consolidated into
// dir/samples.jsonl, the run logs of srcs are copied under dir/runs, and
// dir gets a manifest listing every cell. Nothing is deleted or
// overwritten, so merging twice, or merging while shards still run, is
// safe. The result is the report of dir, which equals what one process
// running the whole sweep would report.
func Merge(dir string, srcs ...string) (*Report, []string, error) {
	if err := os.MkdirAll(filepath.Join(dir, RunsDir), 0o755); err != nil {
		return nil, nil, err
	}
	// Which record stands for each sample, over every directory; the
	// records themselves are streamed, never all in memory.
	all := newRecordIndex()
	var warnings []string
	dirs := append([]string{dir}, srcs...)
	for _, d := range dirs {
		w, err := all.load(d)
		warnings = append(warnings, w...)
		if err != nil {
			return nil, warnings, err
		}
		if d == dir {
			continue
		}
		if err := mergeManifest(dir, d); err != nil {
			return nil, warnings, err
		}
		files, err := samplesFiles(d)
		if err != nil {
			return nil, warnings, err
		}
		for _, f := range files {
			var cerr error
			if _, err := readRecords(f, func(r *Record) {
				if cerr == nil && r.RunDir != "" {
					// A run log is under runs/: a run_dir that climbs out
					// (a hand-edited or hostile samples file) would have
					// files copied from and to anywhere.
					from, err := r.LogDir(d)
					if err != nil {
						cerr = fmt.Errorf("%s: %w; not merged", f, err)
						return
					}
					to, _ := r.LogDir(dir) // the same run_dir, checked above
					if err := copyDir(from, to); err != nil {
						cerr = fmt.Errorf("copying the run log of sample %s: %w", r.Row, err)
					}
				}
			}); err != nil {
				return nil, warnings, err
			}
			if cerr != nil {
				return nil, warnings, cerr
			}
		}
	}
	if _, err := ReadManifest(dir); err != nil {
		return nil, warnings, err
	}
	// What samples.jsonl itself holds already.
	main := newRecordIndex()
	path := filepath.Join(dir, SamplesFile)
	if _, err := os.Stat(path); err == nil {
		if _, err := readRecords(path, main.add); err != nil {
			return nil, warnings, err
		}
	}
	st, err := openStore(path)
	if err != nil {
		return nil, warnings, err
	}
	defer st.close()
	// Append each standing record samples.jsonl lacks. None of its own
	// records is among them, and it sorts first among dir's files, so it
	// is read whole before anything is appended to it.
	err = all.each(dirs, func(r *Record, _ int32) error {
		if old, ok := main.get(r.Cell, r.Row, r.Repeat); ok && !better(entryOf(r), old) {
			return nil
		}
		return st.appendRaw(r.raw)
	})
	if err == nil {
		err = st.f.Sync()
	}
	if err != nil {
		return nil, warnings, fmt.Errorf("merging into %s: %w", path, err)
	}
	rep, w, err := LoadReport(dir)
	return rep, append(warnings, w...), err
}

// appendRaw appends one encoded record, in one write, without an fsync:
// Merge syncs once at the end.
func (s *store) appendRaw(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.f.Write(append(append([]byte(nil), b...), '\n')); err != nil {
		return fmt.Errorf("merging a sample: %w", err)
	}
	return nil
}

// mergeManifest adds the cells of src's manifest that dir's lacks.
func mergeManifest(dir, src string) error {
	sm, err := ReadManifest(src)
	if err != nil {
		return err
	}
	dm, err := ReadManifest(dir)
	if err != nil {
		return writeManifest(dir, sm)
	}
	var diffs []string
	if !slices.Equal(dm.Scorers, sm.Scorers) || dm.ScorerSpecs != nil && sm.ScorerSpecs != nil && !maps.Equal(dm.ScorerSpecs, sm.ScorerSpecs) {
		diffs = append(diffs, fmt.Sprintf("scorers %v and %v (or their params)", dm.Scorers, sm.Scorers))
	}
	if dm.Rows != sm.Rows || dm.Dataset != "" && sm.Dataset != "" && dm.Dataset != sm.Dataset {
		diffs = append(diffs, fmt.Sprintf("dataset of %d rows (%s) and of %d rows (%s)", dm.Rows, dm.Dataset, sm.Rows, sm.Dataset))
	}
	if dm.Repeats != sm.Repeats {
		diffs = append(diffs, fmt.Sprintf("repeats %d and %d", dm.Repeats, sm.Repeats))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("cannot merge %s into %s: they are not the same sweep: %s", src, dir, strings.Join(diffs, "; "))
	}
	seen := map[string]bool{}
	for _, c := range dm.Cells {
		seen[c.Hash] = true
	}
	changed := false
	if dm.RowSums == nil && sm.RowSums != nil {
		dm.RowSums, changed = sm.RowSums, true
	}
	if dm.ScorerSpecs == nil && sm.ScorerSpecs != nil {
		dm.ScorerSpecs, changed = sm.ScorerSpecs, true
	}
	for _, c := range sm.Cells {
		if !seen[c.Hash] {
			dm.Cells = append(dm.Cells, c)
			changed = true
		}
	}
	for _, a := range sm.Axes {
		if !contains(dm.Axes, a) {
			dm.Axes = append(dm.Axes, a)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return writeManifest(dir, dm)
}

// copyDir copies the files of src into dst, leaving files dst has alone.
// Each file appears whole or not at all: it is copied beside its target
// and renamed into place, so a failed or killed copy leaves no partial
// file for later merges to keep.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a run log that is gone: the record stands
			}
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if _, err := os.Stat(target); err == nil {
			return nil
		}
		return copyFile(p, target)
	})
}

// copyFile copies the file src to a new file dst, whole or not at all.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return atomicfile.WriteFrom(dst, in)
}
