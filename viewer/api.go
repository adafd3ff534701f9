package viewer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/logs"
)

// Page limits. The server caps every page, whatever the client asks.
const (
	defaultNodes    = 100
	maxNodes        = 500
	defaultMessages = 50
	maxMessages     = 200
	// maxPageBytes caps the records read for one page of messages (large
	// images); a page holds at least one message.
	maxPageBytes = 8 << 20
)

func (h *Handler) listRuns(w http.ResponseWriter, r *http.Request) {
	c := h.runCache()
	listing := c.begin()
	sums, err := logs.ListWith(h.root, logs.ListOptions{Known: func(id, dir string, log fs.FileInfo) (logs.Summary, bool) {
		return c.known(listing, id, dir, log)
	}})
	if err != nil {
		fail(w, fmt.Errorf("listing runs under %s: %w", h.root, err))
		return
	}
	c.end(listing, sums)
	// A run is the same object as one of lllm runs -o json.
	runs := make([]logs.RunInfo, 0, len(sums))
	for _, s := range sums {
		runs = append(runs, s.Info())
	}
	writeJSON(w, http.StatusOK, map[string]any{"root": h.root, "runs": runs})
}

// maxKnownRuns bounds the finished runs a Handler remembers for GET
// /api/runs: a sweep of 100,000 samples, at a few hundred bytes each.
const maxKnownRuns = 1 << 17

// A runCache remembers the summaries of the finished runs GET /api/runs
// listed, so that listing them again costs a stat each: a run with a
// run_end never changes while its log keeps its size and modification
// time. It keeps of each what RunInfo shows, and forgets the runs a
// listing no longer finds. It is safe for concurrent use.
type runCache struct {
	mu       sync.Mutex
	runs     map[string]*knownRun // by run directory
	listings int64
}

// knownRun is a run of a runCache: one listed, whose summary is set once
// it is known to be finished.
type knownRun struct {
	log     fs.FileInfo // when it was listed
	sum     *logs.Summary
	listing int64 // the last listing that found it
}

// runCache returns h's runCache.
func (h *Handler) runCache() *runCache { return &h.runs }

// begin starts a listing; it returns its number, for known and end.
func (c *runCache) begin() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]*knownRun{}
	}
	c.listings++
	return c.listings
}

