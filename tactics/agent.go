package tactics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
)

// Log is where an agent records its run: every dialog change, model call,
// tool call and context-manager action. A *logs.Writer is one.
type Log interface {
	dialog.Sink
	Write(*logs.Record) error
}

// Limits bound an agent's call loop. A zero field takes its default (see
// DefaultLimits) and a negative one means none: no retries, no tools, no
// timeout, no cap. So Limits{MaxExceptionRetry: 1} changes only that, and
// Limits{MaxInterruptSteps: -1} offers no tools. (Like net.Dialer's
// KeepAlive; a config's 0 is a negative field here.)
type Limits struct {
	// MaxExceptionRetry is how many times a reply that fails to parse is
	// answered with the exception prompt, per Respond; so a Respond makes at
	// most MaxExceptionRetry+1 attempts.
	MaxExceptionRetry int
	// MaxInterruptSteps is how many rounds of tool calls a Respond runs
	// before it sends the final prompt, which offers no tools. None offers
	// no tools at all. (The reference documented 0 as unlimited but behaved
	// as 1; an unbounded tool loop is never what a run wants.)
	MaxInterruptSteps int
	// MaxRetries is how many times one model call is retried after a
	// rate limit, timeout or server error, with exponential backoff and
	// jitter, honouring the provider's Retry-After.
	MaxRetries int
	// MaxLLMRecall is how many times a model call that failed in any other
	// way (bad request, unknown error) is tried again, at once.
	MaxLLMRecall int
	// BackoffBase and BackoffMax shape the wait before retry n: a random
	// duration in [d/2, d] with d = min(BackoffMax, BackoffBase * 2^(n-1)),
	// or the provider's Retry-After if that is longer. With no BackoffBase
	// a retry waits only for a Retry-After; with no BackoffMax d is not
	// capped.
	BackoffBase, BackoffMax time.Duration
	// CallTimeout bounds one attempt of a model call, streamed or not: an
	// attempt without its whole reply by then fails as a timeout, retried
	// as MaxRetries allows. None leaves attempts unbounded.
	CallTimeout time.Duration
	// MaxRetryWait is the longest wait before a retry that an agent takes.
	// A provider's Retry-After beyond it (a quota that resets in hours,
	// not a burst) fails the call at once, with the provider's error, as
	// does a wait that would outlast the context's deadline. None takes
	// any wait.
	MaxRetryWait time.Duration
	// ToolTimeout bounds one tool call: the tool's context has that
	// deadline, and a tool that has not returned by then is answered with
	// an error saying so, while the loop goes on without it. Such a tool
	// is left running (Go cannot stop a goroutine), so tools should
	// honour their context. None leaves tool calls unbounded.
	ToolTimeout time.Duration
	// MaxToolOutput is the most bytes of a tool's result, and of its
	// error, that the model is sent and the log keeps: a longer one is
	// cut at a UTF-8 boundary, with a line saying so and from how many
	// bytes. None sends every result whole.
	MaxToolOutput int
	// ToolConcurrency is how many tool calls of one reply run at once.
	// One, the default, runs them one after another, in the order the
	// model made them. With more, the calls start together (that many at a
	// time), so the tools must be safe for concurrent use; their
	// results are still answered, logged and appended in the model's
	// order, and a call identical to an earlier one of the same reply
	// waits for it and quotes its result, as one after another.
	ToolConcurrency int
}

// Resolved returns l as an agent runs with it: each zero field replaced by
// its default, and each negative one, none, by -1. Resolved of a resolved
// value is itself.
func (l Limits) Resolved() Limits {
	d := DefaultLimits()
	return Limits{
		MaxExceptionRetry: or(l.MaxExceptionRetry, d.MaxExceptionRetry),
		MaxInterruptSteps: or(l.MaxInterruptSteps, d.MaxInterruptSteps),
		MaxRetries:        or(l.MaxRetries, d.MaxRetries),
		MaxLLMRecall:      or(l.MaxLLMRecall, d.MaxLLMRecall),
		BackoffBase:       or(l.BackoffBase, d.BackoffBase),
		BackoffMax:        or(l.BackoffMax, d.BackoffMax),
		CallTimeout:       or(l.CallTimeout, d.CallTimeout),
		MaxRetryWait:      or(l.MaxRetryWait, d.MaxRetryWait),
		ToolTimeout:       or(l.ToolTimeout, d.ToolTimeout),
		MaxToolOutput:     or(l.MaxToolOutput, d.MaxToolOutput),
		ToolConcurrency:   or(l.ToolConcurrency, d.ToolConcurrency),
	}
}

// or is a Limits field v resolved against its default def.
func or[T int | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return -1
	}
	return v
}

// DefaultLimits are the reference framework's defaults, with bounded retries,
// a call timeout of ten minutes (as OpenAI's own clients have), waits
// before a retry of at most five minutes, a tool timeout of ten minutes,
// tool results of at most 1 MiB and tool calls one at a time. A field it
// leaves zero (MaxLLMRecall) has no default: zero there is none.
func DefaultLimits() Limits {
	return Limits{
		MaxExceptionRetry: 3,
		MaxInterruptSteps: 5,
		MaxRetries:        5,
		BackoffBase:       time.Second,
		BackoffMax:        time.Minute,
		CallTimeout:       10 * time.Minute,
		MaxRetryWait:      5 * time.Minute,
		ToolTimeout:       10 * time.Minute,
		MaxToolOutput:     1 << 20,
		ToolConcurrency:   1,
	}
}

// AgentLabel is how a message names the agent called name: "agent solver",
// or "agent (unnamed)" for an Agent built without a Name.
func AgentLabel(name string) string {
	if name == "" {
		return "agent (unnamed)"
	}
	return "agent " + name
}

