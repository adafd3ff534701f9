package inspect

import (
	"context"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// Log is a run read for its transcripts: its Tree, with every dialog's
// messages in Tree.Forest, and the tools and output formats its model
// calls declared (the log's declarations records).
type Log struct {
	*Tree

	decls     []*logs.Declarations // in log order, each digest once
	byDigest  map[string]*logs.Declarations
	callDecls map[*Node][]string            // the digests a dialog's model calls declared, each once
	turns     map[*dialog.Message]*keptTurn // by the kept reply, as its dialog holds it
}

// keptTurn is a reply an agent's call loop kept: the attempts that made it
// and the messages a trainer sees for it.
type keptTurn struct {
	attempts []*Node           // ALIAS#1 ... ALIAS#N, the last one kept
	messages []*dialog.Message // the tool rounds, then the kept reply
}

// Transcript is a dialog as a model would be trained to continue it: its
// messages, the ones it shares with its parent included, with the tool
// rounds of each reply an agent's call loop kept in it put back before
// that reply.
//
// An agent answers on a working copy of its dialog ("ALIAS#N") and
// appends only the final reply to the dialog itself; the tool calls and
// tool results that led to the reply stay in the working copy. Transcript
// puts them back where the reply is. A reply the prompt's parser refused,
// and the prompt asking the model to fix it, are left out: the transcript
// holds the reply that was kept.
type Transcript struct {
	Node     *Node
	Messages []*dialog.Message
	// Declarations are the tools and output formats declared by the model
	// calls behind Messages, in the order the log recorded them; nil when
	// they declared none (or the log is older than format 1.4).
	Declarations []*logs.Declarations
}

// LoadLog reads run's log as Load does with Options.Messages, and also
// the declarations of its model calls, for Transcript.
func LoadLog(ctx context.Context, run *logs.Run) (*Log, []string, error) {
	l := newLog()
	t, warnings, err := load(ctx, run, Options{Messages: true}, l.note)
	if err != nil {
		return nil, warnings, err
	}
	return l.done(t), warnings, nil
}

// ReadLog is Read, with Options.Messages whatever opts says, keeping also
// the declarations of the log's model calls.
func ReadLog(ctx context.Context, r *logs.Reader, name string, opts Options) (*Log, error) {
	opts.Messages = true
	l := newLog()
	t, err := read(ctx, r, name, opts, l.note)
	if err != nil {
		return nil, err
	}
	return l.done(t), nil
}

func newLog() *Log {
	return &Log{byDigest: map[string]*logs.Declarations{}, callDecls: map[*Node][]string{}}
}

// done completes l with its tree, once read.
func (l *Log) done(t *Tree) *Log {
	l.Tree = t
	l.findTurns()
	return l
}

// note keeps what rec says of declarations.
func (l *Log) note(t *Tree, rec *logs.Record) {
	switch {
	case rec.Kind == logs.KindDeclarations && rec.Declarations != nil:
		d := rec.Declarations
		if l.byDigest[d.Digest] == nil {
			l.byDigest[d.Digest] = d
			l.decls = append(l.decls, d)
		}
	case rec.Kind == logs.KindModelCall && rec.ModelCall != nil && rec.ModelCall.Declarations != "":
		n := t.byID[rec.Dialog]
		if n == nil {
			return
		}
		digest := rec.ModelCall.Declarations
		for _, d := range l.callDecls[n] {
			if d == digest {
				return
			}
		}
		l.callDecls[n] = append(l.callDecls[n], digest)
	}
}

// findTurns finds every reply a call loop kept, and the messages its
// attempts added before it.
func (l *Log) findTurns() {
	l.turns = map[*dialog.Message]*keptTurn{}
	for _, n := range l.Nodes {
		if !n.work.kept {
			continue
		}
		attempts := []*Node{n}
		for a := n; a.work.n > 1 && a.Parent != nil && a.Parent.work.base == a.work.base && a.Parent.work.n == a.work.n-1; a = a.Parent {
			attempts = append([]*Node{a.Parent}, attempts...)
		}
		canon := l.Forest.Dialog(n.work.canon.ID)
		at := attempts[0].ParentLen // the first attempt forked the dialog whole
		if canon == nil || at >= canon.Len() {
			continue
		}
		kept := canon.At(at)
		if !sameMessage(n.lastMsg, kept) {
			continue // not where the call loop puts it: leave the reply as it is
		}
		var msgs []*dialog.Message
		for i, a := range attempts {
			d := l.Forest.Dialog(a.ID)
			if d == nil {
				msgs = nil
				break
			}
			own := d.Messages()[min(a.SplitPoint, d.Len()):]
			if i > 0 && len(own) > 0 {
				own = own[1:] // the prompt asking to fix the refused reply
			}
			if len(own) > 0 {
				// The refused reply; for the kept attempt, its reply,
				// which the dialog's copy (with its parsed output) stands for.
				own = own[:len(own)-1]
			}
			msgs = append(msgs, own...)
		}
		l.turns[kept] = &keptTurn{attempts: attempts, messages: append(msgs, kept)}
	}
}

// Transcript returns the transcript of the dialog n of l.
func (l *Log) Transcript(n *Node) *Transcript {
	tr := &Transcript{Node: n}
	d := l.Forest.Dialog(n.ID)
	if d == nil {
		return tr
	}
	msgs := d.Messages()
	tr.Messages = make([]*dialog.Message, 0, len(msgs))
	called := map[*Node]bool{} // the dialogs whose model calls are behind the transcript
	for a := n; a != nil; a = a.Parent {
		called[a] = true
	}
	for _, m := range msgs {
		t := l.turns[m]
		if t == nil {
			tr.Messages = append(tr.Messages, m)
			continue
		}
		tr.Messages = append(tr.Messages, t.messages...)
		for _, a := range t.attempts {
			called[a] = true
		}
	}
	digests := map[string]bool{}
	for c := range called {
		for _, digest := range l.callDecls[c] {
			digests[digest] = true
		}
	}
	for _, decl := range l.decls {
		if digests[decl.Digest] {
			tr.Declarations = append(tr.Declarations, decl)
		}
	}
	return tr
}
