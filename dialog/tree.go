package dialog

import (
	"fmt"
	"sync"
)

// TreeNode is a dialog's place in its fork tree.
type TreeNode struct {
	ID       string `json:"id"`
	Owner    string `json:"owner"`
	Alias    string `json:"alias,omitempty"`
	ParentID string `json:"parent_id,omitempty"` // empty for a root
	// SplitPoint is the number of messages the child started with.
	SplitPoint int `json:"split_point"`
	LastN      int `json:"last_n"`  // effective last_n of the fork
	FirstK     int `json:"first_k"` // effective first_k of the fork
	// ParentLen is the parent's message count when the fork was made, so the
	// child's messages are parent[:FirstK] + parent[ParentLen-LastN:ParentLen]
	// (or parent[:ParentLen] when LastN is 0).
	ParentLen   int      `json:"parent_len"`
	Depth       int      `json:"depth"` // 0 for a root
	ChildrenIDs []string `json:"children_ids,omitempty"`
}

// IsRoot reports whether the node has no parent.
func (n TreeNode) IsRoot() bool { return n.ParentID == "" }

// EventKind is the kind of change an Event reports.
type EventKind uint8

// The changes a dialog reports to its sink.
const (
	EventOpen   EventKind = iota + 1 // a root dialog was opened
	EventFork                        // a dialog was forked from a parent
	EventAppend                      // a message was appended
)

