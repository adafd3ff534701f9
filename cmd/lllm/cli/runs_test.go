package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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

// wholeTaskPreview is the TASK cell's task as taskPreview must give it:
// from the whole task decoded, as lllm runs made it before it read long
// tasks from their start only.
func wholeTaskPreview(task json.RawMessage) string {
	text := string(task)
	var s string
	if json.Unmarshal(task, &s) == nil {
		text = s
	}
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > 40 {
		return string(r[:39]) + "…"
	}
	return text
}

// taskPreview reads a long task from its start only, and previews it as
// the whole task decoded would: tasks of every length around the prefix
// sizes, with runs of white space, escapes, multi-byte and invalid UTF-8,
// surrogate pairs, wide spaces, and tasks that are not strings.
func TestTaskPreviewAsWholeTask(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "word ", " ", "\n", "\t\t", "é", "😀", "\u3000", "\\", "\"", "<&>", "\u2028", "\x00", "\xff", "\xe2\x82", "z"}
	var tasks []json.RawMessage
	for range 400 {
		var b strings.Builder
		// Lengths around the prefixes read: 4 KB, 16 KB, 64 KB.
		size := []int{10, 60, 4 << 10, 16 << 10, 64 << 10, 70 << 10}[rng.IntN(6)] + rng.IntN(64) - 32
		spaces := rng.IntN(3) == 0 // mostly white space, then text
		for b.Len() < size {
			p := pieces[rng.IntN(len(pieces))]
			if spaces && b.Len() < size-200 {
				p = []string{" ", "\n", "\u3000"}[rng.IntN(3)]
			}
			b.WriteString(p)
		}
		raw, _ := json.Marshal(b.String())
		tasks = append(tasks, raw)
		// The same text with its invalid bytes left raw in the string, as
		// a log may hold it.
		tasks = append(tasks, json.RawMessage(`"`+strings.NewReplacer(`\"`, `\"`, `\\`, `\\`, `\ufffd`, "\xff").Replace(string(raw[1:len(raw)-1]))+`"`))
	}
	long := strings.Repeat("x ", 40<<10)
	tasks = append(tasks,
		json.RawMessage(`null`), json.RawMessage(`42`), json.RawMessage(`{"q": "`+long+`"}`),
		json.RawMessage(`["`+long+`"]`), json.RawMessage(` "`+long+`"`), json.RawMessage(`"\ud83d\ude00`+long+`"`),
		json.RawMessage(`"`+strings.Repeat(`\u0020`, 5000)+"tail"+`"`), nil)
	for i, task := range tasks {
		if got, want := taskPreview(task), wholeTaskPreview(task); got != want {
			t.Fatalf("task %d (%d bytes, starting %.60q): preview %q, want %q", i, len(task), task, got, want)
		}
	}
	// And the cell as lllm runs shows it.
	st := &logs.RunStart{Labels: map[string]string{"b": "2", "a": "1"}, Task: tasks[4]}
	if got, want := taskCell(st), "a=1 b=2 "+wholeTaskPreview(tasks[4]); got != want || !strings.HasPrefix(got, "a=1 b=2 ") {
		t.Errorf("cell %q, want %q", got, want)
	}
	if got := taskCell(&logs.RunStart{}); got != "-" {
		t.Errorf("cell of nothing: %q", got)
	}
}