// Agent is a model with a system prompt, talking through aliased dialogs.
// Build one as a struct literal; an Agent must not be copied after first
// use. Its methods are safe for concurrent use, though one goroutine per
// agent is the usual pattern; one dialog is answered by one Respond at a
// time (a second one while the first runs is an error, and so is a
// Receive into it).
type Agent struct {
	Name string
	// System is the system prompt that opens every dialog.
	System *dialog.Prompt
	// Model is the provider model to call, and ModelName its full name
	// ("provider/model"), used for tokens and the log.
	Model     provider.Model
	ModelName string
	// Params are the sampling options of every call.
	Params provider.Params
	// Limits bound the call loop; a zero field takes its default (see
	// Limits).
	Limits Limits
	// Context shapes each working copy before a call; nil sends it whole.
	// ContextName names it in the log.
	Context     contextmgr.Manager
	ContextName string
	// Tokens counts tokens for the context manager; nil uses a new one.
	Tokens *contextmgr.Tokenizer
	// Log records the agent's work; nil records nothing.
	Log Log
	// Stream, when set, receives each reply's text and reasoning as they
	// arrive (see provider.Chunk).
	Stream func(ctx context.Context, c provider.Chunk) error
	// Sleep waits d before a retry, or returns ctx's error if ctx ends
	// first; nil waits on a timer. A replay, whose recorded failures need
	// no waiting, passes one that returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Retrying, when set, is told of each failed model call the agent is
	// about to make again, before it waits: a command line shows it, so
	// that a run waiting out a rate limit or a server that does not
	// answer does not look stuck.
	Retrying func(r Retry)
	// CallTool, when set, answers the agent's tool calls in place of
	// f.Call, f being the prompt's function the call names: a replay
	// serves the recorded results this way. It is bound by
	// Limits.ToolTimeout as f.Call is, and runs on a goroutine of its own.
	CallTool func(ctx context.Context, agent string, f *dialog.Function, call dialog.FunctionCall) dialog.FunctionCall

	mu      sync.Mutex
	onCall  func(*CallSession) // set by the tactic Session that made the agent
	dialogs map[string]*dialog.Dialog
	current string
	calls   int    // model invocations so far, numbering model_call records
	turns   *turns // numbers its calls per alias; a Session shares the run's
	// declared holds the digests of the declarations this agent logged.
	declared map[string]bool
	// answering holds the dialogs a Respond is working on, by id.
	answering map[string]bool
}

// turns numbers the model calls of a run's agents per agent name and
// alias, across the sessions of a run.
type turns struct {
	mu sync.Mutex
	n  map[[2]string]int
}

func (t *turns) next(agent, alias string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == nil {
		t.n = map[[2]string]int{}
	}
	k := [2]string{agent, alias}
	t.n[k]++
	return t.n[k]
}

// position numbers the next model call on the dialog alias.
func (a *Agent) position(alias string) provider.CallInfo {
	a.mu.Lock()
	if a.turns == nil {
		a.turns = &turns{}
	}
	t := a.turns
	a.mu.Unlock()
	return provider.CallInfo{Agent: a.Name, Dialog: alias, Turn: t.next(a.Name, alias)}
}

// Open starts a dialog under alias, seeded with the system prompt rendered
// with args, and makes it current. An empty alias, one already open, and
// one with '#' (reserved for Respond's working copies, main#1, main#2, ...)
// are errors.
func (a *Agent) Open(alias string, args map[string]any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.checkAlias(alias); err != nil {
		return err
	}
	if a.System != nil {
		// Before the dialog exists: a prompt that cannot be rendered
		// leaves no empty dialog in the log.
		if _, err := a.System.Render(args); err != nil {
			return fmt.Errorf("%s: system prompt: %w", AgentLabel(a.Name), err)
		}
	}
	opts := []dialog.Option{dialog.WithAlias(alias)}
	if a.Log != nil {
		opts = append(opts, dialog.WithSink(a.Log))
	}
	d, err := dialog.New(a.Name, opts...)
	if err != nil {
		return fmt.Errorf("%s: %w", AgentLabel(a.Name), err)
	}
	if a.System != nil {
		if _, err := d.PutPrompt(a.System, args, dialog.AsRole(dialog.RoleSystem), dialog.From("system")); err != nil {
			return fmt.Errorf("%s: system prompt: %w", AgentLabel(a.Name), err)
		}
	}
	if a.dialogs == nil {
		a.dialogs = map[string]*dialog.Dialog{}
	}
	a.dialogs[alias], a.current = d, alias
	return nil
}

// Fork forks the dialog alias into child (Dialog.Fork's rules for lastN
// and firstK), and makes child current when switchTo is set.
func (a *Agent) Fork(alias, child string, lastN, firstK int, switchTo bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, err := a.lookup(alias)
	if err != nil {
		return err
	}
	if err := a.checkAlias(child); err != nil {
		return err
	}
	c, err := d.Fork(lastN, firstK, dialog.WithAlias(child))
	if err != nil {
		return fmt.Errorf("%s: %w", AgentLabel(a.Name), err)
	}
	a.dialogs[child] = c
	if switchTo {
		a.current = child
	}
	return nil
}

// checkAlias refuses an alias a new dialog cannot take: one already open,
// the empty one (which means the current dialog), and one with '#', which
// names Respond's working copies ("main#1", "main#2", ...) so that the log
// tells them apart from the tactic's own dialogs.
func (a *Agent) checkAlias(alias string) error {
	switch {
	case alias == "":
		return fmt.Errorf("%s: a dialog needs a non-empty alias", AgentLabel(a.Name))
	case strings.Contains(alias, "#"):
		return fmt.Errorf("%s: dialog alias %q has '#', which is reserved for the working copies of Respond (main#1, main#2, ...): choose an alias without it", AgentLabel(a.Name), alias)
	}
	if _, dup := a.dialogs[alias]; dup {
		return fmt.Errorf("%s: dialog %q is already open", AgentLabel(a.Name), alias)
	}
	return nil
}

// Switch makes the dialog alias current.
func (a *Agent) Switch(alias string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.lookup(alias); err != nil {
		return err
	}
	a.current = alias
	return nil
}

// Close forgets the dialog alias; it stays in the log. The alias may then
// name a new dialog: dialog.Forest.ByAlias finds them all in a rebuilt run.
func (a *Agent) Close(alias string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.lookup(alias); err != nil {
		return err
	}
	delete(a.dialogs, alias)
	if a.current == alias {
		a.current = ""
	}
	return nil
}

// Dialog returns the dialog alias, or the current one when alias is "".
func (a *Agent) Dialog(alias string) (*dialog.Dialog, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lookup(alias)
}

