package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/config"
)

// A dataset line that is not UTF-8 is refused where it is, before anything
// runs: JSON decoding would have turned its bytes into U+FFFD and sent the
// model another task than the file's, and a CSV field would have failed
// its sample at run time.
func TestDatasetNotUTF8(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		line, col  int
	}{
		{"rows.jsonl", "{\"id\": \"a\", \"input\": \"1 + 1\", \"expected\": 2}\n{\"id\": \"b\", \"input\": \"What is \xff?\", \"expected\": 1}\n", 2, 31},
		{"rows.csv", "id,input,expected\na,1 + 1,2\nb,What is \xff?,1\n", 3, 3},
		{"head.csv", "id,in\xffput,expected\na,1 + 1,2\n", 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name)
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			rows, err := LoadDataset(path, DatasetSpec{})
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("LoadDataset = %d rows, %v; want a *config.Error", len(rows), err)
			}
			if ce.File != path || ce.Line != tc.line || ce.Column != tc.col || !strings.Contains(err.Error(), "UTF-8") {
				t.Errorf("error %q at %s:%d:%d, want %s:%d:%d saying UTF-8", err, ce.File, ce.Line, ce.Column, path, tc.line, tc.col)
			}
		})
	}
	// Text that is UTF-8, a literal U+FFFD and a byte order mark included,
	// is read as it is.
	path := filepath.Join(t.TempDir(), "ok.jsonl")
	body := "\ufeff{\"id\": \"a\", \"input\": \"caf\u00e9 \ufffd\", \"expected\": 2}\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := LoadDataset(path, DatasetSpec{})
	if err != nil || len(rows) != 1 || rows[0].Task != "caf\u00e9 \ufffd" {
		t.Fatalf("LoadDataset = %+v, %v; want the one row with its task as written", rows, err)
	}
}
