// Package logs is the run log: the durable, append-only record of everything
// a run did, and the tools to read it back.
//
// A run log is a JSON-lines file, one record per event, each with a kind, a
// sequence number and a timestamp. The format is versioned and documented in
// docs/log-format.md. Writer appends records safely from many goroutines,
// Reader streams them back, Rebuild turns them into the run's dialog forest,
// and Create, Open and List manage one directory per run under a log root.
// Package inspect draws a rebuilt forest (inspect.Render) and compares
// runs; package replay runs a logged run again against its log.
package logs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// The format this package writes. A reader accepts any 1.x log: records
// of kinds it does not know are skipped when the log's minor version is
// newer than its own.
const (
	FormatName   = "lllm-go/run-log"
	VersionMajor = 1
	VersionMinor = 8
)

// Kind is the kind of a record. The payload of a record is under the key
// named by its kind.
type Kind string

// The record kinds of format 1.0.
const (
	KindRunStart    Kind = "run_start"
	KindRunEnd      Kind = "run_end"
	KindDialogOpen  Kind = "dialog_open"
	KindFork        Kind = "fork"
	KindMessage     Kind = "message"
	KindModelCall   Kind = "model_call"
	KindToolCall    Kind = "tool_call"
	KindContext     Kind = "context"
	KindTacticStart Kind = "tactic_start"
	KindTacticEnd   Kind = "tactic_end"
	// KindDeclarations holds the tools and format model calls declare,
	// once per run for each distinct set (since format 1.4).
	KindDeclarations Kind = "declarations"
)

func (k Kind) known() bool {
	switch k {
	case KindRunStart, KindRunEnd, KindDialogOpen, KindFork, KindMessage,
		KindModelCall, KindToolCall, KindContext, KindTacticStart, KindTacticEnd, KindDeclarations:
		return true
	}
	return false
}

// Record is one line of a run log. Seq and Time are set by the Writer.
// Exactly one payload field is set: the one named by Kind.
type Record struct {
	Seq  int64     `json:"seq"`
	Time time.Time `json:"ts"`
	Kind Kind      `json:"kind"`
	// Dialog is the id of the dialog the record is about, if any.
	Dialog string `json:"dialog,omitempty"`
	// Index is a message record's position in its dialog.
	Index int `json:"index,omitempty"`
	// Prompt is the path of the prompt that rendered a message, if any.
	Prompt string `json:"prompt,omitempty"`

	RunStart    *RunStart        `json:"run_start,omitempty"`
	RunEnd      *RunEnd          `json:"run_end,omitempty"`
	DialogOpen  *dialog.TreeNode `json:"dialog_open,omitempty"`
	Fork        *dialog.TreeNode `json:"fork,omitempty"`
	Message     *dialog.Message  `json:"message,omitempty"`
	ModelCall   *ModelCall       `json:"model_call,omitempty"`
	ToolCall    *ToolCall        `json:"tool_call,omitempty"`
	Context     *ContextAction   `json:"context,omitempty"`
	TacticStart *TacticStart     `json:"tactic_start,omitempty"`
	TacticEnd   *TacticEnd       `json:"tactic_end,omitempty"`
	// Declarations is set in records of KindDeclarations.
	Declarations *Declarations `json:"declarations,omitempty"`
}

