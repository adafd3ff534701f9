// Package inspect holds analyses of a recorded run: its fork tree with
// what each dialog cost and which attempts failed, renderings of that tree
// (text, JSON, Graphviz DOT, Mermaid), and the difference between two runs.
//
// Everything here is computed from a run log alone (see docs/log-format.md),
// streamed once with a logs.Reader.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// Tree is the fork tree of a recorded run: every dialog as a Node, with
// its place in the tree, its size and cost, and whether it was a failed
// attempt of an agent's call loop.
type Tree struct {
	RunID string
	// Dir is the run directory the tree was loaded from (Load); empty
	// for a tree read from a log alone (Read).
	Dir    string
	Tactic string
	// Status is how the run ended; without a run_end, logs.StatusRunning,
	// or logs.StatusInterrupted when Load finds no process writing the log.
	Status logs.Status
	// Start is the run_start record, End the run_end record (nil when the
	// log has none).
	Start *logs.RunStart
	End   *logs.RunEnd
	// Roots are the root dialogs in the order they were opened; Nodes
	// every dialog in the order it appeared in the log.
	Roots []*Node
	Nodes []*Node
	// Forest holds every dialog with its messages when the tree was read
	// with Options.Messages, else it is nil.
	Forest *dialog.Forest

	byID    map[string]*Node
	outside dialog.Cost // model calls of no dialog of the log
}

// retried is how many of n's model calls failed and were made again: its
// failed calls, less the last one of a failed attempt, whose failure is
// the attempt's.
func (n *Node) retried() int {
	r := n.CallErrors
	if n.Failed && n.lastError != nil {
		r--
	}
	return max(r, 0)
}

// Node is one dialog of a Tree.
type Node struct {
	ID       string
	Owner    string
	Alias    string
	ParentID string // empty for a root
	// SplitPoint is the number of messages a fork started with; LastN,
	// FirstK and ParentLen say how it was made (see dialog.TreeNode).
	SplitPoint int
	LastN      int
	FirstK     int
	ParentLen  int
	Depth      int // 0 for a root
	// Messages is the dialog's message count, inherited ones included.
	Messages int
	// Cost is the usage and dollars recorded on the messages the dialog
	// added itself (after its split point), as dialog.Dialog.OwnCost: a
	// kept reply counts in its working copy's Cost and in its dialog's,
	// so summing Cost over a tree counts it twice (CallCost does not).
	Cost dialog.Cost
	// Calls is the number of model_call records made on this dialog,
	// CallErrors how many of them failed, MaxTokensCut how many of their
	// replies were cut at max_tokens (logs.ModelCall.CutAtMaxTokens), and
	// CallCost what they cost. An agent calls the model on a working copy
	// ("ALIAS#N"), so summing CallCost over a tree counts each call once.
	Calls        int
	CallErrors   int
	MaxTokensCut int
	CallCost     dialog.Cost
	// Failed marks a failed attempt: a working copy made by an agent's
	// call loop whose reply was not kept. FailReason says why.
	Failed     bool
	FailReason string

	Parent   *Node
	Children []*Node

	// Seq is the sequence number of the record that opened the dialog;
	// MessageSeqs, with Options.Messages, those of its own messages.
	Seq         int64
	MessageSeqs []int64

	work      workInfo
	lastMsg   *dialog.Message // the last message appended, for keep checks
	lastError *logs.CallError // the error of the last model call, if it failed
}

// workInfo is what the call loop's bookkeeping needs of a working copy.
type workInfo struct {
	base      string // the alias of the dialog the copy works for; "" if not a working copy
	n         int    // N of "base#N"
	canon     *Node  // the dialog the reply is appended to when kept
	retried   *Node  // the working copy "base#N+1" forked from this one, if any
	replied   bool   // a model call on it returned a reply
	kept      bool   // its last reply was appended to canon
	abandoned bool   // canon received another message instead of its reply
}

// IsRoot reports whether the node has no parent.
func (n *Node) IsRoot() bool { return n.ParentID == "" }

// IsWorkingCopy reports whether the dialog is a working copy made by an
// agent's call loop, "ALIAS#N", and returns ALIAS and N.
func (n *Node) IsWorkingCopy() (alias string, attempt int, ok bool) {
	return n.work.base, n.work.n, n.work.base != ""
}

