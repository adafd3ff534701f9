package conversation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// DefaultAskTimeout is how long ask_user waits for a reply when
// ServiceOptions.AskTimeout is zero.
const DefaultAskTimeout = 5 * time.Minute

// Errors a Service returns; test for them with errors.Is. None of them
// changes anything stored.
var (
	ErrUnknownAgent     = errors.New("unknown agent")
	ErrUnknownGuest     = errors.New("unknown guest")
	ErrGuestNotAdmitted = errors.New("guest not admitted")
	ErrEmptyContent     = errors.New("content is empty")
	ErrBusy             = errors.New("busy: a run is already in progress in this conversation")
	ErrNotRunning       = errors.New("no run is in progress in this conversation")
	ErrNothingPending   = errors.New("no ask_user question is pending in this conversation")
	// ErrKilled is the cause of a run cancelled by Kill.
	ErrKilled = errors.New("killed")
	// ErrStopping is the cause a server gives the runs it cancels when it
	// shuts down (context.WithCancelCause), so that their clients and the
	// conversation's abort record say why.
	ErrStopping = errors.New("the server is stopping")
)

// AgentSpec is an agent a Service can run.
type AgentSpec struct {
	// Name names the agent; conversations are keyed by it.
	Name string
	// System is the agent's system prompt. Its template may use the
	// variables {agent}, {sender} and {cwd}. As a primary agent it gets the
	// recall and ask_user tools beside its own; as a guest it gets none.
	System *dialog.Prompt
	// Model is the model to call; ModelName its "provider/model" name.
	Model     provider.Model
	ModelName string
	Params    provider.Params
	// Limits bound the call loop; a zero field takes its default (see
	// tactics.Limits).
	Limits tactics.Limits
	// Context shapes each request (see tactics.Agent); nil sends it whole.
	Context     contextmgr.Manager
	ContextName string
	// CompactTokens compacts a conversation of this agent automatically
	// after a turn when its live history counts more tokens than this;
	// zero never does.
	CompactTokens int
	// Guests are the agents admitted as guests in this agent's
	// conversations; nil admits every other agent of the Service, an
	// empty non-nil slice none.
	Guests []string

	// What the agent was built from, for the run logs, so that lllm
	// replay builds the agent of a recorded turn as it ran (the server
	// sets them from the serve config; an agent built in Go may leave
	// them empty, and its turns then replay only if nothing they name is
	// missing).

	// ContextConfig is the context manager's config (a config's
	// context_manager section) that Context was built from.
	ContextConfig map[string]any
	// SystemPromptPath is the system_prompt_path System was loaded from:
	// a file of PromptsDir ("research/agent") or a packaged prompt
	// ("mylab:agent"). The run logs record it in place of System's
	// template, so that a replay loads the prompt with its tools, parser
	// and format.
	SystemPromptPath string
	// PromptsDir is the prompts folder a local SystemPromptPath is in.
	PromptsDir string
	// Prompts are the texts of PromptsDir's prompt files by prompt path
	// (tactics.PromptFiles), which the run logs record (run_start.prompts)
	// so that a replay renders the prompt the turn rendered.
	Prompts map[string]string
}

// ServiceOptions adjust a Service. The zero value is ready to use.
type ServiceOptions struct {
	// AskTimeout is how long ask_user waits for the user's reply; zero
	// means DefaultAskTimeout.
	AskTimeout time.Duration
	// Tokens counts tokens for automatic compaction and the context
	// managers; nil uses a new tokenizer.
	Tokens *contextmgr.Tokenizer
	// LogDir is the log root under which every run writes a run log (see
	// package logs), as lllm run's runs do: each turn (tactic
	// RunTactic) with its dialog, model calls and tool calls, and each
	// compaction's summary call (tactic CompactTactic), labelled with
	// the conversation (LabelConversation). Empty writes no run logs.
	LogDir string
}

// Service runs agents in the conversations of a Store: one run per
// conversation at a time. It is safe for concurrent use.
type Service struct {
	store  *Store
	opts   ServiceOptions
	agents map[string]*agentEntry
	order  []string
	recall *dialog.Function
	ask    *dialog.Function
	// summary is the system prompt of a compaction's summary call.
	summary *dialog.Prompt

	mu   sync.Mutex
	runs map[key]*runState
}

type agentEntry struct {
	spec    *AgentSpec
	primary *dialog.Prompt // System with the conversation tools
	guest   *dialog.Prompt // System without tools
}

