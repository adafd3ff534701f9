package dialog

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/lllm-go/lllm/internal/jsontext"
)

// Dialog is one agent's conversation: an append-only list of messages, the
// prompt that governs the next model turn, and its place in the fork tree.
//
// Forks share their parent's messages: a full fork costs the same whatever the
// dialog's length, and appending to either side never changes the other.
// A Dialog is safe for concurrent use.
type Dialog struct {
	mu     sync.Mutex
	serial uint64 // process-unique, marks the chunks this dialog may append to
	node   TreeNode
	msgs   seq
	top    *Prompt
	sink   Sink
}

var serials atomic.Uint64

// Option configures a dialog made by New or Fork.
type Option func(*Dialog)

// WithSink reports every change to the dialog, and to its forks, to s.
func WithSink(s Sink) Option { return func(d *Dialog) { d.sink = s } }

// WithAlias names the dialog within its agent, such as "main" or "draft".
func WithAlias(alias string) Option { return func(d *Dialog) { d.node.Alias = alias } }

// New opens a root dialog owned by the named agent and reports it to the sink.
func New(owner string, opts ...Option) (*Dialog, error) {
	d := &Dialog{serial: serials.Add(1), node: TreeNode{ID: newID(), Owner: owner}}
	for _, o := range opts {
		o(d)
	}
	if err := d.emit(Event{Kind: EventOpen, Node: d.node}); err != nil {
		return nil, err
	}
	return d, nil
}

// newID is a random 64-bit id in hex. Ids must be unique, not secret:
// math/rand/v2's generator, seeded from the OS in every process, gives
// them without a system call.
func newID() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

func (d *Dialog) emit(ev Event) error {
	if d.sink == nil {
		return nil
	}
	if err := d.sink.Emit(ev); err != nil {
		return fmt.Errorf("dialog %s: %w", d.node.ID, err)
	}
	return nil
}

// ID is the dialog's unique hex id.
func (d *Dialog) ID() string { return d.node.ID }

// Owner is the name of the agent that owns the dialog.
func (d *Dialog) Owner() string { return d.node.Owner }

// Alias is the dialog's name within its agent, if it has one.
func (d *Dialog) Alias() string { return d.node.Alias }

// Node returns a copy of the dialog's tree node.
func (d *Dialog) Node() TreeNode {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.node
	n.ChildrenIDs = append([]string(nil), n.ChildrenIDs...)
	return n
}

// TopPrompt is the prompt whose parser, tools and handler govern the next
// model turn, or nil.
func (d *Dialog) TopPrompt() *Prompt {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.top
}

// SetTopPrompt makes p govern the next model turn; nil clears it.
func (d *Dialog) SetTopPrompt(p *Prompt) {
	d.mu.Lock()
	d.top = p
	d.mu.Unlock()
}

// Len is the number of messages.
func (d *Dialog) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.msgs.len()
}

// At returns message i, or nil when i is out of range. Negative i counts
// from the end: At(-1) is the last message.
func (d *Dialog) At(i int) *Message {
	d.mu.Lock()
	s := d.msgs
	d.mu.Unlock()
	if i < 0 {
		i += s.len()
	}
	if i < 0 || i >= s.len() {
		return nil
	}
	return s.at(i)
}

// Head is the first message (usually the system prompt), or nil.
func (d *Dialog) Head() *Message { return d.At(0) }

// Tail is the last message, or nil.
func (d *Dialog) Tail() *Message { return d.At(-1) }

// Messages returns the messages in order. The slice is the caller's; the
// messages are shared and must not be modified.
func (d *Dialog) Messages() []*Message {
	d.mu.Lock()
	s := d.msgs
	d.mu.Unlock()
	return s.appendTo(make([]*Message, 0, s.len()), 0, s.len())
}

// Cost is the sum of the messages' costs.
func (d *Dialog) Cost() Cost {
	var c Cost
	for _, m := range d.Messages() {
		c = c.Add(m.Cost())
	}
	return c
}

