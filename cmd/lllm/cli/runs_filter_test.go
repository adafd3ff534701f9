package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/logs"
)

// writeStartedRun writes a run log under root that started at started,
// with start as its run_start and, unless end is nil, end as its run_end.
// Without a run_end no process holds the log, so the run is interrupted.
// It returns the run's id, which sorts by start time as logs.Create's do.
func writeStartedRun(t *testing.T, root string, started time.Time, suffix string, start logs.RunStart, end *logs.RunEnd) string {
	t.Helper()
	id := started.UTC().Format("20060102T150405.000000Z") + "-" + suffix
	start.Format = logs.FormatName
	start.Version = strconv.Itoa(logs.VersionMajor) + "." + strconv.Itoa(logs.VersionMinor)
	start.RunID = id
	recs := []logs.Record{{Seq: 1, Time: started, Kind: logs.KindRunStart, RunStart: &start}}
	if end != nil {
		e := *end
		e.Totals.DurationMS = 90_000 // as a Writer would: the time since run_start
		recs = append(recs, logs.Record{Seq: 2, Time: started.Add(90 * time.Second), Kind: logs.KindRunEnd, RunEnd: &e})
	}
	var b strings.Builder
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	writeRun(t, root, id, b.String())
	return id
}

// filterFixture is a log root holding one run of every status, of several
// tactics, with labels, started at different times.
type filterFixture struct {
	root string
	// The runs, oldest first.
	old, failed, cancelled, interrupted, recent, running, junk string
}

func newFilterFixture(t *testing.T) *filterFixture {
	t.Helper()
	root := t.TempDir()
	now := time.Now()
	f := &filterFixture{root: root}
	ok := &logs.RunEnd{Status: logs.StatusOK}
	f.old = writeStartedRun(t, root, now.Add(-72*time.Hour), "aaaaaa",
		logs.RunStart{Tactic: "best_of_n", Labels: map[string]string{"model": "gpt-4o"}}, ok)
	f.failed = writeStartedRun(t, root, now.Add(-50*time.Hour), "bbbbbb",
		logs.RunStart{Tactic: "debate", Labels: map[string]string{"model": "claude"}},
		&logs.RunEnd{Status: logs.StatusFailed, Error: "boom"})
	f.cancelled = writeStartedRun(t, root, now.Add(-30*time.Hour), "cccccc",
		logs.RunStart{Tactic: "best_of_n", Labels: map[string]string{"model": "gpt-4o", "task_id": "1"}},
		&logs.RunEnd{Status: logs.StatusCancelled})
	f.interrupted = writeStartedRun(t, root, now.Add(-10*time.Hour), "dddddd",
		logs.RunStart{Tactic: "mylab:probe", Labels: map[string]string{"task_id": "2"}}, nil)
	f.recent = writeStartedRun(t, root, now.Add(-1*time.Hour), "eeeeee",
		logs.RunStart{Tactic: "best_of_n", Labels: map[string]string{"model": "gpt-4o", "variant": "a=b"}}, ok)
	w, running, err := logs.Create(root, logs.RunStart{Tactic: "debate", Labels: map[string]string{"model": "claude"}}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() }) // still being written while lllm runs looks
	f.running = running.ID
	f.junk = "99991231T000000.000000Z-junk00"
	writeRun(t, root, f.junk, "not a log\n")
	return f
}

// all is every run of the fixture, oldest first.
func (f *filterFixture) all() []string {
	return []string{f.old, f.failed, f.cancelled, f.interrupted, f.recent, f.running, f.junk}
}

// tableIDs are the run ids of the rows of lllm runs' table, in order.
func tableIDs(t *testing.T, stdout string) []string {
	t.Helper()
	if stdout == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "ID ") {
		t.Fatalf("the table has no header:\n%s", stdout)
	}
	ids := []string{}
	for _, l := range lines[1:] {
		ids = append(ids, strings.Fields(l)[0])
	}
	return ids
}