// lllm runs lists a run whose log ends in a whole line that is not a
// record as unreadable, at that line, as lllm tree refuses it; a last
// line without its newline, one the run stopped while writing, is skipped.
func TestRunsDamagedLastLine(t *testing.T) {
	root := t.TempDir()
	started := time.Date(2026, 11, 20, 10, 0, 0, 0, time.Local)
	garbage := writeStartedRun(t, root, started, "aaaaaa", logs.RunStart{Tactic: "chat"}, &logs.RunEnd{Status: logs.StatusOK})
	torn := writeStartedRun(t, root, started.Add(time.Minute), "bbbbbb", logs.RunStart{Tactic: "chat"}, &logs.RunEnd{Status: logs.StatusOK})
	appendRaw := func(id, data string) {
		f, err := os.OpenFile(filepath.Join(root, id, logs.EventsFile), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(data); err != nil {
			t.Fatal(err)
		}
	}
	appendRaw(garbage, "garbage\n")
	appendRaw(torn, `{"seq":3,"ts":"2026-11-`)
	path := filepath.Join(root, garbage, logs.EventsFile)
	wantErr := path + `:3: corrupt record: jsontext: invalid character 'g' at start of value`

	r := lllm(t, "runs", "--log-dir", root, "-o", "json")
	var runs []logs.RunInfo
	if err := json.Unmarshal([]byte(r.stdout), &runs); r.code != 0 || err != nil || len(runs) != 2 {
		t.Fatalf("%v", r)
	}
	if runs[0].RunID != garbage || runs[0].Status != logs.StatusUnreadable || runs[0].Error != wantErr {
		t.Errorf("run with a garbage last line: %+v, want unreadable: %s", runs[0], wantErr)
	}
	if runs[1].RunID != torn || runs[1].Status != logs.StatusOK || runs[1].Error != "" {
		t.Errorf("run with a torn last line: %+v, want ok", runs[1])
	}

	r = lllm(t, "runs", "--log-dir", root)
	if r.code != 0 || !strings.Contains(r.stderr, "lllm: warning: run "+garbage+" is unreadable: "+wantErr) {
		t.Errorf("table: %v", r)
	}
	rows := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(rows) != 3 || !strings.Contains(rows[1], " unreadable ") || !strings.Contains(rows[2], " ok ") {
		t.Errorf("table rows:\n%s", r.stdout)
	}
	// lllm tree refuses the log at the same line.
	if r := lllm(t, "tree", garbage, "--log-dir", root); r.code == 0 || !strings.Contains(r.stderr, wantErr) {
		t.Errorf("tree: %v", r)
	}
	if r := lllm(t, "runs", "--log-dir", root, "--status", "unreadable", "-o", "json"); !strings.Contains(r.stdout, garbage) || strings.Contains(r.stdout, torn) {
		t.Errorf("--status unreadable: %v", r)
	}
}

// lllm run under a log root it cannot write names the root and the fix.
func TestRunReadOnlyLogDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: directory modes are not enforced")
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	r := lllm(t, "run", "../../../configs/quickstart.yaml", "--task", "hi", "--log-dir", ro)
	want := "lllm: creating a run under the log root " + ro + ": permission denied: choose a writable log dir (--log-dir or log_dir)"
	if r.code == 0 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, ".tmp-") {
		t.Errorf("%v\nwant %s", r, want)
	}
}

// Run from inside a log root (cd logs), where ./logs does not exist, the
// commands that read runs say to pass --log-dir . (and do with it); given
// --log-dir, they say nothing of the current directory.
func TestInsideLogRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "logs")
	if r := lllm(t, "run", ctConfig("chat.yaml"), "--task", "Capital of France?", "--log-dir", root); r.code != 0 {
		t.Fatal(r)
	}
	t.Chdir(root)
	const hint = "the current directory holds runs itself: pass --log-dir ."

	if r := lllm(t, "runs"); r.code != 0 || !strings.Contains(r.stderr, "no runs under logs (it does not exist; runs go under --log-dir, ./logs by default; "+hint+")") {
		t.Errorf("runs:\n%v", r)
	}
	for _, args := range [][]string{{"show", "latest"}, {"tree", "latest"}, {"show", "2026"}, {"export", "latest"}} {
		wantError(t, lllm(t, args...), ExitError, "under logs", hint)
	}
	if r := lllm(t, "tree", "latest", "--log-dir", "."); r.code != 0 {
		t.Errorf("tree latest --log-dir .:\n%v", r)
	}
	for _, args := range [][]string{{"runs", "--log-dir", "logs"}, {"show", "latest", "--log-dir", "logs"}} {
		if r := lllm(t, args...); strings.Contains(r.stderr, hint) {
			t.Errorf("%s: the hint with --log-dir given:\n%v", strings.Join(args, " "), r)
		}
	}
}

