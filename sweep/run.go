package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/tactics"
)

// Run runs the samples of the sweep (of its shard) that have no final
// record yet, at most the spec's concurrency at a time, recording each as
// it finishes, and returns the report of the whole sweep directory. A
// sample whose answer stands and that lacks only scores (a scorer added
// or changed) is re-scored from its run log instead of run (see
// Report.Rescored and docs/sweeps.md).
//
// It stops launching samples when the budget is spent (the error wraps
// ErrBudget), and stops everything when max_consecutive_errors model calls
// in a row failed or ctx is done; the samples then in flight are not
// recorded, so a later run runs them. The report is returned with such
// errors. Other errors (the directory or a log cannot be written) come
// without a report.
func (s *Sweep) Run(ctx context.Context) (*Report, error) {
	r, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer r.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.x = s.newExecution(r.cache, cancel)
	ctx = context.WithValue(ctx, execKey{}, r.x)
	budgetErr := r.launch(ctx)
	if r.fatalErr != nil {
		return nil, r.fatalErr
	}
	if err := r.store.check(); err != nil {
		return nil, err
	}
	return r.report(ctx, budgetErr)
}

// sweepRun is the state of one Run: what it holds open, and what became
// of the samples it launched.
type sweepRun struct {
	s       *Sweep
	x       *execution
	release func()      // the shard's lock
	cache   *replyCache // open even when caching is off: see begin
	store   *store
	plan    *rescorePlan
	ropts   tactics.RunOptions
	start   time.Time

	mu       sync.Mutex // guards what follows; serializes Options.Progress
	prog     Progress
	fatalErr error
	// What became of the samples: run (reran of them fell back from a
	// re-score), re-scored, or not re-scored for a scorer's failed model
	// call (the first such error kept).
	nRan, nRescored, nReran, nRescoreFailed int
	rescoreErr                              error
}

// begin readies the sweep's directory for a run: it makes and locks it,
// opens the shard's cache and samples file, reads again the samples
// recorded since New, writes the manifest and plans the re-scores. On an
// error it leaves nothing open.
func (s *Sweep) begin() (_ *sweepRun, err error) {
	if err := os.MkdirAll(filepath.Join(s.Dir, RunsDir), 0o755); err != nil {
		return nil, fmt.Errorf("creating the sweep directory: %w", err)
	}
	r := &sweepRun{s: s}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.release, err = lockRun(s.Dir, s.opts.Shard); err != nil {
		return nil, err
	}
	suffix := s.opts.Shard.suffix()
	// The cache file doubles as the lock that keeps two processes from
	// running the same shard at once; it is opened even when caching is
	// off.
	if r.cache, err = openCache(filepath.Join(s.Dir, "cache"+suffix+".db")); err != nil {
		return nil, err
	}
	// Another process may have added samples since New read them. The
	// index New read goes first, so that two are never held at once.
	s.records = newRecordIndex()
	if s.warnings, err = s.records.load(s.Dir); err != nil {
		return nil, err
	}
	if r.store, err = openStore(filepath.Join(s.Dir, "samples"+suffix+".jsonl")); err != nil {
		return nil, err
	}
	if err := s.writeManifest(); err != nil {
		return nil, err
	}
	// The samples whose answer stands and only its scores are missing are
	// scored again from their run logs rather than run (see rescore.go).
	if r.plan, err = s.rescorable(); err != nil {
		return nil, err
	}
	r.prog.Total = s.pending()
	r.ropts = tactics.RunOptions{LogDir: filepath.Join(s.Dir, RunsDir), HTTPClient: s.opts.HTTPClient, Models: s.models}
	r.start = time.Now()
	return r, nil
}

// close releases what begin opened, in the reverse order.
func (r *sweepRun) close() {
	if r.store != nil {
		r.store.close()
	}
	if r.cache != nil {
		r.cache.Close()
	}
	if r.release != nil {
		r.release()
	}
}

// newExecution is the state of the model calls of a run: cache is used
// unless the spec turns caching off, the spending before the run is what
// the records and the samples a crash or a stop left unrecorded spent, and
// the providers' limiters start afresh.
func (s *Sweep) newExecution(cache *replyCache, cancel context.CancelFunc) *execution {
	x := &execution{s: s, policy: orDefault(s.Spec.Cache, "auto"), conc: s.Spec.concurrency(), cancel: cancel,
		runners: map[string]*prepared{}}
	if s.opts.Concurrency > 0 {
		x.conc = s.opts.Concurrency
	}
	if x.policy != "off" {
		x.cache = cache
	}
	x.prevUSD, x.prevTok = s.records.spent()
	// What samples a crash or a stop left unrecorded spent counts too:
	// the budget is of what was spent, not of what was recorded.
	u, t := s.unrecordedSpending()
	x.prevUSD, x.prevTok = x.prevUSD+u, x.prevTok+t
	s.mu.Lock()
	s.limiters = map[string]*limiter{}
	s.mu.Unlock()
	return x
}