// known is logs.ListOptions.Known for a listing: the remembered summary
// of a finished run whose log has not changed. A log that is not a
// regular file is not read at all: as for /api/runs/{run}, a symbolic
// link is not followed.
func (c *runCache) known(listing int64, id, dir string, log fs.FileInfo) (logs.Summary, bool) {
	if !log.Mode().IsRegular() {
		return logs.Summary{ID: id, Dir: dir, Err: errNotRegular}, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.runs[dir]
	if k != nil && k.sum != nil && os.SameFile(k.log, log) && k.log.Size() == log.Size() && k.log.ModTime().Equal(log.ModTime()) {
		k.listing = listing
		return *k.sum, true
	}
	if k != nil || len(c.runs) < maxKnownRuns {
		c.runs[dir] = &knownRun{log: log, listing: listing}
	}
	return logs.Summary{}, false
}

var errNotRegular = errors.New("its " + logs.EventsFile + " is not a regular file (symbolic links are not followed)")

// end finishes a listing: it remembers the finished runs it read, and
// forgets the runs it did not find.
func (c *runCache) end(listing int64, sums []logs.Summary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range sums {
		k := c.runs[s.Dir]
		if k == nil || k.sum != nil || k.listing != listing || s.Err != nil || s.End == nil {
			continue
		}
		// What Info shows, and no more: run_start's task and config,
		// run_end's result, can be large.
		sum := logs.Summary{ID: s.ID, Dir: s.Dir, Started: s.Started, Ended: s.Ended,
			End: &logs.RunEnd{Status: s.End.Status, Error: s.End.Error, Totals: s.End.Totals}}
		if s.Start != nil {
			sum.Start = &logs.RunStart{Tactic: s.Start.Tactic, Labels: s.Start.Labels}
		}
		k.sum = &sum
	}
	if len(c.runs) > len(sums) {
		for dir, k := range c.runs {
			if k.listing < listing {
				delete(c.runs, dir)
			}
		}
	}
}

// runDetail is GET /api/runs/{run}: the run as GET /api/runs lists it,
// and more.
type runDetail struct {
	logs.RunInfo
	Task      json.RawMessage   `json:"task,omitempty"`
	Config    json.RawMessage   `json:"config,omitempty"`
	Seed      int64             `json:"seed,omitempty"`
	GitCommit string            `json:"git_commit,omitempty"`
	Host      string            `json:"host,omitempty"`
	Versions  map[string]string `json:"versions,omitempty"`
	Result    json.RawMessage   `json:"result,omitempty"`
	// IndexedBytes is how much of the log is indexed: every whole line.
	// It changes whenever the log grows, so a client polls it. (Not
	// "version": in the log, that is run_start's format version.)
	IndexedBytes int64 `json:"indexed_bytes"`
	// Bytes is the log's size, a line still being written included.
	Bytes    int64    `json:"bytes"`
	Records  int      `json:"records"`
	Dialogs  int      `json:"dialogs"`
	Roots    int      `json:"roots"`
	Messages int      `json:"messages"`
	Warnings []string `json:"warnings"`
}

func (h *Handler) getRun(w http.ResponseWriter, r *http.Request) {
	ix, id, err := h.runIndex(r.Context(), r.PathValue("run"))
	if err != nil {
		fail(w, err)
		return
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	d := runDetail{
		RunInfo:      ix.summary(id, filepath.Join(h.root, id)).Info(),
		IndexedBytes: ix.scanned, Bytes: ix.scanned + ix.pending, Records: ix.records,
		Dialogs: len(ix.nodes), Roots: len(ix.roots), Messages: ix.messages,
		Warnings: append([]string{}, ix.warnings...),
	}
	if s := ix.start; s != nil {
		d.Task, d.Config, d.Seed, d.GitCommit, d.Host, d.Versions = s.Task, s.Config, s.Seed, s.GitCommit, s.Host, s.Versions
	} else {
		d.Warnings = append(d.Warnings, "the run_start record is still being written")
	}
	if ix.end != nil {
		d.Result = ix.end.Result
	}
	if ix.orphans > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%d message records belong to dialogs the log never opened; they are not shown", ix.orphans))
	}
	if pw := ix.pendingWarning(); pw != "" {
		d.Warnings = append(d.Warnings, pw)
	}
	writeJSON(w, http.StatusOK, d)
}

// nodeJSON is one dialog in the tree.
type nodeJSON struct {
	ID         string `json:"id"`
	Owner      string `json:"owner"`
	Alias      string `json:"alias,omitempty"`
	ParentID   string `json:"parent_id,omitempty"`
	SplitPoint int    `json:"split_point"`
	LastN      int    `json:"last_n"`
	FirstK     int    `json:"first_k"`
	ParentLen  int    `json:"parent_len"`
	Depth      int    `json:"depth"`
	// Messages is the dialog's length: the messages it started with and
	// its own.
	Messages   int `json:"messages"`
	Own        int `json:"own_messages"`
	Children   int `json:"children"`
	ModelCalls int `json:"model_calls"`
	// Errors counts the failed model calls made on this dialog; LastError
	// is the last one's "type: message".
	Errors    int    `json:"call_errors"`
	LastError string `json:"last_error,omitempty"`
	// MaxTokensCut counts the model calls on this dialog whose reply was
	// cut at max_tokens.
	MaxTokensCut int `json:"max_tokens_cut"`
	// Outcome is set for a working copy (an alias ending in "#N"): ok,
	// retried, failed, error or pending. Failed means retried, failed or
	// error.
	Outcome string `json:"outcome,omitempty"`
	Failed  bool   `json:"failed"`
}

func (ix *index) nodeJSON(n *node) nodeJSON {
	o := ix.outcome(n)
	return nodeJSON{
		ID: n.ID, Owner: n.Owner, Alias: n.Alias, ParentID: n.ParentID,
		SplitPoint: n.SplitPoint, LastN: n.LastN, FirstK: n.FirstK, ParentLen: n.ParentLen, Depth: n.Depth,
		Messages: n.length(), Own: len(n.msgs), Children: len(n.children),
		ModelCalls: n.calls, Errors: n.errors, LastError: n.lastErr, MaxTokensCut: n.cut,
		Outcome: o, Failed: o == "retried" || o == "failed" || o == "error",
	}
}

// pageParams reads offset and limit from the query, capping limit.
func pageParams(r *http.Request, def, maximum int) (offset, limit int, err error) {
	q := r.URL.Query()
	offset, limit = 0, def
	if s := q.Get("offset"); s != "" {
		if offset, err = strconv.Atoi(s); err != nil || offset < 0 {
			return 0, 0, errorf(http.StatusBadRequest, "offset %q is not a non-negative integer", s)
		}
	}
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit <= 0 {
			return 0, 0, errorf(http.StatusBadRequest, "limit %q is not a positive integer", s)
		}
	}
	return offset, min(limit, maximum), nil
}