// RunStart opens every log: what ran, on what, from which code.
type RunStart struct {
	Format  string `json:"format"`  // always FormatName
	Version string `json:"version"` // "major.minor" of the format
	RunID   string `json:"run_id"`
	Tactic  string `json:"tactic,omitempty"`
	// Config is the fully resolved configuration the run used.
	Config json.RawMessage `json:"config,omitempty"`
	// Task is the tactic's input.
	Task json.RawMessage `json:"task,omitempty"`
	Seed int64           `json:"seed,omitzero"`
	// Prompts holds the text of every file of the config's prompts
	// folder, by prompt path, so that a replay renders the prompts the
	// run rendered (since 1.5).
	Prompts map[string]string `json:"prompts,omitempty"`
	// Versions maps components (lllm, go, modules) to their versions.
	Versions map[string]string `json:"versions,omitempty"`
	// GitCommit is the commit of the working directory's repository, with
	// "-dirty" appended when it had uncommitted changes.
	GitCommit string            `json:"git_commit,omitempty"`
	Host      string            `json:"host,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Status is how a run or tactic ended.
type Status string

// The statuses a run can end with. A log with no run_end record belongs to
// a run that is still going or that crashed.
const (
	StatusOK        Status = "ok"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusRunning   Status = "running" // no run_end yet; never written
	// StatusInterrupted is a log without a run_end that no process writes
	// any more: its run was killed or crashed. Never written.
	StatusInterrupted Status = "interrupted"
)

// RunEnd closes a log.
type RunEnd struct {
	Status Status `json:"status"`
	Error  string `json:"error,omitempty"`
	Totals Totals `json:"totals"`
	// Result is the tactic's output, if it produced one.
	Result json.RawMessage `json:"result,omitempty"`
}

// Totals sums a run's work.
type Totals struct {
	ModelCalls int         `json:"model_calls"`
	ToolCalls  int         `json:"tool_calls"`
	Dialogs    int         `json:"dialogs"`
	Messages   int         `json:"messages"`
	Cost       dialog.Cost `json:"cost"`
	DurationMS float64     `json:"duration_ms"`
}

// ModelCall records one request to a model and what came of it.
type ModelCall struct {
	Agent    string `json:"agent"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model"`
	// Call is the ordinal of this call among all the agent's calls (the
	// record's Dialog is the working copy sent).
	Call    int `json:"call"`
	Attempt int `json:"attempt"` // 1 for the first try
	// Alias and Turn place the call in the tactic (since format 1.1): the
	// alias of the dialog the agent was answering and the call's number
	// among the agent's calls on it (provider.CallInfo). Replay matches
	// calls by (Agent, Alias, Turn).
	Alias string `json:"alias,omitempty"`
	Turn  int    `json:"turn,omitempty"`
	// RequestDigest is a hash of everything sent: messages, tools, params.
	RequestDigest string          `json:"request_digest"`
	Params        json.RawMessage `json:"params,omitempty"`
	// Tools names the tools the request offered (since format 1.3), so
	// that a replay can say which changed.
	Tools []string `json:"tools,omitempty"`
	// Declarations is the digest of the declarations record holding the
	// tools' schemas and the format the request sent, if it sent either
	// (since format 1.4).
	Declarations string `json:"declarations,omitempty"`
	// Reply points at the message record holding the reply, if one came.
	Reply *MessageRef `json:"reply,omitempty"`
	// Text is the reply's text when it went into no dialog (a context
	// manager's summary), so that a replay can serve it.
	Text string `json:"text,omitempty"`
	// FinishReason is why the model stopped, as its provider said it
	// (since format 1.8; "" when the provider gave none). CutAtMaxTokens
	// knows the providers' spellings of a reply cut at max_tokens.
	FinishReason string       `json:"finish_reason,omitempty"`
	Usage        dialog.Usage `json:"usage,omitzero"`
	USD          float64      `json:"usd,omitzero"`
	LatencyMS    float64      `json:"latency_ms"`
	Error        *CallError   `json:"error,omitempty"`
}

// CutAtMaxTokens reports whether the call's reply was cut at max_tokens:
// its FinishReason is "length" (OpenAI wire, Mistral, Ollama, the mock),
// "max_tokens" (Anthropic, Bedrock) or "MAX_TOKENS" (Gemini, Cohere). It
// is false for a nil call and for records older than format 1.8.
func (c *ModelCall) CutAtMaxTokens() bool {
	if c == nil {
		return false
	}
	switch c.FinishReason {
	case "length", "max_tokens", "MAX_TOKENS":
		return true
	}
	return false
}

// Declarations are the tools and the output format model calls declare,
// written once per run for each distinct set and named by their digest in
// those calls' records, so that a replay can say how they changed.
type Declarations struct {
	// Digest names the set: "sha256:" and the hex SHA-256 of the JSON
	// of Tools and Format.
	Digest string `json:"digest"`
	Tools  []Tool `json:"tools,omitempty"`
	// Format is the JSON schema the replies had to follow.
	Format json.RawMessage `json:"format,omitempty"`
}

// Tool is a tool's declaration as a model call sent it.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Required    []string        `json:"required,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

