package sweep

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/runtime/config"
)

// Row is one task of a dataset.
type Row struct {
	// ID identifies the row within the dataset.
	ID string
	// Task is the text the tactic gets.
	Task string
	// Expected is the expected answer, as text; ExpectedValue is it as
	// decoded (a number, a map, ...), for scorers that want the value.
	Expected      string
	ExpectedValue any
	// Fields are all of the row's fields.
	Fields map[string]any
	// Line is the row's line in the file, 1-based.
	Line int

	sum uint64 // rowSum, once the row is read
}

// maxLine bounds one line of a JSONL dataset.
const maxLine = 64 << 20

// LoadDataset reads the rows of a .jsonl or .csv file (by extension; any
// other is read as JSONL) as d describes. A bad row is a *config.Error at
// the file and line; no row is returned then.
func LoadDataset(path string, d DatasetSpec) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	var rows []Row
	switch ext := filepath.Ext(path); {
	case strings.EqualFold(ext, ".csv"):
		rows, err = readCSV(f, path, d)
	case strings.EqualFold(ext, ".jsonl"):
		rows, err = readJSONL(f, path, d, "")
	default:
		rows, err = readJSONL(f, path, d, fmt.Sprintf(" (%s is read as JSONL, one JSON object a line: only a .csv file is read as CSV)", filepath.Base(path)))
	}
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("dataset %s has no rows", path)
	}
	seen := make(map[string]int, len(rows))
	for i := range rows {
		rows[i].sum = rowSum(&rows[i])
	}
	for _, r := range rows {
		if l, ok := seen[r.ID]; ok {
			return nil, errorAt(path, r.Line, "id %q is taken by line %d: ids identify rows for resume, so they must be unique", r.ID, l)
		}
		seen[r.ID] = r.Line
	}
	return rows, nil
}

