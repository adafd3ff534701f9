package builtin

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/tactics"
)

func init() {
	tactics.Register("best_of_n", newBestOfN)
}

// bestOfN has agent "solver" answer the task n times, each in a branch
// forked from one dialog, and agent "judge" pick the best answer.
//
// Params: n, the number of candidates (default 3).
//
// Result: {"answer": the chosen candidate, "choice": its number from 1,
// "candidates": every candidate in order}.
type bestOfN struct{ n int }

// BestOfNResult is the result of the best_of_n tactic.
type BestOfNResult struct {
	Answer     string   `json:"answer"`
	Choice     int      `json:"choice"`
	Candidates []string `json:"candidates"`
}

func newBestOfN(params map[string]any) (tactics.Tactic, error) {
	p := struct {
		N int `json:"n"`
	}{N: 3}
	if err := tactics.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := atLeast("n", p.N, 1); err != nil {
		return nil, err
	}
	return bestOfN{n: p.N}, nil
}

func (bestOfN) Agents() []string { return []string{"solver", "judge"} }

// judgeTemplate asks the judge to pick a candidate.
const judgeTemplate = `Task:
{task}

Candidate answers:
{candidates}
Which candidate answers the task best? Explain briefly, then give its number as <choice>N</choice>, with N from 1 to {n}.`

func (t bestOfN) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	solver, err := s.Agent("solver")
	if err != nil {
		return nil, err
	}
	judge, err := s.Agent("judge")
	if err != nil {
		return nil, err
	}
	// The judge opens its dialog after the solver's calls: check now that
	// it can, so that a system prompt with a variable fails before any cost.
	if judge.System != nil {
		if _, err := judge.System.Render(nil); err != nil {
			return nil, fmt.Errorf("%s: system prompt: %w", tactics.AgentLabel(judge.Name), err)
		}
	}
	if err := solver.Open("main", nil); err != nil {
		return nil, err
	}
	if err := solver.Receive(task); err != nil {
		return nil, err
	}
	res := BestOfNResult{Candidates: make([]string, 0, min(t.n, 64))} // n may be huge: grow as they come
	for i := 1; i <= t.n; i++ {
		if err := solver.Fork("main", fmt.Sprintf("try%d", i), 0, 0, true); err != nil {
			return nil, err
		}
		reply, _, err := solver.Respond(ctx)
		if err != nil {
			return nil, fmt.Errorf("candidate %d: %w", i, err)
		}
		res.Candidates = append(res.Candidates, reply.Text())
	}

	var list strings.Builder
	for i, c := range res.Candidates {
		fmt.Fprintf(&list, "<candidate %d>\n%s\n</candidate %d>\n", i+1, c, i+1)
	}
	prompt := dialog.MustPrompt("best_of_n/judge", judgeTemplate, dialog.WithParser(choiceParser(t)))
	if err := judge.Open("main", nil); err != nil {
		return nil, err
	}
	if err := judge.ReceivePrompt(prompt, map[string]any{"task": task, "candidates": list.String(), "n": t.n}); err != nil {
		return nil, err
	}
	verdict, _, err := judge.Respond(ctx)
	if err != nil {
		return nil, fmt.Errorf("judging: %w", err)
	}
	var choice struct {
		Choice int `json:"choice"`
	}
	if err := verdict.ParsedInto(&choice); err != nil {
		return nil, fmt.Errorf("judging: decoding the choice: %w", err)
	}
	res.Choice = choice.Choice
	res.Answer = res.Candidates[choice.Choice-1]
	return res, nil
}

// choiceParser reads the judge's <choice>N</choice>, the last one if there
// are several, and checks that N names a candidate. A reply that does not is
// a *dialog.ParseError, so the judge is asked to fix it.
type choiceParser struct{ n int }

var choiceTags = &dialog.TagParser{XMLTags: []string{"choice"}}

func (p choiceParser) Parse(text string) (any, error) {
	v, err := choiceTags.Parse(text)
	if err != nil {
		return nil, err
	}
	found := v.(*dialog.TagResult).XML["choice"]
	last := found[len(found)-1]
	n, err := strconv.Atoi(last)
	if err != nil || n < 1 || n > p.n {
		return nil, &dialog.ParseError{Msg: fmt.Sprintf("<choice> must hold a candidate number from 1 to %d, not %q", p.n, last)}
	}
	return map[string]any{"choice": n, "raw": text}, nil
}