// pending counts the samples of the shard without a final record: those
// a run runs or scores again.
func (s *Sweep) pending() int {
	n := 0
	s.eachSample(func(_ sample, done bool) bool {
		if !done {
			n++
		}
		return true
	})
	return n
}

// launch runs each sample without a final record in a goroutine of its
// own once one of the run's slots is free, and only if the budget, checked
// then, is not reached: no sample starts past it. It returns when those
// launched have finished, with the budget's error if that stopped it.
func (r *sweepRun) launch(ctx context.Context) error {
	slots := make(chan struct{}, r.x.conc)
	var wg sync.WaitGroup
	var budgetErr error
	r.s.eachSample(func(sm sample, done bool) bool {
		if done {
			return true
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		if budgetErr = r.x.overBudget(); budgetErr != nil || ctx.Err() != nil {
			<-slots
			return false
		}
		wg.Go(func() {
			defer func() { <-slots }()
			r.finish(r.x.doSample(ctx, r.ropts, sm, r.plan))
		})
		return true
	})
	wg.Wait()
	if budgetErr != nil {
		budgetErr = r.x.overBudget() // with what the samples in flight spent
	}
	return budgetErr
}

// finish takes what became of a launched sample: a record is appended to
// the samples file and counted, a failed re-score is counted, and any
// other error stops the run.
func (r *sweepRun) finish(rec *Record, out outcome, err error) {
	switch {
	case out == outRescoreFailed:
		r.rescoreFailed(err)
	case err != nil:
		r.fail(err)
	case rec != nil:
		// Outside r.mu, so that samples finishing together share an fsync.
		if err := r.store.append(rec); err != nil {
			r.fail(err)
			return
		}
		r.recorded(rec, out)
	}
}

// rescoreFailed counts a sample whose re-score failed on a scorer's model
// call. It is not recorded: the earlier record stands, and the next run
// scores the sample again.
func (r *sweepRun) rescoreFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nRescoreFailed++
	if r.rescoreErr == nil {
		r.rescoreErr = err
	}
	r.prog.Done++
	r.prog.Failed++
	r.progress()
}

// recorded counts rec, just appended to the samples file, as what out
// says became of its sample.
func (r *sweepRun) recorded(rec *Record, out outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.records.add(rec)
	r.prog.Done++
	if rec.Status != "ok" {
		r.prog.Failed++
	}
	switch out {
	case outRescored:
		r.nRescored++
		r.prog.Rescored++
	case outReran:
		r.nReran++
		r.nRan++
	default:
		r.nRan++
	}
	r.progress()
}

// fail stops the run for err, unless an earlier error already did.
func (r *sweepRun) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fatalErr == nil {
		r.fatalErr = err
		r.x.cancel()
	}
}

// progress passes the run's progress to Options.Progress, if set. r.mu
// is held.
func (r *sweepRun) progress() {
	if r.s.opts.Progress == nil {
		return
	}
	x := r.x
	r.prog.Calls, r.prog.CacheHits = int(x.calls.Load()), int(x.hits.Load())
	x.mu.Lock()
	r.prog.SpentUSD = x.spentUSD
	x.mu.Unlock()
	r.prog.Elapsed = time.Since(r.start)
	r.s.opts.Progress(r.prog)
}

// report is the report of the sweep's directory with what the run did,
// and why it stopped early, if it did: the error Run returns with it.
func (r *sweepRun) report(ctx context.Context, budgetErr error) (*Report, error) {
	rep, err := r.s.Report()
	if err != nil {
		return nil, err
	}
	x := r.x
	rep.Calls, rep.CacheHits = int(x.calls.Load()), int(x.hits.Load())
	rep.Ran, rep.Rescored, rep.Reran, rep.RescoreFailed = r.nRan, r.nRescored, r.nReran, r.nRescoreFailed
	if r.rescoreErr != nil {
		rep.RescoreError = r.rescoreErr.Error()
	}
	x.mu.Lock()
	stopErr := x.stopErr
	x.mu.Unlock()
	switch {
	case stopErr != nil:
		rep.Stopped = stopErr.Error()
		return rep, stopErr
	case budgetErr != nil:
		rep.Stopped = budgetErr.Error()
		return rep, budgetErr
	case ctx.Err() != nil:
		rep.Stopped = "interrupted"
		return rep, ctx.Err()
	}
	return rep, nil
}