func (k EventKind) String() string {
	switch k {
	case EventOpen:
		return "open"
	case EventFork:
		return "fork"
	case EventAppend:
		return "append"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is one change to a dialog tree. Events carry references, never
// copies: a fork names its parent and the kept ranges, not the messages.
type Event struct {
	Kind EventKind
	// Node is the new dialog's node, for EventOpen and EventFork.
	Node TreeNode
	// DialogID, Index and Message describe an EventAppend: Message was
	// appended to DialogID at position Index.
	DialogID string
	Index    int
	Message  *Message
	// Prompt is the path of the prompt that rendered Message, if any.
	Prompt string
}

// Sink receives every change to a dialog tree as it happens. A change whose
// event the sink refuses is not made. Implementations must be safe for
// concurrent use.
type Sink interface {
	Emit(Event) error
}

// Tee returns a sink that reports each event to every sink in order,
// stopping at the first error.
func Tee(sinks ...Sink) Sink { return tee(sinks) }

type tee []Sink

func (t tee) Emit(ev Event) error {
	for _, s := range t {
		if err := s.Emit(ev); err != nil {
			return err
		}
	}
	return nil
}

// Forest is a set of dialog trees rebuilt from events: replaying a run's
// events through Apply gives back every dialog with the same ids, nodes and
// messages. A Forest is also a Sink, so it can mirror live dialogs.
// The zero value is ready to use and safe for concurrent use.
type Forest struct {
	mu      sync.Mutex
	dialogs map[string]*Dialog
	order   []string // ids in the order they appeared
}

// Emit applies ev; it makes Forest a Sink.
func (f *Forest) Emit(ev Event) error { return f.Apply(ev) }

// Apply replays one event. Events about one dialog must come in the order
// they happened, and a fork after the events that gave its parent
// ParentLen messages. The forest's dialogs may be read meanwhile, as a
// mirror of live dialogs is: a dialog is changed under its own lock.
func (f *Forest) Apply(ev Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dialogs == nil {
		f.dialogs = map[string]*Dialog{}
	}
	switch ev.Kind {
	case EventOpen, EventFork:
		n := ev.Node
		if n.ID == "" {
			return fmt.Errorf("%s event without a dialog id", ev.Kind)
		}
		if _, dup := f.dialogs[n.ID]; dup {
			return fmt.Errorf("dialog %s opened twice", n.ID)
		}
		n.ChildrenIDs = nil
		d := &Dialog{serial: serials.Add(1), node: n}
		if ev.Kind == EventFork {
			if err := f.forkLocked(d); err != nil {
				return err
			}
		} else if n.ParentID != "" {
			return fmt.Errorf("open event for dialog %s names a parent", n.ID)
		}
		f.dialogs[n.ID] = d
		f.order = append(f.order, n.ID)
	case EventAppend:
		d := f.dialogs[ev.DialogID]
		if d == nil {
			return fmt.Errorf("message for unknown dialog %s", ev.DialogID)
		}
		if ev.Message == nil {
			return fmt.Errorf("append event for dialog %s without a message", ev.DialogID)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if ev.Index != d.msgs.len() {
			return fmt.Errorf("dialog %s: message %d appended at position %d", ev.DialogID, ev.Index, d.msgs.len())
		}
		d.msgs = d.msgs.append(d.serial, ev.Message)
	default:
		return fmt.Errorf("unknown dialog event kind %d", ev.Kind)
	}
	return nil
}

// forkLocked links child, not yet in the forest, to its parent, whose
// lock it holds meanwhile (f.mu is held too).
func (f *Forest) forkLocked(child *Dialog) error {
	n := child.node
	p := f.dialogs[n.ParentID]
	if p == nil {
		return fmt.Errorf("dialog %s forked from unknown dialog %s", n.ID, n.ParentID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fits := n.ParentLen >= 0 && n.ParentLen <= p.msgs.len() && n.LastN >= 0 &&
		(n.LastN == 0 || n.LastN < n.ParentLen && n.FirstK >= 0 && n.FirstK <= n.ParentLen-n.LastN)
	if !fits {
		return fmt.Errorf("dialog %s: fork (parent_len=%d, last_n=%d, first_k=%d) does not fit parent %s with %d messages",
			n.ID, n.ParentLen, n.LastN, n.FirstK, p.node.ID, p.msgs.len())
	}
	if n.LastN > 0 {
		kept := p.msgs.appendTo(nil, 0, n.FirstK)
		kept = p.msgs.appendTo(kept, n.ParentLen-n.LastN, n.ParentLen)
		child.msgs = fromSlice(child.serial, kept)
	} else {
		// The parent may have grown since the fork: share its first ParentLen.
		child.msgs = p.msgs.prefix(n.ParentLen)
	}
	if child.msgs.len() != n.SplitPoint {
		return fmt.Errorf("dialog %s: split point %d but the fork keeps %d messages", n.ID, n.SplitPoint, child.msgs.len())
	}
	child.node.Depth = p.node.Depth + 1
	p.node.ChildrenIDs = append(p.node.ChildrenIDs, n.ID)
	return nil
}

// Dialog returns the dialog with the given id, or nil.
func (f *Forest) Dialog(id string) *Dialog {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dialogs[id]
}

// ByAlias returns the dialogs that owner named alias, in the order they
// appeared, or none. An agent's alias names one dialog at a time, but the
// agent may close it and give the alias to a new dialog, so a run can have
// several: the last is the latest. The working copies of an agent's model
// calls are named after their dialog and attempt (main#1, main#2, ...), so
// they are not among main's. ByAlias looks at every dialog of the forest.
func (f *Forest) ByAlias(owner, alias string) []*Dialog {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Dialog
	for _, id := range f.order {
		if d := f.dialogs[id]; d.node.Owner == owner && d.node.Alias == alias {
			out = append(out, d)
		}
	}
	return out
}

// Len is the number of dialogs.
func (f *Forest) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.order)
}

// IDs returns every dialog id in the order the dialogs appeared.
func (f *Forest) IDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.order...)
}

// Roots returns the ids of the root dialogs in the order they were opened.
func (f *Forest) Roots() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var roots []string
	for _, id := range f.order {
		if f.dialogs[id].node.ParentID == "" {
			roots = append(roots, id)
		}
	}
	return roots
}

// SubtreeIDs returns id and every dialog forked from it, directly or not,
// breadth first. It is empty when id is unknown.
func (f *Forest) SubtreeIDs(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dialogs[id] == nil {
		return nil
	}
	out := []string{id}
	for i := 0; i < len(out); i++ {
		d := f.dialogs[out[i]]
		d.mu.Lock()
		out = append(out, d.node.ChildrenIDs...)
		d.mu.Unlock()
	}
	return out
}