func (a *Agent) lookup(alias string) (*dialog.Dialog, error) {
	if alias == "" {
		alias = a.current
		if alias == "" {
			return nil, fmt.Errorf("%s: no current dialog: Open one first", AgentLabel(a.Name))
		}
	}
	d, ok := a.dialogs[alias]
	if !ok {
		names := make([]string, 0, len(a.dialogs))
		for n := range a.dialogs {
			names = append(names, n)
		}
		sort.Strings(names)
		open := "no dialog is open: Open one first"
		if len(names) > 0 {
			open = "open: " + strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("%s: no dialog %q (%s)", AgentLabel(a.Name), alias, open)
	}
	return d, nil
}

// Receive appends text from a user (or another agent, with dialog.From) to
// the current dialog. The prompt governing the dialog, with its tools and
// parser, stays in force. A dialog a Respond is answering takes nothing
// until that Respond returns: its reply would follow a message the model
// never saw (an error).
func (a *Agent) Receive(text string, opts ...dialog.PutOption) error {
	return a.ReceiveTo("", text, opts...)
}

// ReceiveTo is Receive into the dialog alias ("" for the current one), so
// that goroutines feeding different dialogs of one agent need no Switch.
func (a *Agent) ReceiveTo(alias, text string, opts ...dialog.PutOption) error {
	return a.receive(alias, func(d *dialog.Dialog) error {
		_, err := d.PutText(text, opts...)
		return err
	})
}

// ReceivePrompt renders p with args into the current dialog; p then governs
// the next reply.
func (a *Agent) ReceivePrompt(p *dialog.Prompt, args map[string]any, opts ...dialog.PutOption) error {
	return a.ReceivePromptTo("", p, args, opts...)
}

// ReceivePromptTo is ReceivePrompt into the dialog alias ("" for the
// current one).
func (a *Agent) ReceivePromptTo(alias string, p *dialog.Prompt, args map[string]any, opts ...dialog.PutOption) error {
	return a.receive(alias, func(d *dialog.Dialog) error {
		_, err := d.PutPrompt(p, args, opts...)
		return err
	})
}

// ReceiveImage appends an image with a caption to the current dialog.
func (a *Agent) ReceiveImage(src dialog.ImageSource, caption string, opts ...dialog.PutOption) error {
	return a.ReceiveImageTo("", src, caption, opts...)
}

// ReceiveImageTo is ReceiveImage into the dialog alias ("" for the
// current one).
func (a *Agent) ReceiveImageTo(alias string, src dialog.ImageSource, caption string, opts ...dialog.PutOption) error {
	return a.receive(alias, func(d *dialog.Dialog) error {
		_, err := d.PutImage(src, caption, opts...)
		return err
	})
}

// receive puts a message into the dialog alias with put, unless a Respond
// is answering it; under a.mu, so that no Respond starts on the dialog in
// between.
func (a *Agent) receive(alias string, put func(*dialog.Dialog) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, err := a.lookup(alias)
	if err != nil {
		return err
	}
	if a.answering[d.ID()] {
		return fmt.Errorf("%s: dialog %q is being answered: a Respond on it has not returned, and its reply would follow this message, which the model did not see (wait for the Respond, or Fork the dialog and add to the fork)", AgentLabel(a.Name), d.Alias())
	}
	if err := put(d); err != nil {
		return fmt.Errorf("%s: %w", AgentLabel(a.Name), err)
	}
	return nil
}

// CallSession is what one Respond did: its attempts, model and tool calls,
// cost and final state.
type CallSession struct {
	Agent  string
	Dialog string // the canonical dialog's id
	alias  string // the canonical dialog's alias
	// Attempts are the working dialogs, one per parse attempt, in order;
	// all but the last failed to parse, and the last too when State is
	// "parse_failed".
	Attempts []string
	// Calls are the model invocations, retries included.
	Calls []Call
	// ToolCalls are the tool calls answered, in order, each with the
	// Result (or Error) the model was sent: cut to Limits.MaxToolOutput,
	// and for a repeated call the quote of the earlier result.
	ToolCalls []dialog.FunctionCall
	// Cost is what the model calls of this Respond cost, those of attempts
	// whose reply failed to parse included.
	Cost dialog.Cost
	// State is "ok", "parse_failed" or "error".
	State string
}

// Call is one model invocation of a CallSession.
type Call struct {
	Dialog  string // the working dialog
	Attempt int    // 1 for the first try of this request
	Digest  string
	// FinishReason is why the model stopped, as its provider said it
	// (provider.Response.FinishReason).
	FinishReason string
	Usage        dialog.Usage
	USD          float64
	Latency      time.Duration
	Err          error
}

// Respond asks the model for the next turn of the current dialog, running
// the call loop: each attempt works on a fork of the dialog that the
// context manager shapes; tool calls are run and answered for up to
// MaxInterruptSteps rounds; a reply that fails to parse is answered with the
// exception prompt, up to MaxExceptionRetry times. Only the final, parsed
// reply is appended to the dialog; every attempt stays in the tree and the
// log. The model is called whatever the dialog ends with: Receive what it
// should answer first (after the agent's own reply, Anthropic takes that
// reply as a prefill and continues it).
func (a *Agent) Respond(ctx context.Context) (*dialog.Message, *CallSession, error) {
	return a.RespondTo(ctx, "")
}

// RespondTo is Respond on the dialog alias ("" for the current one), so
// that goroutines answering different dialogs of one agent need no Switch.
func (a *Agent) RespondTo(ctx context.Context, alias string) (*dialog.Message, *CallSession, error) {
	if ctx == nil {
		return nil, nil, fmt.Errorf("%s: nil context: pass the tactic's ctx or context.Background()", AgentLabel(a.Name))
	}
	if a.Model == nil {
		return nil, nil, fmt.Errorf("%s has no model: set Agent.Model (provider.Open)", AgentLabel(a.Name))
	}
	canon, err := a.Dialog(alias)
	if err != nil {
		return nil, nil, err
	}
	// Two Responds on one dialog would both append a reply to it, one
	// after the other, to the same message.
	a.mu.Lock()
	if a.answering[canon.ID()] {
		a.mu.Unlock()
		return nil, nil, fmt.Errorf("%s: dialog %q is already being answered: a Respond on it has not returned (to sample it several times at once, Fork it and answer each fork)", AgentLabel(a.Name), canon.Alias())
	}
	if a.answering == nil {
		a.answering = map[string]bool{}
	}
	a.answering[canon.ID()] = true
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.answering, canon.ID())
		a.mu.Unlock()
	}()
	s := &CallSession{Agent: a.Name, Dialog: canon.ID(), alias: canon.Alias()}
	reply, err := a.respond(ctx, canon, s)
	switch {
	case err == nil:
		s.State = "ok"
	case errors.As(err, new(*dialog.ParseError)):
		s.State = "parse_failed"
	default:
		s.State = "error"
	}
	if a.onCall != nil {
		a.onCall(s)
	}
	if err != nil {
		return nil, s, fmt.Errorf("%s: %w", AgentLabel(a.Name), err)
	}
	return reply, s, nil
}

