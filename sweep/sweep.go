package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// Options adjust a sweep.
type Options struct {
	// Sets override values of the base config before the axes apply, as
	// "key.path=value" (see config.Config.Set).
	Sets []string
	// LogRoot is the log root: the sweep's directory is
	// <LogRoot>/sweeps/<name>. Empty means logs.DefaultRoot.
	LogRoot string
	// Dir, when set, is the sweep's directory, whatever LogRoot says.
	Dir string
	// Shard restricts the run to a share of the samples.
	Shard Shard
	// Concurrency, when positive, overrides the spec's.
	Concurrency int
	// RerunFailed runs again the samples whose record failed for a reason
	// of their own (the tactic's error), which a run otherwise keeps as
	// final: after a fix to the tactic's code, which no config hash sees.
	// Samples that failed on the provider run again in any case.
	RerunFailed bool
	// HTTPClient sends the providers' requests; nil uses the default.
	HTTPClient *http.Client
	// Open, when set, opens models in place of provider.Open.
	Open func(ctx context.Context, name string, cfg provider.Config) (provider.Model, error)
	// Progress, when set, is called after each sample with the state of
	// the run. Calls are serialized.
	Progress func(Progress)
}

// Progress is the state of a running sweep.
type Progress struct {
	// Done and Total are the samples finished in this run and the
	// samples to finish: to run, or to score again from their run logs.
	Done, Total int
	Failed      int // of Done: failed, or not re-scored for a scorer's failed model call
	Rescored    int // of Done: scored again from their run logs, not run
	Calls       int // model calls made (cache hits excluded)
	CacheHits   int
	SpentUSD    float64
	Elapsed     time.Duration
}

// Sweep is a spec made ready to run: its base config, rows, cells and
// scorers checked, and the samples already finished in its directory read.
type Sweep struct {
	Spec  *Spec
	Dir   string
	Rows  []Row
	Cells []*Cell

	opts     Options
	base     *config.Config
	scorers  []namedScorer
	records  *recordIndex
	warnings []string

	mu       sync.Mutex
	limiters map[string]*limiter
}

type namedScorer struct {
	name string
	spec string // ScorerSpec.digest
	Scorer
}

