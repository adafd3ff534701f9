package contextmgr

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"weak"

	"github.com/lllm-go/lllm/dialog"
)

// summaryManager replaces the oldest messages with a summary, and keeps
// the summaries it wrote for the next calls on the same dialog.
type summaryManager struct {
	budget
	memo *summaryMemo
}

func newSummary(cfg map[string]any) (Manager, error) {
	b, err := parseBudget(cfg)
	if err != nil {
		return nil, err
	}
	return summaryManager{budget: b, memo: &summaryMemo{}}, nil
}

// Fit, when the messages are over the limit, keeps the first message and a
// recent tail of whole units, and replaces the messages between them with
// a summary that in.Summarize writes.
//
// A summary is written once and kept: while the summary this manager last
// wrote for a dialog, followed by everything after the messages it
// stands for, fits the limit, it is sent again without a model call.
// Otherwise a new one is written for all but a tail that fits in half
// the limit (the newest unit is always kept), starting from the kept
// summary when there is one, and in parts that each fit the limit, so
// that no summarizer call is sent more than the model could take.
//
// Fit fails with [ErrNoSummarizer] when in.Summarize is nil, whether or
// not a summary is needed, so that a misconfigured agent fails on its
// first call.
func (s summaryManager) Fit(ctx context.Context, in Input) (Result, error) {
	if in.Summarize == nil {
		return Result{}, &FitError{Type: "summary", Err: ErrNoSummarizer}
	}
	p, err := prepare(ctx, "summary", in)
	if err != nil {
		return Result{}, err
	}
	msgs := in.Messages
	res := Result{Messages: msgs, Action: "none", TokensBefore: p.total, TokensAfter: p.total}
	limit, desc := s.limit(in.Model, p.tools)
	if len(msgs) == 0 || p.total <= limit {
		return res, nil
	}
	spans := units(msgs, 1)
	kept := s.memo.lookup(in.Dialog, in.Model, msgs)
	if kept.sum != nil && slices.ContainsFunc(spans, func(u span) bool { return u.lo == kept.end }) {
		sumTokens := p.tok.countMessage(p.enc, kept.sum)
		if after := p.counts[0] + sumTokens + p.sum(span{kept.end, len(msgs)}); after <= limit {
			res.Messages = summarised(msgs, kept.sum, kept.end)
			res.Action, res.TokensAfter = "summary", after
			res.Archived, res.Summary = kept.end-1, kept.sum
			res.Note = fmt.Sprintf("kept the summary of the first %d messages (%d tokens); kept the last %d; limit %s",
				kept.end-1, sumTokens, len(msgs)-kept.end, desc)
			return res, nil
		}
	}

	tail, start := 0, len(msgs)
	for i := len(spans) - 1; i >= 0; i-- {
		c := p.sum(spans[i])
		if tail+c > limit/2 && i < len(spans)-1 { // the newest unit is always kept
			break
		}
		tail += c
		start = spans[i].lo
	}
	if start <= 1 {
		res.Note = fmt.Sprintf("over the limit %s, but there is nothing to summarise", desc)
		return res, nil
	}
	from, prev := 1, (*dialog.Message)(nil)
	if kept.sum != nil && kept.end <= start {
		from, prev = kept.end, kept.sum
	}
	sum, err := summarise(ctx, in.Summarize, p, msgs, prev, from, start, limit)
	if err != nil {
		return Result{}, &FitError{Type: "summary", Err: fmt.Errorf("summarising %d messages: %w", start-1, err)}
	}
	s.memo.add(in.Dialog, in.Model, msgs[:start], sum)
	sumTokens := p.tok.countMessage(p.enc, sum)
	res.Messages = summarised(msgs, sum, start)
	res.Action, res.TokensAfter = "summary", p.counts[0]+sumTokens+tail
	res.Archived, res.Summary = start-1, sum
	res.Note = fmt.Sprintf("summarised %d messages (%d tokens) into one of %d tokens; kept the last %d; limit %s",
		start-1, p.sum(span{1, start}), sumTokens, len(msgs)-start, desc)
	if prev != nil {
		res.Note += fmt.Sprintf("; from the kept summary of the first %d", from-1)
	}
	if res.TokensAfter > limit {
		res.Note += "; still over the limit"
	}
	return res, nil
}