func TestRuns(t *testing.T) {
	root := t.TempDir()
	ok := newFixture(t, root)

	// A failed run, and one still running (no run_end).
	w, failed, err := logs.Create(root, logs.RunStart{Tactic: "broken"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusFailed, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	w, running, err := logs.Create(root, logs.RunStart{Tactic: "slow"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() }) // still being written while lllm runs looks
	// One whose log is not ours; it sorts last.
	junk := filepath.Join(root, "99991231T000000.000000Z-junk00")
	if err := os.Mkdir(junk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(junk, logs.EventsFile), []byte("hello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := lllm(t, "runs", "--log-dir", root)
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("want a header and 4 rows:\n%s", r.stdout)
	}
	if h := strings.Fields(lines[0]); !slices.Equal(h, []string{"ID", "TACTIC", "STATUS", "STARTED", "DURATION", "DIALOGS", "MODEL", "CALLS", "TOKENS", "COST", "TASK"}) {
		t.Errorf("header %q", lines[0])
	}
	for i, l := range lines {
		if strings.TrimRight(l, " ") != l {
			t.Errorf("line %d has trailing spaces: %q", i, l)
		}
	}
	// Newest last; the columns line up under the header.
	col := strings.Index(lines[0], "STATUS")
	for i, want := range []struct{ id, tactic, status string }{
		{ok.runID, "fixture", "ok"}, {failed.ID, "broken", "failed"}, {running.ID, "slow", "running"},
		{filepath.Base(junk), "-", "unreadable"},
	} {
		fs := strings.Fields(lines[i+1])
		if fs[0] != want.id || fs[1] != want.tactic || fs[2] != want.status {
			t.Errorf("row %d = %q, want %s %s %s", i, lines[i+1], want.id, want.tactic, want.status)
		}
		if !strings.HasPrefix(lines[i+1][col:], want.status) {
			t.Errorf("row %d: status not under STATUS: %q", i, lines[i+1])
		}
	}
	if fs := strings.Fields(lines[1]); !slices.Equal(fs[6:10], []string{"5", "2", "175", "$0.0017"}) {
		t.Errorf("ok row totals %q, want 5 dialogs, 2 calls, 175 tokens, $0.0017", lines[1])
	}
	if fs := strings.Fields(lines[3]); !slices.Equal(fs[5:10], []string{"-", "-", "-", "-", "-"}) {
		t.Errorf("running row %q, want no duration or totals", lines[3])
	}
	if !strings.Contains(r.stderr, "lllm: warning: run "+filepath.Base(junk)+" is unreadable") {
		t.Errorf("stderr does not warn about the unreadable run:\n%s", r.stderr)
	}

	r = lllm(t, "runs", "--log-dir", root, "-o", "json")
	var got []struct {
		RunID                      string `json:"run_id"`
		Dir, Tactic, Status, Error string
		DurationMS                 *float64 `json:"duration_ms"`
		Totals                     *logs.Totals
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%v", err, r)
	}
	if len(got) != 4 {
		t.Fatalf("%d runs, want 4: %+v", len(got), got)
	}
	if g := got[0]; g.RunID != ok.runID || g.Status != "ok" || g.Tactic != "fixture" || g.Totals == nil ||
		g.Totals.Dialogs != 5 || g.Totals.Cost.USD != 0.0017 || g.DurationMS == nil || g.Dir != filepath.Join(root, ok.runID) {
		t.Errorf("ok run %+v", g)
	}
	if g := got[1]; g.Status != "failed" || g.Error != "boom" {
		t.Errorf("failed run %+v", g)
	}
	if g := got[2]; g.Status != "running" || g.Totals != nil || g.DurationMS != nil {
		t.Errorf("running run %+v", g)
	}
	if g := got[3]; g.Status != "unreadable" || !strings.Contains(g.Error, filepath.Join(junk, logs.EventsFile)) {
		t.Errorf("unreadable run %+v", g)
	}
}

func TestRunsNone(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for dir, note := range map[string]string{t.TempDir(): "", missing: " (it does not exist; runs go under --log-dir, ./logs by default)"} {
		r := lllm(t, "runs", "--log-dir", dir)
		if r.code != 0 || r.stdout != "" || r.stderr != "no runs under "+dir+note+"\n" {
			t.Errorf("runs in an empty log root:\n%v", r)
		}
		r = lllm(t, "runs", "--log-dir", dir, "-o", "json")
		if r.code != 0 || r.stdout != "[]\n" {
			t.Errorf("runs -o json in an empty log root:\n%v", r)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("runs created the log root")
	}
}