// NewService returns a Service running agents over store. Every agent
// needs a unique valid name, a model and a system prompt, and every guest
// it admits must be one of agents.
func NewService(store *Store, agents []*AgentSpec, opts ServiceOptions) (*Service, error) {
	if opts.AskTimeout <= 0 {
		opts.AskTimeout = DefaultAskTimeout
	}
	if opts.Tokens == nil {
		opts.Tokens = contextmgr.NewTokenizer()
	}
	s := &Service{store: store, opts: opts, agents: map[string]*agentEntry{}, runs: map[key]*runState{}}
	var err error
	if s.recall, s.ask, err = conversationTools(s.recallTool, s.askTool); err != nil {
		return nil, err
	}
	if s.summary, err = dialog.NewPrompt(summaryPath, summarySystem); err != nil {
		return nil, err
	}
	for _, sp := range agents {
		if sp == nil {
			return nil, errors.New("conversation: a nil agent")
		}
		if err := CheckName("agent", sp.Name); err != nil {
			return nil, fmt.Errorf("conversation: %w", err)
		}
		if s.agents[sp.Name] != nil {
			return nil, fmt.Errorf("conversation: %s is defined twice", tactics.AgentLabel(sp.Name))
		}
		if sp.Model == nil || sp.System == nil {
			return nil, fmt.Errorf("conversation: %s needs a model and a system prompt", tactics.AgentLabel(sp.Name))
		}
		if err := checkAskTimeout(sp, opts.AskTimeout); err != nil {
			return nil, fmt.Errorf("conversation: %w", err)
		}
		if sp.Limits.ToolConcurrency > 1 {
			return nil, fmt.Errorf("conversation: %s: %s", tactics.AgentLabel(sp.Name), ToolConcurrencyProblem)
		}
		e := &agentEntry{spec: sp, guest: sp.System.WithoutTools()}
		if e.primary, err = withTools(sp.System, s.recall, s.ask); err != nil {
			return nil, fmt.Errorf("conversation: %s: %w", tactics.AgentLabel(sp.Name), err)
		}
		s.agents[sp.Name] = e
		s.order = append(s.order, sp.Name)
	}
	for _, sp := range agents {
		for _, g := range sp.Guests {
			if s.agents[g] == nil {
				return nil, fmt.Errorf("conversation: %s admits guest %q, which is not an agent (agents: %s)", tactics.AgentLabel(sp.Name), g, strings.Join(s.order, ", "))
			}
		}
	}
	return s, nil
}

// ToolConcurrencyProblem says why a served agent cannot have a
// tactics.Limits.ToolConcurrency above one.
const ToolConcurrencyProblem = "tool_concurrency: a conversation runs its tool calls one at a time (ask_user waits for one reply at a time): remove it"

// checkAskTimeout reports an agent whose tool timeout would end its
// ask_user calls before ask_user's own timeout of ask does.
func checkAskTimeout(sp *AgentSpec, ask time.Duration) error {
	lim := sp.Limits.Resolved()
	if lim.ToolTimeout > 0 && lim.MaxInterruptSteps > 0 && lim.ToolTimeout < ask {
		return fmt.Errorf("%s: its tool timeout (tool_timeout, %v) is shorter than ask_user's timeout (ask_user_timeout, %v), so ask_user would stop waiting for the user before its time: raise tool_timeout or lower ask_user_timeout",
			tactics.AgentLabel(sp.Name), lim.ToolTimeout, ask)
	}
	return nil
}

// withTools returns p with fns added to its functions, unless it already
// has a function of that name.
func withTools(p *dialog.Prompt, fns ...*dialog.Function) (*dialog.Prompt, error) {
	all := append([]*dialog.Function(nil), p.Functions...)
	for _, f := range fns {
		if !slices.ContainsFunc(all, func(g *dialog.Function) bool { return g.Name == f.Name }) {
			all = append(all, f)
		}
	}
	opts := []dialog.PromptOption{dialog.WithFunctions(all...), dialog.WithHandler(p.Handler), dialog.WithMetadata(p.Metadata)}
	if p.Parser != nil {
		opts = append(opts, dialog.WithParser(p.Parser))
	}
	if p.Format != nil {
		opts = append(opts, dialog.WithFormat(p.Format))
	}
	return dialog.NewPrompt(p.Path, p.Template, opts...)
}

// Store is the service's store.
func (s *Service) Store() *Store { return s.store }

// AgentInfo describes a configured agent.
type AgentInfo struct {
	Name          string   `json:"name"`
	Model         string   `json:"model"`
	Guests        []string `json:"guests"`
	CompactTokens int      `json:"compact_tokens,omitempty"`
	Tools         []string `json:"tools"`
}

// Agents describes the service's agents in configuration order.
func (s *Service) Agents() []AgentInfo {
	out := make([]AgentInfo, 0, len(s.order))
	for _, n := range s.order {
		e := s.agents[n]
		info := AgentInfo{Name: n, Model: e.spec.ModelName, Guests: s.admitted(e.spec), CompactTokens: e.spec.CompactTokens}
		for _, f := range e.primary.Functions {
			info.Tools = append(info.Tools, f.Name)
		}
		out = append(out, info)
	}
	return out
}

// admitted lists the guests sp admits.
func (s *Service) admitted(sp *AgentSpec) []string {
	if sp.Guests != nil {
		return append([]string{}, sp.Guests...)
	}
	var out []string
	for _, n := range s.order {
		if n != sp.Name {
			out = append(out, n)
		}
	}
	return out
}

// Agent returns the spec of the named agent.
func (s *Service) Agent(name string) (*AgentSpec, error) {
	e := s.agents[name]
	if e == nil {
		return nil, s.unknown(ErrUnknownAgent, name)
	}
	return e.spec, nil
}

func (s *Service) unknown(kind error, name string) error {
	return fmt.Errorf("%w %q (agents: %s)", kind, name, strings.Join(s.order, ", "))
}