// writeManifest records the current grid, keeping the cells of earlier
// grids that are no longer in it.
func (s *Sweep) writeManifest() error {
	spec := s.Spec.Path
	if abs, err := filepath.Abs(spec); err == nil && spec != "" {
		spec = abs
	}
	m := &Manifest{Name: s.Spec.name(), Spec: spec, Tactic: s.base.TacticType, Rows: len(s.Rows), Dataset: datasetDigest(s.Rows),
		Repeats: s.Spec.repeats(), PassK: s.Spec.passK(), PassScorer: s.Spec.passScorer(), RowSums: rowSums(s.Rows), ScorerSpecs: s.scorerSpecs()}
	for _, a := range s.Spec.Axes {
		m.Axes = append(m.Axes, a.Path)
	}
	for _, a := range s.Spec.Zip {
		m.Axes = append(m.Axes, a.Path)
	}
	for _, sc := range s.scorers {
		m.Scorers = append(m.Scorers, sc.name)
	}
	seen := map[string]bool{}
	for _, c := range s.Cells {
		m.Cells = append(m.Cells, ManifestCell{Hash: c.Hash, Settings: c.Settings})
		seen[c.Hash] = true
	}
	if old, err := ReadManifest(s.Dir); err == nil {
		for _, c := range old.Cells {
			if !seen[c.Hash] {
				m.Cells = append(m.Cells, c)
				seen[c.Hash] = true
			}
		}
		for _, a := range old.Axes {
			if !contains(m.Axes, a) {
				m.Axes = append(m.Axes, a)
			}
		}
	}
	return writeManifest(s.Dir, m)
}

// Unfinished counts the samples of the sweep (of its shard) that are not
// finished: that have no final record made for their row as it is now with
// a score of every scorer of the spec. After Run returned without an error,
// they are the samples whose last try failed on the provider (its last
// model call failed: a rate limit, a server error, a bad key; or it timed
// out), after the spec's retries, and those whose re-score failed on a
// scorer's model call: the next run tries them again.
// Unlike Plan, it counts a sample that failed for a reason of its own as
// finished whatever Options.RerunFailed says.
func (s *Sweep) Unfinished() int {
	scorers := s.scorerSpecs()
	n := 0
	s.eachSample(func(sm sample, _ bool) bool {
		e, ok := s.records.get(sm.cell.Hash, sm.row.ID, sm.repeat)
		if !ok || !e.done() || !s.records.fresh(e, sm.row, scorers) {
			n++
		}
		return true
	})
	return n
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// runSample runs one sample, retrying it after a provider failure as the
// spec allows, and returns its record; nil when the sweep was stopped or
// cancelled while it ran. An error is one the sweep cannot go on after.
func (x *execution) runSample(ctx context.Context, ropts tactics.RunOptions, sm sample) (*Record, error) {
	spec := x.s.Spec
	rec := &Record{Cell: sm.cell.Hash, Row: sm.row.ID, Repeat: sm.repeat, Settings: sm.cell.Settings,
		Expected: sm.row.Expected, RowHash: strconv.FormatUint(rowSum(sm.row), 16), Shard: x.s.opts.Shard.String()}
	for attempt := 0; ; attempt++ {
		// The cell's runner is prepared once, by its first samples: that
		// is neither their latency nor part of their timeout.
		r, err := x.runner(ctx, sm.cell, ropts)
		if err != nil {
			return nil, fmt.Errorf("sample %s of cell %s: %w", sm.row.ID, sm.cell.Hash, err)
		}
		st := &sampleState{repeat: sm.repeat}
		sctx := withState(ctx, st)
		cancel := func() {}
		if spec.Timeout > 0 {
			sctx, cancel = context.WithTimeout(sctx, spec.Timeout)
		}
		begin := time.Now()
		res, err := r.RunLabeled(sctx, sm.row.Task, map[string]string{
			LabelSweep: spec.name(), LabelCell: sm.cell.Hash, LabelRow: sm.row.ID, LabelRepeat: strconv.Itoa(sm.repeat)})
		latency := time.Since(begin)
		timedOut := errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err != nil {
			return nil, fmt.Errorf("sample %s of cell %s: %w", sm.row.ID, sm.cell.Hash, err)
		}
		st.mu.Lock()
		rec.Calls += st.calls
		rec.CacheHits += st.hits
		rec.SpentUSD += st.spentUSD
		rec.SpentTokens += st.spentTok
		lastErr := st.lastErr
		st.mu.Unlock()
		if ctx.Err() != nil && res.Status != logs.StatusOK {
			return nil, nil // stopped: the sample is not finished
		}
		rec.RunID = res.RunID
		if rel, err := filepath.Rel(x.s.Dir, res.Dir); err == nil {
			rec.RunDir = rel
		}
		rec.TokensIn, rec.TokensOut = res.Totals.Cost.InputTokens, res.Totals.Cost.OutputTokens
		rec.Cost = res.Totals.Cost.USD
		rec.LatencyMS = float64(latency) / float64(time.Millisecond)
		rec.Scores, rec.ScoreErrors, rec.ScorerSpecs = make(map[string]float64, len(x.s.scorers)), nil, x.s.scorerSpecs()
		if res.Status == logs.StatusOK {
			rec.Status, rec.Error, rec.Retry = "ok", "", false
			rec.Answer = answerOf(res.Result, spec.Answer)
			perr := x.score(withState(ctx, st), rec, sm, res.Result, x.s.scorers)
			if ctx.Err() != nil && len(rec.ScoreErrors) > 0 {
				return nil, nil // stopped while scoring: the sample is not finished
			}
			if perr == nil {
				break
			}
			// A scorer's model call failed on the provider: the sample
			// failed as if its own call had, and a re-run tries it again.
			rec.Status, rec.Error, rec.Retry = "failed", perr.Error(), true
		} else {
			rec.Status, rec.Error = "failed", res.Error
			if timedOut {
				rec.Error = fmt.Sprintf("timed out after %s: %s", spec.Timeout, res.Error)
			}
			rec.Retry = timedOut || lastErr != nil
		}
		for _, sc := range x.s.scorers {
			rec.Scores[sc.name] = 0
		}
		if !rec.Retry || attempt >= spec.Retries {
			break
		}
		rec.RetriedRuns = append(rec.RetriedRuns, res.RunID)
		wait := time.Duration(float64(time.Second<<min(attempt, 6)) * (0.5 + rand.Float64()/2))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, nil
		}
	}
	rec.Finished = time.Now().UTC()
	return rec, nil
}

