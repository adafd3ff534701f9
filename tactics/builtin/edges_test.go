package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

// edgeParent calls chat, then best_of_n (n=2), as sub-tactics, so that the
// session machinery can be checked across Session.Sub.
type edgeParent struct{}

func (edgeParent) Agents() []string { return []string{"assistant", "solver", "judge"} }

func (edgeParent) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	own, err := s.Sub(ctx, "chat", nil, task)
	if err != nil {
		return nil, fmt.Errorf("chat: %w", err)
	}
	best, err := s.Sub(ctx, "best_of_n", map[string]any{"n": 2}, task)
	if err != nil {
		return nil, fmt.Errorf("best_of_n: %w", err)
	}
	return map[string]any{"chat": own, "best": best}, nil
}

func init() {
	tactics.Register("edge_parent", func(map[string]any) (tactics.Tactic, error) { return edgeParent{}, nil })
}

// edgeConfig builds a config of tactic with params (YAML flow), one agent
// entry per name, and mock (a YAML block indented by two spaces). Models
// are priced so that costs are not zero; a parse failure is retried once.
func edgeConfig(t *testing.T, tactic, params string, agents []string, mock string) *config.Config {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "tactic_type: %s\n", tactic)
	if params != "" {
		fmt.Fprintf(&b, "params: %s\n", params)
	}
	b.WriteString("global:\n  model_name: mock/demo\n  max_exception_retry: 1\nprices:\n  demo: {input: 1, output: 2}\nagent_configs:\n")
	for _, a := range agents {
		fmt.Fprintf(&b, "  - name: %s\n    system_prompt: You are the %s.\n", a, a)
	}
	if mock != "" {
		b.WriteString("mock:\n" + mock)
	}
	c, err := config.Parse("edge.yaml", []byte(b.String()), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return c
}

