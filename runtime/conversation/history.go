package conversation

import (
	"fmt"
	"slices"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// The names of the messages BuildRequest adds for what happened in a run
// besides its reply (they are never stored as messages).
const (
	// NoteName names the note that says a run ended without a reply: a
	// user message, after the sender's message the run answered.
	NoteName = "note"
	// MetaAsk is the metadata key of the two messages an ask record
	// becomes (the question, from the agent, and the answer, from the
	// sender); its value is the ask record's seq.
	MetaAsk = "ask"
	// MetaNote is the metadata key of a note; its value is the abort's
	// status, or "unfinished" for a run that left no abort record (the
	// server died).
	MetaNote = "note"
)

// noteMaxError is how much of a failed run's error a note quotes.
const noteMaxError = 200

// addAsk stores a, an ask_user question of the run answering the
// sender's message a.Turn, with its answer or why there is none, and
// attaches it to that message's entry.
func (c *Conversation) addAsk(a Ask) error {
	a.Seq, a.Time = 0, time.Time{}
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := &record{Kind: KindAsk, Ask: &a}
	if err := c.write(rec, false); err != nil {
		return err
	}
	stored := a
	stored.Seq, stored.Time = rec.Seq, rec.Time
	if e := c.liveEntry(a.Turn); e != nil {
		// Clip: an Entry copied out by Messages keeps its own slice.
		e.Asks = append(slices.Clip(e.Asks), stored)
	}
	return nil
}

// addAbort stores a: the run answering the sender's message a.Turn ended
// without a reply. The log is fsynced, as at the end of any turn.
func (c *Conversation) addAbort(a Abort) error {
	a.Seq, a.Time = 0, time.Time{}
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := &record{Kind: KindAbort, Abort: &a}
	if err := c.write(rec, true); err != nil {
		return err
	}
	stored := a
	stored.Seq, stored.Time = rec.Seq, rec.Time
	if e := c.liveEntry(a.Turn); e != nil {
		e.Aborted = &stored
	}
	return nil
}

// liveEntry is the live entry of seq, or nil. c.mu must be held.
func (c *Conversation) liveEntry(seq int64) *Entry {
	for i := len(c.live) - 1; i >= 0; i-- {
		if c.live[i].Seq == seq {
			return &c.live[i]
		}
	}
	return nil
}

// history is the dialog that entries stand for, as a model sees it: each
// stored message, and after a sender's message the questions its run
// asked with ask_user (the question as the agent's message, the answer as
// the sender's) and, when the run stored no reply, a note saying so. A
// sender's message that is followed by another without a reply in between
// (its run died with the server) gets a note too. Guest replies are not
// wrapped here. last is the index in out of the newest sender's message
// (not a summary, answer or note), or -1.
func history(agent, sender string, entries []Entry) (out []dialog.Message, last int) {
	out = make([]dialog.Message, 0, len(entries)+1)
	last = -1
	for i, e := range entries {
		m := *e.Message
		isTurn := m.Role == dialog.RoleUser && m.Name != "summary"
		if isTurn {
			last = len(out)
		}
		out = append(out, m)
		if !isTurn {
			continue
		}
		for _, a := range e.Asks {
			meta := map[string]string{MetaAsk: fmt.Sprint(a.Seq)}
			out = append(out, dialog.Message{Role: dialog.RoleAssistant, Name: a.Agent, Content: a.Question,
				Modality: dialog.ModalityText, Metadata: meta})
			answer := a.Answer
			if answer == "" {
				answer = "[no answer: " + a.Error + "]"
			}
			out = append(out, dialog.Message{Role: dialog.RoleUser, Name: sender, Content: answer,
				Modality: dialog.ModalityText, Metadata: meta})
		}
		unanswered := i+1 < len(entries) && entries[i+1].Message.Role != dialog.RoleAssistant
		if e.Aborted != nil || unanswered {
			text, status := noteText(agent, e.Aborted), "unfinished"
			if e.Aborted != nil {
				status = e.Aborted.Status
			}
			out = append(out, dialog.Message{Role: dialog.RoleUser, Name: NoteName, Content: text,
				Modality: dialog.ModalityText, Metadata: map[string]string{MetaNote: status}})
		}
	}
	return out, last
}

// noteText is the note for a sender's message whose run ended without a
// reply: ab says how, or nil when the run left no word (the server died).
func noteText(agent string, ab *Abort) string {
	who := "the run"
	if ab != nil && ab.Agent != "" && ab.Agent != agent {
		who = "the run of the guest " + ab.Agent
	}
	if ab == nil {
		return "[No reply: the run answering the message above did not finish (the server stopped), so that message has no reply.]"
	}
	var how string
	switch ab.Status {
	case AbortKilled:
		how = "was killed by the user before it finished"
	case AbortCancelled:
		how = "was cancelled before it finished (the client went away or the server stopped)"
	default:
		how = "failed: " + cutBytes(ab.Error, noteMaxError)
	}
	return fmt.Sprintf("[No reply: %s answering the message above %s; nothing it wrote was kept.]", who, how)
}
