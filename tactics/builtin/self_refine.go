package builtin

import (
	"context"
	"fmt"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/tactics"
)

func init() {
	tactics.Register("self_refine", newSelfRefine)
}

// selfRefine has agent "solver" answer the task, agent "critic" critique
// the answer, and the solver revise it in the same dialog, for up to
// iterations rounds. A critique containing the signal tag <DONE> accepts
// the answer and ends the loop early.
//
// Params: iterations, the most critique-and-revise rounds (default 2).
//
// Result: {"answer": the final answer, "iterations": the revisions made,
// "critiques": every critique in order}.
type selfRefine struct{ iterations int }

// SelfRefineResult is the result of the self_refine tactic.
type SelfRefineResult struct {
	Answer     string   `json:"answer"`
	Iterations int      `json:"iterations"`
	Critiques  []string `json:"critiques"`
}

func newSelfRefine(params map[string]any) (tactics.Tactic, error) {
	p := struct {
		Iterations int `json:"iterations"`
	}{Iterations: 2}
	if err := tactics.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := atLeast("iterations", p.Iterations, 1); err != nil {
		return nil, err
	}
	return selfRefine{iterations: p.Iterations}, nil
}

func (selfRefine) Agents() []string { return []string{"solver", "critic"} }

// critiquePrompt asks the critic about the current answer; its parser
// detects <DONE>.
var critiquePrompt = dialog.MustPrompt("self_refine/critique", `Task:
{task}

Proposed answer:
{answer}

Point out what is wrong or missing in the answer, as concrete fixes. If it needs no change, reply with <DONE>.`,
	dialog.WithParser(&dialog.TagParser{SignalTags: []string{"DONE"}}))

// reviseTemplate passes a critique to the solver.
const reviseTemplate = "A reviewer commented on your answer:\n\n%s\n\nRevise your answer accordingly. Reply with the full revised answer only."

func (t selfRefine) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	solver, err := s.Agent("solver")
	if err != nil {
		return nil, err
	}
	critic, err := s.Agent("critic")
	if err != nil {
		return nil, err
	}
	if err := solver.Open("main", nil); err != nil {
		return nil, err
	}
	if err := critic.Open("main", nil); err != nil {
		return nil, err
	}
	if err := solver.Receive(task); err != nil {
		return nil, err
	}
	reply, _, err := solver.Respond(ctx)
	if err != nil {
		return nil, err
	}
	res := SelfRefineResult{Answer: reply.Text(), Critiques: []string{}}
	for range t.iterations {
		if err := critic.ReceivePrompt(critiquePrompt, map[string]any{"task": task, "answer": res.Answer}); err != nil {
			return nil, err
		}
		crit, _, err := critic.Respond(ctx)
		if err != nil {
			return nil, fmt.Errorf("critique %d: %w", len(res.Critiques)+1, err)
		}
		res.Critiques = append(res.Critiques, crit.Text())
		tags, err := tagResult(crit)
		if err != nil {
			return nil, err
		}
		if tags.Signals["DONE"] {
			break
		}
		if err := solver.Receive(fmt.Sprintf(reviseTemplate, crit.Text()), dialog.From(critic.Name)); err != nil {
			return nil, err
		}
		if reply, _, err = solver.Respond(ctx); err != nil {
			return nil, fmt.Errorf("revision %d: %w", res.Iterations+1, err)
		}
		res.Answer = reply.Text()
		res.Iterations++
	}
	return res, nil
}
