// Package replay re-executes a recorded run: the run's tactic runs again
// with the recorded config and task, and every model call is served from
// the recorded replies instead of a provider, with no network and no key.
//
// Calls are matched by position, (agent, dialog alias, turn, attempt) as
// provider.CallInfo gives them, and checked against the recorded request
// digest, so repeated samples at a temperature above 0 replay exactly. The
// first call whose request differs from the recorded one, or that the
// recording does not have, stops the replay with a *Divergence that says
// which dialog and call and shows a diff of the two requests.
package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// Position is where a model call sits in a tactic; see provider.CallInfo.
type Position = provider.CallInfo

// Call is one recorded model call.
type Call struct {
	Position
	Seq    int64  // the model_call record's sequence number
	Dialog string // the working dialog the request was sent from
	Record *logs.ModelCall
	// Request is the working dialog's messages when the call was made,
	// before the context manager shaped them.
	Request []*dialog.Message
	// Context is what the context manager did to Request, if one ran.
	Context *logs.ContextAction
	// Summary is set for a context manager's call for a summary, whose
	// reply went into no dialog.
	Summary bool
	// Reply is the recorded reply; nil when the call failed.
	Reply *dialog.Message
	// Declarations are the tools and format the call declared; nil when
	// it declared none, or when its log (before format 1.4) kept only
	// their names and digest.
	Declarations *logs.Declarations
	// declarationsKept is set when the log keeps the declarations (format
	// 1.4 on), so that a nil Declarations means there were none.
	declarationsKept bool
}

// Recording is the model calls of a run, by position. It is safe for
// concurrent use.
type Recording struct {
	Run      *logs.Run
	Start    *logs.RunStart
	Warnings []string // from reading the log, e.g. a torn last line
	// End is the log's run_end; nil when the run did not finish its log.
	End *logs.RunEnd

	calls []*Call // in log order
	byPos map[Position]*Call
	// forest is the run's dialogs as its log left them; tools its tool
	// calls in log order.
	forest *dialog.Forest
	tools  []*logs.ToolCall

	mu     sync.Mutex
	served map[Position]bool
}

// Load reads the model calls of run from its log.
func Load(ctx context.Context, run *logs.Run) (*Recording, error) {
	r, err := run.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	start, err := r.Start()
	if err != nil {
		return nil, err
	}
	rec := &Recording{Run: run, Start: start, byPos: map[Position]*Call{}, served: map[Position]bool{}, forest: &dialog.Forest{}}
	forest := rec.forest
	lengths := map[*Call]int{}
	shaped := map[string]*logs.ContextAction{} // by working dialog, until its call
	declarations := map[string]*logs.Declarations{}
	kept := !olderThan(start.Version, 1, 4)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lr, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if ev, ok := lr.Event(); ok {
			if err := forest.Apply(ev); err != nil {
				return nil, fmt.Errorf("replay: %s:%d: %w", run.Path(), r.Line(), err)
			}
			continue
		}
		if lr.Kind == logs.KindRunEnd {
			rec.End = lr.RunEnd
			continue
		}
		if lr.Kind == logs.KindContext && lr.Context != nil {
			shaped[lr.Dialog] = lr.Context
			continue
		}
		if lr.Kind == logs.KindDeclarations && lr.Declarations != nil {
			declarations[lr.Declarations.Digest] = lr.Declarations
			continue
		}
		if lr.Kind == logs.KindToolCall && lr.ToolCall != nil {
			rec.tools = append(rec.tools, lr.ToolCall)
			continue
		}
		mc := lr.ModelCall
		if lr.Kind != logs.KindModelCall || mc == nil {
			continue
		}
		if mc.Turn == 0 {
			return nil, fmt.Errorf("replay: run %s was recorded with log format %s, whose model calls have no position (alias and turn); replay needs a run recorded with format 1.1 or newer: run it again", run.ID, start.Version)
		}
		c := &Call{Position: Position{Agent: mc.Agent, Dialog: mc.Alias, Turn: mc.Turn, Attempt: mc.Attempt},
			Seq: lr.Seq, Dialog: lr.Dialog, Record: mc, Context: shaped[lr.Dialog],
			Declarations: declarations[mc.Declarations], declarationsKept: kept}
		delete(shaped, lr.Dialog)
		if d := forest.Dialog(lr.Dialog); d != nil {
			lengths[c] = d.Len()
			if mc.Reply != nil {
				lengths[c] = mc.Reply.Index
			}
		}
		if _, dup := rec.byPos[c.Position]; dup {
			return nil, fmt.Errorf("replay: %s:%d: run %s records two model calls at %s (the first at record %d); it cannot be replayed call by call", run.Path(), r.Line(), run.ID, where(c.Position), rec.byPos[c.Position].Seq)
		}
		rec.byPos[c.Position] = c
		rec.calls = append(rec.calls, c)
	}
	rec.Warnings = r.Warnings()
	if err := rec.resolve(lengths); err != nil {
		return nil, err
	}
	return rec, nil
}