// DeclarationsOf returns the declarations of fns and format, with their
// digest; nil when there are neither. A schema that is not valid JSON is
// kept as a JSON string of its text.
func DeclarationsOf(fns []*dialog.Function, format json.RawMessage) *Declarations {
	if len(fns) == 0 && len(format) == 0 {
		return nil
	}
	d := &Declarations{Format: rawOrString(format)}
	for _, f := range fns {
		if f != nil {
			d.Tools = append(d.Tools, Tool{Name: f.Name, Description: f.Description,
				Parameters: rawOrString(f.Parameters), Required: f.Required, Strict: f.Strict})
		}
	}
	b, _ := json.Marshal(struct { // every raw value is valid: it cannot fail
		Tools  []Tool          `json:"tools,omitempty"`
		Format json.RawMessage `json:"format,omitempty"`
	}{d.Tools, d.Format})
	sum := sha256.Sum256(b)
	d.Digest = "sha256:" + hex.EncodeToString(sum[:])
	return d
}

// rawOrString returns raw, or the JSON string of its text when it is not
// valid JSON.
func rawOrString(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || json.Valid(raw) {
		return raw
	}
	s, _ := json.Marshal(string(raw))
	return s
}

// MessageRef points at a message in the log by dialog and position.
type MessageRef struct {
	Dialog string `json:"dialog"`
	Index  int    `json:"index"`
}

// CallError is a classified failure of a model or tool call.
type CallError struct {
	// Type is one of rate_limit, context_length, auth, timeout, server,
	// bad_request, parse, cancelled, other.
	Type         string  `json:"type"`
	Message      string  `json:"message"`
	Status       int     `json:"status,omitempty"` // HTTP status, when there was one
	RetryAfterMS float64 `json:"retry_after_ms,omitempty"`
}

// ToolCall records one tool call run for a model.
type ToolCall struct {
	Agent     string          `json:"agent"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    string          `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	// Repeated is true when an identical earlier call answered it.
	Repeated  bool    `json:"repeated,omitempty"`
	LatencyMS float64 `json:"latency_ms"`
}

// ContextAction records what a context manager did to a working copy
// before a model call.
type ContextAction struct {
	Agent          string `json:"agent"`
	Manager        string `json:"manager"`
	Action         string `json:"action"` // e.g. "none", "truncate", "compact"
	MessagesBefore int    `json:"messages_before"`
	MessagesAfter  int    `json:"messages_after"`
	TokensBefore   int    `json:"tokens_before"`
	TokensAfter    int    `json:"tokens_after"`
	Note           string `json:"note,omitempty"`
	// Archived and Summary describe a summary: how many of the oldest
	// messages were folded into it, and its text.
	Archived int    `json:"archived,omitempty"`
	Summary  string `json:"summary,omitempty"`
}

// TacticStart records a tactic (or sub-tactic) call beginning.
type TacticStart struct {
	Session string          `json:"session"` // unique per tactic call
	Parent  string          `json:"parent,omitempty"`
	Tactic  string          `json:"tactic"`
	Task    json.RawMessage `json:"task,omitempty"`
}

// TacticEnd records a tactic call ending.
type TacticEnd struct {
	Session string          `json:"session"`
	Tactic  string          `json:"tactic"`
	Status  Status          `json:"status"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   string          `json:"error,omitempty"`
	Cost    dialog.Cost     `json:"cost,omitzero"`
}

// recordOf turns a dialog event into its record.
func recordOf(ev dialog.Event) Record {
	switch ev.Kind {
	case dialog.EventOpen:
		n := ev.Node
		return Record{Kind: KindDialogOpen, Dialog: n.ID, DialogOpen: &n}
	case dialog.EventFork:
		n := ev.Node
		return Record{Kind: KindFork, Dialog: n.ID, Fork: &n}
	default:
		return Record{Kind: KindMessage, Dialog: ev.DialogID, Index: ev.Index, Prompt: ev.Prompt, Message: ev.Message}
	}
}

// Event returns the dialog event a record carries, if it carries one.
func (r *Record) Event() (dialog.Event, bool) {
	switch {
	case r.Kind == KindDialogOpen && r.DialogOpen != nil:
		return dialog.Event{Kind: dialog.EventOpen, Node: *r.DialogOpen}, true
	case r.Kind == KindFork && r.Fork != nil:
		return dialog.Event{Kind: dialog.EventFork, Node: *r.Fork}, true
	case r.Kind == KindMessage && r.Message != nil:
		return dialog.Event{Kind: dialog.EventAppend, DialogID: r.Dialog, Index: r.Index, Message: r.Message, Prompt: r.Prompt}, true
	}
	return dialog.Event{}, false
}
