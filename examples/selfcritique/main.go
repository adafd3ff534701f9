// Command selfcritique is an experiment to copy: does asking the model to
// critique its own answer once make it right more often? Two tactics answer
// the questions of arith.jsonl: "direct" answers once; "critique" answers,
// critiques its answer in a fork of the dialog, and revises it when the
// critique says it is wrong. The model may call the tool "calc", and the
// context manager "selfcritique:answersonly" shows it its earlier replies
// cut to their answers. All are registered here, beside the whole lllm CLI;
// selfcritique.yaml names them, and sweep.yaml compares the tactics on the
// offline mock, whose script says how the model behaves: its first answer
// is wrong on 4 of the 10 rows, and the critique fixes 3 of them and
// breaks a right one, so critique beats direct by 2 rows (+0.200), not
// significantly on 10 rows.
//
// Run it from the repository root, offline, and look at one critique:
//
//	go run ./examples/selfcritique sweep examples/selfcritique/sweep.yaml --baseline tactic_type=direct
//	go run ./examples/selfcritique run examples/selfcritique/selfcritique.yaml --set tactic_type=critique --task "What is 13 * 7?"
//	go run ./cmd/lllm tree latest
package main

import (
	"context"
	"fmt"
	"go/constant"
	"go/token"
	"go/types"
	"slices"

	"github.com/lllm-go/lllm/cmd/lllm/cli"
	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/tactics"
)

func init() {
	tactics.Register("direct", noParams(direct{}))
	tactics.Register("critique", noParams(critique{}))
	contextmgr.Register("selfcritique:answersonly", func(cfg map[string]any) (contextmgr.Manager, error) {
		// It takes no keys but type.
		if err := contextmgr.DecodeConfig(cfg, &struct{}{}); err != nil {
			return nil, err
		}
		return answersOnly{}, nil
	})
}

func main() { cli.Main() }

// calc is a tool the model may call: Go's own constant arithmetic.
var calc = dialog.MustFunction("calc", "Evaluate an arithmetic expression exactly, e.g. (3 + 4) * 5.",
	func(_ context.Context, in struct {
		Expression string `json:"expression"`
	}) (string, error) {
		tv, err := types.Eval(token.NewFileSet(), nil, token.NoPos, in.Expression)
		if err != nil {
			return "", err
		}
		if tv.Value == nil || tv.Value.Kind() == constant.Unknown {
			return "", fmt.Errorf("%s is not arithmetic", in.Expression)
		}
		return tv.Value.ExactString(), nil
	})

// The prompts. Each reply must have the tag its parser asks for; a reply
// without it is sent back to be fixed (max_exception_retry).
var (
	answerTag = &dialog.TagParser{XMLTags: []string{"answer"}}
	solve     = dialog.MustPrompt("selfcritique/solve",
		"Solve: {question}\nYou may use the calc tool. Give the final number in <answer></answer>.",
		dialog.WithParser(answerTag), dialog.WithFunctions(calc))
	check = dialog.MustPrompt("selfcritique/check",
		"Check your answer to: {question}\nRedo it step by step, then end with <verdict>ok</verdict> or <verdict>wrong</verdict>.",
		dialog.WithParser(&dialog.TagParser{XMLTags: []string{"verdict"}}))
	revise = dialog.MustPrompt("selfcritique/revise",
		"Revise your answer to: {question}\nA check of it said:\n{critique}\nGive the corrected number in <answer></answer>.",
		dialog.WithParser(answerTag), dialog.WithFunctions(calc))
)

// Result is what both tactics return; the sweep scores its "answer".
type Result struct {
	Answer  string `json:"answer"`
	First   string `json:"first"`             // the answer before any critique
	Verdict string `json:"verdict,omitempty"` // the critique's: ok or wrong
}

type direct struct{}

func (direct) Agents() []string { return []string{"solver"} }

func (direct) Call(ctx context.Context, s *tactics.Session, question string) (any, error) {
	a, err := s.Agent("solver")
	if err != nil {
		return nil, err
	}
	if err := a.Open("main", nil); err != nil {
		return nil, err
	}
	answer, _, err := ask(ctx, a, "main", solve, map[string]any{"question": question}, "answer")
	if err != nil {
		return nil, err
	}
	return Result{Answer: answer, First: answer}, nil
}

type critique struct{}

func (critique) Agents() []string { return []string{"solver"} }

func (critique) Call(ctx context.Context, s *tactics.Session, question string) (any, error) {
	a, err := s.Agent("solver")
	if err != nil {
		return nil, err
	}
	if err := a.Open("main", nil); err != nil {
		return nil, err
	}
	args := map[string]any{"question": question}
	first, _, err := ask(ctx, a, "main", solve, args, "answer")
	if err != nil {
		return nil, err
	}
	// The critique goes into a fork of main that shares all its messages
	// (last_n 0), so main stays question and answer.
	if err := a.Fork("main", "critique", 0, 0, false); err != nil {
		return nil, err
	}
	verdict, crit, err := ask(ctx, a, "critique", check, args, "verdict")
	if err != nil {
		return nil, err
	}
	res := Result{Answer: first, First: first, Verdict: verdict}
	if verdict == "wrong" {
		args["critique"] = crit.Text()
		if res.Answer, _, err = ask(ctx, a, "main", revise, args, "answer"); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// noParams makes the factory of a tactic that takes no params: it refuses
// any, naming it at its line in the config.
func noParams(t tactics.Tactic) tactics.Factory {
	return func(params map[string]any) (tactics.Tactic, error) {
		if err := tactics.DecodeParams(params, &struct{}{}); err != nil {
			return nil, err
		}
		return t, nil
	}
}

// ask puts prompt p into the agent's dialog alias, has the agent answer,
// and returns the last <tag> of the reply, and the reply.
func ask(ctx context.Context, a *tactics.Agent, alias string, p *dialog.Prompt, args map[string]any, tag string) (string, *dialog.Message, error) {
	if err := a.ReceivePromptTo(alias, p, args); err != nil {
		return "", nil, err
	}
	reply, _, err := a.RespondTo(ctx, alias)
	if err != nil {
		return "", nil, err
	}
	v, _ := reply.Tag(tag) // there is one: the prompt's parser requires it
	return v, reply, nil
}

// answersOnly is a context manager: the model sees each of its earlier
// replies cut to its <answer>, without the working that led to it, so that
// a check redoes the sum rather than rereads it. The dialog keeps every
// reply whole; only what is sent changes.
type answersOnly struct{}

func (answersOnly) Fit(_ context.Context, in contextmgr.Input) (contextmgr.Result, error) {
	out := slices.Clone(in.Messages)
	cut := 0
	for i, m := range out {
		answer, ok := m.Tag("answer")
		if short := "<answer>" + answer + "</answer>"; ok && m.Text() != short {
			out[i] = m.Clone() // never change a dialog's message
			out[i].Content, out[i].Parts, out[i].Reasoning = short, nil, nil
			cut++
		}
	}
	if cut == 0 {
		return contextmgr.Result{Messages: in.Messages, Action: "none"}, nil
	}
	return contextmgr.Result{Messages: out, Action: "answers_only",
		Note: fmt.Sprintf("cut %d earlier replies to their <answer>", cut)}, nil
}
