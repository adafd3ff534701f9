package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/tactics"
)

// Re-scoring. A sample whose standing record succeeded, was made for its
// row as the row is now (same cell, same row_hash), and lacks only scores
// (a scorer was added, or a scorer's params changed) is not run again: its
// answer is scored again. The tactic's result comes from the last record
// of the sample's run log (run_end), the answer from the record, and only
// the missing or stale scorers run; the new record is a copy of the old
// one with their scores, appended to the run's (or shard's) samples file.
// A sample whose run log is gone, unreadable or without a result runs
// again, as any sample not done does.
//
// A sample whose standing record failed for a reason of its own (the
// tactic's error, not the provider's: see Record.Retry) scores 0 on every
// scorer, as it did when it ran: adding or changing a scorer gives it the
// new columns' zeros in a copy of its record, without running it again
// (which would spend, and might not fail the same way).

// rescoreJob locates the record standing for a sample that a run scores
// again instead of running it: the line of n bytes at off in the samples
// file files[file] of its rescorePlan.
type rescoreJob struct {
	file   int32
	n      int32
	off    int64
	judges int32 // judge scorers to run, for Plan's estimate of model calls
}

// rescorePlan is what a run scores again from the run logs instead of
// running: for each such sample, where its standing record is.
type rescorePlan struct {
	files []string
	jobs  map[recKey]rescoreJob
}

// job says whether sm is to be re-scored, and where its record is.
func (p *rescorePlan) job(rs *recordIndex, sm sample) (rescoreJob, bool) {
	if p == nil || len(p.jobs) == 0 {
		return rescoreJob{}, false
	}
	k, ok := rs.keyOf(sm.cell.Hash, sm.row.ID, sm.repeat)
	if !ok {
		return rescoreJob{}, false
	}
	j, ok := p.jobs[k]
	return j, ok
}

// record reads the record of j back from its samples file.
func (p *rescorePlan) record(j rescoreJob) (*Record, error) {
	path := p.files[j.file]
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, j.n)
	if _, err := f.ReadAt(buf, j.off); err != nil {
		return nil, fmt.Errorf("reading a sample of %s: %w", path, err)
	}
	var r Record
	buf = bytes.TrimSpace(buf)
	if err := json.Unmarshal(buf, &r); err != nil {
		return nil, fmt.Errorf("reading a sample of %s at byte %d: %w", path, j.off, err)
	}
	r.raw = buf
	return &r, nil
}

// rescorable finds the samples of the shard that a run would score again
// instead of running: those whose standing record is final (a success
// with its run log, or a failure of its own), was made for the row as it
// is, and lacks only scores of the spec's scorers (missing, or made with
// other params). It reads the samples
// files only when the index says some sample may be one.
func (s *Sweep) rescorable() (*rescorePlan, error) {
	if len(s.scorers) == 0 {
		return nil, nil
	}
	cands := map[recKey]*Row{}
	s.eachSample(func(sm sample, done bool) bool {
		if done {
			return true
		}
		// Not done, yet final (a success, or a failure of its own) and
		// made for the row as it is: only its scorers are missing.
		e, ok := s.records.get(sm.cell.Hash, sm.row.ID, sm.repeat)
		if ok && s.final(e) && (e.row == 0 || e.row == rowSum(sm.row)) {
			if k, ok := s.records.keyOf(sm.cell.Hash, sm.row.ID, sm.repeat); ok {
				cands[k] = sm.row
			}
		}
		return true
	})
	if len(cands) == 0 {
		return nil, nil
	}
	files, err := samplesFiles(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("listing the samples files of %s: %w", s.Dir, err)
	}
	p := &rescorePlan{files: files, jobs: make(map[recKey]rescoreJob, len(cands))}
	s.records.newPass()
	for i, f := range files {
		// What the file holds that does not parse was reported when the
		// records were loaded.
		_, err := readRecordsAt(f, func(r *Record, off int64, n int) {
			k, ok := s.records.keyOf(r.Cell, r.Row, r.Repeat)
			if !ok {
				return
			}
			row, ok := cands[k]
			if !ok {
				return
			}
			if _, ok := s.records.takes(r); !ok {
				return // not the record standing for the sample
			}
			stale := s.staleScorers(r)
			if len(stale) == 0 {
				return
			}
			switch {
			case r.Status != "ok":
				// A failure of its own scores 0, from its record
				// alone; one from before row_hash runs again.
				if r.Retry || r.RowHash == "" {
					return
				}
				p.jobs[k] = rescoreJob{file: int32(i), n: int32(n), off: off}
				return
			case r.RunDir == "" || r.RowHash == "" && r.Expected != row.Expected:
				// A record without row_hash (from before it) is
				// re-scored only when its expected answer, and its
				// run log's task (see loggedResult), are the row's.
				return
			}
			dir, err := r.LogDir(s.Dir)
			if err != nil {
				return // a run_dir outside runs/ is no run log: the sample runs again
			}
			if _, err := os.Stat(filepath.Join(dir, logs.EventsFile)); err != nil {
				return // no run log: the sample runs again
			}
			judges := 0
			for _, sc := range stale {
				if _, ok := sc.Scorer.(*judge); ok {
					judges++
				}
			}
			p.jobs[k] = rescoreJob{file: int32(i), n: int32(n), off: off, judges: int32(judges)}
		})
		if err != nil {
			return nil, fmt.Errorf("finding the samples to re-score: %w", err)
		}
	}
	return p, nil
}