// provider is the provider part of ModelName.
func (a *Agent) provider() string {
	p, _, _ := strings.Cut(a.ModelName, "/")
	return p
}

func (a *Agent) respond(ctx context.Context, canon *dialog.Dialog, s *CallSession) (*dialog.Message, error) {
	lim := a.Limits.Resolved()
	gov := canon.TopPrompt()
	alias := canon.Alias()
	work, err := canon.Fork(0, 0, dialog.WithAlias(alias+"#1"))
	if err != nil {
		return nil, err
	}
	s.Attempts = append(s.Attempts, work.ID())
	var seen map[string]string // name+args -> result, for repeated calls
	rounds := 0
	for exceptions := 0; ; {
		tools := gov != nil && len(gov.Functions) > 0 && lim.MaxInterruptSteps > 0
		reply, err := a.invoke(ctx, work, gov, tools, lim, s)
		if err != nil {
			return nil, err
		}
		if reply.IsFunctionCall() && tools {
			if seen == nil {
				seen = map[string]string{}
			}
			if err := a.runTools(ctx, work, gov, reply, seen, lim, s); err != nil {
				return nil, err
			}
			if rounds++; rounds >= lim.MaxInterruptSteps {
				gov = gov.InterruptFinalPrompt()
				if _, err := work.PutPrompt(gov, nil); err != nil {
					return nil, err
				}
			}
			continue
		}
		if reply.IsFunctionCall() {
			// Tools were withdrawn (or never offered): every call still needs
			// an answer on the wire, and asking again counts as a failure.
			if exceptions >= lim.MaxExceptionRetry {
				return nil, fmt.Errorf("the model kept calling tools after they were withdrawn (%d times)", exceptions+1)
			}
			exceptions++
			if err := a.answerCalls(work, reply, lim, nil, func(fc dialog.FunctionCall) (dialog.FunctionCall, bool) {
				fc.Error = "no tools are available now"
				fc.Result = "Error: no tools are available now. Give your final answer."
				return fc, false
			}, s); err != nil {
				return nil, err
			}
			continue
		}
		parsed, perr := parseReply(gov, reply)
		if perr == nil {
			if parsed == nil {
				return canon.AppendShared(reply) // as the working copy holds it
			}
			final := *reply
			final.Parsed = parsed
			return canon.AppendShared(&final)
		}
		var pe *dialog.ParseError
		if !errors.As(perr, &pe) || exceptions >= lim.MaxExceptionRetry {
			return nil, perr
		}
		// Retry on a fork of the failed attempt, so it stays a branch.
		exceptions++
		if work, err = work.Fork(0, 0, dialog.WithAlias(alias+"#"+strconv.Itoa(exceptions+1))); err != nil {
			return nil, err
		}
		s.Attempts = append(s.Attempts, work.ID())
		gov = gov.ExceptionPrompt()
		if _, err := work.PutPrompt(gov, map[string]any{"error_message": perr.Error()}); err != nil {
			return nil, err
		}
	}
}

// declare logs the tools and format req declares, the first time this
// agent sends them (the log keeps one record per set and run), and
// returns their digest for the call's records: empty when there are none.
func (a *Agent) declare(req *provider.Request) (string, error) {
	if a.Log == nil {
		return "", nil
	}
	d := logs.DeclarationsOf(req.Tools, req.Format)
	if d == nil {
		return "", nil
	}
	a.mu.Lock()
	seen := a.declared[d.Digest]
	if !seen {
		if a.declared == nil {
			a.declared = map[string]bool{}
		}
		a.declared[d.Digest] = true
	}
	a.mu.Unlock()
	if !seen {
		if err := a.write(&logs.Record{Kind: logs.KindDeclarations, Declarations: d}); err != nil {
			return "", err
		}
	}
	return d.Digest, nil
}

// parseReply parses reply with the governing prompt's parser and returns the
// result as JSON (nil when the prompt has no parser). Structured output
// (the JSON parser) must also follow the prompt's format.
func parseReply(gov *dialog.Prompt, reply *dialog.Message) (json.RawMessage, error) {
	if gov == nil {
		return nil, nil
	}
	parser := gov.Parser
	if parser == nil && gov.Format != nil {
		parser = dialog.JSONParser{}
	}
	if parser == nil {
		return nil, nil
	}
	v, err := parser.Parse(reply.Text())
	if err != nil {
		return nil, err
	}
	parsed, err := jsontext.Marshal(v) // <answer> stays as the model wrote it
	if err != nil {
		return nil, fmt.Errorf("encoding parsed output: %w", err)
	}
	if _, isJSON := parser.(dialog.JSONParser); isJSON {
		// The reply is the structured output: it must follow the schema.
		if err := gov.CheckFormat(parsed); err != nil {
			return nil, err
		}
	}
	return parsed, nil
}