// jsonIDs are the run ids of lllm runs -o json's output, in order.
func jsonIDs(t *testing.T, stdout string) []string {
	t.Helper()
	var runs []logs.RunInfo
	if err := json.Unmarshal([]byte(stdout), &runs); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	ids := []string{}
	for _, r := range runs {
		ids = append(ids, r.RunID)
	}
	return ids
}

func TestRunsFilters(t *testing.T) {
	f := newFilterFixture(t)
	cases := []struct {
		name  string
		flags []string
		want  []string
	}{
		{"no filter", nil, f.all()},
		{"status ok", []string{"--status", "ok"}, []string{f.old, f.recent}},
		{"status failed", []string{"--status", "failed"}, []string{f.failed}},
		{"status cancelled", []string{"--status", "cancelled"}, []string{f.cancelled}},
		{"status interrupted", []string{"--status", "interrupted"}, []string{f.interrupted}},
		{"status running", []string{"--status", "running"}, []string{f.running}},
		{"status unreadable", []string{"--status", "unreadable"}, []string{f.junk}},
		{"status comma-separated", []string{"--status", "failed,ok"}, []string{f.old, f.failed, f.recent}},
		{"status repeated", []string{"--status", "cancelled", "--status", "interrupted"}, []string{f.cancelled, f.interrupted}},
		{"tactic", []string{"--tactic", "best_of_n"}, []string{f.old, f.cancelled, f.recent}},
		{"tactic bare name of a package's", []string{"--tactic", "probe"}, []string{f.interrupted}},
		{"tactic with its package", []string{"--tactic", "mylab:probe"}, []string{f.interrupted}},
		{"tactic other package", []string{"--tactic", "other:probe"}, nil},
		{"tactic is not a prefix", []string{"--tactic", "best"}, nil},
		{"label key=value", []string{"--label", "model=gpt-4o"}, []string{f.old, f.cancelled, f.recent}},
		{"label value with =", []string{"--label", "variant=a=b"}, []string{f.recent}},
		{"label other value", []string{"--label", "model=gpt-4"}, nil},
		{"label key alone", []string{"--label", "task_id"}, []string{f.cancelled, f.interrupted}},
		{"label empty value is not any value", []string{"--label", "task_id="}, nil},
		{"labels all must match", []string{"--label", "model=gpt-4o", "--label", "task_id"}, []string{f.cancelled}},
		{"since 36h", []string{"--since", "36h"}, []string{f.cancelled, f.interrupted, f.recent, f.running}},
		{"since 1.5d", []string{"--since", "1.5d"}, []string{f.cancelled, f.interrupted, f.recent, f.running}},
		{"since 2h", []string{"--since", "2h"}, []string{f.recent, f.running}},
		{"since 90m", []string{"--since", "90m"}, []string{f.recent, f.running}},
		{"since 100h", []string{"--since", "100h"}, f.all()[:6]},
		{"limit", []string{"-n", "2"}, []string{f.running, f.junk}},
		{"limit long", []string{"--limit", "3"}, []string{f.recent, f.running, f.junk}},
		{"limit more than there are", []string{"-n", "100"}, f.all()},
		{"limit 0 is all", []string{"-n", "0"}, f.all()},
		{"limit after the filters", []string{"--status", "ok", "-n", "1"}, []string{f.recent}},
		{"limit of a filter", []string{"--tactic", "best_of_n", "-n", "2"}, []string{f.cancelled, f.recent}},
		{"tactic and status", []string{"--tactic", "best_of_n", "--status", "ok"}, []string{f.old, f.recent}},
		{"tactic and since", []string{"--tactic", "debate", "--since", "60h"}, []string{f.failed, f.running}},
		{"label and status", []string{"--label", "model=claude", "--status", "running,failed"}, []string{f.failed, f.running}},
		{"everything", []string{"--tactic", "best_of_n", "--label", "model=gpt-4o", "--since", "36h", "--status", "ok,cancelled", "-n", "5"},
			[]string{f.cancelled, f.recent}},
		{"everything, limited", []string{"--tactic", "best_of_n", "--label", "model=gpt-4o", "--since", "36h", "--status", "ok,cancelled", "-n", "1"},
			[]string{f.recent}},
		{"filters that exclude each other", []string{"--tactic", "debate", "--status", "ok"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"runs", "--log-dir", f.root}, c.flags...)
			r := lllm(t, args...)
			if r.code != 0 {
				t.Fatalf("%v", r)
			}
			if got := tableIDs(t, r.stdout); !slices.Equal(got, c.want) {
				t.Errorf("rows %v, want %v\n%v", got, c.want, r)
			}
			// The same runs as JSON, in the same order, and nothing on stderr
			// but the warning about the unreadable run if it is listed.
			js := lllm(t, append(args, "-o", "json")...)
			if js.code != 0 {
				t.Fatalf("-o json: %v", js)
			}
			want := c.want
			if want == nil {
				want = []string{}
			}
			if got := jsonIDs(t, js.stdout); !slices.Equal(got, want) {
				t.Errorf("-o json: runs %v, want %v\n%v", got, want, js)
			}
			if js.stderr != "" {
				t.Errorf("-o json: stderr is not empty:\n%s", js.stderr)
			}
			wantWarning := slices.Contains(c.want, f.junk)
			if got := strings.Contains(r.stderr, "lllm: warning: run "+f.junk+" is unreadable"); got != wantWarning {
				t.Errorf("warning about the unreadable run: %v, want %v\n%v", got, wantWarning, r)
			}
			if len(c.want) == 0 {
				wantHint := fmt.Sprintf("no runs match the filters: all %d runs under %s filtered out\n", len(f.all()), f.root)
				if r.stdout != "" || r.stderr != wantHint {
					t.Errorf("no match: want no stdout and the hint %q on stderr\n%v", wantHint, r)
				}
				if js.stdout != "[]\n" {
					t.Errorf("no match as JSON: stdout %q, want []", js.stdout)
				}
			}
		})
	}
}

