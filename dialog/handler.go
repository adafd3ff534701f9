package dialog

import "sync"

// Handler holds the follow-up prompts of a prompt: what to send when its reply
// fails to parse, when the model calls tools, and when it has called tools too
// many times. A nil field takes the default derived from the prompt; see
// [Prompt.ExceptionPrompt], [Prompt.InterruptPrompt] and
// [Prompt.InterruptFinalPrompt].
type Handler struct {
	OnException      *Prompt
	OnInterrupt      *Prompt
	OnInterruptFinal *Prompt
}

// The templates of the default handler prompts.
const (
	exceptionTemplate      = "Error: {error_message}. Please fix."
	interruptTemplate      = "{call_results}"
	interruptFinalTemplate = "You are reaching the limit of tool calls. Provide the final response."
)

// handlerCache holds the default handler prompts derived from owner.
type handlerCache struct {
	owner *Prompt // the prompt the cache belongs to; copies of it do not use it
	once  [3]sync.Once
	p     [3]*Prompt
}

const (
	onException = iota
	onInterrupt
	onInterruptFinal
)

// ExceptionPrompt is the prompt to send when the reply to p fails to parse,
// with the variable {error_message}: p.Handler.OnException if set, else
// "Error: {error_message}. Please fix." at path p.Path+"#on_exception", with
// p's tools, parser, format and handler.
func (p *Prompt) ExceptionPrompt() *Prompt { return p.followUp(onException) }

// InterruptPrompt is the prompt that carries tool results back to the model
// after it called p's tools, with the variable {call_results}: it is sent as
// a tool message. It is p.Handler.OnInterrupt if set, else "{call_results}"
// at path p.Path+"#on_interrupt", with p's tools, parser, format and handler.
//
// The Python reference dropped the format here, so a structured reply that
// followed a tool call was no longer constrained; ours keeps it.
func (p *Prompt) InterruptPrompt() *Prompt { return p.followUp(onInterrupt) }

// InterruptFinalPrompt is the prompt to send when the model has used up its
// rounds of tool calls: p.Handler.OnInterruptFinal if set, else "You are
// reaching the limit of tool calls. Provide the final response." at path
// p.Path+"#on_interrupt_final", with no tools and p's parser, format and
// handler.
func (p *Prompt) InterruptFinalPrompt() *Prompt { return p.followUp(onInterruptFinal) }

// followUp returns p's handler prompt of the given kind: the one p.Handler
// sets, else the default, derived once per prompt built by NewPrompt and
// on every call otherwise. A nil p has none.
func (p *Prompt) followUp(kind int) *Prompt {
	if p == nil {
		return nil
	}
	set := [...]*Prompt{onException: p.Handler.OnException, onInterrupt: p.Handler.OnInterrupt, onInterruptFinal: p.Handler.OnInterruptFinal}
	if h := set[kind]; h != nil {
		return h
	}
	c := p.handlers
	if c == nil || c.owner != p {
		return p.derive(kind)
	}
	c.once[kind].Do(func() { c.p[kind] = p.derive(kind) })
	return c.p[kind]
}

// derive builds the default handler prompt of the given kind from p. The
// derived prompt inherits p's handler, so custom follow-ups keep applying,
// and none of p's metadata.
func (p *Prompt) derive(kind int) *Prompt {
	d := &Prompt{
		Parser:    p.Parser,
		Format:    p.Format,
		format:    p.format,
		Functions: p.Functions,
		Handler:   p.Handler,
	}
	switch kind {
	case onException:
		d.Path, d.Template = p.Path+"#on_exception", exceptionTemplate
	case onInterrupt:
		d.Path, d.Template = p.Path+"#on_interrupt", interruptTemplate
	default:
		d.Path, d.Template = p.Path+"#on_interrupt_final", interruptFinalTemplate
		d.Functions = nil
	}
	// The constant templates always parse.
	d.tmpl, _ = parseTemplate(d.Path, d.Template)
	d.handlers = &handlerCache{owner: d}
	return d
}