// edgeRun runs cfg on task in a fresh log root and returns the result
// (whatever its status), the run and its records.
func edgeRun(t *testing.T, cfg *config.Config, task string) (*tactics.Result, []*logs.Record) {
	t.Helper()
	dir := t.TempDir()
	res, err := tactics.Run(t.Context(), cfg, task, tactics.RunOptions{LogDir: dir,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	r, err := logs.Open(dir, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	recs := edgeRecords(t, r)
	// Whatever happened, the outermost session's cost is its model calls.
	for _, rec := range recs {
		if rec.Kind == logs.KindTacticEnd && rec.TacticEnd.Tactic == cfg.TacticType &&
			!edgeSameCost(rec.TacticEnd.Cost, edgeCallCost(recs)) {
			t.Errorf("tactic_end cost %+v, model calls %+v", rec.TacticEnd.Cost, edgeCallCost(recs))
		}
	}
	return res, recs
}

func edgeRecords(t *testing.T, r *logs.Run) []*logs.Record {
	t.Helper()
	rd, err := r.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []*logs.Record
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		out = append(out, rec)
	}
	return out
}

// edgeConfigErr checks that running cfg fails as a *ConfigError containing
// every one of want, and starts no run.
func edgeConfigErr(t *testing.T, cfg *config.Config, want ...string) {
	t.Helper()
	dir := t.TempDir()
	res, err := tactics.Run(t.Context(), cfg, "task", tactics.RunOptions{LogDir: dir})
	var ce *tactics.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got result %+v, error %v; want a *ConfigError", res, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	if runs, _ := logs.List(dir); len(runs) != 0 {
		t.Errorf("a config error started %d run(s)", len(runs))
	}
}

// edgeCallCost sums the usage and cost of model_call records.
func edgeCallCost(recs []*logs.Record) dialog.Cost {
	var c dialog.Cost
	for _, r := range recs {
		if r.Kind == logs.KindModelCall {
			c = c.Add(dialog.Cost{Usage: r.ModelCall.Usage, USD: r.ModelCall.USD})
		}
	}
	return c
}

func edgeSameCost(a, b dialog.Cost) bool {
	return a.Usage == b.Usage && math.Abs(a.USD-b.USD) <= 1e-12
}

// TestEdgeParamsAtTheirLimitsAreConfigErrors: n=0, rounds=0, iterations=0, max_steps=0 and non-integers are config errors naming the param.
func TestEdgeParamsAtTheirLimitsAreConfigErrors(t *testing.T) {
	cases := []struct{ tactic, params, param string }{
		{"best_of_n", "{n: 0}", "n"},
		{"best_of_n", "{n: -2}", "n"},
		{"best_of_n", "{n: 2.5}", "n"},
		{"best_of_n", `{n: "3"}`, "n"},
		{"debate", "{rounds: 0}", "rounds"},
		{"self_refine", "{iterations: 0}", "iterations"},
		{"self_refine", "{max_rounds: 2}", "iterations"},
		{"react", "{max_steps: 0}", "max_steps"},
		{"react", "{tools: [calculater]}", "calculater"},
		{"react", "{tools: [echo, echo]}", "echo"},
		{"react", "{tools: calculator}", "tools"},
		{"best_of_n", "{n: 2, rounds: 3}", "rounds"},
		{"chat", "{n: 2}", "n"},
	}
	agents := map[string][]string{"best_of_n": {"solver", "judge"}, "debate": {"pro", "con", "judge"},
		"self_refine": {"solver", "critic"}, "react": {"agent"}, "chat": {"assistant"}}
	for _, c := range cases {
		t.Run(c.tactic+c.params, func(t *testing.T) {
			edgeConfigErr(t, edgeConfig(t, c.tactic, c.params, agents[c.tactic], ""), c.tactic, c.param)
		})
	}
}

// TestEdgeHugeParamsRejected: an integer param beyond int32, as YAML decodes it (int), is refused as the float and uint64 forms are, not run.
func TestEdgeHugeParamsRejected(t *testing.T) {
	params := map[string]string{"best_of_n": "n", "debate": "rounds", "self_refine": "iterations", "react": "max_steps"}
	for tactic, key := range params {
		for _, v := range []any{int(1) << 40, int64(1) << 40, uint64(1) << 40, float64(1 << 40)} {
			if _, err := tactics.New(tactic, map[string]any{key: v}); err == nil || !strings.Contains(err.Error(), key) {
				t.Errorf("%s with %s = %T %v: error %v, want one naming %s", tactic, key, v, v, err, key)
			}
		}
	}
}

// TestEdgeMissingAgentIsOneConfigError: each agent a built-in needs, left out, is one config error naming it, with no run and no model call.
func TestEdgeMissingAgentIsOneConfigError(t *testing.T) {
	needs := map[string][]string{"chat": {"assistant"}, "best_of_n": {"solver", "judge"},
		"debate": {"pro", "con", "judge"}, "self_refine": {"solver", "critic"}, "react": {"agent"}}
	for tactic, agents := range needs {
		for _, missing := range agents {
			t.Run(tactic+"-"+missing, func(t *testing.T) {
				others := slices.DeleteFunc(slices.Clone(agents), func(a string) bool { return a == missing })
				others = append(others, "helper")
				edgeConfigErr(t, edgeConfig(t, tactic, "", others, ""), fmt.Sprintf("agent %q", missing))
			})
		}
	}
}

// TestEdgeSystemPromptVariableFailsBeforeAnyModelCall: a judge system prompt with an unfilled {variable} fails the run before the solver's calls, naming it.
func TestEdgeSystemPromptVariableFailsBeforeAnyModelCall(t *testing.T) {
	cfg := edgeConfig(t, "best_of_n", "{n: 3}", []string{"solver", "judge"}, "")
	if err := cfg.Set("agent_configs.judge.system_prompt", "You judge for {audience}."); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := tactics.Run(t.Context(), cfg, "Name a prime.", tactics.RunOptions{LogDir: dir})
	var ce *tactics.ConfigError
	if errors.As(err, &ce) {
		if !strings.Contains(err.Error(), "audience") {
			t.Fatalf("config error %q does not name the variable", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != logs.StatusFailed || !strings.Contains(res.Error, "audience") || !strings.Contains(res.Error, "judge") {
		t.Fatalf("status %s, error %q: want failed, naming judge and audience", res.Status, res.Error)
	}
	if res.Totals.ModelCalls != 0 {
		t.Errorf("%d model calls made before the judge's broken system prompt was found; want 0", res.Totals.ModelCalls)
	}
}

// TestEdgeBestOfNOne: n=1 gives the one candidate, choice 1, in the documented shape.
func TestEdgeBestOfNOne(t *testing.T) {
	cfg := edgeConfig(t, "best_of_n", "{n: 1}", []string{"solver", "judge"},
		"  rules:\n    - match: Candidate answers\n      reply: {text: \"<choice>1</choice>\"}\n  replies:\n    - text: \"13\"\n")
	res, _ := edgeRun(t, cfg, "Name a prime above 10.")
	if res.Status != logs.StatusOK {
		t.Fatalf("status %s: %s", res.Status, res.Error)
	}
	var out BestOfNResult
	decode(t, res, &out)
	if out.Answer != "13" || out.Choice != 1 || !slices.Equal(out.Candidates, []string{"13"}) {
		t.Fatalf("result %s", res.Result)
	}
}

// TestEdgeJudgeChoiceWithSpaces: <choice> 2 </choice> and a choice on its own lines are read as 2.
func TestEdgeJudgeChoiceWithSpaces(t *testing.T) {
	for _, reply := range []string{"<choice> 2 </choice>", "<choice>\\n2\\n</choice>"} {
		cfg := edgeConfig(t, "best_of_n", "{n: 2}", []string{"solver", "judge"},
			"  rules:\n    - match: Candidate answers\n      reply: {text: \""+reply+"\"}\n  replies:\n    - text: a\n    - text: b\n")
		res, _ := edgeRun(t, cfg, "Pick.")
		if res.Status != logs.StatusOK || !strings.Contains(string(res.Result), `"choice":2`) {
			t.Errorf("judge %q: status %s result %s error %q", reply, res.Status, res.Result, res.Error)
		}
	}
}

// TestEdgeJudgeReplyThatNeverParses: a judge without a valid <choice> is asked to fix it max_exception_retry times, then the run fails saying so.
func TestEdgeJudgeReplyThatNeverParses(t *testing.T) {
	for _, reply := range []string{"I like the second one.", "<choice>7</choice>", "<choice>two</choice>"} {
		cfg := edgeConfig(t, "best_of_n", "{n: 2}", []string{"solver", "judge"},
			"  rules:\n    - match: Candidate answers\n      reply: {text: \""+reply+"\"}\n    - match: Please fix\n      reply: {text: \""+reply+"\"}\n  replies:\n    - text: a\n    - text: b\n")
		res, recs := edgeRun(t, cfg, "Pick.")
		if res.Status != logs.StatusFailed || !strings.Contains(res.Error, "judg") || !strings.Contains(res.Error, "choice") {
			t.Errorf("judge %q: status %s error %q; want failed, naming the judging and <choice>", reply, res.Status, res.Error)
		}
		judgeCalls := 0
		for _, r := range recs {
			if r.Kind == logs.KindModelCall && r.ModelCall.Agent == "judge" {
				judgeCalls++
			}
		}
		if judgeCalls != 2 { // max_exception_retry 1: the first try and one fix
			t.Errorf("judge %q: %d judge calls, want 2", reply, judgeCalls)
		}
	}
}

// TestEdgeDebateOneRound: rounds=1 is one pro and one con turn, then the verdict.
func TestEdgeDebateOneRound(t *testing.T) {
	cfg := edgeConfig(t, "debate", "{rounds: 1}", []string{"pro", "con", "judge"},
		"  rules:\n    - match: Weigh the arguments\n      reply: {text: \"<verdict>pro</verdict>\"}\n    - match: argue FOR\n      reply: {text: P1}\n    - match: P1\n      reply: {text: C1}\n")
	res, _ := edgeRun(t, cfg, "Tea beats coffee.")
	var out DebateResult
	if res.Status == logs.StatusOK {
		decode(t, res, &out)
	}
	if res.Status != logs.StatusOK || out.Verdict != "pro" || !slices.Equal(out.Rounds, []DebateRound{{Pro: "P1", Con: "C1"}}) {
		t.Fatalf("status %s result %s error %q", res.Status, res.Result, res.Error)
	}
	if res.Totals.ModelCalls != 3 {
		t.Errorf("%d model calls, want 3", res.Totals.ModelCalls)
	}
}

// TestEdgeDebateVerdictMissing: a judge that never gives a <verdict> fails the run after its retries, naming the tag.
func TestEdgeDebateVerdictMissing(t *testing.T) {
	cfg := edgeConfig(t, "debate", "{rounds: 1}", []string{"pro", "con", "judge"},
		"  rules:\n    - match: Weigh the arguments\n      reply: {text: \"A draw.\"}\n    - match: Please fix\n      reply: {text: \"Still a draw.\"}\n")
	res, _ := edgeRun(t, cfg, "Tea beats coffee.")
	if res.Status != logs.StatusFailed || !strings.Contains(res.Error, "verdict") {
		t.Fatalf("status %s error %q", res.Status, res.Error)
	}
}

// TestEdgeSelfRefineCriticSatisfiedAtOnce: <DONE> on the first critique keeps the draft, with no revision.
func TestEdgeSelfRefineCriticSatisfiedAtOnce(t *testing.T) {
	cfg := edgeConfig(t, "self_refine", "{iterations: 3}", []string{"solver", "critic"},
		"  rules:\n    - match: Proposed answer\n      reply: {text: \"Fine. <DONE>\"}\n  replies:\n    - text: draft\n")
	res, recs := edgeRun(t, cfg, "Write a line.")
	var out SelfRefineResult
	if res.Status == logs.StatusOK {
		decode(t, res, &out)
	}
	if res.Status != logs.StatusOK || out.Answer != "draft" || out.Iterations != 0 || len(out.Critiques) != 1 {
		t.Fatalf("status %s result %s error %q", res.Status, res.Result, res.Error)
	}
	solverCalls := 0
	for _, r := range recs {
		if r.Kind == logs.KindModelCall && r.ModelCall.Agent == "solver" {
			solverCalls++
		}
	}
	if solverCalls != 1 {
		t.Errorf("%d solver calls, want 1", solverCalls)
	}
}

// TestEdgeReactNeverFinishes: with max_steps=1, a model that keeps calling tools, or never answers after them, fails naming the max_steps limit.
func TestEdgeReactNeverFinishes(t *testing.T) {
	call := "    - tool_calls: [{name: echo, arguments: {text: again}}]\n"
	scripts := map[string]string{
		"always calls tools":     "  replies:\n" + strings.Repeat(call, 6),
		"no answer after a tool": "  rules:\n    - regex: \".\"\n      reply: {tool_calls: [{name: echo, arguments: {text: again}}]}\n",
	}
	for name, mock := range scripts {
		t.Run(name, func(t *testing.T) {
			res, _ := edgeRun(t, edgeConfig(t, "react", "{max_steps: 1, tools: [echo]}", []string{"agent"}, mock), "Loop.")
			if res.Status != logs.StatusFailed || !strings.Contains(res.Error, "max_steps") {
				t.Errorf("status %s, error %q: want failed, naming the max_steps limit", res.Status, res.Error)
			}
			// One tool round, the final prompt, one fix (max_exception_retry 1).
			if n := res.Totals.ModelCalls; n > 3 {
				t.Errorf("%d model calls, want at most 3", n)
			}
		})
	}
}

// TestEdgeReactAnswersAfterTheLimit: at max_steps=1 the final prompt keeps the <answer> parser, so an answer after it is read.
func TestEdgeReactAnswersAfterTheLimit(t *testing.T) {
	cfg := edgeConfig(t, "react", "{max_steps: 1, tools: [calculator]}", []string{"agent"},
		"  replies:\n    - tool_calls: [{name: calculator, arguments: {expression: \"6*7\"}}]\n    - text: \"<answer>42</answer>\"\n")
	res, _ := edgeRun(t, cfg, "6*7?")
	if res.Status != logs.StatusOK || string(res.Result) != `{"answer":"42","tool_calls":1}` {
		t.Fatalf("status %s result %s error %q", res.Status, res.Result, res.Error)
	}
}

// TestEdgeReactNoAnswerTag: a plain reply without <answer> fails after the parse retries, naming the tag.
func TestEdgeReactNoAnswerTag(t *testing.T) {
	cfg := edgeConfig(t, "react", "{max_steps: 2}", []string{"agent"},
		"  rules:\n    - regex: \".\"\n      reply: {text: \"It is 42.\"}\n")
	res, _ := edgeRun(t, cfg, "6*7?")
	if res.Status != logs.StatusFailed || !strings.Contains(res.Error, "answer") || res.Totals.ModelCalls != 2 {
		t.Fatalf("status %s error %q calls %d", res.Status, res.Error, res.Totals.ModelCalls)
	}
}

// TestEdgeOddTasks: huge, unicode, JSON and brace-laden tasks reach the model verbatim and are logged exactly.
func TestEdgeOddTasks(t *testing.T) {
	tasks := map[string]string{
		"unicode": "Résumé naïve 日本語 🧪 \u202eRTL\u202c e\u0301",
		"json":    `{"question": "What is {x}?", "choices": [1, 2], "note": "%s %d {{"}`,
		"huge":    strings.Repeat("lorem ipsum dolor sit amet ", 4000),
		"tags":    "<answer>not mine</answer> </candidate 1> <DONE> <verdict>x</verdict>",
	}
	configs := map[string]*config.Config{
		"chat": edgeConfig(t, "chat", "", []string{"assistant"}, ""),
		"best_of_n": edgeConfig(t, "best_of_n", "{n: 2}", []string{"solver", "judge"},
			"  rules:\n    - match: Candidate answers\n      reply: {text: \"<choice>1</choice>\"}\n"),
		"react": edgeConfig(t, "react", "{max_steps: 1}", []string{"agent"}, "  replies:\n    - text: \"<answer>ok</answer>\"\n"),
		"self_refine": edgeConfig(t, "self_refine", "{iterations: 1}", []string{"solver", "critic"},
			"  rules:\n    - match: Proposed answer\n      reply: {text: \"<DONE>\"}\n"),
		"debate": edgeConfig(t, "debate", "{rounds: 1}", []string{"pro", "con", "judge"},
			"  rules:\n    - match: Weigh the arguments\n      reply: {text: \"<verdict>con</verdict>\"}\n"),
	}
	for cname, cfg := range configs {
		for tname, task := range tasks {
			t.Run(cname+"-"+tname, func(t *testing.T) {
				t.Parallel()
				res, recs := edgeRun(t, cfg, task)
				if res.Status != logs.StatusOK {
					t.Fatalf("status %s error %q", res.Status, res.Error)
				}
				var logged string
				if err := json.Unmarshal(recs[0].RunStart.Task, &logged); err != nil || logged != task {
					t.Errorf("run_start task differs from the task (%v)", err)
				}
				found := false
				for _, r := range recs {
					if r.Kind == logs.KindMessage && strings.Contains(r.Message.Text(), task) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("no message carries the task verbatim")
				}
			})
		}
	}
}

// TestEdgeBadTask: an empty, blank or non-UTF-8 task is a clear error before any model call, not silently sent (or logged altered).
func TestEdgeBadTask(t *testing.T) {
	for task, want := range map[string]string{"": "empty", " \n\t": "empty", "bad \xff\xfe text": "UTF-8"} {
		dir := t.TempDir()
		res, err := tactics.Run(t.Context(), edgeConfig(t, "chat", "", []string{"assistant"}, ""), task, tactics.RunOptions{LogDir: dir})
		if err == nil && res.Status == logs.StatusOK {
			t.Errorf("task %q: ran ok with result %s; want an error saying the task is %s", task, res.Result, want)
			continue
		}
		msg := fmt.Sprint(err)
		if res != nil {
			msg += " " + res.Error
			if res.Totals.ModelCalls != 0 {
				t.Errorf("task %q: %d model calls", task, res.Totals.ModelCalls)
			}
		}
		if !strings.Contains(msg, want) {
			t.Errorf("task %q: error %q does not say the task is %s", task, msg, want)
		}
	}
}

// TestEdgeResultShapes: each built-in's result has exactly the documented keys, with lists never null.
func TestEdgeResultShapes(t *testing.T) {
	want := map[string][]string{
		"best_of_n":   {"answer", "candidates", "choice"},
		"debate":      {"reasoning", "rounds", "verdict"},
		"self_refine": {"answer", "critiques", "iterations"},
		"react":       {"answer", "tool_calls"},
	}
	for name, keys := range want {
		t.Run(name, func(t *testing.T) {
			res, _ := run(t, load(t, name), "A task.")
			var m map[string]json.RawMessage
			decode(t, res, &m)
			if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, keys) {
				t.Errorf("keys %q, want %q", got, keys)
			}
			for k, v := range m {
				if string(v) == "null" {
					t.Errorf("%s is null", k)
				}
			}
		})
	}
	res, _ := run(t, load(t, "chat"), "Capital of France?")
	var s string
	if err := json.Unmarshal(res.Result, &s); err != nil {
		t.Errorf("chat result %s is not a JSON string", res.Result)
	}
}

// TestEdgeResultShapesDocumented: each built-in tactic's doc comment says what its result is ("Result:").
func TestEdgeResultShapesDocumented(t *testing.T) {
	fset := token.NewFileSet()
	types := map[string]string{"chat": "chat", "best_of_n": "bestOfN", "debate": "debate", "self_refine": "selfRefine", "react": "react"}
	docs := map[string]string{}
	for _, name := range types {
		docs[name] = ""
	}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, ok := docs[ts.Name.Name]; ok {
					docs[ts.Name.Name] = g.Doc.Text() + ts.Doc.Text()
				}
			}
		}
	}
	for tactic, typ := range types {
		if !strings.Contains(docs[typ], "Result:") {
			t.Errorf("tactic %s (type %s): doc comment does not document its result (no \"Result:\"): %q", tactic, typ, docs[typ])
		}
	}
}