// TestRunsFilterJSONFields: a filtered run is the same JSON object as
// unfiltered.
func TestRunsFilterJSONFields(t *testing.T) {
	f := newFilterFixture(t)
	all := lllm(t, "runs", "--log-dir", f.root, "-o", "json")
	var every []json.RawMessage
	if err := json.Unmarshal([]byte(all.stdout), &every); err != nil || len(every) != len(f.all()) {
		t.Fatalf("%v\n%v", err, all)
	}
	r := lllm(t, "runs", "--log-dir", f.root, "-o", "json", "--status", "failed")
	var got []logs.RunInfo
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 {
		t.Fatalf("%v\n%v", err, r)
	}
	g := got[0]
	if g.RunID != f.failed || g.Status != "failed" || g.Error != "boom" || g.Tactic != "debate" ||
		g.Labels["model"] != "claude" || g.Totals == nil || g.DurationMS == nil || *g.DurationMS != 90000 {
		t.Errorf("the failed run %+v", g)
	}
	var one []json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &one); err != nil {
		t.Fatal(err)
	}
	if string(one[0]) != string(every[1]) {
		t.Errorf("filtered, the failed run is\n%s\nunfiltered\n%s", one[0], every[1])
	}
}

// TestRunsSinceDates: --since takes dates and times, in local time unless
// they have a zone, and compares them with the runs' starts, inclusively.
func TestRunsSinceDates(t *testing.T) {
	root := t.TempDir()
	at := func(day, hour, minute int) time.Time { return time.Date(2025, 3, day, hour, minute, 0, 0, time.Local) }
	a := writeStartedRun(t, root, at(1, 10, 0), "aaaaaa", logs.RunStart{Tactic: "x"}, &logs.RunEnd{Status: logs.StatusOK})
	b := writeStartedRun(t, root, at(2, 8, 0), "bbbbbb", logs.RunStart{Tactic: "x"}, &logs.RunEnd{Status: logs.StatusOK})
	c := writeStartedRun(t, root, at(2, 15, 30), "cccccc", logs.RunStart{Tactic: "x"}, &logs.RunEnd{Status: logs.StatusOK})
	for _, tc := range []struct {
		since string
		want  []string
	}{
		{"2025-03-01", []string{a, b, c}},
		{"2025-03-02", []string{b, c}},
		{"2025-03-03", nil},
		{"2025-03-02 15:30", []string{c}},
		{"2025-03-02T15:30", []string{c}},
		{"2025-03-02 15:30:01", nil},
		{"2025-03-02T08:00:00", []string{b, c}},
		{at(2, 8, 0).UTC().Format(time.RFC3339), []string{b, c}},
		{at(2, 8, 0).Add(time.Second).Format(time.RFC3339), []string{c}},
		{at(2, 8, 0).UTC().Add(-time.Millisecond).Format(time.RFC3339Nano), []string{b, c}},
		// A duration reaches back from now: every run of 2025.
		{"87600h", []string{a, b, c}},
		{"0s", nil},
	} {
		t.Run(tc.since, func(t *testing.T) {
			r := lllm(t, "runs", "--log-dir", root, "--since", tc.since)
			if r.code != 0 {
				t.Fatalf("%v", r)
			}
			if got := tableIDs(t, r.stdout); !slices.Equal(got, tc.want) {
				t.Errorf("rows %v, want %v\n%v", got, tc.want, r)
			}
		})
	}
}

