package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tasks file line that is not UTF-8 is refused at its line: decoded as
// JSON it would have become U+FFFD, and the run would have answered
// another task than the file's.
func TestReadTasksNotUTF8(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	body := "{\"task\": \"caf\u00e9 \ufffd\"}\n{\"task\": \"What is \xff?\"}\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tasks, err := readTasks(path)
	if err == nil {
		t.Fatalf("readTasks = %+v, want an error at line 2", tasks)
	}
	if want := path + ":2: not UTF-8 text"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	// The first line alone, UTF-8 with a literal U+FFFD, is read as it is.
	if err := os.WriteFile(path, []byte(body[:strings.Index(body, "\n")+1]), 0o644); err != nil {
		t.Fatal(err)
	}
	tasks, err = readTasks(path)
	if err != nil || len(tasks) != 1 || tasks[0].task != "caf\u00e9 \ufffd" {
		t.Fatalf("readTasks = %+v, %v; want the one task as written", tasks, err)
	}
}