// invoke sends the working dialog, shaped by the context manager, to the
// model, retrying as Limits allow, appends the reply to it and returns
// the stored reply, which is shared and must not be changed.
func (a *Agent) invoke(ctx context.Context, work *dialog.Dialog, gov *dialog.Prompt, tools bool, lim Limits, s *CallSession) (*dialog.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // cancelled between two steps: no further call
	}
	req := &provider.Request{Model: a.ModelName, Params: a.Params, Stream: a.Stream}
	if gov != nil {
		req.Format = gov.Format
		if tools {
			req.Tools = gov.Functions
		}
	}
	msgs, shaping, err := a.fit(ctx, work, req.Tools, lim, s)
	if err != nil {
		return nil, err
	}
	if shaping != nil {
		ctx = provider.WithShaping(ctx, shaping)
	}
	req.Messages = msgs
	return a.generate(ctx, work, req, lim, s, true)
}

// generate makes one model call of req for the working dialog, retrying
// as Limits allow: every try is a model_call record of work and a Call of
// s. With keep, the reply is appended to work and the stored message is
// returned; without, the reply is returned as it came.
func (a *Agent) generate(ctx context.Context, work *dialog.Dialog, req *provider.Request, lim Limits, s *CallSession, keep bool) (*dialog.Message, error) {
	pos := a.position(s.alias)
	digest := req.Digest()
	var tools []string
	for _, f := range req.Tools {
		tools = append(tools, f.Name)
	}
	declarations, err := a.declare(req)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.calls++
	call := a.calls
	a.mu.Unlock()

	recalls := 0
	for attempt := 1; ; attempt++ {
		pos.Attempt = attempt
		start := time.Now()
		resp, err := a.attempt(ctx, pos, req, lim.CallTimeout)
		latency := time.Since(start)
		rec := &logs.ModelCall{Agent: a.Name, Provider: a.provider(), Model: a.ModelName, Call: call, Attempt: attempt,
			Alias: pos.Dialog, Turn: pos.Turn, RequestDigest: digest, Params: paramsJSON(a.Params), Tools: tools,
			Declarations: declarations, LatencyMS: ms(latency)}
		c := Call{Dialog: work.ID(), Attempt: attempt, Digest: digest, Latency: latency, Err: err}
		if err == nil {
			resp.Message.Name = a.Name
			for i, fc := range resp.Message.FunctionCalls {
				if len(fc.Arguments) > 0 && !json.Valid(fc.Arguments) {
					// A model of our own making may hand them over raw:
					// keep them, as a JSON string, for the tool to refuse
					// as not valid JSON (dialog.FunctionCall.Arguments).
					resp.Message.FunctionCalls[i].Arguments, _ = json.Marshal(string(fc.Arguments))
				}
			}
			reply := &resp.Message
			if keep {
				var aerr error
				// The reply is the caller's (provider.Model): stored as it is.
				if reply, aerr = work.AppendShared(&resp.Message); aerr != nil {
					return nil, aerr
				}
				rec.Reply = &logs.MessageRef{Dialog: work.ID(), Index: work.Len() - 1}
			} else {
				rec.Text = reply.Text()
			}
			rec.Usage, rec.USD, rec.FinishReason = reply.Usage, reply.USD, resp.FinishReason
			c.Usage, c.USD, c.FinishReason = reply.Usage, reply.USD, resp.FinishReason
			s.Calls = append(s.Calls, c)
			s.Cost = s.Cost.Add(reply.Cost())
			if err := a.write(&logs.Record{Kind: logs.KindModelCall, Dialog: work.ID(), ModelCall: rec}); err != nil {
				return nil, err
			}
			return reply, nil
		}
		pe := provider.AsError(a.ModelName, err)
		rec.Error = &logs.CallError{Type: string(pe.Kind), Message: err.Error(), Status: pe.Status, RetryAfterMS: ms(pe.Retry)}
		s.Calls = append(s.Calls, c)
		if werr := a.write(&logs.Record{Kind: logs.KindModelCall, Dialog: work.ID(), ModelCall: rec}); werr != nil {
			return nil, werr
		}
		if err := a.nextAttempt(ctx, err, pe, attempt, &recalls, lim); err != nil {
			return nil, err
		}
	}
}

// nextAttempt decides whether the model call whose attempt (from 1) failed with
// err, pe as a provider error, is made again: it returns nil once the
// next attempt may start (after the backoff wait of a retryable error,
// or at once for a recall, counted in recalls), else the error the call
// fails with.
func (a *Agent) nextAttempt(ctx context.Context, err error, pe *provider.Error, attempt int, recalls *int, lim Limits) error {
	switch {
	case pe.Kind == provider.ErrCancelled || ctx.Err() != nil:
		return err
	case pe.Retryable() && attempt <= lim.MaxRetries:
		d := lim.backoff(attempt, pe.Retry)
		if why := lim.tooLong(ctx, pe.Retry, d); why != "" {
			pe := *pe
			if pe.Err == nil {
				pe.Err = fmt.Errorf("not retried: %s", why)
			} else {
				pe.Err = fmt.Errorf("%w (not retried: %s)", pe.Err, why)
			}
			return &pe
		}
		a.retrying(Retry{Agent: a.Name, Attempt: attempt, Left: lim.MaxRetries - attempt + 1, Err: pe, Wait: d})
		wait := a.Sleep
		if wait == nil {
			wait = sleep
		}
		return wait(ctx, d)
	case !pe.Retryable() && *recalls < lim.MaxLLMRecall:
		*recalls++
		a.retrying(Retry{Agent: a.Name, Attempt: attempt, Left: lim.MaxLLMRecall - *recalls + 1, Err: pe})
		return nil
	}
	return err
}

// attempt makes one try of a model call, within timeout when it is not
// zero.
func (a *Agent) attempt(ctx context.Context, pos provider.CallInfo, req *provider.Request, timeout time.Duration) (*provider.Response, error) {
	if timeout <= 0 {
		return a.Model.Generate(provider.WithCallInfo(ctx, pos), req)
	}
	actx, done := attemptDeadlines.within(provider.WithCallInfo(ctx, pos), timeout)
	defer done()
	resp, err := a.Model.Generate(actx, req)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errCallTimeout) {
		// A timeout, whatever the client made of it.
		pe := *provider.AsError(a.provider(), err)
		pe.Kind = provider.ErrTimeout
		pe.Err = fmt.Errorf("no reply within the call timeout of %v (call_timeout): %w", timeout, pe.Err)
		err = &pe
	}
	return resp, err
}

