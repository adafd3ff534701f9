package contextmgr

import (
	"context"

	"github.com/lllm-go/lllm/dialog"
)

// Input is what a context manager shapes before one model call.
type Input struct {
	// Model is the full model name, "provider/model".
	Model string
	// Messages is the working copy about to be sent. A manager must not
	// modify them; it returns the messages to send instead.
	Messages []*dialog.Message
	// Tools are the functions the request declares. Their declarations
	// take room in the context window too: the default and summary
	// managers count them ([Tokenizer.CountTools]) against their limit.
	Tools []*dialog.Function
	// Tokens counts tokens; it memoises per message, so counting the same
	// messages on every call costs nothing after the first. Share one
	// Tokenizer across calls; when Tokens is nil a manager uses a fresh one,
	// and nothing is remembered between calls.
	Tokens *Tokenizer
	// Dialog identifies the dialog the call is made for (an agent passes
	// the id of the dialog it answers, not of its working copy). A manager
	// that keeps state between calls, as the summary manager keeps its
	// summaries, keeps it per dialog, so that what it does for one dialog
	// never depends on another dialog it serves, nor on how the calls of
	// concurrent dialogs interleave.
	Dialog string
	// Summarize, when set, asks a model to summarise messages into one
	// message (used by the summary manager).
	Summarize func(ctx context.Context, msgs []*dialog.Message) (*dialog.Message, error)
}

// ActionFit is the action the run log records for a Result whose Action
// is empty: the manager ran and named nothing more specific.
const ActionFit = "fit"

// Result is what a context manager decided.
type Result struct {
	// Messages are the messages to send. When nothing was changed it may
	// be Input.Messages itself; a message that was changed is a new one.
	Messages []*dialog.Message
	// Action names what was done, as the run log records it: the built-in
	// managers say "none", "truncate", "window" or "summary"; a manager of
	// one's own may name its own, and one that names none is recorded as
	// [ActionFit].
	Action string
	// TokensBefore and TokensAfter count the input messages and the
	// messages to send, without the tool declarations (0 for the
	// pass-through manager, which counts nothing).
	TokensBefore int
	TokensAfter  int
	// Note says in a line what was kept and why, for the run log.
	Note string
	// For a summary: Summary is the message sent in place of the oldest
	// messages, and Archived how many messages (after the first) it
	// stands for.
	Summary  *dialog.Message
	Archived int
}

// Manager shapes the messages a model sees. Implementations are safe for
// concurrent use. A manager keeps a message that requests tool calls and
// the tool messages answering it together, or drops them together:
// providers refuse a tool result whose call is missing, and so does
// tactics.Agent, naming the manager.
type Manager interface {
	// Fit returns the messages to send for in, without modifying in.
	Fit(ctx context.Context, in Input) (Result, error)
}
