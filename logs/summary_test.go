package logs_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// finishedRun writes a run under a new root, tactic "t" with the label
// k=v, a dialog holding "hello", ended with end, and returns the root and
// the run as Create gives it.
func finishedRun(t *testing.T, end logs.RunEnd) (string, *logs.Run) {
	t.Helper()
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "t", Labels: map[string]string{"k": "v"}}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := dialog.New("solver", dialog.WithSink(w), dialog.WithAlias("main"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.PutText("hello"); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(end); err != nil {
		t.Fatal(err)
	}
	return root, run
}

// A listed run gives the run Open gives, whose log rebuilds.
func TestSummaryRun(t *testing.T) {
	root, _ := finishedRun(t, logs.RunEnd{Status: logs.StatusOK})
	sums, err := logs.List(root)
	if err != nil || len(sums) != 1 {
		t.Fatalf("List: %d runs, %v", len(sums), err)
	}
	run := sums[0].Run()
	opened, err := logs.Open(root, sums[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.ID != opened.ID || run.Dir != opened.Dir || !reflect.DeepEqual(run.Start, opened.Start) {
		t.Errorf("Summary.Run() = %+v, Open gives %+v", run, opened)
	}
	f, _, err := run.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ds := f.Roots(); len(ds) != 1 || f.Dialog(ds[0]).Tail().Content != "hello" {
		t.Errorf("the listed run's forest has roots %v", ds)
	}
}

// A run's RunInfo: its totals and duration are run_end's, a failed run's
// error is run_end's, an unreadable one says why, and a run without a
// run_end has neither end nor totals.
func TestSummaryInfo(t *testing.T) {
	_, run := finishedRun(t, logs.RunEnd{Status: logs.StatusFailed, Error: "boom"})
	s := run.Summary()
	info := s.Info()
	if info.RunID != run.ID || info.Dir != run.Dir || info.Tactic != "t" || info.Status != logs.StatusFailed || info.Error != "boom" ||
		info.Labels["k"] != "v" || info.Totals == nil || info.DurationMS == nil || *info.DurationMS != s.End.Totals.DurationMS ||
		info.Started == nil || info.Ended == nil || info.Ended.Before(*info.Started) {
		t.Errorf("failed run: %+v", info)
	}

	running := logs.Summary{ID: "r", Dir: "d", Start: &logs.RunStart{Tactic: "t"}, Started: time.Now(), Writing: true}.Info()
	if running.Status != logs.StatusRunning || running.Ended != nil || running.Totals != nil || running.DurationMS != nil || running.Error != "" {
		t.Errorf("running run: %+v", running)
	}
	bad := logs.Summary{ID: "u", Dir: "d", Err: errors.New("not a run log")}.Info()
	if bad.Status != logs.StatusUnreadable || bad.Error != "not a run log" {
		t.Errorf("unreadable run: %+v", bad)
	}
}