// summarised is the first message, sum, and msgs[start:].
func summarised(msgs []*dialog.Message, sum *dialog.Message, start int) []*dialog.Message {
	out := make([]*dialog.Message, 0, 2+len(msgs)-start)
	return append(append(out, msgs[0], sum), msgs[start:]...)
}

// summarise has f fold msgs[from:to], after the summary prev of the
// messages before them (nil when from is 1), into one message: whole
// units at a time, each call sent the summary so far and as many units as
// fit limit with it (a unit larger than limit goes alone).
func summarise(ctx context.Context, f func(context.Context, []*dialog.Message) (*dialog.Message, error),
	p prepared, msgs []*dialog.Message, prev *dialog.Message, from, to, limit int) (*dialog.Message, error) {
	sum := prev
	var part []*dialog.Message
	used := 0
	if sum != nil {
		used = p.tok.countMessage(p.enc, sum)
	}
	flush := func() error {
		if sum != nil {
			part = append([]*dialog.Message{sum}, part...)
		}
		m, err := f(ctx, part)
		if err != nil {
			return err
		}
		if m == nil {
			return fmt.Errorf("the summarizer returned no message")
		}
		sum, part, used = m, nil, p.tok.countMessage(p.enc, m)
		return nil
	}
	for _, u := range units(msgs[:to], from) {
		c := p.sum(u)
		if used+c > limit && len(part) > 0 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		part, used = append(part, msgs[u.lo:u.hi]...), used+c
	}
	if len(part) > 0 || sum == nil {
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return sum, nil
}

// summaryMemo keeps the summaries a manager wrote, each for the messages
// it stands for, so that later calls on the same dialog (which grows
// after them) reuse it. An entry holds its messages weakly and goes when
// the last of them is collected; a new summary of a longer prefix
// replaces the ones of the same dialog it extends. Entries are kept per
// dialog (Input.Dialog): forks share their parent's messages, so without
// it a branch would find the summary a sibling wrote, or not, depending
// on which of them the scheduler ran first. Whether an entry is found
// thus depends only on the dialog, never on other dialogs the manager
// serves, so a replay makes the same summarizer calls as the run.
type summaryMemo struct {
	mu      sync.Mutex
	entries map[*summaryEntry]struct{}
}

// summaryEntry is a summary, for model, of msgs[1:end] of the dialog
// (Input.Dialog) whose first end messages are of: held weakly, and
// checked one by one.
type summaryEntry struct {
	dialogID string
	model    string
	of       []weak.Pointer[dialog.Message]
	sum      *dialog.Message
}

// kept is a summary found for a dialog: of its messages [1, end).
type kept struct {
	sum *dialog.Message
	end int
}

// lookup returns the summary for model of the longest prefix of msgs
// that the memo holds for the dialog; a zero kept when there is none.
func (m *summaryMemo) lookup(dlg, model string, msgs []*dialog.Message) kept {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best kept
	for e := range m.entries {
		if n := len(e.of); n > best.end && n < len(msgs) && e.dialogID == dlg && e.model == model && e.covers(msgs) {
			best = kept{sum: e.sum, end: n}
		}
	}
	return best
}

// covers reports whether msgs starts with the entry's messages.
func (e *summaryEntry) covers(msgs []*dialog.Message) bool {
	for i := len(e.of) - 1; i >= 0; i-- { // newest first: a mismatch shows there soonest
		if weak.Make(msgs[i]) != e.of[i] {
			return false
		}
	}
	return true
}

// add keeps sum as the dialog's summary for model of prefix[1:] and drops
// the entries of the dialog it extends.
func (m *summaryMemo) add(dlg, model string, prefix []*dialog.Message, sum *dialog.Message) {
	e := &summaryEntry{dialogID: dlg, model: model, of: make([]weak.Pointer[dialog.Message], len(prefix)), sum: sum}
	for i, msg := range prefix {
		e.of[i] = weak.Make(msg)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[*summaryEntry]struct{}{}
	}
	for old := range m.entries {
		if old.dialogID == dlg && old.model == model && len(old.of) < len(e.of) && old.covers(prefix) {
			delete(m.entries, old)
		}
	}
	m.entries[e] = struct{}{}
	runtime.AddCleanup(prefix[len(prefix)-1], m.forget, e)
}

// forget drops e once its last message is collected.
func (m *summaryMemo) forget(e *summaryEntry) {
	m.mu.Lock()
	delete(m.entries, e)
	m.mu.Unlock()
}
