package logs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// finishedRun makes a run under root with n message records of about
// size bytes each, ended with end, and returns it.
func finishedRun(t *testing.T, root string, task string, n, size int, end RunEnd) *Run {
	t.Helper()
	w, run, err := Create(root, RunStart{Tactic: "test", Task: json.RawMessage(fmt.Sprintf("%q", task)),
		Labels: map[string]string{"n": fmt.Sprint(n)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		m := dialog.Message{Role: dialog.RoleUser, Content: fmt.Sprintf("%d %s", i, strings.Repeat("x", size))}
		if err := w.Write(&Record{Kind: KindMessage, Dialog: "d", Index: i, Message: &m}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(end); err != nil {
		t.Fatal(err)
	}
	return run
}

func appendTo(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// readerError is the error reading the whole log at path gives, as lllm
// tree, show, export and replay read it.
func readerError(t *testing.T, path string) error {
	t.Helper()
	rd, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for {
		if _, err := rd.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func listOne(t *testing.T, root string) Summary {
	t.Helper()
	list, err := List(root)
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	return list[0]
}

// A complete last line that is not a record makes the run unreadable,
// with the error Reader gives at that line, whether or not the log is
// longer than the window read from its end; a line without its newline
// is one the run was writing when it stopped, and the record before it
// is the last.
func TestListDamagedLastLine(t *testing.T) {
	for _, c := range []struct {
		name       string
		records    int // message records of 200 bytes before the run_end
		tail       string
		unreadable string // the FormatError's message, "" when the run reads as ok
	}{
		{"garbage", 3, "garbage\n", "corrupt record"},
		{"garbage after a long log", 400, "garbage\n", "corrupt record"},
		{"garbage then blank lines", 3, "garbage\n\n  \n", "corrupt record"},
		{"unknown kind", 3, `{"seq":99,"kind":"bogus"}` + "\n", `unknown record kind "bogus"`},
		{"no payload", 3, `{"seq":99,"kind":"run_end"}` + "\n", `run_end record without its "run_end" payload`},
		{"torn", 3, "garb", ""},
		{"torn JSON", 400, `{"seq":99,"kind":"mess`, ""},
		{"blank lines", 3, "\n\n \n", ""},
		{"torn after blank lines", 3, "\n\ngarb", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			run := finishedRun(t, root, "2+2", c.records, 200, RunEnd{Status: StatusOK, Result: json.RawMessage(`"4"`)})
			appendTo(t, run.Path(), c.tail)
			s := listOne(t, root)
			if single := run.Summary(); single.Status() != s.Status() || fmt.Sprint(single.Err) != fmt.Sprint(s.Err) {
				t.Errorf("Run.Summary %s (%v), List %s (%v)", single.Status(), single.Err, s.Status(), s.Err)
			}
			rerr := readerError(t, run.Path())
			if c.unreadable == "" {
				if s.Status() != StatusOK || s.Err != nil || s.End == nil || string(s.End.Result) != `"4"` {
					t.Fatalf("status %s, err %v, end %+v; want ok with its run_end", s.Status(), s.Err, s.End)
				}
				if rerr != nil {
					t.Fatalf("Reader refuses the log that lists as ok: %v", rerr)
				}
				return
			}
			var fe *FormatError
			if s.Status() != StatusUnreadable || !errors.As(s.Err, &fe) {
				t.Fatalf("status %s, err %v; want unreadable with a *FormatError", s.Status(), s.Err)
			}
			lines := strings.Count(strings.TrimRight(readFile(t, run.Path()), "\n \t"), "\n") + 1
			if fe.Name != run.Path() || fe.Line != lines || !strings.Contains(fe.Msg, c.unreadable) {
				t.Errorf("error %q: want %s:%d: %s", s.Err, run.Path(), lines, c.unreadable)
			}
			if rerr == nil || rerr.Error() != s.Err.Error() {
				t.Errorf("List says %q, Reader %v: want the same error", s.Err, rerr)
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A torn last line after a run_end longer than the window: the window
// grows until it holds the record before the torn line.
func TestListTornAfterLargeRunEnd(t *testing.T) {
	root := t.TempDir()
	big, _ := json.Marshal(strings.Repeat("r", 300<<10))
	run := finishedRun(t, root, "2+2", 2, 50, RunEnd{Status: StatusFailed, Error: "boom", Result: big})
	appendTo(t, run.Path(), `{"seq":9,"ts":"2026-`)
	s := listOne(t, root)
	if s.Status() != StatusFailed || s.End == nil || len(s.End.Result) != len(big) || s.End.Error != "boom" {
		t.Fatalf("status %s, err %v; want failed with the large result", s.Status(), s.Err)
	}
}

// A listing of many runs, read several at once, is the summaries of its
// runs one by one, in order: finished, failed, interrupted and unreadable
// runs, with first lines shorter and longer than the buffer they are read
// with.
func TestListManyRunsInOrder(t *testing.T) {
	root := t.TempDir()
	var want []Summary
	for i := range 60 {
		task := strings.Repeat("t", []int{5, 40 << 10, 200 << 10, 100}[i%4])
		var run *Run
		switch i % 5 {
		case 3: // interrupted: no run_end, no writer
			w, r, err := Create(root, RunStart{Tactic: "test", Task: json.RawMessage(fmt.Sprintf("%q", task))}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			run = r
		case 4:
			run = finishedRun(t, root, task, i, 30, RunEnd{Status: StatusFailed, Error: fmt.Sprint("failure ", i)})
			if i%10 == 9 {
				appendTo(t, run.Path(), "not a record\n")
			}
		default:
			run = finishedRun(t, root, task, i, 30, RunEnd{Status: StatusOK, Result: json.RawMessage(fmt.Sprint(i))})
		}
		want = append(want, run.Summary())
	}
	list, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(want) {
		t.Fatalf("%d runs listed, want %d", len(list), len(want))
	}
	statuses := map[Status]int{}
	for i, s := range list {
		w := want[i]
		statuses[s.Status()]++
		if s.ID != w.ID || s.Status() != w.Status() || fmt.Sprint(s.Err) != fmt.Sprint(w.Err) ||
			!reflect.DeepEqual(s.Start, w.Start) || !reflect.DeepEqual(s.End, w.End) || !s.Ended.Equal(w.Ended) {
			t.Errorf("run %d listed as %+v, want %+v", i, s, w)
		}
	}
	if statuses[StatusOK] != 36 || statuses[StatusFailed] != 6 || statuses[StatusUnreadable] != 6 || statuses[StatusInterrupted] != 12 {
		t.Errorf("statuses %v", statuses)
	}
	// keep is called in order, on the caller's goroutine, and sees the
	// first record only; the runs it keeps are whole.
	var seen []string
	kept, err := ListFunc(root, func(s Summary) bool {
		seen = append(seen, s.ID)
		if s.End != nil || s.Writing {
			t.Errorf("keep saw the end of run %s", s.ID)
		}
		return len(seen)%3 == 0
	})
	if err != nil || len(seen) != len(want) || len(kept) != len(want)/3 {
		t.Fatalf("keep saw %d runs and kept %d, %v", len(seen), len(kept), err)
	}
	for i, s := range kept {
		w := want[3*i+2]
		if seen[3*i+2] != w.ID || s.ID != w.ID || s.Status() != w.Status() || !reflect.DeepEqual(s.End, w.End) {
			t.Errorf("kept run %d: %s %s, want %s %s", i, s.ID, s.Status(), w.ID, w.Status())
		}
	}
}

// Known answers for a run before its log is read: its summary is listed
// as it is, and neither the log nor keep sees it.
func TestListKnown(t *testing.T) {
	root := t.TempDir()
	a := finishedRun(t, root, "a", 1, 10, RunEnd{Status: StatusOK})
	b := finishedRun(t, root, "b", 1, 10, RunEnd{Status: StatusOK})
	// a's log is now damaged: listed from its log, it is unreadable.
	appendTo(t, a.Path(), "garbage\n")
	st, err := os.Lstat(a.Path())
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	remembered := Summary{ID: a.ID, Dir: a.Dir, End: &RunEnd{Status: StatusCancelled}}
	list, err := ListWith(root, ListOptions{
		Known: func(id, dir string, log fs.FileInfo) (Summary, bool) {
			asked.Add(1)
			if id != a.ID {
				return Summary{}, false
			}
			if dir != a.Dir || log.Size() != st.Size() || !os.SameFile(log, st) {
				t.Errorf("Known(%s, %s, size %d): want the run's directory and its log's FileInfo", id, dir, log.Size())
			}
			return remembered, true
		},
		Keep: func(s Summary) bool {
			if s.ID == a.ID {
				t.Errorf("keep saw the known run")
			}
			return true
		},
	})
	if err != nil || len(list) != 2 || asked.Load() != 2 {
		t.Fatalf("list %+v, %v; Known asked %d times", list, err, asked.Load())
	}
	if list[0].ID != a.ID || list[0].Status() != StatusCancelled || list[0].Err != nil {
		t.Errorf("known run listed as %+v, want Known's summary", list[0])
	}
	if list[1].ID != b.ID || list[1].Status() != StatusOK || list[1].Start == nil {
		t.Errorf("other run listed as %+v", list[1])
	}
}

// Create names the log root it cannot make a run under, and how to fix
// it, keeping the cause in the chain.
func TestCreateUnwritableRoot(t *testing.T) {
	dir := t.TempDir()
	// A log root under a regular file cannot be made, even by root.
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Create(filepath.Join(file, "logs"), RunStart{}, Options{})
	var pe *fs.PathError
	if err == nil || !strings.HasPrefix(err.Error(), "logs: creating the log root "+filepath.Join(file, "logs")+": ") ||
		!strings.HasSuffix(err.Error(), ": choose a writable log dir (--log-dir or log_dir)") || !errors.As(err, &pe) {
		t.Errorf("log root under a file: %v", err)
	}

	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	if os.Geteuid() == 0 {
		t.Skip("running as root: directory modes are not enforced")
	}
	_, _, err = Create(ro, RunStart{}, Options{})
	want := "logs: creating a run under the log root " + ro + ": permission denied: choose a writable log dir (--log-dir or log_dir)"
	if err == nil || err.Error() != want || !errors.Is(err, fs.ErrPermission) || !errors.As(err, &pe) {
		t.Fatalf("read-only log root: %v\nwant %s, wrapping the *fs.PathError", err, want)
	}
	if entries, _ := os.ReadDir(ro); len(entries) != 0 {
		t.Errorf("the read-only root holds %d entries", len(entries))
	}
}
