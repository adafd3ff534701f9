package replay_test

// Round trips of the product's central promise: every model call and
// tool call is logged as replayable JSON, so that a run can be replayed
// exactly and compared. Runs are recorded on the fake OpenAI server of
// providertest (through the real langchaingo openai client) and on the
// mock provider, then:
//
//   - replayed with no network and no API key: no divergence, the same
//     status, result, totals (calls, tokens, cost) and log content, and
//     'lllm diff' finds the two runs identical; again when the replay
//     itself is replayed (docs/replay.md);
//   - replayed after changing exactly one thing (a system prompt, a
//     model_args value, the model, a tool's description or schema, the
//     tools offered, an image, a context budget, the model's reply): the
//     replay stops at the first call the change reaches, having served
//     every call before it, and its diff shows that change and nothing
//     else, a context manager's summary call included;
//   - replayed from a log cut short at many byte offsets: it serves every
//     call recorded before the cut, then says the recording ends there,
//     and never panics.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
	"github.com/lllm-go/lllm/tactics"
	_ "github.com/lllm-go/lllm/tactics/builtin"
)

// ---------------------------------------------------------------------
// A tactic with an image, and a tool whose declaration a test can change.

func init() {
	tactics.Register("rt_vision", func(p map[string]any) (tactics.Tactic, error) {
		path, _ := p["image"].(string)
		if path == "" {
			return nil, errors.New("rt_vision: param image (a PNG file) is required")
		}
		return rtVision{image: path}, nil
	})
	fn, err := dialog.NewFunction("rt_glossary", rtGlossaryDescription,
		func(_ context.Context, in struct {
			Word string `json:"word" jsonschema:"the word to define"`
		}) (string, error) {
			return in.Word + ": a word of the glossary", nil
		})
	if err != nil {
		panic(err)
	}
	tactics.RegisterTool(fn)
}

const rtGlossaryDescription = "Defines a word of the project's glossary."

// rtVision shows agent "viewer" an image (read from the file its params
// name) with the task, then asks a follow-up in the same dialog, so that
// the image is in both requests.
type rtVision struct{ image string }

func (rtVision) Agents() []string { return []string{"viewer"} }

func (v rtVision) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	a, err := s.Agent("viewer")
	if err != nil {
		return nil, err
	}
	if err := a.Open("main", nil); err != nil {
		return nil, err
	}
	if err := a.ReceiveImage(dialog.ImageFile(v.image), "the figure"); err != nil {
		return nil, err
	}
	if err := a.Receive(task); err != nil {
		return nil, err
	}
	first, _, err := a.Respond(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.Receive("And what colour is it?"); err != nil {
		return nil, err
	}
	second, _, err := a.Respond(ctx)
	if err != nil {
		return nil, err
	}
	return []string{first.Text(), second.Text()}, nil
}