// TestEdgeSessionCostIsItsModelCalls: for every built-in config, tactic_end's cost and the run totals equal the sum of the model_call records.
func TestEdgeSessionCostIsItsModelCalls(t *testing.T) {
	for _, name := range []string{"chat", "best_of_n", "debate", "self_refine", "react"} {
		t.Run(name, func(t *testing.T) {
			cfg := load(t, name)
			if err := cfg.Set("prices", "{demo: {input: 3, output: 7}}"); err != nil {
				t.Fatal(err)
			}
			res, recs := edgeRun(t, cfg, "A task.")
			if res.Status != logs.StatusOK {
				t.Fatalf("status %s: %s", res.Status, res.Error)
			}
			calls := edgeCallCost(recs)
			if calls.USD == 0 {
				t.Fatal("the prices did not apply")
			}
			var end *logs.TacticEnd
			for _, r := range recs {
				if r.Kind == logs.KindTacticEnd {
					end = r.TacticEnd
				}
			}
			if end == nil || !edgeSameCost(end.Cost, calls) || !edgeSameCost(res.Totals.Cost, calls) {
				t.Fatalf("tactic_end cost %+v, totals %+v, model calls %+v", end, res.Totals.Cost, calls)
			}
		})
	}
	t.Run("summaries and retries", func(t *testing.T) {
		cfg := edgeConfig(t, "self_refine", "{iterations: 3}", []string{"solver", "critic"},
			"  rules:\n    - match: Proposed answer\n      reply: {text: \"Longer, please.\"}\n  replies:\n    - error: rate_limit\n    - text: one two three four five six seven eight nine ten\n")
		if err := cfg.Set("global.context_manager", "{type: summary, max_tokens: 150, buffer: 0}"); err != nil {
			t.Fatal(err)
		}
		res, recs := edgeRun(t, cfg, strings.Repeat("word ", 60)) // edgeRun checks the cost
		summaries, failed := 0, 0
		for _, r := range recs {
			if r.Kind == logs.KindContext && r.Context.Action == "summary" {
				summaries++
			}
			if r.Kind == logs.KindModelCall && r.ModelCall.Error != nil {
				failed++
			}
		}
		if res.Status != logs.StatusOK || summaries == 0 || failed == 0 || !edgeSameCost(res.Totals.Cost, edgeCallCost(recs)) {
			t.Fatalf("status %s (%s), %d summaries, %d failed calls, totals %+v", res.Status, res.Error, summaries, failed, res.Totals.Cost)
		}
	})
}

