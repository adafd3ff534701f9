package logs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"io"
	"os"
	"strconv"
	"strings"
)

// FormatError says a log cannot be read: not a run log, from a newer major
// version, or corrupt. It names the file and, where it applies, the line.
type FormatError struct {
	Name string // file name, or a description of the stream
	Line int    // 1-based; 0 when the error is about the whole log
	Msg  string
	Err  error
}

func (e *FormatError) Error() string {
	where := e.Name
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
	}
	s := where + ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

// Reader streams the records of a run log without loading it whole.
//
// It checks that the log starts with a run_start record of a format version
// it can read; it skips a torn last line (a crash while it was written) and,
// in logs from a newer minor version, records of kinds it does not know,
// with a warning for each. Anything else unreadable is a *FormatError.
type Reader struct {
	br       *bufio.Reader
	name     string
	line     int
	start    *RunStart
	minor    int
	seq      int64 // of the last record read
	skipped  map[Kind]bool
	warnings []string
	closer   io.Closer
	err      error
}

// NewReader reads a log from r; name identifies it in errors and warnings.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 256<<10), name: name}
}

// OpenFile opens the log file at path. Close the Reader when done.
func OpenFile(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	r := NewReader(f, path)
	r.closer = f
	return r, nil
}

// Close closes the file of a Reader from OpenFile.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	return r.closer.Close()
}

// Line returns the 1-based line of the file the last record returned by
// Next was read from (0 before the first), for errors about that record.
func (r *Reader) Line() int { return r.line }

// Warnings returns what the reader skipped so far.
func (r *Reader) Warnings() []string { return r.warnings }

// Start returns the run_start record, reading it if needed.
func (r *Reader) Start() (*RunStart, error) {
	if r.start == nil && r.err == nil {
		if _, err := r.Next(); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	if r.start == nil {
		if r.err != nil && !errors.Is(r.err, io.EOF) {
			return nil, r.err
		}
		return nil, r.errorf(0, "empty log: no run_start record (the run was interrupted before it started, or this is not an lllm-go run log)", nil)
	}
	return r.start, nil
}

func (r *Reader) errorf(line int, msg string, err error) error {
	return &FormatError{Name: r.name, Line: line, Msg: msg, Err: err}
}

func (r *Reader) warn(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf("%s: ", r.name)+fmt.Sprintf(format, args...))
}

// readLine returns the next line without its newline, and whether it ended
// with one.
func (r *Reader) readLine() ([]byte, bool, error) {
	line, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A long line (a large message, an image): gather it.
		buf := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.br.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		return line[:n-1], true, nil
	}
	if len(line) == 0 {
		return nil, false, io.EOF
	}
	return line, false, nil
}

// Next returns the next record, or io.EOF after the last one. The record
// is the caller's.
func (r *Reader) Next() (*Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
	}
	return rec, err
}

func (r *Reader) next() (*Record, error) {
	for {
		line, whole, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && r.start == nil {
				return nil, r.errorf(0, "empty log: no run_start record (the run was interrupted before it started, or this is not an lllm-go run log)", nil)
			}
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, r.errorf(r.line+1, "reading", err)
		}
		r.line++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec := new(Record)
		if err := jsonv2.Unmarshal(line, rec, readOptions); err != nil {
			if !whole && r.start != nil {
				r.warn("skipped a torn last line %d (%d bytes): the run stopped while writing it", r.line, len(line))
				return nil, io.EOF
			}
			if r.start == nil {
				return nil, r.errorf(r.line, "not an lllm-go run log (the first line is not a whole JSON record)", nil)
			}
			return nil, r.errorf(r.line, "corrupt record", err)
		}
		if r.start == nil {
			if err := r.checkStart(rec); err != nil {
				return nil, err
			}
			r.seq = rec.Seq
			return rec, nil
		}
		if !rec.Kind.known() {
			if r.minor <= VersionMinor {
				return nil, r.errorf(r.line, fmt.Sprintf("unknown record kind %q in a version %s log", rec.Kind, r.start.Version), nil)
			}
			if !r.skipped[rec.Kind] {
				if r.skipped == nil {
					r.skipped = map[Kind]bool{}
				}
				r.skipped[rec.Kind] = true
				r.warn("skipped records of kind %q from newer format %s (this lllm reads %d.%d)", rec.Kind, r.start.Version, VersionMajor, VersionMinor)
			}
			continue
		}
		if !rec.hasPayload() {
			return nil, r.errorf(r.line, fmt.Sprintf("%s record without its %q payload", rec.Kind, rec.Kind), nil)
		}
		if rec.Seq <= r.seq {
			// The writer numbers records in file order: a record copied
			// twice (or moved) would be read, and counted, twice.
			return nil, r.errorf(r.line, fmt.Sprintf("record seq %d follows seq %d: a record is duplicated or out of order", rec.Seq, r.seq), nil)
		}
		r.seq = rec.Seq
		return rec, nil
	}
}

func (r *Reader) checkStart(rec *Record) error {
	s := rec.RunStart
	if rec.Kind != KindRunStart || s == nil || s.Format != FormatName {
		return r.errorf(r.line, "not an lllm-go run log (the first record is not a "+FormatName+" run_start)", nil)
	}
	major, minor, ok := parseVersion(s.Version)
	if !ok {
		return r.errorf(r.line, fmt.Sprintf("run_start has a malformed format version %q", s.Version), nil)
	}
	if major != VersionMajor {
		return r.errorf(0, fmt.Sprintf("log format version %s is not readable by this lllm, which reads %d.x: use an lllm release that reads %d.x",
			s.Version, VersionMajor, major), nil)
	}
	r.start, r.minor = s, minor
	return nil
}

// readOptions accept every line the writer writes: raw JSON values (a
// model's tool arguments) may repeat a name or hold a lone surrogate.
var readOptions = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

func parseVersion(v string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(v, ".")
	if !found {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	return major, minor, err1 == nil && err2 == nil && major >= 0 && minor >= 0
}

func (r *Record) hasPayload() bool {
	switch r.Kind {
	case KindRunStart:
		return r.RunStart != nil
	case KindRunEnd:
		return r.RunEnd != nil
	case KindDialogOpen:
		return r.DialogOpen != nil
	case KindFork:
		return r.Fork != nil
	case KindMessage:
		return r.Message != nil
	case KindModelCall:
		return r.ModelCall != nil
	case KindToolCall:
		return r.ToolCall != nil
	case KindContext:
		return r.Context != nil
	case KindTacticStart:
		return r.TacticStart != nil
	case KindTacticEnd:
		return r.TacticEnd != nil
	case KindDeclarations:
		return r.Declarations != nil && r.Declarations.Digest != ""
	}
	return false
}