// rtPNG writes a small PNG of one colour to a new file and returns its path.
func rtPNG(t *testing.T, c color.RGBA) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 6, 4))
	for y := range 4 {
		for x := range 6 {
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "figure.png")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ---------------------------------------------------------------------
// Scenarios.

// rtScenario is a run to record: a config (its YAML without the model
// settings, which the backend adds) and a task, with the server's
// scripted replies for the OpenAI backend and the mock section for the
// mock backend.
type rtScenario struct {
	name   string
	yaml   string // tactic_type, params, agent_configs; "global:" extras in global
	global string // extra lines under global:, indented by 2
	task   string
	// OpenAI backend: replies in order, then def for every later call.
	replies []providertest.Reply
	def     *providertest.Reply
	// Mock backend: the mock section (indented by 2), or "" when the
	// scenario runs on the OpenAI backend only.
	mock string
	// check looks at the recording for what the scenario is about (a
	// tool call, a truncation, a summary, an image).
	check func(t *testing.T, run *logs.Run, res *tactics.Result)
}

func rtText(text string, in, out int) providertest.Reply {
	return providertest.Reply{Text: text, Usage: providertest.Usage{Input: in, Output: out}}
}

// rtLong is a long argument, distinct for each i, long enough for a small
// context budget to act on.
func rtLong(side string, i int) string {
	return fmt.Sprintf("[%s %d] %s", side, i, strings.Repeat(fmt.Sprintf("point %d with evidence and more evidence; ", i), 10))
}

func rtScenarios(t *testing.T) []rtScenario {
	long := func(prefix string, n int) []providertest.Reply {
		out := make([]providertest.Reply, n)
		for i := range out {
			out[i] = rtText(rtLong(prefix, i+1)+" <verdict>pro</verdict>", 300+7*i, 90+i)
		}
		return out
	}
	def := rtText("A summary of both sides: each argued at length. <verdict>pro</verdict>", 500, 20)
	debateLong := `tactic_type: debate
params: {rounds: 3}
agent_configs:
  - {name: pro, system_prompt: You argue for.}
  - {name: con, system_prompt: You argue against.}
  - {name: judge, system_prompt: You judge.}
`
	debateMock := `  rules:
    - {match: "Summarise the conversation above", reply: {text: "Both sides argued at length; nothing is settled."}}
    - {match: "Weigh the arguments", reply: {text: "<verdict>con</verdict>"}}
  replies:
` + strings.Repeat("    - {text: \""+rtLong("arg", 0)+"\"}\n", 8)
	contextActs := func(action string, min int) func(t *testing.T, run *logs.Run, res *tactics.Result) {
		return func(t *testing.T, run *logs.Run, res *tactics.Result) {
			n := 0
			for _, r := range records(t, run.Path()) {
				if r.Context != nil && r.Context.Action == action {
					n++
				}
			}
			if n < min {
				t.Fatalf("the context manager acted %q %d times, want at least %d: the scenario does not test it", action, n, min)
			}
		}
	}
	return []rtScenario{
		{
			name: "chat",
			yaml: `tactic_type: chat
agent_configs:
  - {name: assistant, system_prompt: You answer briefly.}
`,
			task:    "Capital of France?",
			replies: []providertest.Reply{rtText("Paris.", 21, 3)},
			mock:    `  replies: [{text: "Paris."}]`,
		},
		{
			// A server error and a rate limit first: recorded failures
			// are replayed as the same errors.
			name: "chat_retries",
			yaml: `tactic_type: chat
agent_configs:
  - {name: assistant, system_prompt: You answer briefly.}
`,
			task:    "Capital of Italy?",
			replies: []providertest.Reply{providertest.ServerError(), providertest.RateLimited("30"), rtText("Rome.", 21, 3)},
			mock:    `  replies: [{error: server}, {error: rate_limit, retry_after: 30s}, {text: "Rome."}]`,
			check: func(t *testing.T, run *logs.Run, res *tactics.Result) {
				if res.Totals.ModelCalls != 3 {
					t.Fatalf("%d model calls, want 3 (two failures, one reply)", res.Totals.ModelCalls)
				}
			},
		},
		{
			// Parallel tool calls with arguments as OpenAI writes them
			// (spaces), a repeated call, then the answer.
			name: "react",
			yaml: `tactic_type: react
params: {max_steps: 4, tools: [calculator, word_count, rt_glossary]}
agent_configs:
  - {name: agent, system_prompt: You use tools for arithmetic.}
`,
			task: "What is (17 + 25) * 3, and how many words in 'a b c'?",
			replies: []providertest.Reply{
				{ToolCalls: []providertest.ToolCall{
					{ID: "call_calc", Name: "calculator", Arguments: `{"expression": "(17 + 25) * 3"}`},
					{ID: "call_wc", Name: "word_count", Arguments: `{ "text" : "a b c" }`},
				}, Usage: providertest.Usage{Input: 180, Cached: 64, Output: 40}},
				{Text: "Let me check once more.", ToolCalls: []providertest.ToolCall{
					{ID: "call_again", Name: "calculator", Arguments: `{"expression":"(17 + 25) * 3"}`},
					{ID: "call_def", Name: "rt_glossary", Arguments: `{"word": "<tag> & \"quote\" é"}`},
				}, Usage: providertest.Usage{Input: 260, Output: 30}},
				{Text: "126, and 3 words. <answer>126; 3</answer>", Usage: providertest.Usage{Input: 330, Output: 15, Reasoning: 5}},
			},
			mock: `  replies:
    - tool_calls: [{name: calculator, arguments: {expression: "(17 + 25) * 3"}}, {name: word_count, arguments: {text: "a b c"}}]
    - tool_calls: [{name: calculator, arguments: {expression: "(17 + 25) * 3"}}, {name: rt_glossary, arguments: {word: "<tag> & \"quote\""}}]
    - text: "126, and 3 words. <answer>126; 3</answer>"`,
			check: func(t *testing.T, run *logs.Run, res *tactics.Result) {
				if res.Totals.ToolCalls != 4 || res.Totals.ModelCalls != 3 {
					t.Fatalf("totals %+v, want 4 tool calls in 3 model calls", res.Totals)
				}
			},
		},
		{
			// Replies as a server may send them: tool arguments that are
			// not JSON, empty, or repeat a key; a call without an id; text
			// with a line separator, a NUL, HTML and invalid UTF-8; an
			// empty reply. OpenAI only: the mock writes its own.
			name: "react_odd",
			yaml: `tactic_type: react
params: {max_steps: 3, tools: [calculator, word_count]}
agent_configs:
  - {name: agent, system_prompt: You use tools.}
`,
			task: "What is (2+3)*4?",
			replies: []providertest.Reply{
				{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression": "(2+3)*4"`}}, Usage: providertest.Usage{Input: 50, Output: 9}},
				{ToolCalls: []providertest.ToolCall{{ID: "c2", Name: "calculator", Arguments: ``}, {Name: "word_count", Arguments: `{"text": "x y", "text": "a b c"}`}}, Usage: providertest.Usage{Input: 90, Output: 12}},
				{Text: "Pa\u2028ris\x00 \xff <b>&amp;</b> \u00e9\r\n\t", Usage: providertest.Usage{Input: 120, Output: 9}},
				{Text: "", Usage: providertest.Usage{Input: 150}},
				rtText("<answer>20</answer>", 170, 5),
			},
			check: func(t *testing.T, run *logs.Run, res *tactics.Result) {
				if res.Totals.ToolCalls != 3 || res.Totals.ModelCalls != 5 {
					t.Fatalf("totals %+v, want 3 tool calls in 5 model calls", res.Totals)
				}
			},
		},
		{
			// Three samples, and a judge whose first choice is out of
			// range, so it is asked again (a parse retry).
			name: "best_of_n",
			yaml: `tactic_type: best_of_n
params: {n: 3}
agent_configs:
  - {name: solver, system_prompt: You solve.}
  - {name: judge, system_prompt: You judge.}
`,
			task: "Name a prime above 10.",
			replies: []providertest.Reply{rtText("11", 30, 1), rtText("13", 30, 1), rtText("17", 30, 1),
				rtText("I pick <choice>7</choice>", 90, 6), rtText("Then <choice>2</choice>", 130, 5)},
			mock: `  rules:
    - {match: "Candidate answers", reply: {text: "I pick <choice>7</choice>"}}
    - {match: "not \"7\"", reply: {text: "Then <choice>2</choice>"}}
  replies: [{text: "11"}, {text: "13"}, {text: "17"}]`,
		},
		{
			name: "debate",
			yaml: `tactic_type: debate
params: {rounds: 2}
agent_configs:
  - {name: pro, system_prompt: You argue for.}
  - {name: con, system_prompt: You argue against.}
  - {name: judge, system_prompt: You judge debates impartially., model_args: {temperature: 0}}
`,
			task: "Tabs beat spaces.",
			replies: []providertest.Reply{rtText("[P1] Tabs are one byte.", 40, 7), rtText("[C1] Spaces look the same everywhere.", 55, 9),
				rtText("[P2] Editors let tabs look as wide as you like.", 70, 11), rtText("[C2] Not in code review tools.", 85, 8),
				rtText("Con was sharper. <verdict>con</verdict>", 160, 10)},
			mock: `  rules:
    - {match: "Weigh the arguments", reply: {text: "Con was sharper. <verdict>con</verdict>"}}
  replies: [{text: "[P1] Tabs are one byte."}, {text: "[P2] Editors let tabs look as wide as you like."}]`,
		},
		{
			name: "self_refine",
			yaml: `tactic_type: self_refine
params: {iterations: 3}
agent_configs:
  - {name: solver, system_prompt: You write haiku.}
  - {name: critic, system_prompt: You critique haiku.}
`,
			task: "Write a haiku about autumn.",
			replies: []providertest.Reply{rtText("leaves fall", 20, 3), rtText("Too short: three lines.", 60, 6),
				rtText("red leaves fall slowly\nthe river carries them off\nautumn says goodbye", 90, 17), rtText("Fine. <DONE>", 120, 3)},
			mock: `  rules:
    - {match: "Proposed answer:\nleaves fall", reply: {text: "Too short: three lines."}}
    - {match: "Proposed answer:", reply: {text: "Fine. <DONE>"}}
  replies: [{text: "leaves fall"}, {text: "red leaves fall slowly"}]`,
		},
		{
			name: "vision",
			yaml: `tactic_type: rt_vision
params: {image: ` + rtPNG(t, color.RGBA{200, 30, 30, 255}) + `}
agent_configs:
  - {name: viewer, system_prompt: You describe figures.}
`,
			task:    "What does the figure show?",
			replies: []providertest.Reply{rtText("A small rectangle.", 120, 5), rtText("Red.", 140, 2)},
			mock:    `  replies: [{text: "A small rectangle."}, {text: "Red."}]`,
			check: func(t *testing.T, run *logs.Run, res *tactics.Result) {
				imgs := 0
				for _, r := range records(t, run.Path()) {
					if m := r.Message; m != nil {
						for _, p := range m.Parts {
							if p.Image != nil && len(p.Image.Data) > 0 {
								imgs++
							}
						}
					}
				}
				if imgs != 1 {
					t.Fatalf("%d image messages in the log, want 1", imgs)
				}
			},
		},
		{
			name:    "context_none",
			yaml:    debateLong,
			global:  "  context_manager: {type: none}\n",
			task:    "Tabs beat spaces.",
			replies: long("arg", 12),
			def:     &def,
			mock:    debateMock,
		},
		{
			name:    "context_default",
			yaml:    debateLong,
			global:  "  context_manager: {type: default, max_tokens: 420, buffer: 0}\n",
			task:    "Tabs beat spaces.",
			replies: long("arg", 12),
			def:     &def,
			mock:    debateMock,
			check:   contextActs("truncate", 2),
		},
		{
			name:    "context_window",
			yaml:    debateLong,
			global:  "  context_manager: {type: window, n: 2}\n",
			task:    "Tabs beat spaces.",
			replies: long("arg", 12),
			def:     &def,
			mock:    debateMock,
			check:   contextActs("window", 2),
		},
		{
			name:    "context_summary",
			yaml:    debateLong,
			global:  "  context_manager: {type: summary, max_tokens: 420, buffer: 0}\n",
			task:    "Tabs beat spaces.",
			replies: long("arg", 12),
			def:     &def,
			mock:    debateMock,
			check: func(t *testing.T, run *logs.Run, res *tactics.Result) {
				contextActs("summary", 2)(t, run, res)
				summaries := 0
				for _, c := range mustLoad(t, run).Calls() {
					if c.Summary {
						summaries++
					}
				}
				if summaries == 0 {
					t.Fatal("the summary manager made no summary call: the scenario does not test it")
				}
			},
		},
	}
}

// ---------------------------------------------------------------------
// Recording and replaying.

// rtBackend makes a scenario's config for one provider.
type rtBackend struct {
	name string
	// setup returns the YAML of the model settings and of the mock
	// section (both may be empty), and the server if there is one.
	setup func(t *testing.T, sc rtScenario) (global, mock string, srv *providertest.Server)
}

var rtOpenAI = rtBackend{name: "openai", setup: func(t *testing.T, sc rtScenario) (string, string, *providertest.Server) {
	srv := providertest.NewOpenAIServer(t, sc.replies...)
	if sc.def != nil {
		srv.SetDefault(*sc.def)
	}
	t.Setenv("OPENAI_API_KEY", "sk-test")
	return fmt.Sprintf("  model_name: openai/gpt-4o-mini\n  base_url: %s\n  model_args: {temperature: 0.3, max_tokens: 256}\n", srv.BaseURL()), "", srv
}}

var rtMock = rtBackend{name: "mock", setup: func(t *testing.T, sc rtScenario) (string, string, *providertest.Server) {
	return "  model_name: mock/demo\n  model_args: {temperature: 0.3, max_tokens: 256}\n", sc.mock, nil
}}

// rtConfig is sc's config on backend b, and b's server if it has one.
func rtConfig(t *testing.T, b rtBackend, sc rtScenario) (*config.Config, *providertest.Server) {
	t.Helper()
	global, mock, srv := b.setup(t, sc)
	y := sc.yaml + "global:\n" + global + sc.global
	if mock != "" {
		y += "mock:\n" + mock + "\n"
	}
	cfg, err := config.Parse(sc.name+".yaml", []byte(y), nil)
	if err != nil {
		t.Fatalf("config:\n%s\n%v", y, err)
	}
	return cfg, srv
}

// rtReplay replays run (with sets) into a log root of its own, with no
// API key in the environment.
func rtReplay(t *testing.T, run *logs.Run, sets ...string) (*replay.Recording, *replay.Report) {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "")
	os.Unsetenv("OPENAI_API_KEY")
	rec := mustLoad(t, run)
	rep, err := replay.Run(t.Context(), rec, replay.Options{LogDir: t.TempDir(), Set: sets})
	if err != nil {
		t.Fatalf("replay with %q: %v", sets, err)
	}
	return rec, rep
}

// rtAssertExact checks that rep replayed the run recorded as res call for
// call: no divergence, every recorded call served, the same status,
// error, result and totals (calls, tool calls, dialogs, messages, tokens
// and cost), and the same log content.
func rtAssertExact(t *testing.T, run *logs.Run, res *tactics.Result, rep *replay.Report) {
	t.Helper()
	checkSameEnd(t, res, rep)
	if c, r := content(t, run.Dir), content(t, rep.Run.Dir); !slices.Equal(c, r) {
		t.Errorf("the replay's log differs from the recording's at %s", firstDiff(c, r))
	}
	// Compared as 'lllm diff' compares runs: identical.
	var trees [2]*inspect.Tree
	for i, dir := range []string{run.Dir, rep.Run.Dir} {
		r, err := logs.Open(filepath.Dir(dir), filepath.Base(dir))
		if err != nil {
			t.Fatal(err)
		}
		if trees[i], _, err = inspect.Load(t.Context(), r, inspect.Options{Messages: true}); err != nil {
			t.Fatal(err)
		}
	}
	diff, err := inspect.Compare(trees[0], trees[1])
	if err != nil {
		t.Fatal(err)
	}
	if !diff.Identical {
		t.Errorf("'lllm diff' of the run and its replay: not identical: task %v, config %v, divergences %+v, only in the run %v, only in the replay %v, total %+v",
			diff.Task, diff.Config, diff.Divergences, diff.OnlyA, diff.OnlyB, diff.Total)
	}
}

// ---------------------------------------------------------------------
// Exact replays.

// Every built-in tactic (and one with an image), with retries, tools, parse
// retries and each context manager, recorded on the OpenAI wire protocol
// and on the mock provider, replays exactly with no network and no key;
// so does the replay of the replay.
func TestRoundTripExact(t *testing.T) {
	for _, b := range []rtBackend{rtOpenAI, rtMock} {
		for _, sc := range rtScenarios(t) {
			if b.name == "mock" && sc.mock == "" {
				continue
			}
			t.Run(b.name+"/"+sc.name, func(t *testing.T) {
				cfg, srv := rtConfig(t, b, sc)
				res, run := recordRun(t, cfg, sc.task, logs.StatusOK)
				if sc.check != nil {
					sc.check(t, run, res)
				}
				sent := 0
				if srv != nil {
					sent = len(srv.Requests())
					if sent != res.Totals.ModelCalls {
						t.Fatalf("the server answered %d requests; the run logged %d model calls", sent, res.Totals.ModelCalls)
					}
					if res.Totals.Cost.USD <= 0 || res.Totals.Cost.InputTokens == 0 {
						t.Fatalf("the run on gpt-4o-mini cost %+v: usage or price missing", res.Totals.Cost)
					}
				}
				start := time.Now()
				_, rep := rtReplay(t, run)
				if took := time.Since(start); took > 10*time.Second {
					t.Errorf("the replay took %v: it waits the recorded backoff (Retry-After 30s) again", took)
				}
				rtAssertExact(t, run, res, rep)
				if srv != nil && len(srv.Requests()) != sent {
					t.Errorf("the replay sent %d requests to the server", len(srv.Requests())-sent)
				}
				again, err := logs.Open(filepath.Dir(rep.Run.Dir), rep.Run.RunID)
				if err != nil {
					t.Fatal(err)
				}
				if again.Start.Labels[replay.LabelReplayOf] != run.ID {
					t.Errorf("the replay's labels are %v, want %s=%s", again.Start.Labels, replay.LabelReplayOf, run.ID)
				}
				_, rep2 := rtReplay(t, again)
				rtAssertExact(t, run, res, rep2)
			})
		}
	}
}

// ---------------------------------------------------------------------
// One change, one divergence.

// rtChangedLines are the lines of a unified diff that differ (its "-" and
// "+" lines, without the two headers).
func rtChangedLines(diff string) []string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "---") || strings.HasPrefix(l, "+++") {
			continue
		}
		if strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+") {
			out = append(out, l)
		}
	}
	return out
}

