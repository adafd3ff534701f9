package builtin

import (
	"context"
	"fmt"
	"strings"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/tactics"
)

func init() {
	tactics.Register("debate", newDebate)
}

// debate has agents "pro" and "con" argue for and against the task's
// claim over a number of rounds, each answering the other's last argument,
// and agent "judge" read the transcript and give a verdict.
//
// Params: rounds, the number of rounds (default 2).
//
// Result: {"verdict": the text of the judge's <verdict> tag, "rounds":
// [{"pro": ..., "con": ...}, ...], "reasoning": the judge's whole reply}.
type debate struct{ rounds int }

// DebateResult is the result of the debate tactic.
type DebateResult struct {
	Verdict   string        `json:"verdict"`
	Rounds    []DebateRound `json:"rounds"`
	Reasoning string        `json:"reasoning"`
}

// DebateRound is one round of a debate.
type DebateRound struct {
	Pro string `json:"pro"`
	Con string `json:"con"`
}

func newDebate(params map[string]any) (tactics.Tactic, error) {
	p := struct {
		Rounds int `json:"rounds"`
	}{Rounds: 2}
	if err := tactics.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if err := atLeast("rounds", p.Rounds, 1); err != nil {
		return nil, err
	}
	return debate{rounds: p.Rounds}, nil
}

func (debate) Agents() []string { return []string{"pro", "con", "judge"} }

// The debaters' opening instructions.
const (
	proOpening = "Debate topic:\n%s\n\nYou argue FOR it. Give your strongest argument, briefly."
	conOpening = "Debate topic:\n%s\n\nYou argue AGAINST it. Your opponent's arguments will follow; rebut them, briefly."
)

// verdictPrompt asks the judge for a verdict on the transcript.
var verdictPrompt = dialog.MustPrompt("debate/verdict", `Debate topic:
{task}

Transcript:
{transcript}
Weigh the arguments of both sides. Explain briefly, then give your verdict as <verdict>...</verdict>: which side won, and the answer to the topic.`,
	dialog.WithParser(&dialog.TagParser{XMLTags: []string{"verdict"}}))

func (t debate) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	var agents [3]*tactics.Agent
	for i, name := range t.Agents() {
		a, err := s.Agent(name)
		if err != nil {
			return nil, err
		}
		if err := a.Open("main", nil); err != nil {
			return nil, err
		}
		agents[i] = a
	}
	pro, con, judge := agents[0], agents[1], agents[2]
	if err := pro.Receive(fmt.Sprintf(proOpening, task)); err != nil {
		return nil, err
	}
	if err := con.Receive(fmt.Sprintf(conOpening, task)); err != nil {
		return nil, err
	}
	res := DebateResult{Rounds: make([]DebateRound, 0, min(t.rounds, 64))} // rounds may be huge: grow as they come
	var transcript strings.Builder
	for r := 1; r <= t.rounds; r++ {
		if r > 1 {
			if err := pro.Receive(res.Rounds[r-2].Con, dialog.From(con.Name)); err != nil {
				return nil, err
			}
		}
		p, _, err := pro.Respond(ctx)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", r, err)
		}
		if err := con.Receive(p.Text(), dialog.From(pro.Name)); err != nil {
			return nil, err
		}
		c, _, err := con.Respond(ctx)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", r, err)
		}
		res.Rounds = append(res.Rounds, DebateRound{Pro: p.Text(), Con: c.Text()})
		fmt.Fprintf(&transcript, "Round %d\nPRO: %s\nCON: %s\n\n", r, p.Text(), c.Text())
	}
	if err := judge.ReceivePrompt(verdictPrompt, map[string]any{"task": task, "transcript": transcript.String()}); err != nil {
		return nil, err
	}
	v, _, err := judge.Respond(ctx)
	if err != nil {
		return nil, fmt.Errorf("verdict: %w", err)
	}
	verdict, ok := v.Tag("verdict")
	if !ok {
		return nil, fmt.Errorf("%s gave no <verdict>", tactics.AgentLabel(judge.Name))
	}
	res.Verdict, res.Reasoning = verdict, v.Text()
	return res, nil
}