// New checks spec and everything it names (base config and overrides,
// dataset, axes, scorers, each cell's tactic and agents) and reads what
// the sweep's directory already holds. It writes nothing. Problems with
// the spec or its files are a *SpecError, or a *tactics.ConfigError for a
// cell's config.
func New(ctx context.Context, spec *Spec, opts Options) (*Sweep, error) {
	s := &Sweep{Spec: spec, opts: opts}
	load := func() (*config.Config, error) {
		cfg, err := config.Load(spec.rel(spec.Config))
		if err != nil {
			return nil, &SpecError{configProblems(spec, err)}
		}
		for _, kv := range opts.Sets {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, &SpecError{&config.Error{File: "--set " + kv, Msg: "want KEY.PATH=VALUE"}}
			}
			if err := cfg.Set(k, v); err != nil {
				return nil, &SpecError{err}
			}
		}
		return cfg, nil
	}
	// Every stage that can run reports its problems, so that one run of
	// validate or sweep shows them all.
	var errs []error
	base, err := load()
	if err != nil {
		errs = append(errs, err)
	}
	s.base = base
	if s.Rows, err = LoadDataset(spec.rel(spec.Dataset.Path), spec.Dataset); err != nil {
		if _, ok := placed(err); !ok {
			// A problem of the file, not of a row: at the spec's dataset.
			err = &config.Error{File: spec.Path, Line: spec.lines["dataset"], Err: err}
		}
		errs = append(errs, err)
	}
	if base != nil {
		lines := map[string]int{}
		for _, a := range append(append([]Axis{}, spec.Axes...), spec.Zip...) {
			lines[a.Path] = a.Line
		}
		if s.Cells, err = buildCells(expand(spec.Axes, spec.Zip), base, lines, spec.Path); err != nil {
			errs = append(errs, err)
		}
		env := Env{Dir: filepath.Dir(spec.Path), Config: base, Open: s.open}
		for _, sc := range spec.scorers() {
			f, err := NewScorer(sc.Type, sc.Params, env)
			if err != nil {
				errs = append(errs, &config.Error{File: spec.Path, Line: sc.Line, Err: err})
				continue
			}
			s.scorers = append(s.scorers, namedScorer{sc.Label(), scorerDigest(sc, spec.Answer), f})
		}
		if err := missingExpected(spec, s.Rows); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, &SpecError{errors.Join(errs...)}
	}
	ropts := tactics.RunOptions{HTTPClient: opts.HTTPClient, Models: s.models}
	var cellErrs []error
	atAxes := &axisProblems{}
	for _, c := range s.Cells {
		if err := tactics.Check(ctx, c.Config, ropts); err != nil {
			if len(c.Settings) == 0 {
				return nil, err
			}
			cellErrs = append(cellErrs, cellProblems(c, err, atAxes)...)
		}
	}
	if cellErrs = append(atAxes.all(spec), cellErrs...); len(cellErrs) > 0 {
		return nil, &tactics.ConfigError{Err: errors.Join(cellErrs...)}
	}
	s.Dir = opts.Dir
	if s.Dir == "" {
		root := opts.LogRoot
		if root == "" {
			root = logs.DefaultRoot
		}
		s.Dir = filepath.Join(root, "sweeps", spec.name())
	}
	if _, err := os.Stat(s.Dir); err == nil {
		if s.records, s.warnings, err = loadRecords(s.Dir); err != nil {
			return nil, err
		}
		w, err := s.otherSweep()
		if err != nil {
			return nil, &SpecError{err}
		}
		if w != "" {
			s.warnings = append(s.warnings, w)
		}
	} else {
		s.records = newRecordIndex()
	}
	return s, nil
}

// otherSweep refuses a directory last run by another spec file of the
// same name (by default the file name, so two sweep.yaml files), which
// would mix the two sweeps' samples and leave the manifest, and so the
// report, the last one's. It goes by the spec's absolute path, which the
// manifest records: the same file, edited or reached by another path, is
// the same sweep, and so is a spec moved from a path where no file is
// left. A manifest from before it recorded a path as it was given,
// relative to a directory it does not say; otherSweep then only warns,
// and only when the dataset differs too.
func (s *Sweep) otherSweep() (warning string, err error) {
	m, err := ReadManifest(s.Dir)
	if err != nil || m.Spec == "" || s.Spec.Path == "" {
		return "", nil
	}
	now, err := filepath.Abs(s.Spec.Path)
	if err != nil || sameFile(m.Spec, now) {
		return "", nil
	}
	if !filepath.IsAbs(m.Spec) {
		if m.Dataset == "" || m.Dataset == datasetDigest(s.Rows) {
			return "", nil
		}
		return fmt.Sprintf("%s was last run by %s, on another dataset: %s has the same name %q, so the two share the directory and each re-runs the other's samples: give one of them its own name (the spec's name key), or run it with another --log-dir",
			s.Dir, m.Spec, s.Spec.Path, s.Spec.name()), nil
	}
	if _, err := os.Stat(m.Spec); err != nil {
		return "", nil // moved, or on another machine
	}
	return "", errorAt(s.Spec.Path, s.Spec.lines["name"], "sweep %q in %s is the sweep of another spec, %s: the two would share its samples and the report would show them as this one's; give this spec its own name (the name key), or run it with another --log-dir, or, to go on with that sweep, edit and run that spec",
		s.Spec.name(), s.Dir, m.Spec)
}

// sameFile reports whether the paths a and b name one file: the same
// path, or, both existing, the same file by another path (a link).
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// Warnings are what reading the sweep's directory skipped, such as a torn
// last line, and a directory shared with another sweep.
func (s *Sweep) Warnings() []string { return s.warnings }