// rtAssertDiverged checks that rep stopped at the recorded call at want,
// because its request differs, having served every call recorded before
// it, and that its diff changes exactly the lines changed (any order),
// or, when changed is nil, that match accepts them.
func rtAssertDiverged(t *testing.T, rec *replay.Recording, rep *replay.Report, want replay.Position, changed []string) *replay.Divergence {
	t.Helper()
	return rtAssertDivergedAfter(t, rec, rep, want, -1, changed)
}

// rtAssertDivergedAfter is rtAssertDiverged for a replay that serves
// served calls before the divergence (-1: those recorded before want).
func rtAssertDivergedAfter(t *testing.T, rec *replay.Recording, rep *replay.Report, want replay.Position, served int, changed []string) *replay.Divergence {
	t.Helper()
	d := rep.Divergence
	if d == nil {
		t.Fatalf("no divergence (%s, %d of %d calls served)", rep.Run.Status, rep.Calls, rep.Recorded)
	}
	if d.Position != want || d.Recorded == nil {
		t.Errorf("diverged at %+v (recorded call: %v), want %+v", d.Position, d.Recorded != nil, want)
	}
	if !strings.Contains(d.Reason, "differs") {
		t.Errorf("reason %q: want that the request differs from the recorded one", d.Reason)
	}
	before := slices.IndexFunc(rec.Calls(), func(c *replay.Call) bool { return c.Position == want })
	if before < 0 {
		t.Fatalf("the recording has no call at %+v", want)
	}
	if served < 0 {
		served = before
	}
	if rep.Calls != served {
		t.Errorf("the replay served %d calls before diverging, want %d", rep.Calls, served)
	}
	if rep.Run.Status != logs.StatusCancelled || !strings.Contains(rep.Run.Error, d.Error()) {
		t.Errorf("the replay's run ended %s %q, want cancelled with %q", rep.Run.Status, rep.Run.Error, d.Error())
	}
	if changed != nil {
		got := rtChangedLines(d.Diff)
		if !rtSameSet(got, changed) {
			t.Errorf("the diff changes\n  %s\nwant exactly\n  %s\ndiff:\n%s", strings.Join(got, "\n  "), strings.Join(changed, "\n  "), d.Diff)
		}
	}
	return d
}

func rtSameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func rtPos(agent, alias string, turn int) replay.Position {
	return replay.Position{Agent: agent, Dialog: alias, Turn: turn, Attempt: 1}
}

func rtFind(t *testing.T, name string) rtScenario {
	t.Helper()
	for _, sc := range rtScenarios(t) {
		if sc.name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %s", name)
	return rtScenario{}
}

// A run recorded on the OpenAI server or the mock provider, replayed after
// one change to its config, stops at the first call the change reaches,
// with a diff of just that change.
func TestRoundTripOneConfigChange(t *testing.T) {
	params := func(temp string) string { return `params: {"max_tokens":256,"temperature":` + temp + `}` }
	cases := []struct {
		scenario string
		set      string
		at       replay.Position // zero: the first call the context manager acted on
		changed  func(model string) []string
		served   int // calls served before the divergence; 0: those recorded before it
	}{
		{scenario: "debate", set: "agent_configs.judge.system_prompt=You are a lenient judge.", at: rtPos("judge", "main", 1),
			changed: func(string) []string { return []string{"-You judge debates impartially.", "+You are a lenient judge."} }},
		{scenario: "self_refine", set: "agent_configs.critic.model_args.temperature=0.9", at: rtPos("critic", "main", 1),
			changed: func(string) []string { return []string{"-" + params("0.3"), "+" + params("0.9")} }},
		{scenario: "chat", set: "global.model_args.temperature=1.1", at: rtPos("assistant", "main", 1),
			changed: func(string) []string { return []string{"-" + params("0.3"), "+" + params("1.1")} }},
		{scenario: "debate", set: "agent_configs.con.model_name=openai/gpt-4o", at: rtPos("con", "main", 1),
			changed: func(model string) []string { return []string{"-model: " + model, "+model: openai/gpt-4o"} }},
		// The judge sees two candidates, after two samples.
		{scenario: "best_of_n", set: "params.n=2", at: rtPos("judge", "main", 1), served: 2},
		{scenario: "react", set: "params.tools=[calculator, word_count]", at: rtPos("agent", "main", 1),
			changed: func(string) []string {
				// Its whole declaration, which the log keeps since 1.4.
				fn, err := tactics.LookupTool("rt_glossary")
				if err != nil {
					t.Fatal(err)
				}
				var schema any
				if err := json.Unmarshal(fn.Parameters, &schema); err != nil {
					t.Fatal(err)
				}
				compact, _ := json.Marshal(schema)
				return []string{"-tool rt_glossary: " + fn.Description, "-  parameters: " + string(compact), "-  required: " + strings.Join(fn.Required, ", ")}
			}},
		{scenario: "context_default", set: "global.context_manager.max_tokens=100000"},
		{scenario: "context_window", set: "global.context_manager.n=3"},
	}
	for _, b := range []rtBackend{rtOpenAI, rtMock} {
		for _, c := range cases {
			t.Run(b.name+"/"+c.scenario+"/"+c.set[:strings.Index(c.set, "=")], func(t *testing.T) {
				sc := rtFind(t, c.scenario)
				cfg, _ := rtConfig(t, b, sc)
				_, run := recordRun(t, cfg, sc.task, logs.StatusOK)
				rec, rep := rtReplay(t, run, c.set)
				at := c.at
				if at == (replay.Position{}) {
					for _, call := range rec.Calls() {
						if call.Context != nil && call.Context.Action != "none" {
							at = call.Position
							break
						}
					}
				}
				served := c.served
				if served == 0 {
					served = -1
				}
				var changed []string
				if c.changed != nil {
					changed = c.changed(cfg.Agents[0].ModelName)
				}
				d := rtAssertDivergedAfter(t, rec, rep, at, served, changed)
				switch c.scenario {
				case "best_of_n":
					if !strings.Contains(d.Diff, "\n-<candidate 3>\n") || !strings.Contains(d.Diff, "from 1 to 2") {
						t.Errorf("the diff does not show the judge's prompt losing candidate 3:\n%s", d.Diff)
					}
				case "context_default", "context_window":
					got := rtChangedLines(d.Diff)
					if len(got) != 2 || !strings.HasPrefix(got[0], "-context manager: ") || !strings.HasPrefix(got[1], "+context manager: ") {
						t.Errorf("the diff shows more than the manager's cut:\n%s", d.Diff)
					}
				}
			})
		}
	}
}

// A tool whose description or parameter schema changes between the run
// and its replay diverges at the first call that offers it, and the diff
// says that what differs is what the log keeps only as a digest.
func TestRoundTripChangedToolDeclaration(t *testing.T) {
	fn, err := tactics.LookupTool("rt_glossary")
	if err != nil {
		t.Fatal(err)
	}
	desc, schema := fn.Description, slices.Clone(fn.Parameters)
	restore := func() { fn.Description, fn.Parameters = desc, schema }
	t.Cleanup(restore)
	// Since format 1.4 the log keeps the declarations: the diff shows the
	// one line that changed, on both sides.
	changes := []struct {
		name      string
		change    func()
		old, new_ string // what the changed lines hold
	}{
		{"description", func() { fn.Description = "Defines a word, briefly." }, "tool rt_glossary: " + desc, "tool rt_glossary: Defines a word, briefly."},
		{"schema", func() {
			fn.Parameters = json.RawMessage(strings.Replace(string(schema), "the word to define", "the word to define, in lower case", 1))
		}, `"the word to define"`, `"the word to define, in lower case"`},
	}
	for _, b := range []rtBackend{rtOpenAI, rtMock} {
		for _, c := range changes {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				restore()
				sc := rtFind(t, "react")
				cfg, _ := rtConfig(t, b, sc)
				_, run := recordRun(t, cfg, sc.task, logs.StatusOK)
				c.change()
				defer restore()
				if string(fn.Parameters) == string(schema) && fn.Description == desc {
					t.Fatal("the change changed nothing")
				}
				rec, rep := rtReplay(t, run)
				d := rtAssertDiverged(t, rec, rep, rtPos("agent", "main", 1), nil)
				got := rtChangedLines(d.Diff)
				if len(got) != 2 || !strings.HasPrefix(got[0], "-") || !strings.Contains(got[0], c.old) ||
					!strings.HasPrefix(got[1], "+") || !strings.Contains(got[1], c.new_) {
					t.Errorf("the diff does not show just the changed declaration (%q, then %q):\n%s", c.old, c.new_, d.Diff)
				}
			})
		}
	}
}