// TestRunsOutputText: -o text is the default, and -o table, its former
// name, still works, with the same output.
func TestRunsOutputText(t *testing.T) {
	f := newFilterFixture(t)
	def := lllm(t, "runs", "--log-dir", f.root)
	if def.code != 0 || len(tableIDs(t, def.stdout)) != len(f.all()) {
		t.Fatalf("%v", def)
	}
	for _, args := range [][]string{{"-o", "text"}, {"-o", "table"}, {"--output", "text"}, {"--output=table"}, {"--format", "text"}} {
		r := lllm(t, append([]string{"runs", "--log-dir", f.root}, args...)...)
		if r.code != 0 || r.stdout != def.stdout || r.stderr != def.stderr {
			t.Errorf("runs %s:\n%v\nwant the default output:\n%v", strings.Join(args, " "), r, def)
		}
	}
	// Filtered too.
	want := lllm(t, "runs", "--log-dir", f.root, "--status", "ok")
	for _, o := range []string{"text", "table"} {
		if r := lllm(t, "runs", "--log-dir", f.root, "--status", "ok", "-o", o); r.stdout != want.stdout || r.code != 0 {
			t.Errorf("runs --status ok -o %s:\n%v\nwant:\n%v", o, r, want)
		}
	}
	// The alias is not offered: the help and the error list text and json.
	h := lllm(t, "runs", "--help")
	if !strings.Contains(h.stdout, "output format: text or json") {
		t.Errorf("runs --help does not list text or json for -o:\n%s", h.stdout)
	}
	wantError(t, lllm(t, "runs", "--log-dir", f.root, "-o", "tabel"), ExitUsage, `"tabel"`, "want text or json")
}