// lastLimiter returns the adaptive limiter of provider's calls in the last
// run, or nil. provider is named as in a model name: "vllm" finds the
// limiter of "mylab:vllm" when that is the one provider of that name.
func (s *Sweep) lastLimiter(provider string) *limiter {
	p := registeredProvider(provider)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limiters[p]
}

// open opens a model for a sample or a scorer: through the sweep's
// cache, limiter and accounting while it runs.
func (s *Sweep) open(ctx context.Context, name string, pcfg provider.Config) (provider.Model, error) {
	var m provider.Model
	var err error
	if s.opts.Open != nil {
		m, err = s.opts.Open(ctx, name, pcfg)
	} else {
		m, err = provider.Open(ctx, name, pcfg)
	}
	if err != nil {
		return nil, err
	}
	if x := executionFrom(ctx); x != nil {
		return &model{inner: m, name: name, cacheID: cacheID(name, pcfg), provider: registeredProvider(providerOf(name)), x: x}, nil
	}
	return m, nil
}

// cacheID names a model in cache keys: its name, and what of its provider
// config changes its replies (the endpoint, the region, the mock's script).
func cacheID(name string, pcfg provider.Config) string {
	b, err := json.Marshal(struct {
		BaseURL string               `json:"base_url,omitempty"`
		Region  string               `json:"region,omitempty"`
		Mock    *provider.MockConfig `json:"mock,omitempty"`
	}{pcfg.BaseURL, pcfg.Region, pcfg.Mock})
	if err != nil || string(b) == "{}" {
		return name
	}
	sum := sha256.Sum256(b)
	return name + "@" + hex.EncodeToString(sum[:8])
}

func (s *Sweep) models(ctx context.Context, ac config.Agent, pcfg provider.Config) (provider.Model, error) {
	return s.open(ctx, ac.ModelName, pcfg)
}

type execKey struct{}

func executionFrom(ctx context.Context) *execution {
	x, _ := ctx.Value(execKey{}).(*execution)
	return x
}

// sample is one (cell, row, repeat) to run.
type sample struct {
	cell   *Cell
	row    *Row
	repeat int
}

// eachSample calls yield with each sample of the shard and whether it has
// a final record, repeats slowest and cells fastest, so that a partial run
// covers every cell evenly; it stops when yield returns false. It makes
// the samples one at a time: a sweep of any size is walked in constant
// memory.
func (s *Sweep) eachSample(yield func(sm sample, done bool) bool) {
	scorers := s.scorerSpecs()
	for r := 0; r < s.Spec.repeats(); r++ {
		for i := range s.Rows {
			for _, c := range s.Cells {
				row := &s.Rows[i]
				if !s.opts.Shard.Has(c.Hash, row.ID, r) {
					continue
				}
				if !yield(sample{c, row, r}, s.done(c.Hash, row, r, scorers)) {
					return
				}
			}
		}
	}
}

// done says whether a sample has a final record made for its row as it is
// and scored by every one of scorers, the spec's.
func (s *Sweep) done(cell string, row *Row, repeat int, scorers map[string]string) bool {
	e, ok := s.records.get(cell, row.ID, repeat)
	return ok && s.final(e) && s.records.fresh(e, row, scorers)
}

// cellProblems names c in each problem of err, the check of its config.
// A problem the config places at one of c's axes ("--set PATH", as axes
// are applied) goes to atAxes instead, to be placed at that axis in the
// spec: the spec set the value, not a --set. Another problem the config
// places stays where it is.
func cellProblems(c *Cell, err error, atAxes *axisProblems) []error {
	var ce *tactics.ConfigError
	if errors.As(err, &ce) && ce.Err != nil {
		err = ce.Err
	}
	var out []error
	for _, e := range unjoin(err) {
		pe, ok := placed(e)
		if !ok {
			out = append(out, fmt.Errorf("cell %s: %w", c.Label(), e))
			continue
		}
		if path, isSet := strings.CutPrefix(pe.File, "--set "); isSet {
			if i := slices.IndexFunc(c.Settings, func(s Setting) bool { return s.Path == path }); i >= 0 {
				atAxes.add(path, c.Settings[i].Text(), message(pe))
				continue
			}
		}
		out = append(out, &config.Error{File: pe.File, Line: pe.Line, Column: pe.Column, Msg: "cell " + c.Label() + ": " + message(pe)})
	}
	return out
}

