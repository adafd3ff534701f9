package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
)

// Divergence is the first call of a replay that the recording cannot
// serve: a request that differs from the recorded one, a call the
// recording does not have, or recorded calls the replay never made.
type Divergence struct {
	Position
	// Reason says what differs, in a few words.
	Reason string
	// Recorded is the recorded call, if there is one at Position.
	Recorded *Call
	// Diff is a unified diff of the recorded and the replayed request
	// (messages, one block each, then model, params, tools and format).
	Diff string
	// CutShort says the recording ends before this call because the
	// recorded run was cut short (cancelled or killed, or its log has no
	// run_end), after the replay had matched every call it holds: the
	// replay did not go another way, it went on where the run stopped.
	CutShort bool
}

func (d *Divergence) Error() string {
	if d.Position == (Position{}) {
		return "replay diverged: " + d.Reason // at the end, not at a call
	}
	if d.CutShort {
		return fmt.Sprintf("replay reached the end of the recording at %s: %s", where(d.Position), d.Reason)
	}
	return fmt.Sprintf("replay diverged at %s: %s", where(d.Position), d.Reason)
}

// Model serves the calls of one replay from a Recording. The first
// divergence is kept (see Divergence) and reported to onDiverge, which
// should stop the replay; the call itself fails with a cancellation
// error, so the agent does not retry it.
type Model struct {
	rec       *Recording
	onDiverge func(*Divergence)

	mu    sync.Mutex
	first *Divergence
	calls int
}

// NewModel returns a Model serving rec's calls. onDiverge, if not nil, is
// called once, with the first divergence.
func NewModel(rec *Recording, onDiverge func(*Divergence)) *Model {
	return &Model{rec: rec, onDiverge: onDiverge}
}

// Divergence returns the first divergence, or nil.
func (m *Model) Divergence() *Divergence {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.first
}

// Calls returns how many calls the model served.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Generate serves req from the call recorded at the position ctx carries.
func (m *Model) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	pos, ok := provider.CallInfoFrom(ctx)
	if !ok {
		return nil, m.diverge(&Divergence{Reason: "a model call without a position (made outside an agent's call loop) cannot be replayed"})
	}
	c, ok := m.rec.take(pos)
	if !ok {
		return nil, m.diverge(m.beyond(ctx, pos, req))
	}
	if got := req.Digest(); got != c.Record.RequestDigest {
		return nil, m.diverge(&Divergence{Position: pos, Recorded: c,
			Reason: "the request differs from the recorded one", Diff: requestDiff(c, req, provider.ShapingFrom(ctx))})
	}
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	if e := c.Record.Error; e != nil {
		return nil, recordedError(c.Record.Provider, e)
	}
	msg := *c.Reply
	if req.Stream != nil {
		if err := provider.StreamWhole(ctx, req.Stream, &msg); err != nil {
			return nil, &provider.Error{Kind: provider.ErrCancelled, Err: err}
		}
	}
	return &provider.Response{Message: msg, FinishReason: c.Record.FinishReason}, nil
}

// beyond is the divergence of a call at pos that the recording does not
// have. When the recorded run was cut short and the replay has made and
// matched every call it holds of pos's dialog (other dialogs may still be
// under way), the replay has not gone another way: it
// has gone on where the run stopped, and the divergence says so
// (CutShort) rather than showing a request nothing was recorded for.
func (m *Model) beyond(ctx context.Context, pos Position, req *provider.Request) *Divergence {
	var ends, stopped string // why the recording ends before pos, as a reason and as a cut
	switch end := m.rec.End; {
	case end == nil:
		ends = "its log has no run_end (the run was interrupted or its log torn)"
		stopped = ends
	case end.Status == logs.StatusCancelled:
		ends, stopped = "the recorded run was cancelled", "it was cancelled"
		if end.Error != "" {
			stopped += " (" + end.Error + ")"
		}
	}
	// The calls of one dialog alias are made one after another; those
	// of others (a tactic's parallel branches) may still be on their
	// way in the replay, as they were when the run stopped, and do not
	// make this call another way.
	unserved, here := m.rec.Unserved(), 0
	for _, c := range unserved {
		if c.Agent == pos.Agent && c.Position.Dialog == pos.Dialog {
			here++
		}
	}
	if stopped != "" && m.Divergence() == nil && here == 0 {
		n := len(m.rec.Calls())
		calls := "calls"
		if n == 1 {
			calls = "call"
		}
		reason := fmt.Sprintf("the recorded run stopped before this call: %s; the replay matched its %d recorded model %s up to there", stopped, n, calls)
		if len(unserved) > 0 {
			reason = fmt.Sprintf("the recorded run stopped before this call: %s; the replay matched every recorded model call of this dialog up to there (other dialogs were still under way)", stopped)
		}
		return &Divergence{Position: pos, CutShort: true, Reason: reason}
	}
	reason := "the recording has no such call"
	if ends != "" {
		reason = "the recording ends before this call: " + ends
	}
	return &Divergence{Position: pos, Reason: reason, Diff: requestDiff(nil, req, provider.ShapingFrom(ctx))}
}