func TestRunsFilterUsageErrors(t *testing.T) {
	f := newFilterFixture(t)
	before := snapshot(t, f.root)
	for _, c := range []struct {
		flags []string
		want  []string
	}{
		{[]string{"--status", "bogus"}, []string{"--status", `"bogus"`, "ok, failed, cancelled, running, interrupted or unreadable"}},
		{[]string{"--status", "ok,done"}, []string{"--status", `"done"`, "interrupted"}},
		{[]string{"--status", "OK"}, []string{"--status", `"OK"`}},
		{[]string{"--status", "ok", "--status", "crashed"}, []string{`"crashed"`}},
		{[]string{"--label", "=gpt-4o"}, []string{"--label", `"=gpt-4o"`, "KEY=VALUE"}},
		{[]string{"--label", ""}, []string{"--label", `""`, "KEY=VALUE"}},
		{[]string{"--label", " =x"}, []string{"--label", "KEY=VALUE"}},
		{[]string{"--since", "yesterday"}, []string{"--since", `"yesterday"`, "duration", "2h", "2026-11-20", "RFC 3339"}},
		{[]string{"--since", "2026-13-40"}, []string{"--since", `"2026-13-40"`, "RFC 3339"}},
		{[]string{"--since", "-2h"}, []string{"--since", `"-2h"`, "negative"}},
		{[]string{"--since", "-1d"}, []string{"--since", `"-1d"`, "negative"}},
		{[]string{"--since", "20/11/2026"}, []string{"--since", "2026-11-20 15:04"}},
		{[]string{"-n", "-1"}, []string{"--limit", "-1"}},
		{[]string{"--limit", "lots"}, []string{"--limit", `"lots"`}},
		{[]string{"--tactic"}, []string{"--tactic"}},
	} {
		t.Run(strings.Join(c.flags, " "), func(t *testing.T) {
			for _, o := range []string{"text", "json"} {
				r := lllm(t, append([]string{"runs", "--log-dir", f.root, "-o", o}, c.flags...)...)
				wantError(t, r, ExitUsage, c.want...)
			}
		})
	}
	if after := snapshot(t, f.root); !slices.Equal(before, after) {
		t.Errorf("the log root changed")
	}
}

// TestRunsFilterEmptyRoot: with nothing under the log root, filters change
// nothing: it says there are no runs, as without them.
func TestRunsFilterEmptyRoot(t *testing.T) {
	dir := t.TempDir()
	r := lllm(t, "runs", "--log-dir", dir, "--status", "failed", "-n", "3")
	if r.code != 0 || r.stdout != "" || r.stderr != "no runs under "+dir+"\n" {
		t.Errorf("%v", r)
	}
	r = lllm(t, "runs", "--log-dir", dir, "--tactic", "x", "-o", "json")
	if r.code != 0 || r.stdout != "[]\n" {
		t.Errorf("%v", r)
	}
}

// TestListFuncReadsStartOnly: ListFunc's keep sees what the first record
// tells, before the last is read, and the runs it keeps are whole
// summaries, in order, like List's.
func TestListFuncReadsStartOnly(t *testing.T) {
	f := newFilterFixture(t)
	var seen []string
	sums, err := logs.ListFunc(f.root, func(s logs.Summary) bool {
		seen = append(seen, s.ID)
		if s.End != nil || !s.Ended.IsZero() || s.Writing {
			t.Errorf("keep saw run %s with its last record read: %+v", s.ID, s)
		}
		if s.ID == f.junk {
			if s.Err == nil {
				t.Errorf("keep saw the unreadable run without its error")
			}
			return true
		}
		if s.Err != nil || s.Start == nil || s.Started.IsZero() {
			t.Errorf("keep saw run %s without its run_start: %+v", s.ID, s)
		}
		return s.Start.Tactic != "best_of_n"
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, f.all()) {
		t.Errorf("keep saw %v, want every run in order %v", seen, f.all())
	}
	list, err := logs.List(f.root)
	if err != nil {
		t.Fatal(err)
	}
	var want []logs.Summary
	for _, s := range list {
		if s.Start == nil || s.Start.Tactic != "best_of_n" {
			want = append(want, s)
		}
	}
	var got, wantIDs []string
	for i, s := range sums {
		got = append(got, s.ID+" "+runStatus(s))
		if i < len(want) {
			wantIDs = append(wantIDs, want[i].ID+" "+runStatus(want[i]))
			if !s.Ended.Equal(want[i].Ended) || (s.End == nil) != (want[i].End == nil) {
				t.Errorf("run %s: kept summary %+v, List's %+v", s.ID, s, want[i])
			}
		}
	}
	if !slices.Equal(got, wantIDs) || len(sums) != len(want) {
		t.Errorf("kept %v, want %v", got, wantIDs)
	}
	if len(sums) != 4 { // failed, interrupted, running, junk
		t.Errorf("kept %d runs, want 4", len(sums))
	}
}