// axisProblems gathers the problems the config places at an axis, over
// the cells: each once, with the axis's values that made it, however many
// cells have them.
type axisProblems struct {
	list []*axisProblem
}

type axisProblem struct {
	path, msg string
	values    []string // as the table shows them
}

// add records the problem msg of the value of the axis path.
func (a *axisProblems) add(path, value, msg string) {
	i := slices.IndexFunc(a.list, func(p *axisProblem) bool { return p.path == path && p.msg == msg })
	if i < 0 {
		i = len(a.list)
		a.list = append(a.list, &axisProblem{path: path, msg: msg})
	}
	if p := a.list[i]; !slices.Contains(p.values, value) {
		p.values = append(p.values, value)
	}
}

// all are the problems, each at its axis's line in spec, naming the
// values that have it unless every value of the axis does.
func (a *axisProblems) all(spec *Spec) []error {
	var out []error
	for _, p := range a.list {
		what := "axis " + p.path
		for _, ax := range append(append([]Axis{}, spec.Axes...), spec.Zip...) {
			if ax.Path != p.path {
				continue
			}
			switch {
			case len(p.values) == len(ax.Values):
			case len(p.values) == 1:
				what += ", value " + p.values[0]
			default:
				what += ", values " + strings.Join(p.values, ", ")
			}
			out = append(out, errorAt(spec.Path, ax.Line, "%s: %s", what, p.msg))
		}
	}
	return out
}

// configProblems are the problems of loading the spec's base config: each
// that the config places (in its file or its base chain) where it is, and
// any other (the file cannot be read) at the spec's config.
func configProblems(spec *Spec, err error) error {
	var out []error
	for _, e := range unjoin(err) {
		if pe, ok := placed(e); ok && pe.File != "" {
			out = append(out, e)
			continue
		}
		out = append(out, &config.Error{File: spec.Path, Line: spec.lines["config"], Msg: "config", Err: e})
	}
	return errors.Join(out...)
}

// final says whether the record e stands for needs no further run: it
// succeeded, or failed for a reason of its own and Options.RerunFailed is
// off.
func (s *Sweep) final(e recEntry) bool {
	return e.ok || e.done() && !s.opts.RerunFailed
}

// scorerDigest is sc's digest and, when the spec names one, the answer
// field its scores read: a score of another field of the result is stale,
// and re-scoring reads the answer anew from the run log's result.
func scorerDigest(sc ScorerSpec, answer string) string {
	d := sc.digest()
	if answer == "" {
		return d
	}
	sum := sha256.Sum256([]byte(d + "\x00answer:" + answer))
	return hex.EncodeToString(sum[:8])
}

// scorerSpecs are the spec's scorers: each column name's ScorerSpec.digest.
func (s *Sweep) scorerSpecs() map[string]string {
	specs := make(map[string]string, len(s.scorers))
	for _, sc := range s.scorers {
		specs[sc.name] = sc.spec
	}
	return specs
}

// Plan is what a run would do, for --dry-run.
type Plan struct {
	Name  string     `json:"name"`
	Dir   string     `json:"dir"`
	Shard string     `json:"shard"`
	Cells []PlanCell `json:"cells"`
	// Samples, Done, ToRun and ToRescore sum the cells'; Calls estimates
	// the model calls of ToRun and ToRescore.
	Samples int `json:"samples"`
	Done    int `json:"done"`
	ToRun   int `json:"to_run"`
	// ToRescore are the samples to score again from their run logs
	// rather than run: their answer stands, a scorer was added or its
	// params changed. One whose log turns out unreadable runs instead.
	ToRescore int `json:"to_rescore"`
	Calls     int `json:"calls"`
	// Guessed names the tactics whose calls are guessed, one per agent,
	// for cells with samples to run and none finished: tactics that are
	// not built in, whose calls per run nothing tells beforehand.
	Guessed []string `json:"guessed,omitempty"`
}