// staleScorers are the spec's scorers r has no score of, or a score made
// with other params (as recordIndex.fresh sees it: a record without
// scorer_specs has its scores by name alone).
func (s *Sweep) staleScorers(r *Record) []namedScorer {
	var out []namedScorer
	for _, sc := range s.scorers {
		_, has := r.Scores[sc.name]
		if !has || r.ScorerSpecs != nil && r.ScorerSpecs[sc.name] != sc.spec {
			out = append(out, sc)
		}
	}
	return out
}

// loggedResult is the tactic's result as the run log of r holds it, in the
// result of its last record (run_end). ok is false when the record names
// no run log or one outside the sweep's runs/ (see Record.LogDir), or the
// log is missing or unreadable, has no run_end, did not succeed, belongs
// to another run, or, for a record without row_hash, ran another task or
// expected answer than row's.
func (s *Sweep) loggedResult(r *Record, row *Row) (json.RawMessage, bool) {
	dir, err := r.LogDir(s.Dir)
	if dir == "" || err != nil {
		return nil, false
	}
	run := &logs.Run{ID: r.RunID, Dir: dir}
	sum := run.Summary() // its first and last records only
	if sum.Err != nil || sum.End == nil || sum.End.Status != logs.StatusOK || len(sum.End.Result) == 0 {
		return nil, false
	}
	if sum.Start != nil && r.RunID != "" && sum.Start.RunID != "" && sum.Start.RunID != r.RunID {
		return nil, false
	}
	if r.RowHash == "" {
		var task string
		if sum.Start == nil || json.Unmarshal(sum.Start.Task, &task) != nil || task != row.Task || r.Expected != row.Expected {
			return nil, false
		}
	}
	return sum.End.Result, true
}

// outcome is what became of a sample a run launched.
type outcome int

const (
	// outRan: the sample ran (its record, if any, is a run's).
	outRan outcome = iota
	// outRescored: it was scored again from its run log.
	outRescored
	// outRescoreFailed: a scorer's model call failed on the provider while
	// it was scored again; its earlier record stands, and the next run
	// scores it again.
	outRescoreFailed
	// outReran: it was to be scored again, but its run log did not give its
	// result, so it ran.
	outReran
	// outStopped: the sweep stopped while it was scored again; nothing is
	// recorded.
	outStopped
)

// doSample runs sm, or scores it again from its run log when plan says it
// can, falling back to running it when the log does not give its result.
func (x *execution) doSample(ctx context.Context, ropts tactics.RunOptions, sm sample, plan *rescorePlan) (*Record, outcome, error) {
	if j, ok := plan.job(x.s.records, sm); ok {
		rec, out, err := x.rescoreSample(ctx, sm, plan, j)
		if out != outReran {
			return rec, out, err
		}
		rec, err = x.runSample(ctx, ropts, sm)
		return rec, outReran, err
	}
	rec, err := x.runSample(ctx, ropts, sm)
	return rec, outRan, err
}

