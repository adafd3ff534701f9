package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScorerEntryKind: a scorer that is neither a name nor a map is named
// by its place and text, with what a scorer is, not by yaml's Go types.
func TestScorerEntryKind(t *testing.T) {
	_, err := ParseSpec("s.yaml", []byte("config: c.yaml\ndataset: d.jsonl\nscorers: [numeric, [numeric, exact]]\n"))
	if err == nil {
		t.Fatal("a nested list of scorers parsed")
	}
	msg := err.Error()
	for _, want := range []string{"s.yaml:3: ", "scorers[1]", "[numeric, exact]", "a list", "such as numeric", "{type: numeric"} {
		if !strings.Contains(msg, want) {
			t.Errorf("no %q in %q", want, msg)
		}
	}
	if strings.Contains(msg, "!!seq") || strings.Contains(msg, "interface {}") {
		t.Errorf("yaml's Go types in %q", msg)
	}
}

// TestDatasetFormatByExtension: a file read as JSONL because its extension
// is not .csv says so when a line is not JSON, a JSON array of rows says
// how to make JSONL of it (pretty-printed, its first line "[" was
// "unexpected EOF"), and a JSONL line that is JSON but not an object says
// what it is.
func TestDatasetFormatByExtension(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want, not string }{
		{"tab.tsv", "id\tinput\na\tb\n", "tab.tsv:1: not a JSON object: invalid character 'i' looking for beginning of value (tab.tsv is read as JSONL, one JSON object a line: only a .csv file is read as CSV)", ""},
		{"rows.json", "[{\"id\": \"a\"}]\n", "rows.json:1: a JSON array, not JSONL: a dataset is one JSON object a line (jq -c '.[]' rows.json > rows.jsonl", "Go value"},
		{"pretty.json", "[\n  {\"id\": \"a\"}\n]\n", "pretty.json:1: a JSON array, not JSONL", "EOF"},
		{"rows.jsonl", "{\"id\": \"a\", \"input\": \"x\"}\n\"x\"\n", "rows.jsonl:2: not a JSON object but a string", "read as JSONL"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadDataset(path, DatasetSpec{})
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tc.want)) || tc.not != "" && strings.Contains(err.Error(), tc.not) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestCSVDuplicateColumn: a CSV header that names a column twice is an
// error at line 1 naming it, not a row that silently keeps the last.
func TestCSVDuplicateColumn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(path, []byte("id,input,expected,input\na,What is 1 + 1?,2,What is 2 + 2?\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := LoadDataset(path, DatasetSpec{})
	want := path + `:1: column "input" twice in the header (columns 2 and 4): give each column its own name`
	if err == nil || err.Error() != want {
		t.Fatalf("%v (rows %v), want %q", err, rows, want)
	}
}
