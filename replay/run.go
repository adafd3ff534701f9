package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/lllm-go/lllm/internal/registry"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// LabelReplayOf is the run_start label naming the run a replay replays.
const LabelReplayOf = "replay_of"

// The tactics of the run logs of lllm serve (runtime/conversation's
// RunTactic and CompactTactic), which that package registers for replay:
// this package cannot import it, which imports this one.
const (
	servedTurn          = "conversation"
	servedCompaction    = "conversation-compact"
	conversationPackage = "github.com/lllm-go/lllm/runtime/conversation"
)

// Options adjust Run.
type Options struct {
	// LogDir is the log root of the replay's own run; empty means the
	// recorded run's.
	LogDir string
	// Set overrides the recorded config, as "key.path=value" (see
	// config.Config.Set), to see where a change first takes effect.
	Set []string
	// RunTools runs the tactic's tools again, where a replay serves the
	// results its recording holds, to see whether a changed tool changes
	// the run. Tools that cannot run again (see [ServeRecorded]: the
	// ask_user of a turn of lllm serve) are served all the same.
	RunTools bool
}

// Report is what a replay did.
type Report struct {
	Of *logs.Run // the recorded run
	// Run is how the replay's own run ended; its log is a run of its own.
	Run *tactics.Result
	// Log is the replay's own run, as logs.Open gives it, to read back
	// (Forest, Summary, inspect.Load) without opening it again.
	Log      *logs.Run
	Calls    int // calls served from the recording
	Recorded int // calls in the recording
	// Tools is how many tool calls were served from the recording, and
	// ToolsRun how many ran their tool: calls the recording does not
	// hold, and with Options.RunTools every call but those of the tools
	// a tactic marked with [ServeRecorded].
	Tools, ToolsRun int
	// Divergence is the first call the recording could not serve, or the
	// first recorded call the replay never made; nil when the replay
	// matched the recording call for call.
	Divergence *Divergence
}

// Config returns the config rec's run was recorded with, with sets
// applied. A config problem is a *tactics.ConfigError.
func Config(rec *Recording, sets []string) (*config.Config, error) {
	start := rec.Start
	if len(start.Config) == 0 || string(start.Config) == "null" {
		return nil, &tactics.ConfigError{Err: fmt.Errorf("run %s records no config, so it cannot be replayed (runs of lllm run and tactics.Run record theirs)", rec.Run.ID)}
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(start.Config, &top) == nil && top["tactic_type"] == nil {
		// A program of its own (examples/agent, say) recorded some
		// settings of its own: not a tactic config to run again.
		return nil, &tactics.ConfigError{Err: fmt.Errorf("run %s (tactic %q) records a config without tactic_type, so it was not written by lllm run or tactics.Run and cannot be replayed", rec.Run.ID, start.Tactic)}
	}
	name := rec.Run.Path() + " (recorded config)"
	noBase := func(path string) ([]byte, error) {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	cfg, err := config.Parse(name, yamlSafe(start.Config), noBase)
	if err != nil {
		return nil, &tactics.ConfigError{Err: err}
	}
	served := cfg.TacticType == servedTurn || cfg.TacticType == servedCompaction
	if conv := start.Labels["conversation"]; conv != "" && served && cfg.Params["history"] == nil {
		// Written before served runs recorded where their history ends.
		return nil, &tactics.ConfigError{Err: fmt.Errorf("run %s was written by lllm serve for the conversation %s (tactic %q) before served runs recorded the history they start from (params.history): lllm replay cannot run a served turn or compaction of that age again; lllm show, tree and diff read its log",
			rec.Run.ID, conv, cfg.TacticType)}
	}
	if _, err := tactics.New(cfg.TacticType, cfg.Params); errors.As(err, new(*registry.NotFoundError)) {
		if served {
			return nil, &tactics.ConfigError{Err: fmt.Errorf("run %s is a turn or compaction of lllm serve (tactic %q), which this binary does not register: replay it with the lllm command, or import %s, which registers it",
				rec.Run.ID, cfg.TacticType, conversationPackage)}
		}
		return nil, &tactics.ConfigError{Err: fmt.Errorf("run %s used tactic %q, which this binary does not register (it has %s): replay it with the program that ran it, which imports the package registering %q",
			rec.Run.ID, cfg.TacticType, strings.Join(tactics.Names(), ", "), cfg.TacticType)}
	}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return nil, &tactics.ConfigError{Err: fmt.Errorf("--set %q: want key.path=value", s)}
		}
		if err := cfg.Set(k, v); err != nil {
			return nil, &tactics.ConfigError{Err: err}
		}
	}
	return cfg, nil
}

// recordedPrompts are the prompt files a replay renders: those the run
// recorded (logs of 1.5 on), unless sets name a prompts_dir to read them
// from instead, to see where an edited prompt first takes effect. Nil
// reads the config's prompts_dir (for older logs, the recorded one).
func recordedPrompts(rec *Recording, sets []string) map[string]string {
	for _, s := range sets {
		if k, _, _ := strings.Cut(s, "="); strings.TrimSpace(k) == "prompts_dir" {
			return nil
		}
	}
	return rec.Start.Prompts
}

