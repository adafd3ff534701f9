package logs_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lllm-go/lllm/logs"
)

// A run's RunInfo: its totals and duration are run_end's, a failed run's
// error is run_end's, an unreadable one says why, and a run without a
// run_end has neither end nor totals.
func TestSummaryInfo(t *testing.T) {
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "t", Labels: map[string]string{"k": "v"}}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusFailed, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
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
