package viewer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// An index maps a run log for paging: the dialog tree, and for every
// dialog the byte offset and length of each of its own message records.
// It is built by one pass over the file that reads only the first bytes
// of most records (see scanHead) and extended as the file grows, so a run
// that is still being written stays current and a large one opens fast.
type index struct {
	path string

	mu       sync.RWMutex
	info     os.FileInfo // the file as last scanned, to notice a replaced file
	head     []byte      // the run_start line, to notice a file rewritten in place
	same     sync.Map    // [2]int64 offsets -> bool: sameMessage's answers
	scanned  int64       // bytes indexed: the end of the last whole line
	lines    int         // whole lines indexed
	pending  int64       // bytes after scanned: a line still being written, or torn
	records  int
	start    *logs.RunStart
	started  time.Time
	end      *logs.RunEnd
	ended    time.Time
	nodes    map[string]*node
	roots    []*node
	messages int
	warnings []string
	orphans  int // message records of dialogs the log never opened
	err      error
	// writing is whether a process still writes the log, as update last
	// found it (only asked while the log has no run_end).
	writing atomic.Bool
}

// node is one dialog of the index.
type node struct {
	dialog.TreeNode
	parent   *node
	children []*node
	msgs     []span // the dialog's own message records, in file order
	at       int64  // offset of the dialog_open or fork record
	calls    int    // model calls made on this dialog
	errors   int    // model calls that failed
	cut      int    // model calls whose reply was cut at max_tokens
	lastErr  string
	retried  bool // a parse retry forked from this working copy
}

// span locates one message record in the file.
type span struct {
	off   int64
	n     int32
	index int32
}

// attemptAlias matches the alias of an agent's working copy: the alias it
// answers for and the attempt number, as in "main#2".
var attemptAlias = regexp.MustCompile(`^(.*)#([0-9]+)$`)

func newIndex(path string) *index {
	return &index{path: path, nodes: map[string]*node{}}
}

// update brings the index up to date with the file: it scans what was
// appended since the last call, or rescans a file that shrank or was
// replaced. It returns the index's error, if the log cannot be read.
func (ix *index) update(ctx context.Context) error {
	st, err := os.Stat(ix.path)
	if err != nil {
		return fmt.Errorf("viewer: %w", err)
	}
	ix.mu.RLock()
	current := ix.info != nil && os.SameFile(ix.info, st) && st.Size() == ix.scanned+ix.pending
	fatal := ix.err
	ended := ix.end != nil
	ix.mu.RUnlock()
	if !ended {
		ix.writing.Store((&logs.Run{Dir: filepath.Dir(ix.path)}).Writing())
	}
	if current {
		return fatal
	}

	ix.mu.Lock()
	defer ix.mu.Unlock()
	f, err := os.Open(ix.path)
	if err != nil {
		return fmt.Errorf("viewer: %w", err)
	}
	defer f.Close()
	// A file replaced, shrunk, rewritten in place (cp onto it) or, when it
	// could not be read, changed in any way, is indexed again.
	if ix.info != nil && (!os.SameFile(ix.info, st) || st.Size() < ix.scanned || !ix.sameHead(f) ||
		ix.err != nil && st.Size() != ix.info.Size()) {
		ix.reset()
	}
	if ix.err != nil {
		return ix.err
	}
	if err := ix.scan(ctx, f); err != nil {
		if ctx.Err() == nil {
			ix.err, ix.info = err, st
		}
		return err
	}
	ix.info = st
	return nil
}

// sameHead reports whether f still starts with the run_start line indexed.
func (ix *index) sameHead(f *os.File) bool {
	if len(ix.head) == 0 {
		return true
	}
	b := make([]byte, len(ix.head))
	_, err := f.ReadAt(b, 0)
	return err == nil && bytes.Equal(b, ix.head)
}