// Retry is a failed model call that an agent is about to make again.
type Retry struct {
	Agent   string
	Attempt int // the attempt that failed, from 1
	// Left is how many more attempts this kind of failure may have,
	// counting the next one.
	Left int
	Err  *provider.Error
	// Wait is how long the agent waits before the next attempt: zero
	// for an error that is not retryable, which the agent makes again at
	// once (Limits.MaxLLMRecall).
	Wait time.Duration
}

func (a *Agent) retrying(r Retry) {
	if a.Retrying != nil {
		a.Retrying(r)
	}
}

// backoff is the wait before retry n (1-based).
func (l Limits) backoff(n int, retryAfter time.Duration) time.Duration {
	base, most := l.BackoffBase, l.BackoffMax
	if base <= 0 {
		return max(0, retryAfter)
	}
	switch {
	case most < 0: // none: no cap
		most = math.MaxInt64
	case most < base:
		most = base
	}
	// base * 2^(n-1), or most if that is more (without overflowing).
	d, shift := most, min(n-1, 30)
	if base <= most>>shift {
		d = base << shift
	}
	d = d/2 + rand.N(d/2+1)
	return max(d, retryAfter)
}

// tooLong says why the wait d before a retry, after a Retry-After of
// retryAfter, is not taken: the provider asks for more than MaxRetryWait,
// or the wait would outlast ctx's deadline; "" when it is taken.
func (l Limits) tooLong(ctx context.Context, retryAfter, d time.Duration) string {
	if l.MaxRetryWait > 0 && retryAfter > l.MaxRetryWait {
		return fmt.Sprintf("the provider asks to wait %v, more than max_retry_wait (%v)", retryAfter, l.MaxRetryWait)
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return fmt.Sprintf("the wait of %v before the retry would outlast the context's deadline", d.Round(time.Millisecond))
	}
	return ""
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// fit passes the working copy, and the tools the request declares (which
// take room in the window too), through the context manager, logs what it
// did and returns the request's messages and, when a manager ran, what it
// made them from.
func (a *Agent) fit(ctx context.Context, work *dialog.Dialog, tools []*dialog.Function, lim Limits, s *CallSession) ([]*dialog.Message, *provider.Shaping, error) {
	msgs := work.Messages()
	if a.Context == nil {
		return msgs, nil, nil
	}
	a.mu.Lock()
	if a.Tokens == nil {
		a.Tokens = contextmgr.NewTokenizer()
	}
	tok := a.Tokens
	a.mu.Unlock()
	res, err := a.fitContext(ctx, contextmgr.Input{Model: a.ModelName, Messages: msgs, Tools: tools, Tokens: tok, Dialog: s.Dialog,
		Summarize: func(ctx context.Context, old []*dialog.Message) (*dialog.Message, error) {
			return a.summarize(ctx, work, lim, s, old)
		}})
	if err != nil {
		var fe *contextmgr.FitError
		if errors.As(err, &fe) {
			err = fe.Err // named below: not "context manager summary: contextmgr: summary: ..."
		}
		return nil, nil, fmt.Errorf("context manager %s: %w", a.ContextName, err)
	}
	if len(res.Messages) == 0 && len(msgs) > 0 {
		return nil, nil, fmt.Errorf("context manager %s: it returned no messages, for a dialog of %d: a request needs at least the newest", a.ContextName, len(msgs))
	}
	if err := checkToolResults(res.Messages); err != nil {
		// Every provider refuses such a request; say whose doing it is.
		return nil, nil, fmt.Errorf("context manager %s: %w", a.ContextName, err)
	}
	if res.Action == "" {
		res.Action = contextmgr.ActionFit
	}
	act := &logs.ContextAction{Agent: a.Name, Manager: a.ContextName, Action: res.Action,
		MessagesBefore: len(msgs), MessagesAfter: len(res.Messages),
		TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter, Note: res.Note, Archived: res.Archived}
	if res.Summary != nil {
		act.Summary = res.Summary.Content
	}
	if err := a.write(&logs.Record{Kind: logs.KindContext, Dialog: work.ID(), Context: act}); err != nil {
		return nil, nil, err
	}
	return res.Messages, &provider.Shaping{Manager: a.ContextName, Action: res.Action, From: msgs}, nil
}

// fitContext runs the context manager on in. A panic, a bug of a
// registered manager as a tool's panic is one of its function (which
// dialog.Function.Call recovers), is its error: on a tactic's goroutine
// it would take the process down, a sweep's other runs with it, and leave
// the run's log without a run_end.
func (a *Agent) fitContext(ctx context.Context, in contextmgr.Input) (res contextmgr.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = contextmgr.Result{}, fmt.Errorf("panicked: %v\n%s", v, debug.Stack())
		}
	}()
	return a.Context.Fit(ctx, in)
}

// checkToolResults reports a tool message whose call is not in an earlier
// message of msgs: a context manager that dropped a tool call and kept its
// result.
func checkToolResults(msgs []*dialog.Message) error {
	var called map[string]bool // made at the first call: most requests have none
	for i, m := range msgs {
		if m == nil { // a manager's bug, which would crash the call
			return fmt.Errorf("message %d of the %d it returned is nil", i, len(msgs))
		}
		if m.Role != dialog.RoleTool {
			for _, fc := range m.FunctionCalls {
				if called == nil {
					called = map[string]bool{}
				}
				called[fc.ID] = true
			}
		}
		if m.Role == dialog.RoleTool && m.ToolCallID != "" && !called[m.ToolCallID] {
			return fmt.Errorf("message %d of the %d it returned is the result of tool call %s (%s), but the message that made the call is not among them: keep a tool call and its results together", i, len(msgs), m.ToolCallID, m.Name)
		}
	}
	return nil
}

// summaryRequest is what a summary manager asks the model after the
// messages it summarises.
const summaryRequest = "Summarise the conversation above for your own later use: keep every fact, decision, open question and result; drop pleasantries. Reply with the summary only."

