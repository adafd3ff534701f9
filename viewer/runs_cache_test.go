package viewer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/logs"
)

// listedRuns is GET /api/runs's runs by id.
func listedRuns(t *testing.T, h *Handler) map[string]logs.RunInfo {
	t.Helper()
	var got struct{ Runs []logs.RunInfo }
	get(t, h, "/api/runs", 200, &got)
	byID := map[string]logs.RunInfo{}
	for _, r := range got.Runs {
		byID[r.RunID] = r
	}
	return byID
}

// overwrite replaces the start of the file at path with data, keeping its
// size and modification time.
func overwrite(t *testing.T, path, data string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// A finished run is listed from memory while its log keeps its size and
// modification time, as a new viewer lists it from its log; a run still
// being written is read at every listing; a log that changes is read
// again; a run removed is forgotten.
func TestRunsListRemembersFinishedRuns(t *testing.T) {
	f := newFixture(t)
	w, live, _ := liveRun(t, f.root, "hello")
	h := New(f.root, Options{})
	first := listedRuns(t, h)
	if len(first) != 4 || first[live.ID].Status != logs.StatusRunning || first[f.bestOfN].Status != logs.StatusOK {
		t.Fatalf("first listing: %+v", first)
	}
	// The same answer from memory as from the logs, for every run.
	if again, fresh := listedRuns(t, h), listedRuns(t, New(f.root, Options{})); !reflect.DeepEqual(again, first) || !reflect.DeepEqual(fresh, first) {
		t.Fatalf("listed again: %+v\nby a new viewer: %+v\nfirst: %+v", again, fresh, first)
	}
	c := h.runCache()
	c.mu.Lock()
	remembered := 0
	for _, k := range c.runs {
		if k.sum != nil {
			remembered++
		}
	}
	c.mu.Unlock()
	if remembered != 3 {
		t.Errorf("%d runs remembered, want the 3 finished", remembered)
	}

	// Damaged in place, same size and time: still listed from memory, so
	// the log was not read; a new viewer reads it.
	path := filepath.Join(f.root, f.bestOfN, logs.EventsFile)
	overwrite(t, path, "x")
	if r := listedRuns(t, h)[f.bestOfN]; r.Status != logs.StatusOK {
		t.Errorf("a remembered run was read again: %+v", r)
	}
	if r := listedRuns(t, New(f.root, Options{}))[f.bestOfN]; r.Status != logs.StatusUnreadable {
		t.Fatalf("a new viewer lists the damaged run as %+v", r)
	}
	// Its time changed: read again.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if r := listedRuns(t, h)[f.bestOfN]; r.Status != logs.StatusUnreadable || !strings.Contains(r.Error, path+":1: ") {
		t.Errorf("after its log changed: %+v", r)
	}

	// A run that finishes is listed finished (its log grew), and a line
	// appended after its run_end is read.
	if err := w.Finish(logs.RunEnd{Status: logs.StatusFailed, Error: "done"}); err != nil {
		t.Fatal(err)
	}
	if r := listedRuns(t, h)[live.ID]; r.Status != logs.StatusFailed || r.Error != "done" {
		t.Errorf("after the run finished: %+v", r)
	}
	appendLine(t, f.root, live.ID, "garbage\n")
	if r := listedRuns(t, h)[live.ID]; r.Status != logs.StatusUnreadable || !strings.Contains(r.Error, "corrupt record") {
		t.Errorf("after a line was appended to a finished run: %+v", r)
	}

	// A run removed is no longer listed, nor remembered.
	if err := os.RemoveAll(filepath.Join(f.root, f.images)); err != nil {
		t.Fatal(err)
	}
	if runs := listedRuns(t, h); len(runs) != 3 {
		t.Errorf("after a run was removed: %+v", runs)
	}
	c.mu.Lock()
	_, ok := c.runs[filepath.Join(f.root, f.images)]
	c.mu.Unlock()
	if ok {
		t.Error("a removed run is still remembered")
	}
}

// A run whose log is a symbolic link is listed as unreadable without
// being read, as /api/runs/{run} refuses it.
func TestRunsListSymlinkedLog(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.root, "20990101T000000.000000Z-linked")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.root, f.bestOfN, logs.EventsFile), filepath.Join(dir, logs.EventsFile)); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	h := New(f.root, Options{})
	for range 2 {
		r := listedRuns(t, h)[filepath.Base(dir)]
		want := logs.RunInfo{RunID: filepath.Base(dir), Dir: dir, Status: logs.StatusUnreadable,
			Error: "its events.jsonl is not a regular file (symbolic links are not followed)"}
		if !reflect.DeepEqual(r, want) {
			b, _ := json.Marshal(r)
			t.Fatalf("linked run listed as %s", b)
		}
	}
}