// A different image file (the tactic reads it again) diverges at the
// first call, and the diff shows the two images by hash.
func TestRoundTripChangedImage(t *testing.T) {
	for _, b := range []rtBackend{rtOpenAI, rtMock} {
		t.Run(b.name, func(t *testing.T) {
			path := rtPNG(t, color.RGBA{200, 30, 30, 255})
			sc := rtFind(t, "vision")
			sc.yaml = regexp.MustCompile(`image: \S+\}`).ReplaceAllString(sc.yaml, "image: "+path+"}")
			cfg, _ := rtConfig(t, b, sc)
			_, run := recordRun(t, cfg, sc.task, logs.StatusOK)
			data, err := os.ReadFile(rtPNG(t, color.RGBA{30, 30, 200, 255}))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			rec, rep := rtReplay(t, run)
			d := rtAssertDiverged(t, rec, rep, rtPos("viewer", "main", 1), nil)
			got := rtChangedLines(d.Diff)
			if len(got) != 2 || !strings.HasPrefix(got[0], "-<image image/png") || !strings.HasPrefix(got[1], "+<image image/png") || got[0][1:] == got[1][1:] {
				t.Errorf("the diff does not show just the image change:\n%s", d.Diff)
			}
		})
	}
}

// When the model answers one call differently, the first call whose
// request holds that answer diverges from the recording, and the diff
// shows the two answers. Two ways: a live run (the server, or the mock's
// script, answering differently) checked call by call against the
// recording with replay.NewModel, and a recording whose reply is edited
// in its log.
func TestRoundTripChangedReply(t *testing.T) {
	const was, now = "[P1] Tabs are one byte.", "[P1] Tabs are one byte, and accessible."
	for _, b := range []rtBackend{rtOpenAI, rtMock} {
		t.Run(b.name, func(t *testing.T) {
			sc := rtFind(t, "debate")
			cfg, _ := rtConfig(t, b, sc)
			_, run := recordRun(t, cfg, sc.task, logs.StatusOK)

			t.Run("live", func(t *testing.T) {
				sc := sc
				sc.replies = slices.Clone(sc.replies)
				sc.replies[0].Text = now
				sc.mock = strings.Replace(sc.mock, was, now, 1)
				cfg, _ := rtConfig(t, b, sc)
				// As replay.Run does: the first divergence cancels the run.
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				rm := replay.NewModel(mustLoad(t, run), func(d *replay.Divergence) { cancel(d) })
				var mu sync.Mutex
				sent := 0
				res, err := tactics.Run(ctx, cfg, sc.task, tactics.RunOptions{LogDir: t.TempDir(), Sleep: noWait,
					Models: func(ctx context.Context, ac config.Agent, pc provider.Config) (provider.Model, error) {
						live, err := provider.Open(ctx, ac.ModelName, pc)
						return modelFunc(func(ctx context.Context, req *provider.Request) (*provider.Response, error) {
							if _, err := rm.Generate(ctx, req); err != nil {
								return nil, err
							}
							mu.Lock()
							sent++
							mu.Unlock()
							return live.Generate(ctx, req)
						}), err
					}})
				if err != nil {
					t.Fatal(err)
				}
				d := rm.Divergence()
				if d == nil {
					t.Fatalf("no divergence; the run ended %s", res.Status)
				}
				if d.Position != rtPos("con", "main", 1) || d.Recorded == nil {
					t.Errorf("diverged at %+v, want the con's first call, the first to hold the pro's changed answer", d.Position)
				}
				if got := rtChangedLines(d.Diff); !rtSameSet(got, []string{"-" + was, "+" + now}) {
					t.Errorf("the diff does not show just the changed answer:\n%s", d.Diff)
				}
				if sent != 1 || res.Status != logs.StatusCancelled || !strings.Contains(res.Error, d.Error()) {
					t.Errorf("the live run made %d calls and ended %s %q; want 1 (the pro's), then cancelled at the con's", sent, res.Status, res.Error)
				}
			})

			t.Run("edited log", func(t *testing.T) {
				// Change the pro's first reply in a copy of the log: the
				// message the pro's first model_call points to, and only it.
				rec := mustLoad(t, run)
				ref := rec.Calls()[0].Record.Reply
				if rec.Calls()[0].Position != rtPos("pro", "main", 1) || ref == nil {
					t.Fatalf("first call %+v", rec.Calls()[0].Position)
				}
				data, err := os.ReadFile(run.Path())
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.SplitAfter(string(data), "\n")
				edited := 0
				for i, l := range lines {
					var r struct {
						Kind   string `json:"kind"`
						Dialog string `json:"dialog"`
						Index  int    `json:"index"`
					}
					if json.Unmarshal([]byte(l), &r) == nil && r.Kind == "message" && r.Dialog == ref.Dialog && r.Index == ref.Index {
						lines[i] = strings.Replace(l, was, now, 1)
						edited++
					}
				}
				if edited != 1 || !strings.Contains(strings.Join(lines, ""), now) {
					t.Fatalf("edited %d lines", edited)
				}
				copied, err := writeLog(t, run, []byte(strings.Join(lines, "")))
				if err != nil {
					t.Fatal(err)
				}
				rec, rep := rtReplay(t, copied)
				rtAssertDiverged(t, rec, rep, rtPos("con", "main", 1), []string{"-" + was, "+" + now})
			})
		})
	}
}

