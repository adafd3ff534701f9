package tactics

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/registry"
	"github.com/lllm-go/lllm/internal/suggest"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/prompts"
)

// Tactic is a research strategy: a Go program that drives agents to answer
// a task. Register a factory for it in init, and name it in a config's
// tactic_type.
type Tactic interface {
	// Agents names the agents the tactic needs; the config must define
	// each under agent_configs.
	Agents() []string
	// Call runs the tactic on one task and returns its result, which must
	// encode to JSON.
	Call(ctx context.Context, s *Session, task string) (any, error)
}

// Factory builds a tactic from the params of its config. It must reject
// params it does not know, with an error naming them.
type Factory func(params map[string]any) (Tactic, error)

var factories = registry.New[Factory]("tactic", "tactics", nil)

// Register makes a tactic available under name: a path ("best_of_n",
// "research/probe") or a package-qualified one ("mylab:probe"), which a
// config names in tactic_type (a bare path finds a qualified name when
// only one package has it). It panics when name is malformed or taken, or
// f is nil, which are programming errors of init code, as
// database/sql.Register does.
func Register(name string, f Factory) {
	if f == nil {
		panic("tactics: Register " + name + " with a nil factory")
	}
	factories.MustRegister(name, f)
}

// RegisterReplayOnly is [Register] for a tactic that only a replay runs:
// one that redoes, from its run log, work another program recorded, such
// as a turn of lllm serve. New builds it as any other, but the error for
// an unknown tactic neither lists nor suggests it, since no config a run
// starts from can use it.
func RegisterReplayOnly(name string, f Factory) {
	if f == nil {
		panic("tactics: RegisterReplayOnly " + name + " with a nil factory")
	}
	if err := factories.RegisterUnlisted(name, f); err != nil {
		panic(err)
	}
}

// builtinNames are the tactics package tactics/builtin registers.
var builtinNames = []string{"best_of_n", "chat", "debate", "react", "self_refine"}

// builtinHint adds to err, New's error for the unknown tactic name, how a
// program gets the built-in tactics, when name is one of them: a Go
// program that runs configs without importing tactics/builtin (or
// embedding the CLI) has none.
func builtinHint(name string, err error) error {
	if !slices.Contains(builtinNames, name) {
		return err
	}
	return fmt.Errorf("%w (%s is a built-in tactic: import _ \"github.com/lllm-go/lllm/tactics/builtin\" to register the built-in tactics)", err, name)
}

// Names lists the registered tactics, sorted, replay-only ones included.
func Names() []string { return factories.Names() }

// New builds the registered tactic name with params. An unknown name is an
// error listing the registered ones that a run can use (not the
// replay-only ones), with a suggestion when one is close.
func New(name string, params map[string]any) (Tactic, error) {
	f, full, err := factories.Lookup(name)
	if err != nil {
		return nil, builtinHint(name, err)
	}
	t, err := f(params)
	if err != nil {
		return nil, fmt.Errorf("tactic %s: %w", full, err)
	}
	return t, nil
}

// closest is the name s was likely meant to be, or "".
func closest(s string, names []string) string {
	best, _ := suggest.Closest(s, names)
	return best
}

// Session is one tactic call: the agents it may use, its log, and what it
// cost. Sub-tactic calls get sessions of their own that share the agents'
// templates and the log.
type Session struct {
	ID     string
	Tactic string
	Parent string // the calling session's ID, for a sub-tactic

	agents map[string]func() *Agent
	log    Log
	tactic Tactic

	turns   *turns        // shared with sub-sessions, so positions stay unique in a run
	prompts *promptSource // the config's prompts folder, shared with sub-sessions

	mu    sync.Mutex
	made  map[string]*Agent
	calls []*CallSession
}

// NewSession prepares a call of tactic t, registered as name. agents makes
// a fresh agent for each name the tactic asks for; log may be nil.
func NewSession(name string, t Tactic, agents map[string]func() *Agent, log Log) *Session {
	return &Session{ID: newSessionID(), Tactic: name, tactic: t, agents: agents, log: log, turns: &turns{}}
}

func newSessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Prompt returns the prompt at path: a file of the run's prompts folder
// (the config's prompts_dir, or prompts/ beside it), "research/critic"
// for research/critic.md, with the tools, parser and format of its front
// matter; or a packaged prompt, "pkg:path" (prompts.RegisterPackage).
func (s *Session) Prompt(path string) (*dialog.Prompt, error) {
	local, err := s.prompts.registry()
	if err != nil {
		return nil, err
	}
	return prompts.Lookup(path, local, prompts.WithTools(LookupTool))
}

// Agent returns the session's agent name, made on first use. Its calls are
// counted in the session's cost.
func (s *Session) Agent(name string) (*Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.made[name]; a != nil {
		return a, nil
	}
	mk := s.agents[name]
	if mk == nil {
		names := make([]string, 0, len(s.agents))
		for n := range s.agents {
			names = append(names, n)
		}
		slices.Sort(names)
		configured := "no agents are configured"
		if len(names) > 0 {
			configured = "configured: " + strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("tactic %s: no agent %q (%s)", s.Tactic, name, configured)
	}
	a := mk()
	a.onCall, a.turns = s.record, s.turns
	if s.made == nil {
		s.made = map[string]*Agent{}
	}
	s.made[name] = a
	return a, nil
}

func (s *Session) record(c *CallSession) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

// Calls returns the agent calls made in the session so far.
func (s *Session) Calls() []*CallSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Cost sums the cost of the session's agent calls.
func (s *Session) Cost() dialog.Cost {
	var c dialog.Cost
	for _, call := range s.Calls() {
		c = c.Add(call.Cost)
	}
	return c
}

// Run calls the session's tactic on task, recording tactic_start and
// tactic_end in the log.
func (s *Session) Run(ctx context.Context, task string) (any, error) {
	taskJSON, _ := json.Marshal(task) // a string always encodes
	if err := s.write(&logs.Record{Kind: logs.KindTacticStart, TacticStart: &logs.TacticStart{
		Session: s.ID, Parent: s.Parent, Tactic: s.Tactic, Task: taskJSON}}); err != nil {
		return nil, err
	}
	result, err := s.call(ctx, task)
	end := &logs.TacticEnd{Session: s.ID, Tactic: s.Tactic, Status: logs.StatusOK, Cost: s.Cost()}
	if err == nil {
		if end.Result, err = json.Marshal(result); err != nil {
			err = fmt.Errorf("tactic %s: result does not encode to JSON: %w", s.Tactic, err)
		}
	}
	if err != nil {
		end.Status, end.Error = statusOf(ctx, err), err.Error()
	}
	if werr := s.write(&logs.Record{Kind: logs.KindTacticEnd, TacticEnd: end}); werr != nil && err == nil {
		err = werr
	}
	return result, err
}

// call runs the tactic, turning a panic into an error that carries the
// panic's value and stack, so that the run's log is finished with what
// happened and a batch or sweep goes on with its other tasks. Its first
// line names the function and line that panicked, since a command line
// shows only that line.
func (s *Session) call(ctx context.Context, task string) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, fmt.Errorf("tactic %s panicked: %v%s\n%s", s.Tactic, v, panicSite(), debug.Stack())
		}
	}()
	return s.tactic.Call(ctx, s, task)
}

// panicSite is " (at FUNCTION, FILE:LINE)" for the function that panicked,
// the first frame outside the runtime below the deferred call it is called
// from; "" when there is none.
func panicSite() string {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(3, pc)])
	for {
		f, more := frames.Next()
		if f.Function != "" && !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf(" (at %s, %s:%d)", f.Function, f.File, f.Line)
		}
		if !more {
			return ""
		}
	}
}

// Sub calls another registered tactic as part of this one, with the same
// agents and log; its cost counts in this session's too.
func (s *Session) Sub(ctx context.Context, name string, params map[string]any, task string) (any, error) {
	t, err := New(name, params)
	if err != nil {
		return nil, err
	}
	sub := NewSession(name, t, s.agents, s.log)
	sub.Parent, sub.turns, sub.prompts = s.ID, s.turns, s.prompts
	result, err := sub.Run(ctx, task)
	for _, c := range sub.Calls() {
		s.record(c)
	}
	return result, err
}

func (s *Session) write(rec *logs.Record) error {
	if s.log == nil {
		return nil
	}
	return s.log.Write(rec)
}

// statusOf is how a run or tactic that failed with err ended.
func statusOf(ctx context.Context, err error) logs.Status {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return logs.StatusCancelled
	}
	return logs.StatusFailed
}