// resolve sets each call's request and reply from the run's dialogs as
// the log left them, lengths[c] being the length of c's dialog when c
// was made. Messages are immutable and dialogs append-only, so each
// call's request is a prefix of its dialog's final messages.
func (r *Recording) resolve(lengths map[*Call]int) error {
	for _, c := range r.calls {
		d := r.forest.Dialog(c.Dialog)
		if d == nil {
			continue
		}
		msgs := d.Messages()
		c.Request = msgs[:min(lengths[c], len(msgs))]
		if ref := c.Record.Reply; ref != nil {
			if rd := r.forest.Dialog(ref.Dialog); rd != nil && ref.Index < rd.Len() {
				c.Reply = rd.At(ref.Index)
			}
		}
		if c.Reply == nil && c.Record.Error == nil && c.Record.Reply == nil {
			// A reply kept in no dialog (a summary): its text is inline,
			// since format 1.3.
			if c.Record.Text == "" && olderThan(r.Start.Version, 1, 3) {
				return fmt.Errorf("replay: run %s was recorded with log format %s, which does not keep the text of a summary (model call %d at %s); replay needs a run recorded with format 1.3 or newer: run it again", r.Run.ID, r.Start.Version, c.Seq, where(c.Position))
			}
			c.Summary = true
			c.Reply = &dialog.Message{Role: dialog.RoleAssistant, Content: c.Record.Text, Modality: dialog.ModalityText,
				Usage: c.Record.Usage, USD: c.Record.USD}
		}
		if c.Reply == nil && c.Record.Error == nil {
			return fmt.Errorf("replay: run %s: model call %d at %s has neither a reply nor an error in the log", r.Run.ID, c.Seq, where(c.Position))
		}
	}
	return nil
}

// Calls returns the recorded calls in log order.
func (r *Recording) Calls() []*Call { return r.calls }

// ToolCalls returns the recorded tool calls in log order. They are
// shared and must not be modified.
func (r *Recording) ToolCalls() []*logs.ToolCall { return slices.Clone(r.tools) }

// Dialog returns the first root dialog that owner opened under alias, as
// the log left it, or nil. A tactic that continues from recorded state
// (a turn of lllm serve starts from its conversation's history) reads it
// there. Its messages are shared and must not be modified.
func (r *Recording) Dialog(owner, alias string) *dialog.Dialog {
	for _, id := range r.forest.Roots() {
		if d := r.forest.Dialog(id); d != nil && d.Owner() == owner && d.Alias() == alias {
			return d
		}
	}
	return nil
}

type recordingKey struct{}

// RecordingFrom returns the recording that the replay running in ctx
// serves (see Run), so that a tactic which continues from recorded state
// can read it: a turn of lllm serve reads the conversation it started
// from, and the answers to its ask_user questions, from its log.
func RecordingFrom(ctx context.Context) (*Recording, bool) {
	r, ok := ctx.Value(recordingKey{}).(*Recording)
	return r, ok
}

// Unserved returns the recorded calls no replayed call asked for, in log
// order.
func (r *Recording) Unserved() []*Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Call
	for _, c := range r.calls {
		if !r.served[c.Position] {
			out = append(out, c)
		}
	}
	return out
}

// take returns the call recorded at pos, marking it served.
func (r *Recording) take(pos Position) (*Call, bool) {
	c, ok := r.byPos[pos]
	if ok {
		r.mu.Lock()
		r.served[pos] = true
		r.mu.Unlock()
	}
	return c, ok
}

func where(p Position) string {
	s := fmt.Sprintf("%s, dialog %q, call %d", tactics.AgentLabel(p.Agent), p.Dialog, p.Turn)
	if p.Attempt > 1 {
		s += fmt.Sprintf(" (attempt %d)", p.Attempt)
	}
	return s
}

// olderThan reports whether the format version v ("1.2") is older than
// major.minor.
func olderThan(v string, major, minor int) bool {
	a, b, _ := strings.Cut(v, ".")
	ma, err1 := strconv.Atoi(a)
	mi, err2 := strconv.Atoi(b)
	return err1 != nil || err2 != nil || ma < major || ma == major && mi < minor
}