// Node returns the dialog with the given id, or nil.
func (t *Tree) Node(id string) *Node { return t.byID[id] }

// Lookup returns the dialogs whose id is ref or, failing that, starts with
// ref, in the order they appeared.
func (t *Tree) Lookup(ref string) []*Node {
	if n := t.byID[ref]; n != nil {
		return []*Node{n}
	}
	if ref == "" {
		return nil
	}
	var out []*Node
	for _, n := range t.Nodes {
		if strings.HasPrefix(n.ID, ref) {
			out = append(out, n)
		}
	}
	return out
}

// Total is the cost of every model call of the run, from its model_call
// records, those of no dialog included.
func (t *Tree) Total() dialog.Cost {
	c := t.outside
	for _, n := range t.Nodes {
		c = c.Add(n.CallCost)
	}
	return c
}

// Options tune Read and Load. The zero value reads the tree alone.
type Options struct {
	// Messages keeps every dialog's messages in Tree.Forest, as
	// logs.Rebuild does; Diff needs them. Without it only counts and
	// costs are kept, which takes far less memory.
	Messages bool
	// Stopped says a log without run_end is no longer written (its run was
	// interrupted): its last attempts are judged as if the run had ended.
	// Load sets it from the log's lock.
	Stopped bool
}

// Load reads the tree of run's log, and returns it with the reader's
// warnings (such as a skipped torn last line).
func Load(ctx context.Context, run *logs.Run, opts Options) (*Tree, []string, error) {
	return load(ctx, run, opts, nil)
}

// load is Load, calling each (when set) with every record after the tree
// has taken it.
func load(ctx context.Context, run *logs.Run, opts Options, each func(*Tree, *logs.Record)) (*Tree, []string, error) {
	// Asked before reading, so that a run that ends meanwhile is not taken
	// for interrupted.
	opts.Stopped = !run.Writing()
	r, err := run.Reader()
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	t, err := read(ctx, r, run.Path(), opts, each)
	if err != nil {
		return nil, r.Warnings(), err
	}
	if t.RunID == "" {
		t.RunID = run.ID
	}
	t.Dir = run.Dir
	if t.End == nil && opts.Stopped {
		t.Status = logs.StatusInterrupted
	}
	return t, r.Warnings(), nil
}

// Read reads the tree of the log r. name identifies the log in errors, as
// in logs.NewReader. A dialog record that does not fit the tree built so
// far is a *logs.FormatError; its Line is the record's seq, which is its
// line in a well-formed log. Read stops with ctx's error when ctx is done.
func Read(ctx context.Context, r *logs.Reader, name string, opts Options) (*Tree, error) {
	return read(ctx, r, name, opts, nil)
}

// read is Read, calling each (when set) with every record after the tree
// has taken it.
func read(ctx context.Context, r *logs.Reader, name string, opts Options, each func(*Tree, *logs.Record)) (*Tree, error) {
	start, err := r.Start()
	if err != nil {
		return nil, err
	}
	b := &builder{
		t:    &Tree{RunID: start.RunID, Tactic: start.Tactic, Start: start, Status: logs.StatusRunning, byID: map[string]*Node{}},
		opts: opts,
	}
	if opts.Messages {
		b.t.Forest = new(dialog.Forest)
	}
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := b.add(rec); err != nil {
			return nil, &logs.FormatError{Name: name, Line: r.Line(), Msg: "inconsistent dialog record", Err: err}
		}
		if each != nil {
			each(b.t, rec)
		}
	}
	b.finish()
	return b.t, nil
}

type builder struct {
	t    *Tree
	opts Options
	// pending maps a dialog to the working copy whose last reply may be
	// appended to it next.
	pending map[*Node]*Node
}

func (b *builder) add(rec *logs.Record) error {
	switch rec.Kind {
	case logs.KindRunStart:
		return nil
	case logs.KindRunEnd:
		if rec.RunEnd != nil {
			b.t.End, b.t.Status = rec.RunEnd, rec.RunEnd.Status
		}
		return nil
	case logs.KindModelCall:
		return b.modelCall(rec)
	}
	ev, ok := rec.Event()
	if !ok {
		return nil
	}
	if f := b.t.Forest; f != nil {
		if err := f.Apply(ev); err != nil {
			return err
		}
	}
	switch ev.Kind {
	case dialog.EventOpen, dialog.EventFork:
		return b.node(ev, rec.Seq)
	case dialog.EventAppend:
		return b.message(ev, rec.Seq)
	}
	return nil
}