// edgeParentMock drives edge_parent: chat answers, then best_of_n's solver and judge (JUDGE is the judge's reply).
const edgeParentMock = "  rules:\n    - match: Candidate answers\n      reply: JUDGE\n  replies:\n    - text: own\n    - text: a\n    - text: b\n"

// TestEdgeSubTacticsNest: tactic_start/tactic_end of sub-tactics nest inside the parent's, name it as parent, and each session's cost is its own model calls.
func TestEdgeSubTacticsNest(t *testing.T) {
	cfg := edgeConfig(t, "edge_parent", "", []string{"assistant", "solver", "judge"},
		strings.Replace(edgeParentMock, "JUDGE", `{text: "<choice>2</choice>"}`, 1))
	res, recs := edgeRun(t, cfg, "Go.")
	if res.Status != logs.StatusOK {
		t.Fatalf("status %s: %s", res.Status, res.Error)
	}
	var stack []string
	parentOf := map[string]string{}
	cost := map[string]dialog.Cost{}
	var order []string
	for _, r := range recs {
		switch r.Kind {
		case logs.KindTacticStart:
			s := r.TacticStart
			want := ""
			if len(stack) > 0 {
				want = stack[len(stack)-1]
			}
			if s.Parent != want {
				t.Errorf("tactic_start %s (%s): parent %q, want %q", s.Session, s.Tactic, s.Parent, want)
			}
			parentOf[s.Session] = s.Parent
			stack = append(stack, s.Session)
			order = append(order, "start "+s.Tactic)
		case logs.KindTacticEnd:
			e := r.TacticEnd
			if len(stack) == 0 || stack[len(stack)-1] != e.Session {
				t.Fatalf("tactic_end %s (%s) does not close the innermost open session %q", e.Session, e.Tactic, stack)
			}
			stack = stack[:len(stack)-1]
			order = append(order, "end "+e.Tactic)
			if e.Status != logs.StatusOK {
				t.Errorf("%s ended %s", e.Tactic, e.Status)
			}
			if !edgeSameCost(e.Cost, cost[e.Session]) {
				t.Errorf("%s: tactic_end cost %+v, its model calls %+v", e.Tactic, e.Cost, cost[e.Session])
			}
		case logs.KindModelCall:
			for s := range slices.Values(stack) {
				cost[s] = cost[s].Add(dialog.Cost{Usage: r.ModelCall.Usage, USD: r.ModelCall.USD})
			}
		}
	}
	want := []string{"start edge_parent", "start chat", "end chat", "start best_of_n", "end best_of_n", "end edge_parent"}
	if !slices.Equal(order, want) || len(stack) != 0 {
		t.Fatalf("tactic records %q, want %q", order, want)
	}
	if !edgeSameCost(res.Totals.Cost, edgeCallCost(recs)) {
		t.Errorf("run totals %+v, model calls %+v", res.Totals.Cost, edgeCallCost(recs))
	}
}