// treePage is GET /api/runs/{run}/tree: a page of the roots, or of the
// children of ?parent=ID.
type treePage struct {
	Parent string     `json:"parent,omitempty"`
	Total  int        `json:"total"`
	Offset int        `json:"offset"`
	Nodes  []nodeJSON `json:"nodes"`
}

func (h *Handler) getTree(w http.ResponseWriter, r *http.Request) {
	offset, limit, err := pageParams(r, defaultNodes, maxNodes)
	if err != nil {
		fail(w, err)
		return
	}
	ix, runID, err := h.runIndex(r.Context(), r.PathValue("run"))
	if err != nil {
		fail(w, err)
		return
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	list := ix.roots
	parent := r.URL.Query().Get("parent")
	if parent != "" {
		n, err := ix.dialog(runID, parent)
		if err != nil {
			fail(w, err)
			return
		}
		parent = n.ID
		list = n.children
	}
	p := treePage{Parent: parent, Total: len(list), Offset: offset, Nodes: []nodeJSON{}}
	for i := offset; i < len(list) && i < offset+limit; i++ {
		p.Nodes = append(p.Nodes, ix.nodeJSON(list[i]))
	}
	writeJSON(w, http.StatusOK, p)
}

// dialogInfo is GET /api/runs/{run}/dialogs/{dialog}: the dialog's node and
// its ancestors, root first.
type dialogInfo struct {
	Node      nodeJSON   `json:"node"`
	Ancestors []nodeJSON `json:"ancestors"`
	RunStatus string     `json:"run_status"`
}

func (h *Handler) getDialog(w http.ResponseWriter, r *http.Request) {
	ix, n, ok := h.dialogNode(w, r)
	if !ok {
		return
	}
	defer ix.mu.RUnlock()
	d := dialogInfo{Node: ix.nodeJSON(n), Ancestors: []nodeJSON{}, RunStatus: string(ix.status())}
	// Nearest first, then reversed: prepending would copy the list once
	// per level, quadratic in a deep chain of forks.
	for p := n.parent; p != nil; p = p.parent {
		d.Ancestors = append(d.Ancestors, ix.nodeJSON(p))
	}
	slices.Reverse(d.Ancestors)
	writeJSON(w, http.StatusOK, d)
}

// dialogNode finds the request's run and dialog; on success the index is
// read-locked and the caller unlocks it.
func (h *Handler) dialogNode(w http.ResponseWriter, r *http.Request) (*index, *node, bool) {
	ix, runID, err := h.runIndex(r.Context(), r.PathValue("run"))
	if err != nil {
		fail(w, err)
		return nil, nil, false
	}
	ix.mu.RLock()
	n, err := ix.dialog(runID, r.PathValue("dialog"))
	if err != nil {
		ix.mu.RUnlock()
		fail(w, err)
		return nil, nil, false
	}
	return ix, n, true
}

// dialog finds the dialog id names in the run runID: its whole id, or a
// unique prefix of one, as lllm tree shows it ([1f3a9c2e]) and lllm show
// takes it. Under ix.mu, read-locked.
func (ix *index) dialog(runID, id string) (*node, error) {
	if n := ix.nodes[id]; n != nil {
		return n, nil
	}
	var found []string
	if id != "" {
		for full := range ix.nodes {
			if strings.HasPrefix(full, id) {
				found = append(found, full)
			}
		}
	}
	switch len(found) {
	case 1:
		return ix.nodes[found[0]], nil
	case 0:
		return nil, errorf(http.StatusNotFound, "run %s has no dialog %q: name a dialog by its id, or a unique prefix of one", runID, id)
	}
	slices.Sort(found)
	return nil, errorf(http.StatusBadRequest, "%q matches %d dialogs of run %s (%s): give more of an id", id, len(found), runID, strings.Join(found, ", "))
}

// messageJSON is one message of a transcript page.
type messageJSON struct {
	Index int `json:"index"`
	// Dialog is the dialog whose record holds the message: an ancestor's
	// for the messages a fork started with (Inherited).
	Dialog    string `json:"dialog"`
	Inherited bool   `json:"inherited"`
	// Seq and Time are the record's; both are left out for a message
	// whose record could not be read.
	Seq     int64           `json:"seq,omitzero"`
	Time    time.Time       `json:"ts,omitzero"`
	Prompt  string          `json:"prompt,omitempty"`
	Message json.RawMessage `json:"message,omitempty"`
	Error   string          `json:"error,omitempty"` // why the record could not be read
}

// messagePage is GET /api/runs/{run}/dialogs/{dialog}/messages.
type messagePage struct {
	Dialog   string        `json:"dialog"`
	Total    int           `json:"total"`
	Offset   int           `json:"offset"`
	Next     int           `json:"next"` // the offset of the next page; Total at the end
	Messages []messageJSON `json:"messages"`
}

func (h *Handler) getMessages(w http.ResponseWriter, r *http.Request) {
	offset, limit, err := pageParams(r, defaultMessages, maxMessages)
	if err != nil {
		fail(w, err)
		return
	}
	ix, n, ok := h.dialogNode(w, r)
	if !ok {
		return
	}
	type want struct {
		i   int
		src *node
		sp  span
	}
	total := n.length()
	var wants []want
	for i := offset; i < total && i < offset+limit; i++ {
		src, sp, ok := locate(n, i)
		wants = append(wants, want{i: i, src: src, sp: sp})
		if !ok {
			wants[len(wants)-1].src = nil
		}
	}
	path := ix.path
	ix.mu.RUnlock()

	p := messagePage{Dialog: n.ID, Total: total, Offset: offset, Next: offset, Messages: []messageJSON{}}
	if len(wants) == 0 {
		p.Next = max(offset, total)
		writeJSON(w, http.StatusOK, p)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		fail(w, fmt.Errorf("viewer: %w", err))
		return
	}
	defer f.Close()
	var buf []byte
	read := 0
	for _, wt := range wants {
		if err := r.Context().Err(); err != nil {
			fail(w, err)
			return
		}
		if read > 0 && read+int(wt.sp.n) > maxPageBytes {
			break
		}
		m := messageJSON{Index: wt.i}
		if wt.src == nil {
			m.Error = fmt.Sprintf("message %d is missing from the log", wt.i)
		} else {
			m.Dialog, m.Inherited = wt.src.ID, wt.src != n
			if cap(buf) < int(wt.sp.n) {
				buf = make([]byte, wt.sp.n)
			}
			b := buf[:wt.sp.n]
			if _, err := f.ReadAt(b, wt.sp.off); err != nil {
				m.Error = fmt.Sprintf("reading its record at byte %d of %s: %v", wt.sp.off, path, err)
			} else if err := decodeMessage(b, &m); err != nil {
				m.Error = fmt.Sprintf("its record at byte %d of %s is not valid JSON: %v", wt.sp.off, path, err)
			}
			read += int(wt.sp.n)
		}
		p.Messages = append(p.Messages, m)
		p.Next = wt.i + 1
	}
	writeJSON(w, http.StatusOK, p)
}

// decodeMessage fills m from a message record, keeping the message itself
// as raw JSON. A message that escapes a lone UTF-16 surrogate ("\ud800")
// is the one exception: it is decoded and encoded again, as lllm show -o
// json prints it, so that its text holds U+FFFD, as Go reads it, and its
// raw values (tool arguments, parsed output) are as the log has them.
func decodeMessage(line []byte, m *messageJSON) error {
	var rec struct {
		Seq     int64           `json:"seq"`
		Time    time.Time       `json:"ts"`
		Prompt  string          `json:"prompt"`
		Message json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		return err
	}
	m.Seq, m.Time, m.Prompt, m.Message = rec.Seq, rec.Time, rec.Prompt, rec.Message
	if jsontext.LoneSurrogate(rec.Message) {
		var msg *dialog.Message
		if err := json.Unmarshal(rec.Message, &msg); err != nil {
			return err
		}
		raw, err := json.Marshal(msg)
		if err != nil {
			return err
		}
		m.Message = raw
	}
	return nil
}