// summarize asks the model for a summary of old, a call of the working
// dialog like any other (logged, retried, in the session), and returns
// it as one user message.
func (a *Agent) summarize(ctx context.Context, work *dialog.Dialog, lim Limits, s *CallSession, old []*dialog.Message) (*dialog.Message, error) {
	msgs := append(old[:len(old):len(old)], &dialog.Message{Role: dialog.RoleUser, Name: "user", Content: summaryRequest})
	// Say it is the manager's call, so that a replay compares it with
	// the recorded call as the working dialog it was made for.
	ctx = provider.WithShaping(ctx, &provider.Shaping{Manager: a.ContextName, Action: "summary", From: work.Messages(), Summary: true})
	reply, err := a.generate(ctx, work, &provider.Request{Model: a.ModelName, Messages: msgs, Params: a.Params}, lim, s, false)
	if err != nil {
		return nil, err // contextmgr says "summarising N messages"
	}
	if strings.TrimSpace(reply.Text()) == "" {
		// An empty summary would drop the messages from what the model
		// sees without a trace: fail the call instead.
		what := "no text"
		if len(reply.FunctionCalls) > 0 {
			what = fmt.Sprintf("tool calls (%s) and no text", reply.FunctionCalls[0].Name)
		}
		return nil, fmt.Errorf("the model's summary has %s", what)
	}
	return &dialog.Message{Role: dialog.RoleUser, Name: "summary", Modality: dialog.ModalityText,
		Content: "Summary of the earlier conversation:\n" + reply.Text(),
		Usage:   reply.Usage, USD: reply.USD}, nil
}

// runTools runs the tool calls of reply with gov's functions, answering an
// identical repeated call from the first one's result in seen.
func (a *Agent) runTools(ctx context.Context, work *dialog.Dialog, gov *dialog.Prompt, reply *dialog.Message, seen map[string]string, lim Limits, s *CallSession) error {
	fns := map[string]*dialog.Function{}
	for _, f := range gov.Functions {
		fns[f.Name] = f
	}
	return a.answerCalls(work, reply, lim, seen, func(fc dialog.FunctionCall) (dialog.FunctionCall, bool) {
		f := fns[fc.Name]
		if f == nil {
			return failedCall(fc, "unknown function "+fc.Name), false
		}
		return a.callTool(ctx, f, fc, lim.ToolTimeout), true
	}, s)
}

// toolCancelGrace is how long a tool whose context was cancelled has to
// return before the call loop leaves it running.
const toolCancelGrace = 100 * time.Millisecond

// errToolTimeout is the cause of a tool call's context cancelled at its
// tool timeout.
var errToolTimeout = errors.New("tool timeout")