// Event is one step of a run, as a stream reports it.
type Event struct {
	// Type is "start", "text", "reasoning", "tool", "ask", "retry",
	// "error" or "end". A retry says that the model call failed (Error)
	// and is made again: the text and reasoning streamed since the start
	// or the last tool call are dropped, and the new attempt's follow.
	Type string `json:"type"`
	// Agent is the agent that answers.
	Agent  string `json:"agent"`
	Sender string `json:"sender,omitempty"`
	// Guest is set on start and end when the answering agent is a guest.
	Guest bool `json:"guest,omitempty"`
	// Text is a piece of the reply (text) or of its reasoning
	// (reasoning), or the question (ask).
	Text string `json:"text,omitempty"`
	// Tool is a tool call the model made (tool).
	Tool *dialog.FunctionCall `json:"tool,omitempty"`
	// Status is how the run ended (end): "ok", "killed", "cancelled" (the
	// client went away or the server stopped) or "error".
	Status string `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
	// Message is the stored reply (end, when ok).
	Message *Entry `json:"message,omitempty"`
	// Compacted is the archive an automatic compaction made (end).
	Compacted *Archive `json:"compacted,omitempty"`
}

// RunRequest is one turn: content from sender to agent, answered by
// agent or by the guest.
type RunRequest struct {
	Agent   string
	Sender  string
	Content string
	// CWD is the working directory of this run. The first one a
	// conversation gets becomes its default; later ones do not change it.
	CWD string
	// Guest names the agent that answers instead of Agent, as a guest.
	Guest string
}

// runState is a run in progress.
type runState struct {
	svc    *Service
	conv   *Conversation
	agent  string // the answering agent
	cancel context.CancelCauseFunc
	emit   func(Event) error
	turn   int64 // the seq of the sender's message the run answers

	mu      sync.Mutex
	pending chan string // the reply channel of a pending ask_user
	// asked is closed once the last ask_user has stored its question;
	// over is set once the run's call loop has returned, after which no
	// ask_user starts (see settle).
	asked chan struct{}
	over  bool

	ended chan struct{} // closed when the run frees its conversation
}

type runKey struct{}

// settle waits for an ask_user the call loop left running when its
// context ended (tactics.Limits.ToolTimeout) to store its question, so
// that a run's questions are stored before how it ended; ask_user returns
// promptly once its context ends. No ask_user starts after it.
func (st *runState) settle() {
	st.mu.Lock()
	st.over = true
	asked := st.asked
	st.mu.Unlock()
	if asked != nil {
		<-asked
	}
}

// Check validates req as Run would, without running or storing anything.
func (s *Service) Check(req RunRequest) error {
	_, _, err := s.check(req)
	return err
}

func (s *Service) check(req RunRequest) (primary, answering *agentEntry, err error) {
	primary = s.agents[req.Agent]
	if primary == nil {
		if err := CheckName("agent", req.Agent); err != nil {
			return nil, nil, err
		}
		return nil, nil, s.unknown(ErrUnknownAgent, req.Agent)
	}
	if err := CheckName("sender", req.Sender); err != nil {
		return nil, nil, err
	}
	if s.agents[req.Sender] != nil {
		// A sender so named would read as the agent itself in the
		// participants and in the framing of its runs.
		return nil, nil, fmt.Errorf("%w: sender %q is the name of an agent of this server: take a name of your own (an agent joins another's conversation as a guest)", ErrBadName, req.Sender)
	}
	if strings.TrimSpace(req.Content) == "" {
		return nil, nil, ErrEmptyContent
	}
	answering = primary
	if req.Guest != "" {
		g := s.agents[req.Guest]
		if g == nil {
			return nil, nil, s.unknown(ErrUnknownGuest, req.Guest)
		}
		adm := s.admitted(primary.spec)
		if req.Guest == req.Agent || !slices.Contains(adm, req.Guest) {
			admitted := "it admits no guests"
			if len(adm) > 0 {
				admitted = "admitted: " + strings.Join(adm, ", ")
			}
			return nil, nil, fmt.Errorf("%w: %s may not join conversations of %s (%s)", ErrGuestNotAdmitted, req.Guest, req.Agent, admitted)
		}
		answering = g
	}
	return primary, answering, nil
}

// busyHint says what to do about a conversation that is busy.
const busyHint = "wait for its end, or kill it (POST /v1/kill)"

// begin takes the run slot of conv.
func (s *Service) begin(conv *Conversation, st *runState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{conv.agent, conv.sender}
	if s.runs[k] != nil {
		return fmt.Errorf("conversation %s/%s: %w", conv.agent, conv.sender, ErrBusy)
	}
	st.ended = make(chan struct{})
	s.runs[k] = st
	return nil
}

// end frees the conversation of the run begin gave it to.
func (s *Service) end(conv *Conversation) {
	k := key{conv.agent, conv.sender}
	s.mu.Lock()
	st := s.runs[k]
	delete(s.runs, k)
	s.mu.Unlock()
	if st != nil {
		close(st.ended)
	}
}

// killWait bounds how long Kill waits for the run it cancels to end.
const killWait = 5 * time.Second

// Run runs one turn: it checks req (a bad request changes nothing),
// stores the sender's message, runs the answering agent over the
// conversation, streams what happens to emit, and stores the finished
// reply. A run that is killed, cancelled or fails stores no reply, but an
// abort record saying how it ended (see BuildRequest); the questions it
// asked with ask_user are stored with their answers either way. emit
// may be nil; an error from it while text streams cancels the run. A reply
// whose end event emit took is read (it does not count as unread); with a
// nil emit, or when the end could not be sent, it stays unread.
//
// The events are start, then text, tool and ask as they happen, then end,
// which says how the run ended. Start and end name the answering agent.
//
// With ServiceOptions.LogDir set, the turn is recorded in a run log of its
// own (tactic RunTactic), finished however the run ends; a log that
// cannot be created fails the turn before anything is stored.
func (s *Service) Run(ctx context.Context, req RunRequest, emit func(Event) error) (*Entry, error) {
	primary, answering, err := s.check(req)
	if err != nil {
		return nil, err
	}
	delivered := emit != nil // a reply streamed to its end is read
	if emit == nil {
		emit = func(Event) error { return nil }
	}
	conv, err := s.store.Get(req.Agent, req.Sender)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	st := &runState{svc: s, conv: conv, agent: answering.spec.Name, cancel: cancel, emit: emit}
	if err := s.begin(conv, st); err != nil {
		return nil, fmt.Errorf("%w: %s", err, busyHint)
	}
	var released sync.Once
	release := func() { released.Do(func() { s.end(conv) }) }
	defer release()
	// Deleted between Get and begin: this turn starts the new one.
	if conv, err = s.store.Get(req.Agent, req.Sender); err != nil {
		return nil, err
	}
	st.conv = conv
	// However the turn ends, its records are synced and the log closed:
	// an idle conversation holds no open file.
	defer func() {
		if err := conv.Sync(); err != nil {
			s.store.opts.Logger.Warn("syncing the log at the end of a turn", "agent", conv.agent, "sender", conv.sender, "err", err)
		}
	}()

	guest := answering != primary
	cwd := req.CWD
	if cwd == "" {
		cwd = conv.CWD()
	}
	// What the model is sent after the system prompt: the history with
	// the sender's message, as it is about to be stored. The run log
	// records how many messages that is (its dialog holds them), so that
	// a replay starts from them.
	msg := dialog.Message{Role: dialog.RoleUser, Name: req.Sender, Content: req.Content, Modality: dialog.ModalityText}
	request := buildRequest(conv.agent, conv.sender, append(conv.Messages(), Entry{Message: &msg}), conv.Participants()[2:], answering.spec.Name, guest, cwd)
	// The run log first: a turn that cannot be logged stores nothing.
	rl, err := s.startRunLog(ctx, RunTactic, conv, answering.spec, guest, cwd, req.Content, len(request))
	if err != nil {
		return nil, err
	}
	defer rl.finishOnPanic()
	// failed ends the run log of a turn that failed before it began.
	failed := func(err error) (*Entry, error) {
		if ferr := rl.finish(ctx, nil, err); ferr != nil {
			err = errors.Join(err, ferr)
		}
		return nil, err
	}

	// Everything before this turn has been seen by the sender.
	if err := conv.MarkRead(); err != nil {
		return failed(err)
	}
	if conv.Title() == "" {
		if err := conv.SetTitle(TitleOf(req.Content)); err != nil {
			return failed(err)
		}
	}
	if req.CWD != "" && conv.CWD() == "" {
		if err := conv.SetCWD(req.CWD); err != nil {
			return failed(err)
		}
	}
	turn, err := conv.Append(msg)
	if err != nil {
		return failed(err)
	}
	st.turn = turn.Seq
	_ = emit(Event{Type: "start", Agent: st.agent, Sender: req.Sender, Guest: guest})

	finish := func(ev Event) error {
		ev.Type, ev.Agent, ev.Sender, ev.Guest = "end", st.agent, req.Sender, guest
		release() // free before the client hears the end: it may send at once
		return emit(ev)
	}
	// abort ends a turn that stores no reply: it stores an abort record
	// (so that the runs that follow can tell the model), finishes the
	// run log and sends the end event with status.
	abort := func(status, abortStatus string, err error) (*Entry, error) {
		ab := Abort{Turn: turn.Seq, Agent: st.agent, Status: abortStatus, Error: err.Error()}
		if werr := conv.addAbort(ab); werr != nil {
			s.store.opts.Logger.Warn("storing that a run ended without a reply", "agent", conv.agent, "sender", conv.sender, "status", abortStatus, "err", werr)
		}
		if ferr := rl.finish(ctx, nil, err); ferr != nil {
			_ = emit(Event{Type: "error", Agent: st.agent, Error: ferr.Error()})
			err = errors.Join(err, ferr)
		}
		finish(Event{Status: status, Error: err.Error()})
		return nil, err
	}
	reply, err := s.respond(context.WithValue(ctx, runKey{}, st), st, answering, guest, request, cwd, rl.log())
	st.settle()
	if err == nil {
		reply.Name = st.agent
		if guest {
			reply.Agent = st.agent
		}
		if cerr := context.Cause(ctx); cerr != nil {
			err = cerr // killed after the model answered: not a finished turn
		}
	}
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrKilled) {
			return abort("killed", AbortKilled, fmt.Errorf("conversation %s/%s: run %w", conv.agent, conv.sender, ErrKilled))
		}
		status, abortStatus := "error", AbortFailed
		if ctx.Err() != nil {
			// Not the model's fault: say what ended the run, not how the
			// provider call noticed ("context canceled").
			status, abortStatus = "cancelled", AbortCancelled
			cause := context.Cause(ctx)
			if cause == context.Canceled { // no cause given: the request's own context
				cause = errors.New("the client went away")
			}
			err = fmt.Errorf("conversation %s/%s: run cancelled: %w", conv.agent, conv.sender, cause)
		}
		_ = emit(Event{Type: "error", Agent: st.agent, Error: err.Error()})
		return abort(status, abortStatus, err)
	}
	e, err := conv.Append(*reply)
	if err == nil {
		err = conv.Sync()
	}
	if err != nil {
		_ = emit(Event{Type: "error", Agent: st.agent, Error: err.Error()})
		return abort("error", AbortFailed, err) // the log refuses writes after a failed one: the abort is most likely lost too
	}
	// The reply is stored: the turn is done, whatever its log says.
	if ferr := rl.finish(ctx, reply.Text(), nil); ferr != nil {
		s.store.opts.Logger.Warn("finishing the run log of a stored reply", "agent", conv.agent, "sender", conv.sender, "err", ferr)
		_ = emit(Event{Type: "error", Agent: st.agent, Error: ferr.Error()})
	}
	end := Event{Status: "ok", Message: &e}
	if sp := primary.spec; sp.CompactTokens > 0 && s.liveTokens(conv, sp.ModelName) > sp.CompactTokens {
		a, cerr := conv.Compact(ctx, s.summarizer(primary, conv))
		if cerr != nil {
			_ = emit(Event{Type: "error", Agent: st.agent, Error: "automatic compaction: " + cerr.Error()})
		} else {
			end.Compacted = &a
		}
	}
	if finish(end) == nil && delivered {
		// The sender has the reply: it is read, not waiting for them.
		if err := conv.MarkRead(); err != nil {
			s.store.opts.Logger.Warn("marking a streamed reply read", "agent", conv.agent, "sender", conv.sender, "err", err)
		}
	}
	return &e, nil
}

// liveTokens counts the tokens of conv's live history.
func (s *Service) liveTokens(conv *Conversation, model string) int {
	n := 0
	for _, e := range conv.Messages() {
		n += s.opts.Tokens.CountMessage(model, e.Message)
	}
	return n
}

// respond runs the answering agent over request, the conversation as
// BuildRequest shows it, with tactics.Agent's call loop, on a dialog built
// for this run only.
func (s *Service) respond(ctx context.Context, st *runState, answering *agentEntry, guest bool, request []dialog.Message, cwd string, log tactics.Log) (*dialog.Message, error) {
	sp := answering.spec
	system := answering.primary
	if guest {
		system = answering.guest
	}
	a := &tactics.Agent{Name: sp.Name, System: system, Model: eventModel{sp.Model, st}, ModelName: sp.ModelName,
		Params: sp.Params, Limits: sp.Limits, Context: sp.Context, ContextName: sp.ContextName, Tokens: s.opts.Tokens, Log: log,
		Stream: func(ctx context.Context, c provider.Chunk) error {
			if c.Reasoning != "" {
				return st.emit(Event{Type: "reasoning", Agent: st.agent, Text: c.Reasoning})
			}
			if c.Text == "" {
				return nil
			}
			return st.emit(Event{Type: "text", Agent: st.agent, Text: c.Text})
		},
		Retrying: func(r tactics.Retry) {
			// A client that went away fails the next stream write.
			_ = st.emit(Event{Type: "retry", Agent: st.agent, Error: r.Err.Error()})
		}}
	if guest {
		a.Limits = textOnly(a.Limits)
	}
	for i := range request {
		// An earlier reply's usage and dollars are its run's, not this
		// one's: the run log's dialog would count them again.
		request[i].Usage, request[i].USD = dialog.Usage{}, 0
	}
	reply, err := answerWithAgent(ctx, a, st.conv.sender, cwd, request)
	if err != nil {
		return nil, err
	}
	return reply.Clone(), nil
}

// PromptVariable reports whether a served agent's system prompt may use
// the template variable name: a turn renders it with agent (the agent's
// name), sender and cwd alone.
func PromptVariable(name string) bool {
	return name == "agent" || name == "sender" || name == "cwd"
}

// answerWithAgent has a answer request (the messages after its system
// prompt) in a dialog "conversation", its system prompt rendered for
// sender and cwd, and returns the reply. A turn and its replay both run
// it.
func answerWithAgent(ctx context.Context, a *tactics.Agent, sender, cwd string, request []dialog.Message) (*dialog.Message, error) {
	if err := a.Open("conversation", map[string]any{"agent": a.Name, "sender": sender, "cwd": cwd}); err != nil {
		return nil, err
	}
	d, err := a.Dialog("")
	if err != nil {
		return nil, err
	}
	for _, m := range request {
		if _, err := d.Append(m); err != nil {
			return nil, err
		}
	}
	reply, _, err := a.Respond(ctx)
	return reply, err
}

// BuildRequest returns the messages, after the system prompt, that a run
// of agent in conv sends: the live history with every guest reply wrapped
// in <from agent="NAME"> tags, and this run's framing message inserted
// just before the newest user message. After a sender's message come the
// ask_user questions its run asked (the agent's message) with their
// answers (the sender's), and, when its run stored no reply, a note (a
// user message named NoteName) saying how the run ended. The framing, the
// wrapping, the questions, answers and notes are built for the request;
// none is stored as a message.
func BuildRequest(conv *Conversation, agent string, guest bool, cwd string) []dialog.Message {
	return buildRequest(conv.agent, conv.sender, conv.Messages(), conv.Participants()[2:], agent, guest, cwd)
}

// buildRequest is BuildRequest for the conversation of convAgent with
// sender whose live history is entries and whose guests (that spoke) are
// guests.
func buildRequest(convAgent, sender string, entries []Entry, guests []string, agent string, guest bool, cwd string) []dialog.Message {
	out, last := history(convAgent, sender, entries)
	for i := range out {
		if m := &out[i]; m.Role == dialog.RoleAssistant && m.Agent != "" {
			m.Content = WrapGuest(m.Agent, m.Text())
			m.Parts = nil
		}
	}
	frame := framing(convAgent, sender, guests, agent, guest, cwd)
	if frame == "" {
		return out
	}
	fm := dialog.Message{Role: dialog.RoleUser, Name: "framing", Content: frame, Modality: dialog.ModalityText,
		Metadata: map[string]string{"framing": "run"}}
	if last < 0 {
		return append(out, fm)
	}
	return slices.Insert(out, last, fm)
}

// WrapGuest is how a guest's reply appears in a request.
func WrapGuest(agent, text string) string {
	return "<from agent=\"" + agent + "\">\n" + text + "\n</from>"
}

// framing is the run-only message that tells the answering agent where it
// stands; empty when the primary needs none.
func framing(convAgent, sender string, guests []string, agent string, guest bool, cwd string) string {
	var b strings.Builder
	if guest {
		fmt.Fprintf(&b, "[framing] You are %s, joining as a guest the conversation between %s and the agent %s. "+
			"The unwrapped assistant replies are %s's; replies wrapped in <from agent=\"NAME\"> tags are other guests'. "+
			"Answer %s's newest message as %s, in plain text: you have no tools here.", agent, sender, convAgent, convAgent, sender, agent)
	} else if len(guests) > 0 {
		fmt.Fprintf(&b, "[framing] You are %s, talking with %s. Replies wrapped in <from agent=\"NAME\"> tags were written by guest agents (%s) who joined the conversation, not by you.",
			agent, sender, strings.Join(guests, ", "))
	}
	if cwd != "" {
		if b.Len() == 0 {
			b.WriteString("[framing]")
		}
		fmt.Fprintf(&b, " The working directory of this turn is %s.", cwd)
	}
	return b.String()
}

// eventModel reports the tool calls of each reply as tool events.
type eventModel struct {
	provider.Model
	st *runState
}

func (m eventModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	resp, err := m.Model.Generate(ctx, req)
	if err == nil {
		for i := range resp.Message.FunctionCalls {
			fc := resp.Message.FunctionCalls[i]
			_ = m.st.emit(Event{Type: "tool", Agent: m.st.agent, Tool: &fc})
		}
	}
	return resp, err
}

// summaryRequest is what a compaction asks the model after the history.
const summaryRequest = "Summarise the conversation above for your own later use. Start with one short sentence that names its topic, then keep every fact, decision, open question and result; drop pleasantries. Reply with the summary only."

// summarySystem is the system prompt of a compaction's summary call, and
// summaryPath its path.
const (
	summarySystem = "You summarise conversations of the agent {agent}."
	summaryPath   = "conversation/summarise"
)

// textOnly is l without tool rounds.
func textOnly(l tactics.Limits) tactics.Limits {
	l.MaxInterruptSteps = -1
	return l
}

// summarizer writes summaries of conv with the agent's model, in a call
// of tactics.Agent's loop (text only, the agent's retries, no context
// manager), recorded in a run log of its own (CompactTactic) when the
// Service writes run logs.
func (s *Service) summarizer(e *agentEntry, conv *Conversation) Summarizer {
	sp := e.spec
	return func(ctx context.Context, msgs []*dialog.Message) (string, error) {
		task := fmt.Sprintf("Summarise %d messages of the conversation %s/%s.", summarised(msgs), conv.agent, conv.sender)
		rl, err := s.startRunLog(ctx, CompactTactic, conv, sp, false, conv.CWD(), task, len(msgs))
		if err != nil {
			return "", err
		}
		defer rl.finishOnPanic()
		summary, err := s.summarize(ctx, sp, msgs, rl.log())
		var result any
		if err == nil {
			result = summary
		}
		if ferr := rl.finish(ctx, result, err); ferr != nil {
			return "", errors.Join(err, ferr)
		}
		return summary, err
	}
}

// summarised counts the messages of the conversation in msgs, the
// history a compaction summarises: not the questions, answers and notes
// that history adds for the model.
func summarised(msgs []*dialog.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Metadata[MetaAsk] == "" && m.Metadata[MetaNote] == "" {
			n++
		}
	}
	return n
}

// summarize asks the model of sp for a summary of msgs, recording the
// call in log (if not nil).
func (s *Service) summarize(ctx context.Context, sp *AgentSpec, msgs []*dialog.Message, log tactics.Log) (string, error) {
	a := &tactics.Agent{Name: sp.Name, System: s.summary, Model: sp.Model, ModelName: sp.ModelName, Params: sp.Params,
		Limits: textOnly(sp.Limits), Tokens: s.opts.Tokens, Log: log}
	history := make([]dialog.Message, len(msgs))
	for i, m := range msgs {
		c := *m
		c.Usage, c.USD = dialog.Usage{}, 0 // spent by the runs that made them
		if c.Role == dialog.RoleAssistant && c.Agent != "" {
			c.Content, c.Parts = WrapGuest(c.Agent, c.Text()), nil
		}
		history[i] = c
	}
	return summarizeWithAgent(ctx, a, history)
}

// summarizeWithAgent has a, whose system prompt is the summary prompt,
// summarise history (the messages as the model is to see them) in a
// dialog "compact", and returns the summary. A compaction and its replay
// both run it.
func summarizeWithAgent(ctx context.Context, a *tactics.Agent, history []dialog.Message) (string, error) {
	if err := a.Open("compact", map[string]any{"agent": a.Name}); err != nil {
		return "", err
	}
	d, err := a.Dialog("")
	if err != nil {
		return "", err
	}
	for _, m := range history {
		if _, err := d.Append(m); err != nil {
			return "", err
		}
	}
	if _, err := d.Append(dialog.Message{Role: dialog.RoleUser, Name: "user", Content: summaryRequest, Modality: dialog.ModalityText}); err != nil {
		return "", err
	}
	reply, _, err := a.Respond(ctx)
	if err != nil {
		return "", err
	}
	// An empty summary would leave the archived messages out of the live
	// history and out of recall's reach (it searches titles and summaries).
	if strings.TrimSpace(reply.Text()) == "" {
		return "", errors.New("the model's summary is empty: nothing was archived")
	}
	return reply.Text(), nil
}

// Compact compacts the conversation of agent with sender now. It is busy
// while a run is in progress there.
func (s *Service) Compact(ctx context.Context, agent, sender string) (Archive, error) {
	e := s.agents[agent]
	if e == nil {
		return Archive{}, s.unknown(ErrUnknownAgent, agent)
	}
	if err := CheckName("sender", sender); err != nil {
		return Archive{}, err
	}
	conv, ok := s.store.Lookup(agent, sender)
	if !ok {
		return Archive{}, fmt.Errorf("conversation %s/%s: %w: nothing is stored for it (GET /v1/conversations lists those that are)", agent, sender, ErrNoConversation)
	}
	st := &runState{svc: s, conv: conv, agent: agent, cancel: func(error) {}, emit: func(Event) error { return nil }}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	st.cancel = cancel
	if err := s.begin(conv, st); err != nil {
		return Archive{}, fmt.Errorf("%w: %s", err, busyHint)
	}
	defer s.end(conv)
	if cur, ok := s.store.Lookup(agent, sender); !ok || cur != conv {
		return Archive{}, ErrNothingToCompact // deleted meanwhile
	}
	return conv.Compact(ctx, s.summarizer(e, conv))
}

// Delete deletes the conversation of agent with sender: its folder moves
// into the data directory's trash (see Store.Delete), at the path it
// returns, relative to the data directory. It is busy (ErrBusy) while a
// run or a compaction is in progress there, and ErrNoConversation when
// nothing is stored for it.
func (s *Service) Delete(agent, sender string) (string, error) {
	conv, err := s.existing(agent, sender)
	if err != nil {
		return "", err
	}
	// The run slot keeps a run from starting while the folder moves.
	st := &runState{svc: s, conv: conv, agent: agent, cancel: func(error) {}, emit: func(Event) error { return nil }}
	if err := s.begin(conv, st); err != nil {
		return "", fmt.Errorf("%w: kill it (POST /v1/kill) or wait for its end, then delete", err)
	}
	defer s.end(conv)
	return s.store.Delete(agent, sender)
}

// MarkRead records that sender has read every reply of the conversation
// of agent with sender, so that its unread count is zero, and syncs the
// log. It is ErrNoConversation when nothing is stored for it.
func (s *Service) MarkRead(agent, sender string) error {
	conv, err := s.existing(agent, sender)
	if err != nil {
		return err
	}
	if err := conv.MarkRead(); err != nil {
		return err
	}
	return conv.Sync()
}

// existing returns the stored conversation of agent (a configured agent,
// or one whose conversations are stored though the config no longer has it)
// with sender.
func (s *Service) existing(agent, sender string) (*Conversation, error) {
	if err := CheckName("agent", agent); err != nil {
		return nil, err
	}
	if err := CheckName("sender", sender); err != nil {
		return nil, err
	}
	conv, ok := s.store.Lookup(agent, sender)
	if s.agents[agent] == nil && (!ok || !conv.written()) {
		// A conversation stored for an agent the config no longer has
		// can still be deleted and marked read.
		return nil, s.unknown(ErrUnknownAgent, agent)
	}
	if !ok || !conv.written() {
		return nil, fmt.Errorf("conversation %s/%s: %w: nothing is stored for it (GET /v1/conversations lists those that are)", agent, sender, ErrNoConversation)
	}
	return conv, nil
}

// Kill cancels the run in progress in the conversation of agent with
// sender; its partial reply is not stored. It returns once the run has
// ended and freed the conversation (at most five seconds after the
// cancellation), so that a request that follows finds it free.
func (s *Service) Kill(agent, sender string) error {
	if s.agents[agent] == nil {
		return s.unknown(ErrUnknownAgent, agent)
	}
	if err := CheckName("sender", sender); err != nil {
		return err
	}
	s.mu.Lock()
	st := s.runs[key{agent, sender}]
	s.mu.Unlock()
	if st == nil {
		return fmt.Errorf("conversation %s/%s: %w", agent, sender, ErrNotRunning)
	}
	st.cancel(ErrKilled)
	// Its end (the abort record) is quick once cancelled: wait for it, so
	// that what the caller does next finds the conversation free.
	select {
	case <-st.ended:
	case <-time.After(killWait):
	}
	return nil
}

// Running reports whether a run is in progress in the conversation.
func (s *Service) Running(agent, sender string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[key{agent, sender}] != nil
}

// Pending reports whether an ask_user question waits for a reply in the
// conversation.
func (s *Service) Pending(agent, sender string) bool {
	s.mu.Lock()
	st := s.runs[key{agent, sender}]
	s.mu.Unlock()
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.pending != nil
}

// Reply answers the ask_user question pending in the conversation of
// agent with sender. With nothing pending it is ErrNothingPending.
func (s *Service) Reply(agent, sender, content string) error {
	if s.agents[agent] == nil {
		return s.unknown(ErrUnknownAgent, agent)
	}
	if err := CheckName("sender", sender); err != nil {
		return err
	}
	if strings.TrimSpace(content) == "" {
		return ErrEmptyContent
	}
	s.mu.Lock()
	st := s.runs[key{agent, sender}]
	s.mu.Unlock()
	if st != nil {
		st.mu.Lock()
		ch := st.pending
		st.pending = nil
		st.mu.Unlock()
		if ch != nil {
			ch <- content // buffered: never blocks
			return nil
		}
	}
	return fmt.Errorf("conversation %s/%s: %w", agent, sender, ErrNothingPending)
}

type askArgs struct {
	Question string `json:"question" jsonschema:"the question for the user"`
}

// askTool is ask_user: it emits the question and waits for Reply.
func (s *Service) askTool(ctx context.Context, in askArgs) (string, error) {
	st, _ := ctx.Value(runKey{}).(*runState)
	if st == nil {
		return "", errors.New("ask_user works only in a conversation run")
	}
	if strings.TrimSpace(in.Question) == "" {
		return "", errors.New("the question is empty")
	}
	ch := make(chan string, 1)
	st.mu.Lock()
	switch {
	case st.over:
		st.mu.Unlock()
		return "", errors.New("the run has ended")
	case st.pending != nil:
		st.mu.Unlock()
		return "", errors.New("a question is already waiting for the user's answer")
	}
	st.pending = ch
	asked := make(chan struct{})
	st.asked = asked
	st.mu.Unlock()
	defer close(asked) // last: once the question is stored
	defer func() {
		st.mu.Lock()
		if st.pending == ch {
			st.pending = nil
		}
		st.mu.Unlock()
	}()
	_ = st.emit(Event{Type: "ask", Agent: st.agent, Text: in.Question})
	t := time.NewTimer(s.opts.AskTimeout)
	defer t.Stop()
	// The question and its answer (or why there is none) are stored, so
	// that the runs that follow see them (see BuildRequest).
	rec := Ask{Turn: st.turn, Agent: st.agent, Question: in.Question}
	var out string
	var err error
	select {
	case ans := <-ch:
		rec.Answer, out = ans, "The user answered: "+ans
	case <-t.C:
		err = fmt.Errorf("the user did not answer within %s", s.opts.AskTimeout)
		rec.Error = err.Error()
	case <-ctx.Done():
		err = context.Cause(ctx)
		why := err.Error()
		if errors.Is(err, context.Canceled) {
			why = "cancelled: the client went away or the server stopped"
		}
		rec.Error = "the run ended before the user answered (" + why + ")"
	}
	if werr := st.conv.addAsk(rec); werr != nil {
		s.store.opts.Logger.Warn("storing an ask_user question and its answer", "agent", st.conv.agent, "sender", st.conv.sender, "err", werr)
	}
	return out, err
}

type recallArgs struct {
	Query string `json:"query" jsonschema:"keywords to look for in the archives' titles and summaries"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many archives to return at most (default 5)"`
}

// recallTool is recall: BM25 over the conversation's archives.
func (s *Service) recallTool(ctx context.Context, in recallArgs) (string, error) {
	st, _ := ctx.Value(runKey{}).(*runState)
	if st == nil {
		return "", errors.New("recall works only in a conversation run")
	}
	hits := st.conv.Recall(in.Query, in.Limit)
	if len(hits) == 0 {
		return fmt.Sprintf("No archive matches %q (the conversation has %d archives).", in.Query, len(st.conv.Archives())), nil
	}
	var b strings.Builder
	for _, h := range hits {
		fmt.Fprintf(&b, "Archive %d (%s): %s\n%s\n\n", h.ID, h.Created.Format(time.DateOnly), h.Title, h.Summary)
	}
	return strings.TrimSpace(b.String()), nil
}