// node adds a dialog, with the checks dialog.Forest.Apply makes.
func (b *builder) node(ev dialog.Event, seq int64) error {
	tn := ev.Node
	if tn.ID == "" {
		return fmt.Errorf("%s event without a dialog id", ev.Kind)
	}
	if b.t.byID[tn.ID] != nil {
		return fmt.Errorf("dialog %s opened twice", tn.ID)
	}
	n := &Node{
		ID: tn.ID, Owner: tn.Owner, Alias: tn.Alias, ParentID: tn.ParentID,
		SplitPoint: tn.SplitPoint, LastN: tn.LastN, FirstK: tn.FirstK, ParentLen: tn.ParentLen,
		Messages: tn.SplitPoint, Seq: seq,
	}
	if ev.Kind == dialog.EventOpen {
		if tn.ParentID != "" {
			return fmt.Errorf("open event for dialog %s names a parent", tn.ID)
		}
		n.Messages, n.SplitPoint = 0, 0
		b.t.Roots = append(b.t.Roots, n)
	} else {
		p := b.t.byID[tn.ParentID]
		if p == nil {
			return fmt.Errorf("dialog %s forked from unknown dialog %s", tn.ID, tn.ParentID)
		}
		fits := tn.ParentLen >= 0 && tn.ParentLen <= p.Messages && tn.LastN >= 0 &&
			(tn.LastN == 0 || tn.LastN < tn.ParentLen && tn.FirstK >= 0 && tn.FirstK <= tn.ParentLen-tn.LastN)
		if !fits {
			return fmt.Errorf("dialog %s: fork (parent_len=%d, last_n=%d, first_k=%d) does not fit parent %s with %d messages",
				tn.ID, tn.ParentLen, tn.LastN, tn.FirstK, p.ID, p.Messages)
		}
		kept := tn.ParentLen
		if tn.LastN > 0 {
			kept = tn.FirstK + tn.LastN
		}
		if kept != tn.SplitPoint {
			return fmt.Errorf("dialog %s: split point %d but the fork keeps %d messages", tn.ID, tn.SplitPoint, kept)
		}
		n.Parent, n.Depth = p, p.Depth+1
		p.Children = append(p.Children, n)
		b.markWorkingCopy(n)
	}
	b.t.byID[n.ID] = n
	b.t.Nodes = append(b.t.Nodes, n)
	return nil
}

// markWorkingCopy recognises the working copies of tactics.Agent's call
// loop: "A#1" forked whole from the dialog A, and "A#N+1" forked whole
// from "A#N" to retry a reply that failed to parse. The agent refuses '#'
// in a tactic's own aliases.
func (b *builder) markWorkingCopy(n *Node) {
	base, num, ok := splitAttempt(n.Alias)
	if !ok || n.LastN != 0 || n.Owner != n.Parent.Owner {
		return
	}
	p := n.Parent
	switch {
	case num == 1 && p.Alias == base:
		n.work = workInfo{base: base, n: 1, canon: p}
	case num > 1 && p.work.base == base && p.work.n == num-1:
		n.work = workInfo{base: base, n: num, canon: p.work.canon}
		p.work.retried = n
	}
}

// splitAttempt splits "ALIAS#N" into ALIAS and N (N >= 1).
func splitAttempt(alias string) (string, int, bool) {
	i := strings.LastIndexByte(alias, '#')
	if i < 0 {
		return "", 0, false
	}
	num, err := strconv.Atoi(alias[i+1:])
	if err != nil || num < 1 || alias[i+1] == '+' {
		return "", 0, false
	}
	return alias[:i], num, true
}