// TestEdgeSubTacticFailure: a model error inside a sub-tactic fails the parent, and both sessions' costs include the calls made before it.
func TestEdgeSubTacticFailure(t *testing.T) {
	cfg := edgeConfig(t, "edge_parent", "", []string{"assistant", "solver", "judge"},
		strings.Replace(edgeParentMock, "JUDGE", `{error: auth}`, 1))
	res, recs := edgeRun(t, cfg, "Go.")
	if res.Status != logs.StatusFailed || !strings.Contains(res.Error, "best_of_n") || !strings.Contains(res.Error, "judg") {
		t.Fatalf("status %s error %q: want failed, naming best_of_n and the judging", res.Status, res.Error)
	}
	ends := map[string]*logs.TacticEnd{}
	for _, r := range recs {
		if r.Kind == logs.KindTacticEnd {
			ends[r.TacticEnd.Tactic] = r.TacticEnd
		}
	}
	all := edgeCallCost(recs)
	if p := ends["edge_parent"]; p == nil || p.Status != logs.StatusFailed || !edgeSameCost(p.Cost, all) || all.USD == 0 {
		t.Errorf("parent end %+v, model calls cost %+v", p, all)
	}
	if s := ends["best_of_n"]; s == nil || s.Status != logs.StatusFailed || s.Cost.USD == 0 || !strings.Contains(s.Error, "auth") {
		t.Errorf("sub end %+v", s)
	}
	if !edgeSameCost(res.Totals.Cost, all) {
		t.Errorf("run totals %+v, model calls %+v", res.Totals.Cost, all)
	}
}