// OwnCost is the cost of the messages the dialog added itself, after its
// split point; summing OwnCost over a tree counts each message once. It is
// not what the tree's model calls cost: an agent's reply is added both to
// its working copy ("ALIAS#N") and to the dialog it answers, each copy
// with the call's usage, so the sum over an agent's dialogs counts every
// kept reply twice. Sum the model_call records for that (inspect.Tree.Total,
// or inspect.Node.CallCost over a tree).
func (d *Dialog) OwnCost() Cost {
	var c Cost
	d.mu.Lock()
	split, s := d.node.SplitPoint, d.msgs
	d.mu.Unlock()
	for _, m := range s.appendTo(nil, split, s.len()) {
		c = c.Add(m.Cost())
	}
	return c
}

// Overview is one line per message, "[i. name (role)]: preview", each
// preview cut to at most maxLen characters (0 means 100).
func (d *Dialog) Overview(maxLen int) string {
	if maxLen <= 0 {
		maxLen = 100
	}
	var b strings.Builder
	for i, m := range d.Messages() {
		name := m.Name
		if name == "" {
			name = string(m.Role)
		}
		fmt.Fprintf(&b, "[%d. %s (%s)]: %s\n", i, name, m.Role, Preview(m, maxLen))
	}
	return b.String()
}

// Preview is a one-line summary of m cut to at most maxLen characters.
func Preview(m *Message, maxLen int) string {
	var parts []string
	if t := m.Text(); t != "" {
		parts = append(parts, strings.Join(strings.Fields(t), " "))
	}
	for _, p := range m.Parts {
		if p.Type == PartImage && p.Image != nil {
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", p.Image.MIME, len(p.Image.Data)))
		}
	}
	for _, fc := range m.FunctionCalls {
		parts = append(parts, fmt.Sprintf("%s(%s)", fc.Name, fc.Arguments))
	}
	s := strings.Join(parts, " ")
	if utf8.RuneCountInString(s) <= maxLen {
		return s
	}
	r := []rune(s)
	if maxLen <= 3 {
		return string(r[:maxLen])
	}
	return string(r[:maxLen-3]) + "..."
}

// PutOption adjusts a message added by PutText, PutPrompt or PutImage.
type PutOption func(*putConfig)

type putConfig struct {
	role     Role
	name     string
	meta     map[string]string
	top      *Prompt
	replaced bool
}

// AsRole sets the message's role (default user).
func AsRole(r Role) PutOption { return func(c *putConfig) { c.role = r } }

// From sets the message's sender name (default "user").
func From(name string) PutOption { return func(c *putConfig) { c.name = name } }

// Meta adds a metadata entry to the message.
func Meta(key, value string) PutOption {
	return func(c *putConfig) {
		if c.meta == nil {
			c.meta = map[string]string{}
		}
		c.meta[key] = value
	}
}

// Governed makes p the dialog's top prompt after PutText or PutImage, which
// otherwise keep the prompt that governs the dialog. nil clears it.
func Governed(p *Prompt) PutOption {
	return func(c *putConfig) { c.top, c.replaced = p, true }
}