// recordedError is a recorded failure as the agent first saw it: the same
// kind, status, Retry-After and message (which the record keeps whole).
func recordedError(prov string, e *logs.CallError) error {
	pe := &provider.Error{Provider: prov, Kind: provider.ErrorKind(e.Type), Status: e.Status,
		Retry: time.Duration(e.RetryAfterMS * float64(time.Millisecond))}
	re := &replayedError{msg: strings.TrimPrefix(e.Message, pe.Error()+": ")}
	if pe.Kind == provider.ErrCancelled {
		re.cause = context.Canceled
	}
	pe.Err = re
	return pe
}

type replayedError struct {
	msg   string
	cause error
}

func (e *replayedError) Error() string { return e.msg }
func (e *replayedError) Unwrap() error { return e.cause }

// diverge keeps d if it is the first divergence and returns the error the
// call fails with.
func (m *Model) diverge(d *Divergence) error {
	m.mu.Lock()
	first := m.first == nil
	if first {
		m.first = d
	}
	m.mu.Unlock()
	if first && m.onDiverge != nil {
		m.onDiverge(d)
	}
	return &provider.Error{Kind: provider.ErrCancelled, Err: d}
}

// requestDiff is a unified diff of the recorded call's request and req,
// which shaping made from a working dialog when a context manager ran.
// The log keeps the working dialogs, not what a context manager made of
// them, so both sides show the dialog before the manager and a line for
// what it did. Since format 1.4 the log keeps the tools' declarations
// and the format, shown in full; before, it named the tools (since 1.3)
// and kept the rest only as a digest, so both sides show those as
// replayed.
func requestDiff(c *Call, req *provider.Request, shaping *provider.Shaping) string {
	replayed := declarationLines(logs.DeclarationsOf(req.Tools, req.Format))
	kept := c != nil && c.declarationsKept
	if !kept {
		replayed = nil
		if names := toolNames(req.Tools); names != nil {
			replayed = append(replayed, "tools: "+strings.Join(names, ", "))
		}
		if len(req.Format) > 0 {
			replayed = append(replayed, "format: "+compactJSON(req.Format))
		}
	}
	from := "recorded (no such call)"
	var a []string
	if c != nil {
		from = "recorded"
		a = renderMessages(c.Request)
		if c.Summary {
			a = append(a, summaryNote)
		}
		if cx := c.Context; cx != nil {
			a = append(a, contextLine(cx.Manager, cx.Action, cx.MessagesBefore, cx.MessagesAfter))
		}
		a = append(a, "model: "+c.Record.Model, "params: "+compactJSON(c.Record.Params))
		switch {
		case kept:
			a = append(a, declarationLines(c.Declarations)...)
		case c.Record.Tools != nil:
			// Format 1.3: the tools' names; the format as replayed.
			a = append(a, "tools: "+strings.Join(c.Record.Tools, ", "))
			if len(req.Format) > 0 {
				a = append(a, "format: "+compactJSON(req.Format))
			}
		default:
			a = append(a, replayed...) // before 1.3: only their digest
		}
	}
	var b []string
	switch {
	case shaping != nil && shaping.Summary:
		// The manager's own call: like the recorded side, the working
		// dialog it summarises from.
		b = append(renderMessages(shaping.From), summaryNote)
	case shaping != nil:
		b = append(renderMessages(shaping.From), contextLine(shaping.Manager, shaping.Action, len(shaping.From), len(req.Messages)))
	default:
		b = renderMessages(req.Messages)
	}
	b = append(b, "model: "+req.Model, "params: "+compactJSON(paramsJSON(req.Params)))
	b = append(b, replayed...)
	if c != nil && slices.Equal(a, b) {
		switch {
		case c.Summary && shaping != nil && shaping.Summary:
			// Both are the manager's calls for a summary of the same
			// dialog: they summarise different messages, which the log
			// keeps only in the digest.
			a = append(a, "the context manager's summary request: as recorded (the log keeps only its digest)")
			b = append(b, "the context manager's summary request: "+summarisedOf(shaping.From, req.Messages))
		case !kept:
			// Only the tools' schemas or the format, which the log keeps
			// as a digest, differ.
			a = append(a, "tool schemas and format: as recorded (the log keeps only their digest)")
			b = append(b, "tool schemas and format: as above")
		}
	}
	s, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: splitLines(a), B: splitLines(b),
		FromFile: from, ToFile: "replayed", Context: 2})
	return s
}