// runner returns the prepared runner of cell's config, preparing it on
// first use: a cell's samples share its tactic's prompts, tokenizer and
// models, opened through the sweep's cache and limiters.
func (x *execution) runner(ctx context.Context, c *Cell, ropts tactics.RunOptions) (*tactics.Runner, error) {
	x.mu.Lock()
	p := x.runners[c.Hash]
	if p == nil {
		p = &prepared{}
		x.runners[c.Hash] = p
	}
	x.mu.Unlock()
	p.once.Do(func() { p.r, p.err = tactics.Prepare(ctx, c.Config, ropts) })
	return p.r, p.err
}

// prepared is a cell's runner, prepared once.
type prepared struct {
	once sync.Once
	r    *tactics.Runner
	err  error
}

// score runs scorers (every scorer of the sweep, for a sample that ran;
// the missing or stale ones, for a re-score) on an answered sample,
// setting their scores in rec and replacing their errors; a scorer that
// fails scores 0 and its error is kept. It returns the error of a scorer
// whose own model call failed on the provider (a judge's), if any. The
// scorers' calls and spending are added to rec's.
func (x *execution) score(ctx context.Context, rec *Record, sm sample, result json.RawMessage, scorers []namedScorer) error {
	st := stateFrom(ctx)
	st.mu.Lock()
	before := [2]int{st.calls, st.hits}
	beforeUSD, beforeTok := st.spentUSD, st.spentTok
	st.mu.Unlock()
	in := &Sample{Row: sm.row, Answer: rec.Answer, Result: result, Repeat: sm.repeat}
	var perr error
	for _, sc := range scorers {
		delete(rec.ScoreErrors, sc.name)
		st.mu.Lock()
		st.lastErr = nil
		st.mu.Unlock()
		v, err := sc.Score(ctx, in)
		if err != nil {
			if rec.ScoreErrors == nil {
				rec.ScoreErrors = map[string]string{}
			}
			rec.ScoreErrors[sc.name] = err.Error()
			v = 0
			st.mu.Lock()
			if st.lastErr != nil && perr == nil {
				perr = fmt.Errorf("scorer %s: %w", sc.name, err)
			}
			st.mu.Unlock()
		}
		rec.Scores[sc.name] = v
	}
	if len(rec.ScoreErrors) == 0 {
		rec.ScoreErrors = nil
	}
	st.mu.Lock()
	rec.Calls += st.calls - before[0]
	rec.CacheHits += st.hits - before[1]
	rec.SpentUSD += st.spentUSD - beforeUSD
	rec.SpentTokens += st.spentTok - beforeTok
	st.mu.Unlock()
	return perr
}

// answerOf is the text a sample's scorers read: the dotted field of the
// result, or a string result, or an object's "answer", or the JSON.
func answerOf(result json.RawMessage, field string) string {
	var v any
	if err := json.Unmarshal(result, &v); err != nil {
		return string(result)
	}
	if field != "" {
		x, ok := lookup(v, field)
		if !ok {
			return ""
		}
		return text(x)
	}
	switch t := v.(type) {
	case string:
		return t
	case map[string]any:
		if a, ok := t["answer"]; ok {
			return text(a)
		}
	}
	return string(result)
}