// yamlSafe returns the recorded config, JSON that config.Parse reads as
// YAML, with the characters YAML refuses (DEL and the C1 controls) or
// reads as a line break (NEL, U+0085) written as \u escapes, which YAML
// reads back as the same characters: encoding/json writes them as they
// are, so a config holding one could not be replayed, or one holding NEL
// replayed another prompt.
func yamlSafe(doc []byte) []byte {
	if !bytes.ContainsFunc(doc, yamlUnsafe) {
		return doc
	}
	out := make([]byte, 0, len(doc)+16)
	for len(doc) > 0 {
		r, n := utf8.DecodeRune(doc)
		if yamlUnsafe(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, doc[:n]...)
		}
		doc = doc[n:]
	}
	return out
}

func yamlUnsafe(r rune) bool { return r == 0x7f || r >= 0x80 && r <= 0x9f }

// Run replays rec: its tactic runs again with the recorded config (with
// opts.Set applied) and task, every model call served from rec. The
// replay writes a run log of its own (Report.Log), labelled replay_of.
// The first divergence stops it; it is in the Report, not the error,
// which is for replays that could not start (a *tactics.ConfigError for
// config problems). The tactic finds rec in its context (RecordingFrom).
func Run(ctx context.Context, rec *Recording, opts Options) (*Report, error) {
	cfg, err := Config(rec, opts.Set)
	if err != nil {
		return nil, err
	}
	var task string
	if err := json.Unmarshal(rec.Start.Task, &task); err != nil {
		return nil, &tactics.ConfigError{Err: fmt.Errorf("run %s: its task is not text (%.40s), so lllm cannot pass it to the tactic again", rec.Run.ID, rec.Start.Task)}
	}
	tools := newToolServer(rec, opts.RunTools)
	ctx = context.WithValue(context.WithValue(ctx, recordingKey{}, rec), toolServerKey{}, tools)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	model := NewModel(rec, func(d *Divergence) { cancel(d) })
	root := opts.LogDir
	if root == "" {
		root = filepath.Dir(rec.Run.Dir)
	}
	res, err := tactics.Run(ctx, cfg, task, tactics.RunOptions{
		LogDir:  root,
		Seed:    rec.Start.Seed,
		Labels:  map[string]string{LabelReplayOf: rec.Run.ID},
		Prompts: recordedPrompts(rec, opts.Set),
		// Recorded failures are served at once: their backoff waited once.
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		Models: func(context.Context, config.Agent, provider.Config) (provider.Model, error) {
			return model, nil
		},
		CallTool: tools.call,
	})
	if err != nil {
		return nil, err
	}
	own, err := logs.Open(root, res.Dir)
	if err != nil {
		return nil, fmt.Errorf("replay: reading back the replay's run: %w", err)
	}
	rep := &Report{Of: rec.Run, Run: res, Log: own, Calls: model.Calls(), Recorded: len(rec.Calls()), Divergence: model.Divergence()}
	rep.Tools, rep.ToolsRun = tools.counts()
	if rep.Divergence == nil {
		if left := rec.Unserved(); len(left) > 0 {
			c := left[0]
			rep.Divergence = &Divergence{Position: c.Position, Recorded: c,
				Reason: fmt.Sprintf("the replay never made this recorded call (it made %d of the %d recorded calls)", rep.Calls, rep.Recorded)}
		}
	}
	if rep.Divergence == nil {
		rep.Divergence = endDivergence(rec.End, res)
	}
	return rep, nil
}

// endDivergence compares how a replay that made every recorded call, and
// only those, ended with how the recorded run did: a different status or
// result means the replies the log holds are not those its run was given
// (a log edited by hand), or the tactic depends on more than its model
// calls. nil when they agree, or the recorded run did not finish.
func endDivergence(end *logs.RunEnd, res *tactics.Result) *Divergence {
	if end == nil || end.Status == logs.StatusCancelled {
		return nil
	}
	if end.Status != res.Status {
		return &Divergence{Reason: fmt.Sprintf("every call was served as recorded, but the replay ended %s where the recorded run ended %s", res.Status, end.Status)}
	}
	if sameJSON(end.Result, res.Result) {
		return nil
	}
	a, b := indentJSON(end.Result), indentJSON(res.Result)
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(a), B: difflib.SplitLines(b),
		FromFile: "recorded result", ToFile: "replayed result", Context: 2})
	return &Divergence{Reason: "every call was served as recorded, but the result differs from the recorded one (the log's replies are not those its run was given, or the tactic depends on more than its model calls)", Diff: d}
}

// sameJSON reports whether a and b hold the same JSON value; empty is null.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(orNull(a), &va) != nil || json.Unmarshal(orNull(b), &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

func orNull(m json.RawMessage) []byte {
	if len(bytes.TrimSpace(m)) == 0 {
		return []byte("null")
	}
	return m
}

func indentJSON(m json.RawMessage) string {
	var buf bytes.Buffer
	if json.Indent(&buf, orNull(m), "", "  ") != nil {
		return string(m) + "\n"
	}
	return buf.String() + "\n"
}
