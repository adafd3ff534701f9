package conversation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/tactics"
)

// A served turn or compaction is replayed (lllm replay, replay.Run) as a
// tactic of its own, registered under the tactic its run log records:
// the recorded config rebuilds the answering agent, and the run starts
// from the messages its log's dialog began with (RunParams.History), so
// that the replay needs neither the store nor the server. The questions
// it asked with ask_user, and what recall found in the archives, are
// served from the log's tool calls, under --run-tools too
// (replay.ServeRecorded): no one is asked again, and the archives as they
// are now do not matter.
func init() {
	tactics.RegisterReplayOnly(RunTactic, func(params map[string]any) (tactics.Tactic, error) { return newServedRun(RunTactic, params) })
	tactics.RegisterReplayOnly(CompactTactic, func(params map[string]any) (tactics.Tactic, error) { return newServedRun(CompactTactic, params) })
}

// The conversation tools a primary agent gets, as a model sees them.
const (
	recallName        = "recall"
	recallDescription = "Search the archives of this conversation (earlier parts that were compacted into summaries) by keywords. Returns the best matching archives with their titles and summaries."
	askName           = "ask_user"
	askDescription    = "Ask the user a question and wait for the answer. Use it when you cannot go on without information only the user has."
)

// conversationTools are the recall and ask_user tools running recall and
// ask: a Service's, and a replay's, which declare them alike.
func conversationTools(recall func(context.Context, recallArgs) (string, error), ask func(context.Context, askArgs) (string, error)) (r, a *dialog.Function, err error) {
	if r, err = dialog.NewFunction(recallName, recallDescription, recall); err != nil {
		return nil, nil, err
	}
	if a, err = dialog.NewFunction(askName, askDescription, ask); err != nil {
		return nil, nil, err
	}
	return r, a, nil
}

// servedRun replays a run of lllm serve: a turn (RunTactic) or a
// compaction (CompactTactic).
type servedRun struct {
	tactic string
	p      RunParams
}

func newServedRun(tactic string, params map[string]any) (*servedRun, error) {
	t := &servedRun{tactic: tactic}
	if err := tactics.DecodeParams(params, &t.p); err != nil {
		return nil, err
	}
	switch {
	case t.p.History <= 0:
		return nil, &tactics.ParamError{Param: "history", Err: fmt.Errorf("params.history is %d: a %s run starts from the messages of its conversation its log's dialog holds, and history says how many (logs of lllm serve record it; older ones cannot be replayed)", t.p.History, tactic)}
	case t.p.Answering == "":
		return nil, &tactics.ParamError{Param: "answering", Err: errors.New("params.answering is missing: it names the agent of agent_configs that answered")}
	case t.p.Role != "primary" && t.p.Role != "guest":
		return nil, &tactics.ParamError{Param: "role", Err: fmt.Errorf("params.role is %q: want primary or guest", t.p.Role)}
	case tactic == CompactTactic && t.p.Role != "primary":
		return nil, &tactics.ParamError{Param: "role", Err: errors.New("params.role of a compaction is primary: the conversation's agent summarises it")}
	}
	return t, nil
}

func (t *servedRun) Agents() []string { return []string{t.p.Answering} }

// alias is the dialog the answering agent worked in.
func (t *servedRun) alias() string {
	if t.tactic == CompactTactic {
		return "compact"
	}
	return "conversation"
}

func (t *servedRun) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	rec, ok := replay.RecordingFrom(ctx)
	if !ok {
		return nil, fmt.Errorf("tactic %s replays a turn or compaction of lllm serve from its run log: run it with lllm replay RUN (replay.Run), which serves it the log; lllm run cannot", t.tactic)
	}
	history, err := t.history(rec)
	if err != nil {
		return nil, err
	}
	a, err := s.Agent(t.p.Answering)
	if err != nil {
		return nil, err
	}
	if t.p.ContextManager != "" && a.Context == nil {
		return nil, fmt.Errorf("run %s: the %s ran with the context manager %s, whose settings its log does not hold (an agent built without AgentSpec.ContextConfig): set agent_configs.%s.context_manager to replay it",
			rec.Run.ID, tactics.AgentLabel(a.Name), t.p.ContextManager, a.Name)
	}
	a.Limits.MaxRetries = cmp.Or(t.p.MaxRetries, -1) // recorded as a config writes it, 0 for none
	if t.tactic == CompactTactic {
		// The recorded template, under the summary prompt's path.
		if a.System, err = dialog.NewPrompt(summaryPath, a.System.Template); err != nil {
			return nil, fmt.Errorf("%s: %w", tactics.AgentLabel(a.Name), err)
		}
		a.Limits = textOnly(a.Limits)
		return summarizeWithAgent(ctx, a, history)
	}
	if t.p.Role == "guest" {
		a.System = a.System.WithoutTools()
		a.Limits = textOnly(a.Limits)
	} else {
		// The replay serves their calls from the log; these run only
		// for a call it does not hold.
		recall, ask, err := conversationTools(unrecorded[recallArgs](rec, a.Name, recallName), unrecorded[askArgs](rec, a.Name, askName))
		if err != nil {
			return nil, err
		}
		if a.System, err = withTools(a.System, recall, ask); err != nil {
			return nil, fmt.Errorf("%s: %w", tactics.AgentLabel(a.Name), err)
		}
		replay.ServeRecorded(ctx, recall, ask)
	}
	reply, err := answerWithAgent(ctx, a, t.p.Sender, t.p.CWD, history)
	if err != nil {
		return nil, err
	}
	return reply.Text(), nil
}

// history is what the recorded run started from: the messages after the
// system prompt of the dialog the answering agent opened, as many as
// params.history says.
func (t *servedRun) history(rec *replay.Recording) ([]dialog.Message, error) {
	d := rec.Dialog(t.p.Answering, t.alias())
	if d == nil {
		return nil, fmt.Errorf("run %s: its log has no dialog %q of the %s, which the %s run started from", rec.Run.ID, t.alias(), tactics.AgentLabel(t.p.Answering), t.tactic)
	}
	msgs := d.Messages()
	if len(msgs) < 1+t.p.History {
		return nil, fmt.Errorf("run %s: the dialog %q of the %s holds %d messages after its system prompt, fewer than params.history (%d)", rec.Run.ID, t.alias(), tactics.AgentLabel(t.p.Answering), len(msgs)-1, t.p.History)
	}
	out := make([]dialog.Message, t.p.History)
	for i, m := range msgs[1 : 1+t.p.History] {
		out[i] = *m.Clone()
	}
	return out, nil
}

// unrecorded is the conversation tool name of a replay, for a call of
// agent that the replay could not serve from rec: it fails, never asking
// a person nor reading archives.
func unrecorded[In any](rec *replay.Recording, agent, name string) func(context.Context, In) (string, error) {
	return func(_ context.Context, in In) (string, error) {
		b, _ := json.Marshal(in)
		return "", fmt.Errorf("the log of run %s has no %s call of %s with the arguments %s whose result a replay could serve", rec.Run.ID, name, agent, b)
	}
}