// PlanCell is one cell of a Plan.
type PlanCell struct {
	Hash     string `json:"hash"`
	Settings Point  `json:"settings"`
	Samples  int    `json:"samples"` // in the shard
	Done     int    `json:"done"`
	ToRun    int    `json:"to_run"`
	// ToRescore are the samples to score again from their run logs.
	ToRescore int `json:"to_rescore"`
	// CallsPerSample is the mean of the cell's finished samples, or an
	// estimate from its tactic's params; Calls = ToRun x CallsPerSample,
	// plus one call per judge scorer each re-score runs.
	CallsPerSample float64 `json:"calls_per_sample"`
	Calls          int     `json:"calls"`
}

// MarshalJSON encodes c with its settings as a report's cell has them: a
// map of each axis path to its value.
func (c PlanCell) MarshalJSON() ([]byte, error) {
	type plain PlanCell // c's fields, without this method
	settings := make(map[string]any, len(c.Settings))
	for _, s := range c.Settings {
		settings[s.Path] = s.Value
	}
	return json.Marshal(struct {
		plain
		Settings map[string]any `json:"settings"`
	}{plain(c), settings})
}

// Plan says which cells and samples a run would run, which it would score
// again from their run logs, and how many model calls that may take. It
// runs nothing and writes nothing.
func (s *Sweep) Plan() *Plan {
	p := &Plan{Name: s.Spec.name(), Dir: s.Dir, Shard: s.opts.Shard.String()}
	// A samples file that cannot be read now leaves the samples that
	// might be re-scored counted as to run.
	rescore, _ := s.rescorable()
	judgeCalls := make([]int, len(s.Cells))
	idx := map[string]int{}
	for _, c := range s.Cells {
		idx[c.Hash] = len(p.Cells)
		p.Cells = append(p.Cells, PlanCell{Hash: c.Hash, Settings: c.Settings, CallsPerSample: s.callsPerSample(c)})
	}
	s.eachSample(func(sm sample, done bool) bool {
		i := idx[sm.cell.Hash]
		pc := &p.Cells[i]
		pc.Samples++
		switch j, ok := rescore.job(s.records, sm); {
		case done:
		case ok:
			pc.ToRescore++
			judgeCalls[i] += int(j.judges)
		default:
			pc.ToRun++
		}
		return true
	})
	for i := range p.Cells {
		c := &p.Cells[i]
		c.Done = c.Samples - c.ToRun - c.ToRescore
		c.Calls = int(float64(c.ToRun)*c.CallsPerSample+0.5) + judgeCalls[i]
		p.Samples += c.Samples
		p.Done += c.Done
		p.ToRun += c.ToRun
		p.ToRescore += c.ToRescore
		p.Calls += c.Calls
		if cell := s.Cells[i]; c.ToRun > 0 && !s.hasFinished(cell) && !builtinEstimate(cell.Config.TacticType) && !slices.Contains(p.Guessed, cell.Config.TacticType) {
			p.Guessed = append(p.Guessed, cell.Config.TacticType)
		}
	}
	return p
}

// hasFinished reports whether a sample of cell c has a record.
func (s *Sweep) hasFinished(c *Cell) bool {
	for _, r := range s.Rows {
		for rep := 0; rep < s.Spec.repeats(); rep++ {
			if _, ok := s.records.get(c.Hash, r.ID, rep); ok {
				return true
			}
		}
	}
	return false
}

// builtinEstimate reports whether estimateCalls knows the tactic.
func builtinEstimate(tactic string) bool {
	switch tactic {
	case "chat", "best_of_n", "debate", "self_refine", "react":
		return true
	}
	return false
}