func (b *builder) message(ev dialog.Event, seq int64) error {
	n := b.t.byID[ev.DialogID]
	if n == nil {
		return fmt.Errorf("message for unknown dialog %s", ev.DialogID)
	}
	m := ev.Message
	if m == nil {
		return fmt.Errorf("append event for dialog %s without a message", ev.DialogID)
	}
	if ev.Index != n.Messages {
		return fmt.Errorf("dialog %s: message %d appended at position %d", ev.DialogID, ev.Index, n.Messages)
	}
	n.Messages++
	n.Cost = n.Cost.Add(m.Cost())
	n.lastMsg = m
	if b.opts.Messages {
		n.MessageSeqs = append(n.MessageSeqs, seq)
	}
	// The first message a dialog gets after a working copy's reply tells
	// whether the reply was kept: the call loop appends it at once.
	if w := b.pending[n]; w != nil {
		delete(b.pending, n)
		if sameMessage(w.lastMsg, m) {
			w.work.kept = true
		} else {
			w.work.abandoned = true
		}
	}
	return nil
}

func (b *builder) modelCall(rec *logs.Record) error {
	mc := rec.ModelCall
	n := b.t.byID[rec.Dialog]
	if mc == nil {
		return nil
	}
	if n == nil {
		// A model call outside any dialog (or of a dialog this log does
		// not hold) has no place in the tree, but counts in Total.
		b.t.outside = b.t.outside.Add(dialog.Cost{Usage: mc.Usage, USD: mc.USD})
		return nil
	}
	n.Calls++
	n.CallCost = n.CallCost.Add(dialog.Cost{Usage: mc.Usage, USD: mc.USD})
	if mc.CutAtMaxTokens() {
		n.MaxTokensCut++
	}
	if mc.Error != nil {
		n.CallErrors++
		n.lastError = mc.Error
		return nil
	}
	n.lastError = nil
	if mc.Reply == nil || mc.Reply.Dialog != n.ID || mc.Reply.Index != n.Messages-1 || n.work.base == "" {
		return nil
	}
	n.work.replied, n.work.kept, n.work.abandoned = true, false, false
	if b.pending == nil {
		b.pending = map[*Node]*Node{}
	}
	b.pending[n.work.canon] = n
	return nil
}

// sameMessage reports whether kept is the copy of reply the call loop
// appends: the same sender and content (the parser fills Parsed on the
// copy only).
func sameMessage(reply, kept *dialog.Message) bool {
	if reply == nil || kept == nil {
		return false
	}
	return reply.Role == kept.Role && reply.Name == kept.Name && reply.Content == kept.Content &&
		len(reply.Parts) == len(kept.Parts) && len(reply.FunctionCalls) == len(kept.FunctionCalls) &&
		reply.Usage == kept.Usage && reply.USD == kept.USD
}

// finish decides which working copies were failed attempts.
func (b *builder) finish() {
	ended := b.t.End != nil || b.opts.Stopped
	for _, n := range b.t.Nodes {
		w := &n.work
		if w.base == "" || w.kept {
			continue
		}
		switch {
		case w.retried != nil:
			n.Failed, n.FailReason = true, "reply did not parse; retried in "+w.retried.Alias
		case n.lastError != nil:
			n.Failed, n.FailReason = true, "model call failed: "+n.lastError.Type
			if msg := n.lastError.Message; msg != "" {
				n.FailReason += ": " + firstLine(msg, 120)
			}
		case w.replied && !w.abandoned && ended && n.lastMsg != nil &&
			(n.lastMsg.Role == dialog.RoleTool || n.lastMsg.IsFunctionCall()):
			// Its reply called tools (which are never parsed): the call
			// loop stopped in a tool round, by a cancellation, a kill or
			// an error.
			n.Failed, n.FailReason = true, "no final reply: stopped in a tool round"
			if b.t.End != nil && b.t.End.Status == logs.StatusCancelled {
				n.FailReason += " (the run was cancelled)"
			} else if b.t.End == nil {
				n.FailReason += " (the run was interrupted)"
			}
		case w.replied && (w.abandoned || ended):
			n.Failed, n.FailReason = true, "reply not kept (it did not parse)"
		case !w.replied && ended && n.Calls == 0:
			n.Failed, n.FailReason = true, "no model reply"
		}
	}
}

// firstLine is the first line of s, cut to at most max bytes on a rune
// boundary.
func firstLine(s string, max int) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