// reset forgets everything indexed, for a file that was replaced or
// truncated. ix.mu must be held.
func (ix *index) reset() {
	ix.info, ix.head, ix.scanned, ix.lines, ix.pending, ix.records = nil, nil, 0, 0, 0, 0
	ix.start, ix.started, ix.end, ix.ended = nil, time.Time{}, nil, time.Time{}
	ix.nodes, ix.roots, ix.messages, ix.warnings, ix.orphans, ix.err = map[string]*node{}, nil, 0, nil, 0, nil
	ix.same.Clear()
}

// scan indexes the whole lines from ix.scanned to the end of f.
func (ix *index) scan(ctx context.Context, f *os.File) error {
	const chunk = 4 << 20
	buf := make([]byte, chunk)
	off := ix.scanned
	have := 0 // bytes in buf[:have] starting at file offset off
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if have == len(buf) {
			// One line longer than the buffer: grow it.
			buf = append(buf, make([]byte, len(buf))...)
		}
		n, err := f.ReadAt(buf[have:], off+int64(have))
		have += n
		eof := errors.Is(err, io.EOF)
		if err != nil && !eof {
			return fmt.Errorf("viewer: reading %s: %w", ix.path, err)
		}
		used := 0
		for {
			nl := bytes.IndexByte(buf[used:have], '\n')
			if nl < 0 {
				break
			}
			if err := ix.add(buf[used:used+nl], off+int64(used)); err != nil {
				return err
			}
			used += nl + 1
		}
		off += int64(used)
		have = copy(buf, buf[used:have])
		ix.scanned = off
		if eof || n == 0 {
			ix.pending = int64(have)
			if ix.start == nil && ix.lines == 0 {
				if have > 0 {
					return nil // the first record is still being written
				}
				return &logs.FormatError{Name: ix.path, Msg: "empty log: no run_start record (the run was interrupted before it started, or this is not an lllm-go run log)"}
			}
			return nil
		}
	}
}

// mayBeCut reports whether a model_call record may say its reply was cut
// at max_tokens (logs.ModelCall.CutAtMaxTokens): whether its finish_reason
// starts like one of the spellings of a cut. A look, not a parse: the
// record is decoded when it says yes.
func mayBeCut(rec []byte) bool {
	_, v, ok := bytes.Cut(rec, []byte(`"finish_reason"`))
	if !ok {
		return false
	}
	v = bytes.TrimLeft(v, " \t\r\n:")
	return bytes.HasPrefix(v, []byte(`"length"`)) || bytes.HasPrefix(v, []byte(`"max_tokens"`)) || bytes.HasPrefix(v, []byte(`"MAX_TOKENS"`))
}

// add indexes one whole line found at file offset off.
func (ix *index) add(line []byte, off int64) error {
	ix.lines++
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	if ix.start == nil {
		return ix.addStart(line)
	}
	ix.records++
	h, err := scanHead(line)
	var slow json.RawMessage // the payload, when the line was fully decoded
	if err != nil {
		var perr error
		h, slow, perr = slowHead(line)
		if perr != nil {
			ix.warn("line %d: not a whole JSON record (%v); skipped", ix.lines, perr)
			return nil
		}
	}
	// payload decodes the record's payload, for the few kinds that need it.
	payload := func() json.RawMessage {
		if slow != nil || h.payload < 0 {
			return slow
		}
		return firstValue(line[h.payload:])
	}
	switch logs.Kind(h.kind) {
	case logs.KindMessage:
		n := ix.nodes[string(h.dialog)]
		if n == nil {
			ix.orphans++
			return nil
		}
		n.msgs = append(n.msgs, span{off: off, n: int32(len(line)), index: int32(h.index)})
		ix.messages++
	case logs.KindDialogOpen, logs.KindFork:
		var tn dialog.TreeNode
		if err := json.Unmarshal(payload(), &tn); err != nil || tn.ID == "" {
			ix.warn("line %d: a %s record without a readable node; skipped", ix.lines, h.kind)
			return nil
		}
		ix.addNode(tn, off)
	case logs.KindModelCall:
		n := ix.nodes[string(h.dialog)]
		if n == nil {
			return nil
		}
		n.calls++
		rest := line
		if h.payload >= 0 {
			rest = line[h.payload:]
		}
		// Only a call that may have failed or been cut is decoded.
		if bytes.Contains(rest, []byte(`"error"`)) || mayBeCut(rest) {
			var mc logs.ModelCall
			if json.Unmarshal(payload(), &mc) == nil {
				if mc.Error != nil {
					n.errors++
					n.lastErr = mc.Error.Type + ": " + mc.Error.Message
				}
				if mc.CutAtMaxTokens() {
					n.cut++
				}
			}
		}
	case logs.KindRunEnd:
		var rec logs.Record
		if err := json.Unmarshal(line, &rec); err == nil && rec.RunEnd != nil {
			ix.end, ix.ended = rec.RunEnd, rec.Time
		}
	}
	return nil
}