func putDefaults(opts []PutOption) putConfig {
	c := putConfig{role: RoleUser, name: "user"}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Append adds a deep copy of m and returns the stored message.
func (d *Dialog) Append(m Message) (*Message, error) {
	return d.append(m.Clone(), "", false, nil)
}

// AppendShared adds m itself, not a copy, and returns it: a message
// another dialog holds (messages are immutable, and dialogs share them as
// forks do), or one nothing else refers to. Neither m nor what it refers
// to may change afterwards.
func (d *Dialog) AppendShared(m *Message) (*Message, error) {
	if m == nil {
		return nil, errors.New("dialog: AppendShared: nil message")
	}
	return d.append(m, "", false, nil)
}

// PutText appends text as a message. The dialog's top prompt, with its tools
// and parser, stays in force unless Governed says otherwise.
func (d *Dialog) PutText(text string, opts ...PutOption) (*Message, error) {
	c := putDefaults(opts)
	m := &Message{Role: c.role, Content: text, Name: c.name, Modality: ModalityText, Metadata: c.meta}
	return d.append(m, "", c.replaced, c.top)
}

// PutPrompt renders p with args, appends the result and makes p the
// dialog's top prompt.
func (d *Dialog) PutPrompt(p *Prompt, args map[string]any, opts ...PutOption) (*Message, error) {
	if p == nil {
		return nil, errors.New("dialog: PutPrompt: nil prompt")
	}
	text, err := p.Render(args)
	if err != nil {
		return nil, err
	}
	c := putDefaults(opts)
	m := &Message{Role: c.role, Content: text, Name: c.name, Modality: ModalityText, Metadata: c.meta}
	return d.append(m, p.Path, true, p)
}

// PutImage appends an image, with caption as text beside it and in the
// metadata under "caption". The top prompt is unchanged unless Governed says
// otherwise.
func (d *Dialog) PutImage(src ImageSource, caption string, opts ...PutOption) (*Message, error) {
	img, err := src.Load()
	if err != nil {
		return nil, err
	}
	c := putDefaults(opts)
	m := &Message{Role: c.role, Name: c.name, Modality: ModalityImage, Metadata: c.meta}
	if caption != "" {
		m.Parts = append(m.Parts, Part{Type: PartText, Text: caption})
		if m.Metadata == nil {
			m.Metadata = map[string]string{}
		}
		m.Metadata["caption"] = caption
	}
	m.Parts = append(m.Parts, Part{Type: PartImage, Image: img})
	return d.append(m, "", c.replaced, c.top)
}

func (d *Dialog) append(m *Message, promptPath string, setTop bool, top *Prompt) (*Message, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ev := Event{Kind: EventAppend, DialogID: d.node.ID, Index: d.msgs.len(), Message: m, Prompt: promptPath}
	if err := d.emit(ev); err != nil {
		return nil, err
	}
	d.msgs = d.msgs.append(d.serial, m)
	if setTop {
		d.top = top
	}
	return m, nil
}

// Fork makes a child dialog with the reference rules:
//
//   - lastN >= Len() counts as 0;
//   - lastN > 0: the child gets the first min(firstK, Len()-lastN) messages
//     (none when firstK <= 0) and then the last lastN;
//   - lastN <= 0: the child gets every message;
//   - the child's split point is its message count.
//
// The child shares the parent's messages, inherits its top prompt and sink,
// and is reported to the sink before it is linked to the parent.
func (d *Dialog) Fork(lastN, firstK int, opts ...Option) (*Dialog, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.msgs.len()
	if lastN >= n {
		lastN = 0
	}
	var msgs seq
	child := &Dialog{serial: serials.Add(1), top: d.top, sink: d.sink}
	if lastN > 0 {
		tailStart := n - lastN
		if firstK > 0 {
			firstK = min(firstK, tailStart)
		} else {
			firstK = 0
		}
		kept := d.msgs.appendTo(make([]*Message, 0, firstK+lastN), 0, firstK)
		kept = d.msgs.appendTo(kept, tailStart, n)
		msgs = fromSlice(child.serial, kept)
	} else {
		lastN = 0
		msgs = d.msgs
	}
	child.msgs = msgs
	child.node = TreeNode{
		ID: newID(), Owner: d.node.Owner, ParentID: d.node.ID,
		SplitPoint: msgs.len(), LastN: lastN, FirstK: firstK,
		ParentLen: n, Depth: d.node.Depth + 1,
	}
	for _, o := range opts {
		o(child)
	}
	if err := child.emit(Event{Kind: EventFork, Node: child.node}); err != nil {
		return nil, err
	}
	d.node.ChildrenIDs = append(d.node.ChildrenIDs, child.node.ID)
	return child, nil
}

// MarshalJSON encodes the dialog as its node and messages, leaving <, >
// and & as they are (messages are often tagged text).
func (d *Dialog) MarshalJSON() ([]byte, error) {
	return jsontext.Marshal(struct {
		Node     TreeNode   `json:"node"`
		Messages []*Message `json:"messages"`
	}{d.Node(), d.Messages()})
}