// toolNames are the names of fns; nil when there are none.
func toolNames(fns []*dialog.Function) []string {
	var names []string
	for _, f := range fns {
		names = append(names, f.Name)
	}
	return names
}

// declarationLines shows declarations as lines of a diff: each tool, its
// schema and its required parameters, then the format.
func declarationLines(d *logs.Declarations) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, t := range d.Tools {
		line := "tool " + t.Name
		if t.Description != "" {
			line += ": " + t.Description
		}
		out = append(out, line, "  parameters: "+compactJSON(t.Parameters))
		if len(t.Required) > 0 {
			out = append(out, "  required: "+strings.Join(t.Required, ", "))
		}
		if t.Strict {
			out = append(out, "  strict")
		}
	}
	if len(d.Format) > 0 {
		out = append(out, "format: "+compactJSON(d.Format))
	}
	return out
}

// summaryNote marks a context manager's own call for a summary.
const summaryNote = "(a context manager's call to summarise the oldest of these messages)"

// summarisedOf says which of the working dialog's messages from a
// summariser's request msgs holds, before its last message, the request
// to summarise them: their indices, after the summary so far when it
// starts from one.
func summarisedOf(from, msgs []*dialog.Message) string {
	at := make(map[*dialog.Message]int, len(from))
	for i, m := range from {
		at[m] = i
	}
	var parts []string
	lo, hi := -1, -1
	flush := func() {
		switch {
		case lo < 0:
		case lo == hi:
			parts = append(parts, fmt.Sprintf("message [%d]", lo))
		default:
			parts = append(parts, fmt.Sprintf("messages [%d] to [%d]", lo, hi))
		}
		lo, hi = -1, -1
	}
	for _, m := range msgs[:max(len(msgs)-1, 0)] {
		i, ok := at[m]
		switch {
		case !ok:
			flush()
			parts = append(parts, "the summary so far")
		case lo >= 0 && i == hi+1:
			hi = i
		default:
			flush()
			lo, hi = i, i
		}
	}
	flush()
	if len(parts) == 0 {
		return "no messages"
	}
	return strings.Join(parts, ", ")
}

// contextLine says what a context manager made of a working dialog.
func contextLine(manager, action string, before, after int) string {
	return fmt.Sprintf("context manager: %s (%s), %d -> %d messages", manager, action, before, after)
}

// renderMessages writes each message as a block of lines headed by its
// index, role and sender: its reasoning blocks (their text, and their
// redacted data and signature by checksum), text, images and tool calls.
func renderMessages(msgs []*dialog.Message) []string {
	out := make([]string, 0, len(msgs))
	for i, m := range msgs {
		var b strings.Builder
		fmt.Fprintf(&b, "[%d] %s", i, m.Role)
		if m.Name != "" {
			fmt.Fprintf(&b, " (%s)", m.Name)
		}
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " answering %s", m.ToolCallID)
		}
		b.WriteString(":\n")
		for _, r := range m.Reasoning {
			b.WriteString("reasoning")
			if r.Call != "" {
				fmt.Fprintf(&b, " (call %s)", r.Call)
			}
			b.WriteString(":")
			if r.Text != "" {
				b.WriteString(" " + r.Text)
			}
			if r.Redacted != "" {
				fmt.Fprintf(&b, " <redacted, %s>", shortHash(r.Redacted))
			}
			if r.Signature != "" {
				fmt.Fprintf(&b, " <signature %s>", shortHash(r.Signature))
			}
			b.WriteString("\n")
		}
		if t := m.Text(); t != "" {
			b.WriteString(t)
			b.WriteString("\n")
		}
		for _, p := range m.Parts {
			switch img := p.Image; {
			case img == nil:
			case img.URL != "":
				fmt.Fprintf(&b, "<image %s>\n", img.URL)
			default:
				sum := sha256.Sum256(img.Data)
				fmt.Fprintf(&b, "<image %s, %d bytes, sha256:%x>\n", img.MIME, len(img.Data), sum[:6])
			}
		}
		for _, fc := range m.FunctionCalls {
			fmt.Fprintf(&b, "call %s %s(%s)\n", fc.ID, fc.Name, fc.Arguments)
		}
		out = append(out, b.String())
	}
	return out
}

// shortHash is a short checksum of s, to show whether two differ.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("sha256:%x", sum[:6])
}

func splitLines(blocks []string) []string {
	var out []string
	for _, b := range blocks {
		for _, l := range strings.SplitAfter(strings.TrimSuffix(b, "\n"), "\n") {
			out = append(out, strings.TrimSuffix(l, "\n")+"\n")
		}
	}
	return out
}

func paramsJSON(p provider.Params) json.RawMessage {
	b, _ := json.Marshal(p)
	return b
}

func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	// Numbers as written: a float64 would show two requests that differ
	// only past its precision (an extra_body's large integer) as one.
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