// callTool answers fc with f (through CallTool when it is set) on a
// goroutine of its own, within timeout when it is not zero. A tool that
// has not returned by then, or within toolCancelGrace of ctx's end, is
// left running and the call is answered with an error: that it did not
// return within the timeout, or ctx's error, as f.Call answers a call on
// an ended context.
func (a *Agent) callTool(ctx context.Context, f *dialog.Function, fc dialog.FunctionCall, timeout time.Duration) dialog.FunctionCall {
	if err := ctx.Err(); err != nil {
		return failedCall(fc, err.Error())
	}
	var tctx context.Context
	var cancel context.CancelFunc
	if timeout > 0 {
		tctx, cancel = context.WithTimeoutCause(ctx, timeout, errToolTimeout)
	} else {
		tctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	out := make(chan dialog.FunctionCall, 1) // the tool's goroutine never blocks on it
	go func() {
		defer func() {
			// f.Call recovers the function's panics; CallTool is the
			// caller's code, on a goroutine no one else recovers.
			if v := recover(); v != nil {
				out <- failedCall(fc, fmt.Sprintf("calling tool %s panicked: %v", fc.Name, v))
			}
		}()
		if a.CallTool != nil {
			out <- a.CallTool(tctx, a.Name, f, fc)
		} else {
			out <- f.Call(tctx, fc)
		}
	}()
	select {
	case done := <-out:
		if ctx.Err() != nil || done.Error == "" || context.Cause(tctx) != errToolTimeout {
			return done
		}
		// An error once its time was up: most likely the one the end of
		// its context made; the timeout says why.
	case <-tctx.Done():
		if err := ctx.Err(); err != nil {
			// A tool that honours ctx answers for itself, at once.
			t := time.NewTimer(toolCancelGrace)
			defer t.Stop()
			select {
			case done := <-out:
				return done
			case <-t.C:
				return failedCall(fc, err.Error())
			}
		}
	}
	return failedCall(fc, fmt.Sprintf("%s%v (tool_timeout)", toolTimeoutText(fc.Name), timeout))
}

// toolTimeoutText begins the error of a call to the tool name that the
// tool timeout ended.
func toolTimeoutText(name string) string {
	return "tool " + name + " did not return within the tool timeout of "
}

// callKey is what tells a repeated tool call: its name and arguments.
func callKey(fc dialog.FunctionCall) string { return fc.Name + "\x00" + compactJSON(fc.Arguments) }

// ranCall is a tool call run ahead of its turn (see startCalls).
type ranCall struct {
	done dialog.FunctionCall
	ran  bool
	took time.Duration // how long run took, not how long the result waited
}

// startCalls starts, when more than one may run at once, the calls of a
// reply that will run (not repeats of an earlier call: seen's, or one
// before it in calls, told by keys, their callKeys, when seen is not nil),
// at most limit at a time and in order (it returns once the last has
// started), and returns the channel each started call's result comes on,
// by index (nil for the others, which answerCalls runs, or quotes, in
// turn); nil when the calls run one after another.
func startCalls(calls []dialog.FunctionCall, keys []string, limit int, seen map[string]string, run func(dialog.FunctionCall) (dialog.FunctionCall, bool)) []chan ranCall {
	if limit <= 1 || len(calls) < 2 {
		return nil
	}
	started := make([]chan ranCall, len(calls))
	first := map[string]bool{}
	slots := make(chan struct{}, limit)
	for i, fc := range calls {
		if seen != nil {
			key := keys[i]
			if _, ok := seen[key]; ok || first[key] {
				continue
			}
			first[key] = true
		}
		started[i] = make(chan ranCall, 1)
		slots <- struct{}{} // in the model's order
		go func(fc dialog.FunctionCall, out chan<- ranCall) {
			defer func() { <-slots }()
			start := time.Now()
			done, ran := run(fc)
			out <- ranCall{done, ran, time.Since(start)}
		}(fc, started[i])
	}
	return started
}

// timedOut reports whether done was answered by the tool timeout, not by
// its tool: told by its text, so that a replay, which serves the recorded
// text, decides alike.
func timedOut(done dialog.FunctionCall) bool {
	return done.Error != "" && strings.HasPrefix(done.Error, toolTimeoutText(done.Name))
}

// failedCall is fc answered with the error msg, as dialog.Function.Call
// answers a call that fails.
func failedCall(fc dialog.FunctionCall, msg string) dialog.FunctionCall {
	fc.Error, fc.Result = msg, "Error: "+msg
	return fc
}

// answerCalls answers each tool call of reply with run's result, cut to
// lim.MaxToolOutput: a tool_call record, and a tool message (the interrupt
// prompt rendered with the result) appended to work. run reports whether
// it ran a tool. When seen is not nil, it maps a call's name and arguments
// to the result the model got for it: the result of a call that ran is
// kept there (unless the tool timeout ended it), and an identical later
// call is answered by quoting it, without run, and recorded as repeated.
func (a *Agent) answerCalls(work *dialog.Dialog, reply *dialog.Message, lim Limits, seen map[string]string, run func(dialog.FunctionCall) (done dialog.FunctionCall, ran bool), s *CallSession) error {
	interrupt := work.TopPrompt().InterruptPrompt()
	var keys []string // each call's callKey, when repeats are told
	if seen != nil {
		keys = make([]string, len(reply.FunctionCalls))
		for i, fc := range reply.FunctionCalls {
			keys[i] = callKey(fc)
		}
	}
	started := startCalls(reply.FunctionCalls, keys, lim.ToolConcurrency, seen, run)
	for i, fc := range reply.FunctionCalls {
		start := time.Now()
		var key string
		done, repeated, ran := fc, false, false
		if seen != nil {
			key = keys[i]
			var prev string
			if prev, repeated = seen[key]; repeated {
				done.Result = "You already called " + fc.Name + " with these arguments. The result was:\n" + prev
			}
		}
		switch {
		case repeated:
		case started != nil && started[i] != nil:
			r := <-started[i]
			// Timed from when it started, not from when its turn came.
			done, ran, start = r.done, r.ran, time.Now().Add(-r.took)
		default:
			done, ran = run(fc)
		}
		// A tool's text that is not UTF-8 (output cut in the middle of a
		// rune, bytes of a binary file) reaches the model, and the log, as
		// JSON carries it: each stray byte a U+FFFD. Make it so here, so
		// that the dialog holds what was sent and logged, and a replay,
		// which serves the logged result, sends the same request. Then
		// cut it, here only, for the same reason; a repeat quotes a
		// result already cut, and the tool timeout's short answer is
		// never cut, so that it is still told apart below (and in a
		// replay) however small MaxToolOutput is.
		done.Result, done.Error = jsontext.ValidUTF8(done.Result), jsontext.ValidUTF8(done.Error)
		timeout := timedOut(done)
		if !repeated && !timeout {
			done.Result, done.Error = cutOutput(done.Result, lim.MaxToolOutput), cutOutput(done.Error, lim.MaxToolOutput)
		}
		if ran && seen != nil && !timeout {
			// As answered: a repeat quotes what the model got. A call the
			// tool timeout ended may run again.
			seen[key] = done.Result
		}
		rec := &logs.ToolCall{Agent: a.Name, CallID: fc.ID, Name: fc.Name, Arguments: fc.Arguments,
			Result: done.Result, Error: done.Error, Repeated: repeated,
			LatencyMS: ms(time.Since(start))}
		s.ToolCalls = append(s.ToolCalls, done)
		if err := a.write(&logs.Record{Kind: logs.KindToolCall, Dialog: work.ID(), ToolCall: rec}); err != nil {
			return err
		}
		text := done.Result
		if interrupt != nil {
			var err error
			if text, err = interrupt.Render(map[string]any{"call_results": done.Result}); err != nil {
				return err
			}
		}
		msg := dialog.Message{Role: dialog.RoleTool, Name: fc.Name, ToolCallID: fc.ID, Content: text,
			Modality: dialog.ModalityText, FunctionCalls: []dialog.FunctionCall{done}}
		if _, err := work.Append(msg); err != nil {
			return err
		}
	}
	return nil
}

// cutOutput returns s, valid UTF-8, cut to at most limit bytes at the
// start of a rune, with a line saying so, when it is longer and limit is
// not zero. A text it already cut to limit (a result a replay serves from
// the log) is returned as it is.
func cutOutput(s string, limit int) string {
	if limit <= 0 || len(s) <= limit || wasCut(s, limit) {
		return s
	}
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + cutLine(n, len(s))
}

// cutPrefix starts the line cutOutput appends.
const cutPrefix = "\n[output cut to the first "

// cutLine is the line cutOutput appends to the first n bytes of a text of
// total bytes.
func cutLine(n, total int) string {
	return cutPrefix + strconv.Itoa(n) + " of " + strconv.Itoa(total) + " bytes]"
}

// wasCut reports whether s is what cutOutput makes of a longer text for
// limit: at most limit bytes, then the line saying so.
func wasCut(s string, limit int) bool {
	n := strings.LastIndex(s, cutPrefix)
	if n < 0 || n > limit {
		return false
	}
	_, of, _ := strings.Cut(s[n+len(cutPrefix):], " of ")
	total, err := strconv.Atoi(strings.TrimSuffix(of, " bytes]"))
	return err == nil && total > limit && s[n:] == cutLine(n, total)
}

func (a *Agent) write(rec *logs.Record) error {
	if a.Log == nil {
		return nil
	}
	return a.Log.Write(rec)
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v) // maps marshal with sorted keys: a canonical form
	return string(b)
}

// paramsJSON is p as a model_call record keeps it: nil when p sets
// nothing, or when it cannot be encoded (a NaN, which the adapter refuses).
func paramsJSON(p provider.Params) json.RawMessage {
	if p.IsZero() {
		return nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	return b
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
