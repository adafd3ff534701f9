package replay_test

// Helpers the tests of this package share: recording a run, replaying
// it, and comparing a replay's log and ending with the recording's.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// noWait is a RunOptions.Sleep that retries at once.
func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// modelFunc is a provider.Model of a function.
type modelFunc func(ctx context.Context, req *provider.Request) (*provider.Response, error)

func (f modelFunc) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	return f(ctx, req)
}

// configFile loads one of configs/*.yaml and applies sets to it, as
// --set does.
func configFile(t *testing.T, file string, sets ...string) *config.Config {
	t.Helper()
	cfg, err := config.Load(filepath.Join("..", "configs", file))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		k, v, _ := strings.Cut(s, "=")
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// recordRun runs cfg on task into a new log root (retries without
// waiting), checks that it ended want, and returns how it ended and its
// run.
func recordRun(t *testing.T, cfg *config.Config, task string, want logs.Status) (*tactics.Result, *logs.Run) {
	t.Helper()
	root := t.TempDir()
	res, err := tactics.Run(t.Context(), cfg, task, tactics.RunOptions{LogDir: root, Seed: 3, Sleep: noWait})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != want {
		t.Fatalf("recording ended %s (%s), want %s", res.Status, res.Error, want)
	}
	run, err := logs.Open(root, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return res, run
}

func mustLoad(t *testing.T, run *logs.Run) *replay.Recording {
	t.Helper()
	rec, err := replay.Load(t.Context(), run)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// writeLog writes data as the log of a copy of run under a new log root,
// and opens it.
func writeLog(t *testing.T, run *logs.Run, data []byte) (*logs.Run, error) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, run.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, logs.EventsFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return logs.Open(root, run.ID)
}

// records reads every record of the log at path.
func records(t *testing.T, path string) []*logs.Record {
	t.Helper()
	r, err := logs.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []*logs.Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

// normalize takes out of rec what differs between a run and its replay:
// its time, the run id, labels (a replay's replay_of), host and git
// commit (the tree may change between two runs), durations, latencies
// and tactic session ids.
func normalize(rec *logs.Record) {
	rec.Time = time.Time{}
	if s := rec.RunStart; s != nil {
		s.RunID, s.Labels, s.Host, s.GitCommit = "", nil, "", ""
	}
	if e := rec.RunEnd; e != nil {
		e.Totals.DurationMS = 0
	}
	if m := rec.ModelCall; m != nil {
		m.LatencyMS = 0
	}
	if tc := rec.ToolCall; tc != nil {
		tc.LatencyMS = 0
	}
	if ts := rec.TacticStart; ts != nil {
		ts.Session, ts.Parent = "", ""
	}
	if te := rec.TacticEnd; te != nil {
		te.Session = ""
	}
}

// dialogID is a dialog id as a log's JSON writes it.
var dialogID = regexp.MustCompile(`"[0-9a-f]{16}"`)

// content is a run's log, one line a record, normalized, with dialog ids
// numbered in order of appearance.
func content(t *testing.T, dir string) []string {
	t.Helper()
	ids := map[string]string{}
	var out []string
	for _, rec := range records(t, filepath.Join(dir, logs.EventsFile)) {
		normalize(rec)
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dialogID.ReplaceAllStringFunc(string(b), func(id string) string {
			if ids[id] == "" {
				ids[id] = fmt.Sprintf(`"d%d"`, len(ids)+1)
			}
			return ids[id]
		}))
	}
	return out
}

// firstDiff is the first line where a and b differ, for a message.
func firstDiff(a, b []string) string {
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  recorded: %s\n  replayed: %s", i+1, x, y)
		}
	}
	return ""
}

// checkSameEnd checks that rep replayed the run recorded as res call for
// call: no divergence, every recorded call served, and the same status,
// error, result and totals (calls, tool calls, dialogs, messages, tokens
// and cost).
func checkSameEnd(t *testing.T, res *tactics.Result, rep *replay.Report) {
	t.Helper()
	if d := rep.Divergence; d != nil {
		t.Fatalf("replay diverged: %v\n%s", d, d.Diff)
	}
	if rep.Calls != rep.Recorded || rep.Recorded != res.Totals.ModelCalls || rep.Calls == 0 {
		t.Errorf("replay served %d of %d recorded calls; the run made %d", rep.Calls, rep.Recorded, res.Totals.ModelCalls)
	}
	if rep.Run.Status != res.Status || rep.Run.Error != res.Error {
		t.Errorf("replay ended %s %q, the run %s %q", rep.Run.Status, rep.Run.Error, res.Status, res.Error)
	}
	if string(rep.Run.Result) != string(res.Result) {
		t.Errorf("replay result %s, the run's %s", rep.Run.Result, res.Result)
	}
	a, b := res.Totals, rep.Run.Totals
	a.DurationMS, b.DurationMS = 0, 0
	if a != b {
		t.Errorf("replay totals %+v, the run's %+v", b, a)
	}
}