// addStart checks the first record with logs.Reader, so that a log the
// logs package refuses (not a run log, a newer major version) is refused
// here with the same message.
func (ix *index) addStart(line []byte) error {
	rd := logs.NewReader(io.MultiReader(bytes.NewReader(line), bytes.NewReader([]byte("\n"))), ix.path)
	rec, err := rd.Next()
	if err != nil {
		return err
	}
	ix.start, ix.started = rec.RunStart, rec.Time
	ix.head = append([]byte(nil), line...)
	ix.records++
	return nil
}

func (ix *index) addNode(tn dialog.TreeNode, off int64) {
	if ix.nodes[tn.ID] != nil {
		ix.warn("dialog %s opened twice; the second record is ignored", tn.ID)
		return
	}
	tn.ChildrenIDs = nil
	n := &node{TreeNode: tn, at: off}
	if tn.ParentID != "" {
		n.parent = ix.nodes[tn.ParentID]
	}
	if n.parent == nil {
		if tn.ParentID != "" {
			ix.warn("dialog %s forks unknown dialog %s; shown as a root", tn.ID, tn.ParentID)
		}
		ix.roots = append(ix.roots, n)
	} else {
		n.parent.children = append(n.parent.children, n)
		if m := attemptAlias.FindStringSubmatch(tn.Alias); m != nil {
			if pm := attemptAlias.FindStringSubmatch(n.parent.Alias); pm != nil && pm[1] == m[1] {
				n.parent.retried = true
			}
		}
	}
	ix.nodes[tn.ID] = n
}

func (ix *index) warn(format string, args ...any) {
	const maxWarnings = 100
	if len(ix.warnings) < maxWarnings {
		ix.warnings = append(ix.warnings, fmt.Sprintf(format, args...))
	}
}

// firstValue is the JSON value at the start of b, without what follows it.
func firstValue(b []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(b))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil
	}
	return raw
}

// length is the number of messages of n: those it started with and its
// own.
func (n *node) length() int { return n.SplitPoint + len(n.msgs) }

// locate finds message i of n's full message list: the node whose record
// holds it and the record's span. A fork's first SplitPoint messages are
// its parent's, by the last_n/first_k rule of dialog.TreeNode.
func locate(n *node, i int) (*node, span, bool) {
	for n != nil {
		if i >= n.SplitPoint {
			k := i - n.SplitPoint
			if k < len(n.msgs) && int(n.msgs[k].index) == i {
				return n, n.msgs[k], true
			}
			// Indexes with gaps (a hand-made log): search.
			j := sort.Search(len(n.msgs), func(j int) bool { return int(n.msgs[j].index) >= i })
			if j < len(n.msgs) && int(n.msgs[j].index) == i {
				return n, n.msgs[j], true
			}
			return nil, span{}, false
		}
		if n.LastN > 0 && i >= n.FirstK {
			i = n.ParentLen - n.LastN + (i - n.FirstK)
		}
		n = n.parent
	}
	return nil, span{}, false
}

