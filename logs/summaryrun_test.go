package logs_test

import (
	"reflect"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// TestSummaryRun: a listed run gives the run Open gives, whose log rebuilds.
func TestSummaryRun(t *testing.T) {
	root := t.TempDir()
	w, _, err := logs.Create(root, logs.RunStart{Tactic: "listed", Labels: map[string]string{"k": "v"}}, logs.Options{})
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
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
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