// A context manager's own call for a summary is told apart from an
// agent's call in the diff, on either side, and both sides show the
// working dialog before the manager (docs/replay.md: "both sides show the
// dialog before it and a line for what it did ... A summary manager's own
// call says so"):
//
//   - recorded a summary call, replayed with room to spare: the replay's
//     call at that turn is an agent's plain call;
//   - recorded with room to spare, replayed on a tight budget: the
//     replay's call is the summariser's, where the recording has a plain
//     call;
//   - both summarise, with different budgets: they summarise different
//     messages.
func TestRoundTripSummaryCallDiff(t *testing.T) {
	summarises := regexp.MustCompile(`(?i)context manager.*summar|summar.*context manager`)
	cases := []struct {
		name           string
		record, replay int // the summary manager's max_tokens
		// Whether the recorded and the replayed calls at the divergence
		// are the summariser's.
		recSummary, repSummary bool
	}{
		{"recorded summary, replayed plain", 420, 100000, true, false},
		{"recorded plain, replayed summary", 100000, 420, false, true},
		{"both summaries, split differently", 420, 440, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := rtFind(t, "context_summary")
			sc.global = fmt.Sprintf("  context_manager: {type: summary, max_tokens: %d, buffer: 0}\n", c.record)
			cfg, _ := rtConfig(t, rtOpenAI, sc)
			_, run := recordRun(t, cfg, sc.task, logs.StatusOK)
			rec, rep := rtReplay(t, run, fmt.Sprintf("global.context_manager.max_tokens=%d", c.replay))
			d := rep.Divergence
			if d == nil || d.Recorded == nil {
				t.Fatalf("divergence %v: want one at a recorded call", d)
			}
			if d.Recorded.Summary != c.recSummary {
				t.Fatalf("the recorded call at the divergence (%+v) is a summary call: %v; the scenario wants %v", d.Position, d.Recorded.Summary, c.recSummary)
			}
			rtAssertDiverged(t, rec, rep, d.Position, nil)
			changed := rtChangedLines(d.Diff)
			for _, l := range changed {
				if strings.HasPrefix(l[1:], "[") {
					t.Errorf("the diff shows a message %q of the working dialog changed; both sides should show the working dialog before the manager, which is the same:\n%s", l, d.Diff)
					break
				}
			}
			var minus, plus []string
			for _, l := range changed {
				if l[0] == '-' {
					minus = append(minus, l)
				} else {
					plus = append(plus, l)
				}
			}
			side := func(lines []string, summary bool, which string) {
				said := slices.ContainsFunc(lines, summarises.MatchString)
				if summary && !said {
					t.Errorf("the %s call is a context manager's call for a summary, and the diff does not say so on its side:\n%s", which, d.Diff)
				}
				if !summary && !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l[1:], "context manager: summary (") }) {
					t.Errorf("the %s call is the agent's, and the diff does not show what the manager did for it:\n%s", which, d.Diff)
				}
			}
			if c.recSummary != c.repSummary {
				side(minus, c.recSummary, "recorded")
				side(plus, c.repSummary, "replayed")
			} else {
				// Both summarise: the diff must still show a change, and
				// say that it is in the summariser's request.
				if len(minus) == 0 || len(plus) == 0 || !slices.ContainsFunc(changed, func(l string) bool { return regexp.MustCompile(`(?i)summar`).MatchString(l) }) {
					t.Errorf("both calls summarise, and the diff does not say what differs:\n%s", d.Diff)
				}
				if !summarises.MatchString(d.Diff) {
					t.Errorf("the diff does not say the calls are the context manager's:\n%s", d.Diff)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------
// Logs cut short.

// A run's log cut at many byte offsets (at records' starts, in their
// middles and just before their newlines) replays up to the cut: the
// recording loads (with a warning for a torn line), every call recorded
// whole before the cut is served, and the replay then stops at the first
// call the log lost, saying the recording ends there. A log cut after its
// last call replays to the same result. Nothing panics.
func TestRoundTripCutLog(t *testing.T) {
	for _, c := range []struct {
		b    rtBackend
		name string
	}{{rtOpenAI, "react"}, {rtOpenAI, "context_summary"}, {rtOpenAI, "best_of_n"}, {rtOpenAI, "chat_retries"}, {rtMock, "debate"}} {
		t.Run(c.b.name+"/"+c.name, func(t *testing.T) {
			sc := rtFind(t, c.name)
			cfg, _ := rtConfig(t, c.b, sc)
			res, run := recordRun(t, cfg, sc.task, logs.StatusOK)
			data, err := os.ReadFile(run.Path())
			if err != nil {
				t.Fatal(err)
			}
			full := mustLoad(t, run).Calls()
			// Line starts.
			starts := []int{0}
			for i, c := range data {
				if c == '\n' && i+1 < len(data) {
					starts = append(starts, i+1)
				}
			}
			// At a model_call record: its start, middle and end; at the
			// record before it and every other record, one of the three in
			// turn.
			var cuts []int
			isCall := func(i int) bool {
				end := len(data)
				if i+1 < len(starts) {
					end = starts[i+1]
				}
				return i < len(starts) && bytes.Contains(data[starts[i]:end], []byte(`"kind":"model_call"`))
			}
			for i, s := range starts {
				end := len(data)
				if i+1 < len(starts) {
					end = starts[i+1]
				}
				at := []int{s, s + (end-s)/2, end - 1}
				switch {
				case isCall(i):
					cuts = append(cuts, at...)
				case isCall(i+1) || i%2 == 0:
					cuts = append(cuts, at[i%3])
				}
			}
			cuts = append(cuts, len(data))
			for _, cut := range cuts {
				rtCheckCut(t, run, res, data, cut, full)
			}
		})
	}
}

// rtCheckCut replays run's log cut to data[:cut].
func rtCheckCut(t *testing.T, run *logs.Run, res *tactics.Result, data []byte, cut int, full []*replay.Call) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("cut at %d: panic: %v", cut, p)
		}
	}()
	firstLine := bytes.IndexByte(data, '\n') + 1
	cutRun, err := writeLog(t, run, data[:cut])
	if err == nil {
		var rec *replay.Recording
		if rec, err = replay.Load(t.Context(), cutRun); err == nil {
			rtCheckCutReplay(t, rec, res, data, cut, full)
			return
		}
	}
	// Only a log without a whole run_start may fail to load, and then
	// with an error, not a panic.
	if cut >= firstLine {
		t.Errorf("cut at %d (after run_start): the log does not load: %v", cut, err)
	}
}

