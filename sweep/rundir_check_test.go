package sweep

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Record.LogDir accepts only a folder of the sweep's runs/.
func TestRecordLogDir(t *testing.T) {
	dir := filepath.Join("sweeps", "x")
	for _, c := range []struct {
		runDir, want string
		bad          bool
	}{
		{"", "", false},
		{"runs/20260101T000000Z-abc", filepath.Join(dir, "runs", "20260101T000000Z-abc"), false},
		{"runs/a/../b", filepath.Join(dir, "runs", "b"), false},
		{"../../secret", "", true},
		{"runs/../../secret", "", true},
		{"/etc", "", true},
		{"runs", "", true},
		{"runs/.", "", true},
		{"other/x", "", true},
		{"runsx/y", "", true},
	} {
		r := &Record{Cell: "c", Row: "r1", RunDir: c.runDir}
		got, err := r.LogDir(dir)
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), `"`+c.runDir+`"`) || !strings.Contains(err.Error(), "runs/") {
				t.Errorf("run_dir %q: %q, %v; want an error naming it", c.runDir, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("run_dir %q: %q, %v; want %q", c.runDir, got, err, c.want)
		}
	}
}

// A standing record whose run_dir leads out of the sweep's runs/ is not
// re-scored from the run log it names there (which a hostile samples file
// could point anywhere): the sample runs again, as one whose log is gone.
func TestRescoreIgnoresRunDirOutside(t *testing.T) {
	path := writeSweep(t, rescoreSpec, map[string]string{})
	m := &rescoreModel{}
	run(t, path, Options{Open: m.opener()})
	dir := resultsDir(path)
	var rec *Record
	for _, r := range standing(t, dir) {
		rec = r
		break
	}
	// A faithful copy of its run log, outside the sweep directory.
	outside := filepath.Join(filepath.Dir(dir), "outside", filepath.Base(rec.RunDir))
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	ev, err := os.ReadFile(filepath.Join(dir, rec.RunDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "events.jsonl"), ev, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := *rec
	bad.RunDir = filepath.ToSlash(filepath.Join("..", "outside", filepath.Base(rec.RunDir)))
	bad.Finished = time.Now() // after the record it copies, before a new run's
	line, err := json.Marshal(&bad)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, SamplesFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	f.Close()

	setSpec(t, path, strings.Replace(rescoreSpec, "[numeric]", "[numeric, exact]", 1))
	s := newSweep(t, path, Options{Open: m.opener()})
	if p := s.Plan(); p.ToRun != 1 || p.ToRescore != 23 {
		t.Errorf("dry run: to run %d, to re-score %d; want 1 (its run_dir is outside runs/), 23", p.ToRun, p.ToRescore)
	}
	before := m.tactic.Load()
	rep, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ran != 1 || rep.Rescored != 23 || rep.Done != 24 {
		t.Errorf("ran %d, rescored %d, done %d; want 1, 23, 24", rep.Ran, rep.Rescored, rep.Done)
	}
	if n := m.tactic.Load() - before; n != 1 {
		t.Errorf("%d tactic calls, want 1", n)
	}
	r := standing(t, dir)[rec.Key()]
	if r.Rescored != 0 || r.RunID == rec.RunID || !strings.HasPrefix(r.RunDir, RunsDir+"/") {
		t.Errorf("the sample stands for a record rescored %d, run %s in %s; want a new run under runs/", r.Rescored, r.RunID, r.RunDir)
	}
}
