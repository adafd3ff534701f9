package provider

import (
	"context"

	"github.com/lllm-go/lllm/dialog"
)

// CallInfo says where a model call comes from in a tactic: which agent
// makes it, for which of its dialogs, and which of that dialog's calls it
// is. The agent call loop puts it in the context it passes to Generate, so
// a Model that serves recorded replies (replay) or caches them (sweeps) can
// match calls by position rather than by arrival order.
type CallInfo struct {
	Agent string // the agent's name
	// Dialog is the alias of the dialog the agent is answering (its
	// canonical dialog, not the working copy of one attempt).
	Dialog string
	// Turn numbers the agent's calls on Dialog from 1: every model call
	// of the call loop (tool rounds, parse retries, context summaries)
	// takes the next number; retries of one call share it.
	Turn int
	// Attempt is 1 for the first try of this call, 2 for its first retry.
	Attempt int
}

type callInfoKey struct{}

// WithCallInfo returns a copy of ctx carrying ci.
func WithCallInfo(ctx context.Context, ci CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, ci)
}

// CallInfoFrom returns the CallInfo ctx carries, if any.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	ci, ok := ctx.Value(callInfoKey{}).(CallInfo)
	return ci, ok
}

// Shaping is what a context manager did to a call: it was given From, the
// working dialog's messages, and made the request's messages of them. The
// agent call loop puts it in the context it passes to Generate when a
// context manager ran, so that a Model comparing requests with recorded
// ones (replay) can compare the dialogs the log holds.
type Shaping struct {
	Manager string // the manager's configured name
	Action  string // what it did: "none", "truncate", "window", "summary"
	// From is the working dialog's messages before the manager.
	From []*dialog.Message
	// Summary marks the manager's own call for a summary of the oldest of
	// From's messages: the request is the summariser's, made of some of
	// them (after the summary so far, if there is one) and the request
	// to summarise them, not From shaped.
	Summary bool
}

type shapingKey struct{}

// WithShaping returns a copy of ctx carrying s.
func WithShaping(ctx context.Context, s *Shaping) context.Context {
	return context.WithValue(ctx, shapingKey{}, s)
}

// ShapingFrom returns the Shaping ctx carries, or nil.
func ShapingFrom(ctx context.Context) *Shaping {
	s, _ := ctx.Value(shapingKey{}).(*Shaping)
	return s
}