// rescoreSample scores sm again: its answer, from its standing record, and
// its result, from its run log, with the scorers whose score is missing or
// stale; the other scores are kept. A scorer's model call that fails on
// the provider is retried as the spec's retries say, then leaves the old
// record standing (outRescoreFailed, with the error). outReran says the
// run log did not give the result.
func (x *execution) rescoreSample(ctx context.Context, sm sample, plan *rescorePlan, j rescoreJob) (*Record, outcome, error) {
	old, err := plan.record(j)
	if err != nil {
		return nil, outReran, nil
	}
	stale := x.s.staleScorers(old)
	if old.Status != "ok" {
		// A failure of its own: nothing to score, every score 0.
		rec := x.s.rescoreCopy(old)
		for _, sc := range stale {
			rec.Scores[sc.name] = 0
			delete(rec.ScoreErrors, sc.name)
		}
		rec.Finished = after(old.Finished)
		return rec, outRescored, nil
	}
	result, ok := x.s.loggedResult(old, sm.row)
	if !ok {
		return nil, outReran, nil
	}
	for attempt := 0; ; attempt++ {
		rec := x.s.rescoreCopy(old)
		rec.Answer = answerOf(result, x.s.Spec.Answer) // the same unless answer: changed
		// A record from before row_hash was found to be of the row as
		// it is (loggedResult): it says so from now on.
		rec.RowHash = strconv.FormatUint(rowSum(sm.row), 16)
		st := &sampleState{repeat: sm.repeat}
		perr := x.score(withState(ctx, st), rec, sm, result, stale)
		if ctx.Err() != nil && (perr != nil || scoreFailed(rec, stale)) {
			return nil, outStopped, nil // stopped while scoring: nothing is recorded
		}
		if perr == nil {
			rec.Finished = after(old.Finished)
			return rec, outRescored, nil
		}
		if attempt >= x.s.Spec.Retries {
			return nil, outRescoreFailed, fmt.Errorf("re-scoring sample %s of cell %s: %w", sm.row.ID, sm.cell.Hash, perr)
		}
		wait := time.Duration(float64(time.Second<<min(attempt, 6)) * (0.5 + rand.Float64()/2))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, outStopped, nil
		}
	}
}

// after is the finish time of a record that replaces one finished at t:
// now, and later than t, so that it stands for the sample (see better)
// whatever the clocks said.
func after(t time.Time) time.Time {
	now := time.Now().UTC()
	if !now.After(t) {
		now = t.Add(time.Nanosecond).UTC()
	}
	return now
}

// scoreFailed says whether one of scorers left an error in rec.
func scoreFailed(rec *Record, scorers []namedScorer) bool {
	for _, sc := range scorers {
		if _, ok := rec.ScoreErrors[sc.name]; ok {
			return true
		}
	}
	return false
}

// rescoreCopy is the record that re-scoring old starts from: a copy with
// maps of its own, the spec's scorer digests, old's spending carried, and
// the shard of this run.
func (s *Sweep) rescoreCopy(old *Record) *Record {
	rec := *old
	rec.raw = nil
	rec.Scores = maps.Clone(old.Scores)
	if rec.Scores == nil {
		rec.Scores = map[string]float64{}
	}
	rec.ScoreErrors = maps.Clone(old.ScoreErrors)
	// Every scorer of the spec either kept its score (made with this
	// spec, or by name in a record from before scorer_specs) or scores
	// again: all are the spec's now. Scores of scorers the spec dropped
	// keep their digests, if they had any.
	rec.ScorerSpecs = maps.Clone(old.ScorerSpecs)
	if rec.ScorerSpecs == nil {
		rec.ScorerSpecs = map[string]string{}
	}
	for _, sc := range s.scorers {
		rec.ScorerSpecs[sc.name] = sc.spec
	}
	rec.Rescored = old.Rescored + 1
	rec.CarriedUSD, rec.CarriedTokens = old.SpentUSD, old.SpentTokens
	rec.Shard = s.opts.Shard.String()
	return &rec
}