// outcome says how a working copy (an alias ending in "#N") fared: "ok"
// when its reply reached the dialog it answered for, "retried" when its
// reply failed to parse and a new attempt was forked from it, "failed"
// when the run ended (or was interrupted) without its reply being used,
// "error" when its model calls failed, "pending" while the run may still
// use it. It is empty for a dialog that is not a working copy.
func (ix *index) outcome(n *node) string {
	m := attemptAlias.FindStringSubmatch(n.Alias)
	if m == nil {
		return ""
	}
	if n.retried {
		return "retried"
	}
	// The dialog the attempt answers for: the nearest ancestor that is not
	// itself a working copy.
	canon := n.parent
	for canon != nil && attemptAlias.MatchString(canon.Alias) {
		canon = canon.parent
	}
	if canon != nil {
		// Did canon get a message after this attempt was forked, before
		// its next first attempt?
		next := int64(-1)
		// Children are in file order: start at the first forked after n.
		k := sort.Search(len(canon.children), func(k int) bool { return canon.children[k].at > n.at })
		for _, c := range canon.children[k:] {
			if attemptAlias.MatchString(c.Alias) {
				next = c.at
				break
			}
		}
		j := sort.Search(len(canon.msgs), func(j int) bool { return canon.msgs[j].off > n.at })
		if j < len(canon.msgs) && (next < 0 || canon.msgs[j].off < next) {
			// The call loop appends a kept reply to canon at once: canon's
			// next message is either this attempt's reply or something else
			// (the tactic's next prompt after a failed turn).
			if len(n.msgs) > 0 && ix.sameMessage(n.msgs[len(n.msgs)-1], canon.msgs[j]) {
				return "ok"
			}
			if n.errors > 0 {
				return "error"
			}
			return "failed"
		}
		if next >= 0 {
			if n.errors > 0 {
				return "error"
			}
			return "failed"
		}
	}
	switch {
	case ix.end == nil && ix.writing.Load():
		return "pending"
	case n.errors > 0:
		return "error"
	}
	return "failed"
}

// sameMessage reports whether the message records at a and b have the
// same sender and content, as the copy of a reply the call loop keeps
// (which adds its parsed output).
func (ix *index) sameMessage(a, b span) bool {
	key := [2]int64{a.off, b.off}
	if same, ok := ix.same.Load(key); ok {
		return same.(bool)
	}
	same := ix.readSame(a, b)
	ix.same.Store(key, same)
	return same
}

// readSame is sameMessage, read from the file.
func (ix *index) readSame(a, b span) bool {
	f, err := os.Open(ix.path)
	if err != nil {
		return false
	}
	defer f.Close()
	type msg struct {
		Message struct {
			Role    string          `json:"role"`
			Name    string          `json:"name"`
			Agent   string          `json:"agent"`
			Content string          `json:"content"`
			Parts   json.RawMessage `json:"parts"`
			Calls   json.RawMessage `json:"function_calls"`
		} `json:"message"`
	}
	var m [2]msg
	for i, sp := range []span{a, b} {
		buf := make([]byte, sp.n)
		if _, err := f.ReadAt(buf, sp.off); err != nil || json.Unmarshal(buf, &m[i]) != nil {
			return false
		}
	}
	x, y := m[0].Message, m[1].Message
	return x.Role == y.Role && x.Name == y.Name && x.Agent == y.Agent && x.Content == y.Content &&
		bytes.Equal(x.Parts, y.Parts) && bytes.Equal(x.Calls, y.Calls)
}

// summary is the run as far as ix has indexed it, as logs.List would
// summarise it.
func (ix *index) summary(id, dir string) logs.Summary {
	return logs.Summary{ID: id, Dir: dir, Start: ix.start, Started: ix.started, End: ix.end, Ended: ix.ended, Writing: ix.writing.Load()}
}

// status is the run's status: its run_end's; without one, running while a
// process still writes the log, else interrupted.
func (ix *index) status() logs.Status { return ix.summary("", "").Status() }

// pendingWarning describes the bytes after the last whole line.
func (ix *index) pendingWarning() string {
	if ix.pending == 0 {
		return ""
	}
	s := "the last line is incomplete (" + strconv.FormatInt(ix.pending, 10) + " bytes) and is not shown"
	if ix.end == nil {
		return s + ": the run is still writing it, or stopped while writing it"
	}
	return s
}