// readJSONL reads JSONL rows; note ends the error of a line that is not
// a JSON object.
func readJSONL(r io.Reader, path string, d DatasetSpec, note string) ([]Row, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var rows []Row
	n := 1
	for ; sc.Scan(); n++ {
		line := sc.Bytes()
		if i := jsontext.InvalidUTF8(line); i >= 0 {
			// JSON decoding would make it U+FFFD: the model would get
			// another task than the file's, and nothing would say so.
			return nil, &config.Error{File: path, Line: n, Column: i + 1, Msg: notUTF8}
		}
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\ufeff")) // a byte order mark, as some editors write
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil || obj == nil {
			var te *json.UnmarshalTypeError
			switch {
			case len(rows) == 0 && line[0] == '[':
				// A JSON array of rows, pretty-printed or not.
				return nil, errorAt(path, n, "a JSON array, not JSONL: a dataset is one JSON object a line (jq -c '.[]' %s > rows.jsonl makes one from an array)", filepath.Base(path))
			case err == nil:
				return nil, errorAt(path, n, "not a JSON object but null%s", note)
			case errors.As(err, &te): // the line is JSON of another kind
				return nil, errorAt(path, n, "not a JSON object but %s%s", jsontext.Kind(te.Value), note)
			}
			return nil, errorAt(path, n, "not a JSON object: %s%s", strings.TrimPrefix(err.Error(), "json: "), note)
		}
		// One object a line: a second one (two rows run together) or
		// anything else after it would be silently dropped.
		if _, err := dec.Token(); err != io.EOF {
			return nil, errorAt(path, n, "more than one JSON value on the line, after byte %d: put one row a line", dec.InputOffset())
		}
		row, err := makeRow(obj, n, d)
		if err != nil {
			return nil, &config.Error{File: path, Line: n, Err: err}
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, errorAt(path, n, "the line is over %d MiB, the most a row may have", maxLine>>20)
		}
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	return rows, nil
}

func readCSV(r io.Reader, path string, d DatasetSpec) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, &config.Error{File: path, Line: 1, Msg: "reading the header", Err: err}
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff") // a byte order mark, as Excel writes
	}
	if err := csvUTF8(cr, path, header); err != nil {
		return nil, err
	}
	for i, h := range header {
		if j := slices.Index(header[:i], h); j >= 0 {
			return nil, errorAt(path, 1, "column %q twice in the header (columns %d and %d): give each column its own name", h, j+1, i+1)
		}
	}
	var rows []Row
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line, _ := cr.FieldPos(0)
		if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
			return nil, &config.Error{File: path, Line: pe.Line, Column: pe.Column, Err: pe.Err}
		}
		if err != nil {
			return nil, &config.Error{File: path, Err: err}
		}
		if len(rec) != len(header) {
			return nil, errorAt(path, line, "%d fields, but the header has %d", len(rec), len(header))
		}
		if err := csvUTF8(cr, path, rec); err != nil {
			return nil, err
		}
		obj := make(map[string]any, len(header))
		for i, h := range header {
			obj[h] = rec[i]
		}
		row, err := makeRow(obj, line, d)
		if err != nil {
			return nil, &config.Error{File: path, Line: line, Err: err}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// notUTF8 is the problem of a dataset line that is not UTF-8 text.
const notUTF8 = "not UTF-8 text: save the dataset as UTF-8"

// csvUTF8 refuses the record cr read last when a field of it is not UTF-8
// text, which no tactic would take as a task: the error is at the field.
func csvUTF8(cr *csv.Reader, path string, rec []string) error {
	for i, f := range rec {
		if !utf8.ValidString(f) {
			line, col := cr.FieldPos(i)
			return &config.Error{File: path, Line: line, Column: col, Msg: notUTF8}
		}
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

var placeholder = regexp.MustCompile(`\{([A-Za-z0-9_.-]+)\}`)

func makeRow(obj map[string]any, line int, d DatasetSpec) (Row, error) {
	idKey, inKey, expKey := orDefault(d.ID, "id"), orDefault(d.Input, "input"), orDefault(d.Expected, "expected")
	row := Row{Fields: obj, Line: line}
	id, ok := obj[idKey]
	if !ok || id == nil || text(id) == "" {
		return row, fmt.Errorf("no %q: every row needs an id, which identifies its samples when a sweep resumes", idKey)
	}
	row.ID = text(id)
	if d.Task != "" {
		var missing string
		row.Task = placeholder.ReplaceAllStringFunc(d.Task, func(m string) string {
			k := m[1 : len(m)-1]
			v, ok := obj[k]
			if !ok {
				if missing == "" {
					missing = k
				}
				return m
			}
			return text(v)
		})
		if missing != "" {
			return row, fmt.Errorf("the task template names {%s}, which the row lacks", missing)
		}
	} else {
		in, ok := obj[inKey]
		if !ok {
			return row, fmt.Errorf("no %q: the task's field (set dataset.input, or dataset.task as a template)", inKey)
		}
		row.Task = text(in)
	}
	if v, ok := obj[expKey]; ok {
		row.ExpectedValue = plain(v)
		row.Expected = text(v)
	}
	return row, nil
}

// missingExpected is the problem of rows without the expected answer's
// field when a scorer of spec compares answers with it: their samples
// would score 0 whatever the answer (1 on a regex scorer, whose pattern
// would be empty), and a misspelt dataset.expected would do so to every
// row. It names the first such row, at its line.
func missingExpected(spec *Spec, rows []Row) error {
	i := slices.IndexFunc(spec.scorers(), readsExpected)
	if i < 0 {
		return nil
	}
	key := orDefault(spec.Dataset.Expected, "expected")
	var first *Row
	n := 0
	for j := range rows {
		if _, ok := rows[j].Fields[key]; !ok {
			if first == nil {
				first = &rows[j]
			}
			n++
		}
	}
	if first == nil {
		return nil
	}
	path, by := spec.rel(spec.Dataset.Path), spec.scorers()[i].Label()
	if n == len(rows) {
		return errorAt(path, first.Line, "no row has %q, the expected answer, which scorer %s compares the answer with: set dataset.expected to the field that has it", key, by)
	}
	return errorAt(path, first.Line, "no %q, the expected answer, which scorer %s compares the answer with: give the row one (%d of the %d rows have none)", key, by, n, len(rows))
}

// text renders a field as text: strings as they are, anything else as
// compact JSON.
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// plain turns json.Numbers into float64s (or int64s when integral).
func plain(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = plain(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = plain(x)
		}
		return out
	}
	return v
}