// TestEdgeBatchFailFast: without KeepGoing the batch stops after the first failure, whose result names its task; later tasks are not started.
func TestEdgeBatchFailFast(t *testing.T) {
	cfg := edgeConfig(t, "chat", "", []string{"assistant"},
		"  rules:\n    - match: boom\n      reply: {error: auth}\n")
	dir := t.TempDir()
	tasks := []string{"fine", "boom now", "later", "last"}
	results, err := tactics.Batch(t.Context(), cfg, tasks, tactics.BatchOptions{
		RunOptions: tactics.RunOptions{LogDir: dir}, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Status != logs.StatusOK || results[1].Status != logs.StatusFailed || !strings.Contains(results[1].Error, "auth") {
		t.Fatalf("results %+v %+v", results[0], results[1])
	}
	r, err := logs.Open(dir, results[1].RunID)
	if err != nil || string(r.Start.Task) != `"boom now"` {
		t.Fatalf("failed run %v: task %s", err, r.Start.Task)
	}
	for i, res := range results[2:] {
		if res.Status != logs.StatusCancelled || res.RunID != "" || res.Error != tactics.NotStarted {
			t.Errorf("task %d after the failure: %+v", i+2, res)
		}
	}
	if runs, _ := logs.List(dir); len(runs) != 2 {
		t.Errorf("%d runs logged, want 2", len(runs))
	}
}

// TestEdgeSubTacticCancelled: cancelling the run inside a sub-tactic ends the sub, the parent and the run as cancelled.
func TestEdgeSubTacticCancelled(t *testing.T) {
	cfg := edgeConfig(t, "edge_parent", "", []string{"assistant", "solver", "judge"},
		strings.Replace(edgeParentMock, "JUDGE", `{error: rate_limit}`, 1))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := t.TempDir()
	res, err := tactics.Run(ctx, cfg, "Go.", tactics.RunOptions{LogDir: dir,
		Sleep: func(ctx context.Context, _ time.Duration) error { cancel(); return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	r, err := logs.Open(dir, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var ends []string
	for _, rec := range edgeRecords(t, r) {
		if rec.Kind == logs.KindTacticEnd {
			ends = append(ends, rec.TacticEnd.Tactic+" "+string(rec.TacticEnd.Status))
		}
	}
	want := []string{"chat ok", "best_of_n cancelled", "edge_parent cancelled"}
	if res.Status != logs.StatusCancelled || !slices.Equal(ends, want) || r.Summary().Status() != logs.StatusCancelled {
		t.Fatalf("run %s (%s), tactic ends %q, want %q", res.Status, res.Error, ends, want)
	}
}