func rtCheckCutReplay(t *testing.T, rec *replay.Recording, res *tactics.Result, data []byte, cut int, full []*replay.Call) {
	t.Helper()
	whole := bytes.LastIndexByte(data[:cut], '\n') + 1 // the log's whole lines
	torn := whole < cut
	if torn && cut < len(data) && data[cut] != '\n' && len(rec.Warnings) == 0 {
		t.Errorf("cut at %d, mid-line: no warning of a torn line", cut)
	}
	// The calls recorded whole before the cut; a last line cut only of its
	// newline may count or not.
	kept := bytes.Count(data[:whole], []byte(`"kind":"model_call"`))
	okKept := []int{kept}
	if torn && json.Valid(data[whole:cut]) && bytes.Contains(data[whole:cut], []byte(`"kind":"model_call"`)) {
		okKept = append(okKept, kept+1)
	}
	if !slices.Contains(okKept, len(rec.Calls())) {
		t.Errorf("cut at %d: the recording has %d calls, want %v", cut, len(rec.Calls()), okKept)
		return
	}
	rep, err := replay.Run(t.Context(), rec, replay.Options{LogDir: t.TempDir()})
	if err != nil {
		t.Errorf("cut at %d: replay: %v", cut, err)
		return
	}
	if strings.Contains(rep.Run.Error, "panic") {
		t.Errorf("cut at %d: the replay panicked: %s", cut, rep.Run.Error)
	}
	n := len(rec.Calls())
	if rep.Calls != n || rep.Recorded != n {
		t.Errorf("cut at %d: the replay served %d of %d recorded calls, want all %d", cut, rep.Calls, rep.Recorded, n)
	}
	if n == len(full) {
		// Every call is there: the replay runs to the end, as the run did.
		if d := rep.Divergence; d != nil {
			t.Errorf("cut at %d, after every call: diverged: %v\n%s", cut, d, d.Diff)
		}
		if rep.Run.Status != res.Status || string(rep.Run.Result) != string(res.Result) {
			t.Errorf("cut at %d, after every call: replay ended %s %s, the run %s %s", cut, rep.Run.Status, rep.Run.Result, res.Status, res.Result)
		}
		return
	}
	d := rep.Divergence
	if d == nil {
		t.Errorf("cut at %d: %d of %d calls recorded, no divergence (%s)", cut, n, len(full), rep.Run.Status)
		return
	}
	if d.Position != full[n].Position || d.Recorded != nil {
		t.Errorf("cut at %d: diverged at %+v (recorded %v), want %+v, the first call the log lost", cut, d.Position, d.Recorded != nil, full[n].Position)
	}
	if !regexp.MustCompile(`(?i)ends before|no run_end|interrupted|torn`).MatchString(d.Reason) {
		t.Errorf("cut at %d: the divergence does not say the recording was cut short: %q", cut, d.Reason)
	}
	if rep.Run.Status != logs.StatusCancelled || !strings.Contains(rep.Run.Error, d.Error()) {
		t.Errorf("cut at %d: replay ended %s %q", cut, rep.Run.Status, rep.Run.Error)
	}
}