// callsPerSample is the mean number of model calls (and cache hits) of
// the cell's finished samples, or else an estimate from its tactic.
func (s *Sweep) callsPerSample(c *Cell) float64 {
	var n, calls int
	for _, r := range s.Rows {
		for rep := 0; rep < s.Spec.repeats(); rep++ {
			if e, ok := s.records.get(c.Hash, r.ID, rep); ok {
				n++
				calls += int(e.calls)
			}
		}
	}
	if n > 0 {
		return float64(calls) / float64(n)
	}
	judges := 0
	for _, sc := range s.Spec.scorers() {
		if sc.Type == "judge" {
			judges++
		}
	}
	return float64(estimateCalls(c.Config) + judges)
}

// estimateCalls is the most model calls one run of cfg's built-in tactic
// makes when no reply fails to parse; for other tactics, one per agent.
func estimateCalls(cfg *config.Config) int {
	p := func(key string, def int) int {
		switch v := cfg.Params[key].(type) {
		case int:
			return v
		case float64:
			return int(v)
		}
		return def
	}
	switch cfg.TacticType {
	case "chat":
		return 1
	case "best_of_n":
		return p("n", 3) + 1
	case "debate":
		return 2*p("rounds", 2) + 1
	case "self_refine":
		return 1 + 2*p("iterations", 3)
	case "react":
		return p("max_steps", 4) + 1
	}
	return max(len(cfg.Agents), 1)
}

// ErrBudget is reported when a sweep stops because its budget is spent.
var ErrBudget = errors.New("budget reached")

// execution is the state of one Run.
type execution struct {
	s      *Sweep
	cache  *replyCache
	policy string
	conc   int

	calls, hits atomic.Int64

	// prevUSD and prevTok are what the records read before the run spent.
	prevUSD float64
	prevTok int

	mu          sync.Mutex
	spentUSD    float64
	spentTok    int
	consecutive int
	stopErr     error
	cancel      context.CancelFunc
	runners     map[string]*prepared     // by cell hash
	flights     map[string]chan struct{} // cache keys being asked of a model
}

func (x *execution) cacheable(req *provider.Request) bool {
	switch x.policy {
	case "on":
		return true
	case "off":
		return false
	}
	t := req.Params.Temperature
	return t != nil && *t == 0
}

func (x *execution) limiter(p string) *limiter {
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.limiters[p]
	if !ok {
		l = newLimiter(s.Spec.providerLimit(p, x.conc))
		s.limiters[p] = l
	}
	return l
}

func (x *execution) callFailed(model string, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.consecutive++
	if n := x.s.Spec.maxConsecutive(); n > 0 && x.consecutive >= n && x.stopErr == nil {
		x.stopErr = fmt.Errorf("stopped after %d model calls in a row failed (max_consecutive_errors); the last, to %s: %w", x.consecutive, model, err)
		x.cancel()
	}
}

func (x *execution) callSucceeded(usd float64, tokens int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.consecutive = 0
	x.spentUSD += usd
	x.spentTok += tokens
}

// overBudget says whether what the sweep spent, before this run and in
// it, reached a bound of the spec's budget.
func (x *execution) overBudget() error {
	b := x.s.Spec.Budget
	if b.MaxCost == 0 && b.MaxTokens == 0 {
		return nil
	}
	x.mu.Lock()
	u, t := x.spentUSD, x.spentTok
	x.mu.Unlock()
	switch {
	case b.MaxCost > 0 && x.prevUSD+u >= b.MaxCost:
		return fmt.Errorf("%w: spent $%.4f of max_cost $%.4f", ErrBudget, x.prevUSD+u, b.MaxCost)
	case b.MaxTokens > 0 && x.prevTok+t >= b.MaxTokens:
		return fmt.Errorf("%w: spent %d tokens of max_tokens %d", ErrBudget, x.prevTok+t, b.MaxTokens)
	}
	return nil
}
