package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/replay"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// Edge cases of replay: every run below is recorded offline on the mock
// provider, replayed, and checked to replay exactly (same status, error,
// result, totals, tree and log content) and, with a --set change, to
// diverge at the right call with a diff that shows the change.

// edgeConfig parses an inline config.
func edgeConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(t.Name()+".yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// shape is a run's dialog forest, one line per dialog (working copies
// included): owner/alias, its parent and its length.
func shape(t *testing.T, dir string) []string {
	t.Helper()
	rd, err := logs.OpenFile(filepath.Join(dir, logs.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	f, err := logs.Rebuild(t.Context(), rd)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, id := range f.IDs() {
		d := f.Dialog(id)
		s := fmt.Sprintf("%s/%s len %d", d.Owner(), d.Alias(), d.Len())
		if p := f.Dialog(d.Node().ParentID); p != nil {
			s += fmt.Sprintf(" <- %s/%s@%d", p.Owner(), p.Alias(), d.Node().SplitPoint)
		}
		out = append(out, s)
	}
	return out
}

// assertExact replays run and checks that it matches the recording res
// call for call: no divergence, every recorded call served, the same
// status, error, result, totals, dialog tree and log content.
func assertExact(t *testing.T, run *logs.Run, res *tactics.Result) *replay.Report {
	t.Helper()
	rep := replayMatches(t, run, res)
	if s, r := shape(t, run.Dir), shape(t, rep.Run.Dir); !slices.Equal(s, r) {
		t.Errorf("replay tree differs at %s", firstDiff(s, r))
	}
	if c, r := content(t, run.Dir), content(t, rep.Run.Dir); !slices.Equal(c, r) {
		t.Errorf("replay log content differs at %s", firstDiff(c, r))
	}
	return rep
}

// replayMatches replays run and checks everything assertExact does but
// the order of the tree and the log.
func replayMatches(t *testing.T, run *logs.Run, res *tactics.Result) *replay.Report {
	t.Helper()
	rep := replayRun(t, run, replay.Options{})
	checkSameEnd(t, res, rep)
	return rep
}

// byAlias is a run's log content as a sorted set of lines, each dialog
// named by owner/alias, with what concurrent branches may order
// differently (sequence numbers, call ordinals) and what differs between
// any two runs (times, ids, latencies) taken out.
func byAlias(t *testing.T, dir string) []string {
	t.Helper()
	recs := records(t, filepath.Join(dir, logs.EventsFile))
	names := map[string]string{}
	for _, rec := range recs {
		for _, n := range []*dialog.TreeNode{rec.DialogOpen, rec.Fork} {
			if n != nil {
				names[n.ID] = `"` + n.Owner + "/" + n.Alias + `"`
			}
		}
	}
	var out []string
	for _, rec := range recs {
		normalize(rec)
		rec.Seq = 0
		if m := rec.ModelCall; m != nil {
			m.Call = 0
		}
		b, _ := json.Marshal(rec)
		out = append(out, dialogID.ReplaceAllStringFunc(string(b), func(id string) string { return names[strings.Trim(id, `"`)] }))
	}
	slices.Sort(out)
	return out
}

// assertDiverges replays run with sets and checks that it stops at the
// recorded call at want, having served every recorded call before it,
// with a diff holding every line of diff.
func assertDiverges(t *testing.T, run *logs.Run, sets []string, want replay.Position, diff ...string) *replay.Divergence {
	t.Helper()
	rec := mustLoad(t, run)
	rep, err := replay.Run(t.Context(), rec, replay.Options{Set: sets})
	if err != nil {
		t.Fatalf("replay with %q: %v", sets, err)
	}
	d := rep.Divergence
	if d == nil {
		t.Fatalf("replay with %q did not diverge (%s, %d calls)", sets, rep.Run.Status, rep.Calls)
	}
	if d.Position != want || d.Recorded == nil {
		t.Errorf("replay with %q diverged at %+v (recorded %v: %s), want %+v", sets, d.Position, d.Recorded != nil, d.Reason, want)
	}
	before := slices.IndexFunc(rec.Calls(), func(c *replay.Call) bool { return c.Position == want })
	if rep.Calls != before {
		t.Errorf("replay served %d calls before diverging, want the %d recorded before %+v", rep.Calls, before, want)
	}
	for _, l := range diff {
		if !strings.Contains(d.Diff, "\n"+l+"\n") {
			t.Errorf("diff lacks the line %q:\n%s", l, d.Diff)
		}
	}
	if rep.Run.Status != logs.StatusCancelled || !strings.Contains(rep.Run.Error, d.Error()) {
		t.Errorf("replay's run ended %s %q, want cancelled with %q", rep.Run.Status, rep.Run.Error, d.Error())
	}
	return d
}

func pos(agent, alias string, turn, attempt int) replay.Position {
	return replay.Position{Agent: agent, Dialog: alias, Turn: turn, Attempt: attempt}
}

// Every built-in tactic replays exactly, and a change to one agent's
// config diverges at that agent's first call, showing the change.
func TestEdgeBuiltins(t *testing.T) {
	cases := []struct {
		file, task string
		set        string
		at         replay.Position
		diff       []string
	}{
		{"chat.yaml", "Capital of France?", "global.model_args.max_tokens=99",
			pos("assistant", "main", 1, 1), []string{`+params: {"max_tokens":99,"temperature":0.2}`}},
		{"best_of_n.yaml", "Name a prime number above 10.", "agent_configs.judge.system_prompt=Be kind.",
			pos("judge", "main", 1, 1), []string{"-You are a strict judge of answers.", "+Be kind."}},
		{"debate.yaml", "Is 0.999... equal to 1?", "agent_configs.con.system_prompt=Agree.",
			pos("con", "main", 1, 1), []string{"+Agree."}},
		{"debate.yaml", "Is 0.999... equal to 1?", "global.model_name=openai/gpt-4o-mini",
			pos("pro", "main", 1, 1), []string{"-model: mock/demo", "+model: openai/gpt-4o-mini"}},
		{"self_refine.yaml", "Write a haiku about autumn.", "agent_configs.critic.model_args.temperature=1",
			pos("critic", "main", 1, 1), []string{`+params: {"max_tokens":1024,"temperature":1}`}},
		{"react.yaml", "What is (17 + 25) * 3?", "params.max_steps=1",
			pos("agent", "main", 2, 1), []string{"+You are reaching the limit of tool calls. Provide the final response."}},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".yaml")+"/"+strings.ReplaceAll(c.set[:strings.Index(c.set, "=")], ".", "_"), func(t *testing.T) {
			res, run := recordRun(t, configFile(t, c.file), c.task, logs.StatusOK)
			assertExact(t, run, res)
			assertDiverges(t, run, []string{c.set}, c.at, c.diff...)
		})
	}
}

// A reply that fails to parse is sent back with the exception prompt on
// a fork; the retries replay exactly, and allowing fewer retries stops
// the replay at the first retry it no longer makes.
func TestEdgeParseRetries(t *testing.T) {
	cfg := edgeConfig(t, `
tactic_type: best_of_n
params: {n: 2}
global: {model_name: mock/demo, max_exception_retry: 3}
agent_configs:
  - {name: solver, system_prompt: You solve.}
  - {name: judge, system_prompt: You judge.}
mock:
  rules:
    - {match: "Candidate answers", reply: {text: "I pick <choice>9</choice>"}}
    - {match: "not \"9\"", reply: {text: "Then <choice>zero</choice>"}}
    - {match: "not \"zero\"", reply: {text: "Fine: <choice>2</choice>"}}
  replies: [{text: "A"}, {text: "B"}]
`)
	res, run := recordRun(t, cfg, "Pick one.", logs.StatusOK)
	if res.Totals.ModelCalls != 5 || string(res.Result) != `{"answer":"B","choice":2,"candidates":["A","B"]}` {
		t.Fatalf("recording: %d calls, result %s", res.Totals.ModelCalls, res.Result)
	}
	assertExact(t, run, res)

	rep := replayRun(t, run, replay.Options{Set: []string{"agent_configs.judge.max_exception_retry=1"}})
	d := rep.Divergence
	if d == nil || d.Position != pos("judge", "main", 3, 1) || d.Recorded == nil || !strings.Contains(d.Reason, "never made") {
		t.Fatalf("divergence %v, want the judge's third call, never made", d)
	}
	if rep.Calls != 4 || rep.Run.Status != logs.StatusFailed {
		t.Fatalf("replay: %d calls, %s %q", rep.Calls, rep.Run.Status, rep.Run.Error)
	}
}

// Tool rounds (with a repeated call, an unknown tool and the final prompt
// once the rounds run out) replay exactly, tools run again; fewer rounds
// diverge at the first call that gets the final prompt instead.
func TestEdgeToolRounds(t *testing.T) {
	cfg := edgeConfig(t, `
tactic_type: react
params: {max_steps: 3, tools: [calculator, word_count]}
global: {model_name: mock/demo}
agent_configs:
  - {name: agent, system_prompt: You use tools.}
mock:
  replies:
    - tool_calls: [{name: calculator, arguments: {expression: "6*7"}}, {name: word_count, arguments: {text: "a b c"}}]
    - tool_calls: [{name: calculator, arguments: {expression: "6*7"}}, {name: nosuch}]
    - tool_calls: [{name: calculator, arguments: {expression: "1+1"}}]
    - tool_calls: [{name: calculator, arguments: {expression: "2+2"}}]
    - text: "<answer>42</answer>"
`)
	res, run := recordRun(t, cfg, "What is 6*7?", logs.StatusOK)
	if res.Totals.ModelCalls != 5 || res.Totals.ToolCalls != 6 {
		t.Fatalf("recording: %+v", res.Totals)
	}
	assertExact(t, run, res)
	assertDiverges(t, run, []string{"params.max_steps=2"}, pos("agent", "main", 3, 1),
		"+You are reaching the limit of tool calls. Provide the final response.")
}

// Offering other tools is a change the diff must show: since format 1.4
// the log keeps their declarations, and the diff adds the new tool's.
func TestEdgeChangedTools(t *testing.T) {
	_, run := recordRun(t, configFile(t, "react.yaml"), "What is (17 + 25) * 3?", logs.StatusOK)
	d := assertDiverges(t, run, []string{"params.tools=[calculator, word_count, echo]"}, pos("agent", "main", 1, 1))
	if !regexp.MustCompile(`(?m)^\+tool echo: `).MatchString(d.Diff) || regexp.MustCompile(`(?m)^-`).MatchString(strings.SplitN(d.Diff, "@@", 3)[2]) {
		t.Errorf("the diff does not show just the added tool:\n%s", d.Diff)
	}
}

// A log of format 1.3 names the tools but keeps their schemas only as a
// digest: the diff of a change of tools shows the names.
func TestEdgeChangedToolsFormat13(t *testing.T) {
	_, run := recordRun(t, configFile(t, "react.yaml"), "What is (17 + 25) * 3?", logs.StatusOK)
	path := filepath.Join(run.Dir, logs.EventsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if !strings.Contains(l, `"kind":"declarations"`) {
			kept = append(kept, regexp.MustCompile(`,"declarations":"[^"]*"`).ReplaceAllString(l, ""))
		}
	}
	old := strings.Replace(strings.Join(kept, ""), fmt.Sprintf(`"version":"%d.%d"`, logs.VersionMajor, logs.VersionMinor), `"version":"1.3"`, 1)
	if old == string(data) || strings.Contains(old, "declarations") {
		t.Fatal("the log was not turned into a 1.3 log")
	}
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	d := assertDiverges(t, run, []string{"params.tools=[calculator, word_count, echo]"}, pos("agent", "main", 1, 1))
	if !regexp.MustCompile(`(?m)^-tools: calculator, word_count$`).MatchString(d.Diff) || !regexp.MustCompile(`(?m)^\+tools: calculator, word_count, echo$`).MatchString(d.Diff) {
		t.Errorf("the diff does not show the tools' names:\n%s", d.Diff)
	}
}

// Rate limits, server, network, overloaded and timeout errors, and a bad
// request recalled, are retried; the replay serves every failed attempt
// as the same error, so its log is the recording's.
func TestEdgeRetries(t *testing.T) {
	cfg := edgeConfig(t, `
tactic_type: chat
global: {model_name: mock/demo, max_llm_recall: 1}
agent_configs:
  - {name: assistant, system_prompt: You answer.}
mock:
  replies:
    - {error: rate_limit, retry_after: 1500ms}
    - {error: server}
    - {error: network}
    - {error: overloaded}
    - {error: timeout}
    - {error: bad_request}
    - {text: "Paris."}
`)
	res, run := recordRun(t, cfg, "Capital of France?", logs.StatusOK)
	if res.Totals.ModelCalls != 7 {
		t.Fatalf("recording: %+v", res.Totals)
	}
	start := time.Now()
	assertExact(t, run, res)
	if took := time.Since(start); took > time.Second {
		t.Errorf("the replay waited the backoff: %v", took)
	}
	// A change shows at the first attempt of the call, not a retry.
	assertDiverges(t, run, []string{"agent_configs.assistant.system_prompt=You guess."}, pos("assistant", "main", 1, 1),
		"-You answer.", "+You guess.")
	// Without the recall, the replay fails at the bad request and never
	// makes the recorded attempt that followed it.
	rep := replayRun(t, run, replay.Options{Set: []string{"global.max_llm_recall=0"}})
	if d := rep.Divergence; d == nil || d.Position != pos("assistant", "main", 1, 7) || !strings.Contains(d.Reason, "never made") {
		t.Errorf("divergence %v, want the 7th attempt, never made", d)
	}
	if rep.Calls != 6 || rep.Run.Status != logs.StatusFailed {
		t.Errorf("replay without recall: %d calls, %s %q", rep.Calls, rep.Run.Status, rep.Run.Error)
	}
}

// A run that failed because a model call kept failing replays to the same
// failure, with the same error.
func TestEdgeFailedCall(t *testing.T) {
	cfg := edgeConfig(t, `
tactic_type: chat
global: {model_name: mock/demo}
agent_configs:
  - {name: assistant, system_prompt: You answer.}
mock:
  replies: [{error: server}, {error: auth}]
`)
	res, run := recordRun(t, cfg, "Capital of France?", logs.StatusFailed)
	assertExact(t, run, res)
}

// A run with error_rate > 0 (seeded) over several agents replays exactly:
// every injected failure and its retries are served again.
func TestEdgeErrorRate(t *testing.T) {
	cfg := configFile(t, "debate.yaml", "mock.error_rate=0.4", "mock.seed=11", "params.rounds=3")
	res, run := recordRun(t, cfg, "Is 0.999... equal to 1?", logs.StatusOK)
	rec := mustLoad(t, run)
	retried := 0
	for _, c := range rec.Calls() {
		if c.Attempt > 1 {
			retried++
		}
	}
	if retried == 0 {
		t.Fatalf("error_rate 0.4 injected no failure in %d calls: pick another seed", len(rec.Calls()))
	}
	assertExact(t, run, res)
	assertDiverges(t, run, []string{"agent_configs.judge.model_args.temperature=0.5"}, pos("judge", "main", 1, 1),
		`+params: {"max_tokens":1024,"temperature":0.5}`)
}

// debateLong is a debate whose arguments are long enough for a tight
// context budget to act on.
func debateLong(t *testing.T, cm string) *config.Config {
	t.Helper()
	long := strings.Repeat("evidence and more evidence ", 12)
	return edgeConfig(t, fmt.Sprintf(`
tactic_type: debate
params: {rounds: 4}
global: {model_name: mock/demo, context_manager: %s}
agent_configs:
  - {name: pro, system_prompt: You argue for.}
  - {name: con, system_prompt: You argue against.}
  - {name: judge, system_prompt: You judge.}
mock:
  rules:
    - {match: "Summarise the conversation above", reply: {text: "Both sides argued at length; nothing is settled."}}
    - {match: "Weigh the arguments", reply: {text: "<verdict>con</verdict>"}}
  replies:
%s`, cm, strings.Repeat("    - {text: \"Argument: "+long+"\"}\n", 8)))
}

// contextActions are the context records of a run, as "agent action note".
func contextActions(t *testing.T, run *logs.Run) []string {
	t.Helper()
	var out []string
	for _, rec := range records(t, run.Path()) {
		if c := rec.Context; c != nil {
			out = append(out, c.Agent+" "+c.Action+" "+c.Note)
		}
	}
	return out
}

// count is how many of lines contain sub.
func count(lines []string, sub string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// The default manager, over a tight max_tokens, cuts the dialogs; the
// replay cuts them alike, and another budget diverges at the first call
// it cuts differently, the diff showing only the cut.
func TestEdgeContextDefault(t *testing.T) {
	res, run := recordRun(t, debateLong(t, "{type: default, max_tokens: 400, buffer: 0}"), "Tabs beat spaces.", logs.StatusOK)
	acts := contextActions(t, run)
	if count(acts, " truncate ") == 0 {
		t.Fatalf("the default manager never truncated:\n%s", strings.Join(acts, "\n"))
	}
	assertExact(t, run, res)
	d := assertDiverges(t, run, []string{"global.context_manager.max_tokens=100000"}, firstAction(t, run, "truncate"))
	if !strings.Contains(d.Diff, "\n-context manager: default (truncate), ") || !strings.Contains(d.Diff, "\n+context manager: default (none), ") {
		t.Errorf("the diff does not show the cut:\n%s", d.Diff)
	}
}

// firstAction is the position of the first call a context manager acted
// on with action.
func firstAction(t *testing.T, run *logs.Run, action string) replay.Position {
	t.Helper()
	for _, c := range mustLoad(t, run).Calls() {
		if c.Context != nil && c.Context.Action == action {
			return c.Position
		}
	}
	t.Fatalf("no call with context action %s", action)
	return replay.Position{}
}

// The window manager replays exactly, and a wider window diverges at the
// first call it windows differently.
func TestEdgeContextWindow(t *testing.T) {
	res, run := recordRun(t, debateLong(t, "{type: window, n: 2}"), "Tabs beat spaces.", logs.StatusOK)
	assertExact(t, run, res)
	assertDiverges(t, run, []string{"global.context_manager.n=5"}, firstAction(t, run, "window"))
}

// The summary manager, over a tight budget, summarises with a model call
// and keeps its summary on later calls: the summariser's calls are served
// from the recording too, so the replay is exact; a budget with room to
// spare diverges at the first summariser call, which it no longer makes.
func TestEdgeContextSummary(t *testing.T) {
	res, run := recordRun(t, debateLong(t, "{type: summary, max_tokens: 250, buffer: 0}"), "Tabs beat spaces.", logs.StatusOK)
	acts := contextActions(t, run)
	if count(acts, "summarised ") == 0 || count(acts, "kept the summary") == 0 {
		t.Fatalf("the summary manager did not both summarise and keep its summary:\n%s", strings.Join(acts, "\n"))
	}
	assertExact(t, run, res)
	// With room to spare the summariser is never called: the replay's
	// call at its turn is the plain one, and the diff must say that the
	// recorded call was the summariser's.
	at := firstAction(t, run, "summary")
	at.Turn--
	d := assertDiverges(t, run, []string{"global.context_manager.max_tokens=100000"}, at)
	if !regexp.MustCompile(`(?mi)^-.*summar`).MatchString(d.Diff) {
		t.Errorf("the diff does not show that the recorded call was the summariser's:\n%s", d.Diff)
	}
}

// A run with summaries recorded before format 1.3, whose log lacks their
// text, is refused with one error that says so, not served empty.
func TestEdgeSummaryBeforeFormat13(t *testing.T) {
	_, run := recordRun(t, debateLong(t, "{type: summary, max_tokens: 250, buffer: 0}"), "Tabs beat spaces.", logs.StatusOK)
	path := filepath.Join(run.Dir, logs.EventsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`,"text":"(?:[^"\\]|\\.)*"`)
	lines := strings.SplitAfter(strings.Replace(string(data), fmt.Sprintf(`"version":"%d.%d"`, logs.VersionMajor, logs.VersionMinor), `"version":"1.2"`, 1), "\n")
	taken := 0
	for i, l := range lines {
		if strings.Contains(l, `"kind":"model_call"`) && text.MatchString(l) {
			lines[i], taken = text.ReplaceAllString(l, ""), taken+1
		}
	}
	old := strings.Join(lines, "")
	if taken == 0 {
		t.Fatal("the log has no summary text to take out")
	}
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Load(t.Context(), run); err == nil || !strings.Contains(err.Error(), "format 1.2, which does not keep the text of a summary") {
		t.Fatalf("Load = %v, want the 1.3 refusal", err)
	}
}

// A streamed reply is streamed again by the replay, whole, and the
// replayed reply is the recorded one (text, usage, cost).
func TestEdgeStreaming(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "stream"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	model, err := provider.Open(ctx, "mock/demo", provider.Config{Mock: &provider.MockConfig{
		Replies: []provider.MockReply{{Text: "The capital of France is Paris, on the Seine."}}}})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(m provider.Model, log tactics.Log) (string, *dialog.Message, error) {
		var got strings.Builder
		a := &tactics.Agent{Name: "assistant", System: dialog.MustPrompt("sys", "You answer."), Model: m, ModelName: "mock/demo", Log: log,
			Stream: func(_ context.Context, c provider.Chunk) error { got.WriteString(c.Text); return nil }}
		if err := a.Open("main", nil); err != nil {
			return "", nil, err
		}
		if err := a.Receive("Capital of France?"); err != nil {
			return "", nil, err
		}
		reply, _, err := a.Respond(ctx)
		return got.String(), reply, err
	}
	streamed, reply, err := ask(model, w)
	if err != nil || streamed != reply.Text() {
		t.Fatalf("recording: %v, streamed %q", err, streamed)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	rm := replay.NewModel(mustLoad(t, run), nil)
	again, reply2, err := ask(rm, nil)
	if err != nil || rm.Divergence() != nil {
		t.Fatalf("replay: %v %v", err, rm.Divergence())
	}
	if again != streamed || reply2.Text() != reply.Text() || reply2.Usage != reply.Usage || reply2.USD != reply.USD {
		t.Fatalf("replay streamed %q, replied %+v; the run streamed %q, replied %+v", again, reply2, streamed, reply)
	}
}

// A run that fails (the model never gives the <answer> the react prompt
// requires, through every parse retry) replays to the same failure.
func TestEdgeTacticError(t *testing.T) {
	cfg := edgeConfig(t, `
tactic_type: react
params: {max_steps: 1, tools: [calculator]}
global: {model_name: mock/demo}
agent_configs:
  - {name: agent, system_prompt: You use tools.}
mock:
  replies:
    - tool_calls: [{name: calculator, arguments: {expression: "2*"}}]
    - text: "I cannot say."
`)
	res, run := recordRun(t, cfg, "What is 2*?", logs.StatusFailed)
	if !strings.Contains(res.Error, "missing required tags: <answer>") {
		t.Fatalf("recording failed with %q", res.Error)
	}
	assertExact(t, run, res)
}

// A run cancelled during a model call replays to the same cancellation:
// every recorded call is served, the cancelled one too, and the replay's
// run ends cancelled with the same error, without a divergence.
func TestEdgeCancelledInCall(t *testing.T) {
	cfg := edgeConfig(t, `
tactic_type: self_refine
global: {model_name: mock/demo}
agent_configs:
  - {name: solver, system_prompt: You write.}
  - {name: critic, system_prompt: You critique.}
mock:
  latency: 1s
`)
	root := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var calls atomic.Int32
	res, err := tactics.Run(ctx, cfg, "Write a line.", tactics.RunOptions{LogDir: root, Sleep: noWait,
		Models: func(ctx context.Context, ac config.Agent, pc provider.Config) (provider.Model, error) {
			fast, err := provider.Open(ctx, ac.ModelName, provider.Config{Mock: &provider.MockConfig{}})
			if err != nil {
				return nil, err
			}
			slow, err := provider.Open(ctx, ac.ModelName, pc) // the config's latency: 1s
			return modelFunc(func(ctx context.Context, req *provider.Request) (*provider.Response, error) {
				if calls.Add(1) == 2 { // the critic's first call: cancelled while it waits
					time.AfterFunc(10*time.Millisecond, cancel)
					return slow.Generate(ctx, req)
				}
				return fast.Generate(ctx, req)
			}), err
		}})
	if err != nil || res.Status != logs.StatusCancelled || res.Totals.ModelCalls != 2 {
		t.Fatalf("recording: %v %+v", err, res)
	}
	run, err := logs.Open(root, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	assertExact(t, run, res)
}

// A run cancelled while waiting to retry has no record of the call it
// never made: the replay serves every recorded call, then stops where the
// recording ends, saying the run was cancelled there.
func TestEdgeCancelledInBackoff(t *testing.T) {
	cfg := edgeConfig(t, `
tactic_type: chat
global: {model_name: mock/demo}
agent_configs:
  - {name: assistant, system_prompt: You answer.}
mock:
  replies: [{error: server}]
`)
	root := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res, err := tactics.Run(ctx, cfg, "Capital of France?", tactics.RunOptions{LogDir: root,
		Sleep: func(ctx context.Context, _ time.Duration) error { cancel(); return ctx.Err() }})
	if err != nil || res.Status != logs.StatusCancelled {
		t.Fatalf("recording: %v %+v", err, res)
	}
	run, err := logs.Open(root, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	rep := replayRun(t, run, replay.Options{})
	if rep.Calls != 1 || rep.Recorded != 1 {
		t.Errorf("replay served %d of %d calls", rep.Calls, rep.Recorded)
	}
	if rep.Run.Status != logs.StatusCancelled {
		t.Errorf("replay ended %s, want cancelled as the run did", rep.Run.Status)
	}
	if d := rep.Divergence; d != nil && (d.Position != pos("assistant", "main", 1, 2) || !strings.Contains(d.Error(), "cancelled")) {
		t.Errorf("divergence %q at %+v: want the retry the run never made, saying the run was cancelled before it", d.Error(), d.Position)
	}
}

// Runs made at once by one prepared Runner (sharing its models, whose
// scripted replies and injected errors they consume between them, and its
// context managers, the summary manager's kept summaries included) each
// replay exactly, one by one.
func TestEdgeRunnerConcurrent(t *testing.T) {
	for name, cfg := range map[string]*config.Config{
		"error_rate": configFile(t, "best_of_n.yaml", "mock.error_rate=0.3", "mock.seed=5"),
		"summary":    debateLong(t, "{type: summary, max_tokens: 250, buffer: 0}"),
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			r, err := tactics.Prepare(t.Context(), cfg, tactics.RunOptions{LogDir: root, Sleep: noWait})
			if err != nil {
				t.Fatal(err)
			}
			results := make([]*tactics.Result, 3)
			var wg sync.WaitGroup
			for i := range results {
				wg.Go(func() {
					res, err := r.Run(t.Context(), fmt.Sprintf("Task %d: name a prime.", i))
					if err != nil || res.Status != logs.StatusOK {
						t.Errorf("task %d: %v %+v", i, err, res)
					}
					results[i] = res
				})
			}
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}
			if name == "error_rate" && !slices.ContainsFunc(results, func(r *tactics.Result) bool { return r.Totals.ModelCalls > 4 }) {
				t.Fatal("error_rate 0.3 injected no failure: pick another seed")
			}
			for i, res := range results {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					run, err := logs.Open(root, res.RunID)
					if err != nil {
						t.Fatal(err)
					}
					assertExact(t, run, res)
				})
			}
		})
	}
}

func init() {
	tactics.Register("edge_fanout", func(map[string]any) (tactics.Tactic, error) { return fanout{}, nil })
}

// fanout answers the task in four forks of one dialog at once, one
// goroutine each.
type fanout struct{}

func (fanout) Agents() []string { return []string{"solver"} }

func (fanout) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	a, err := s.Agent("solver")
	if err != nil {
		return nil, err
	}
	if err := a.Open("main", nil); err != nil {
		return nil, err
	}
	if err := a.Receive(task); err != nil {
		return nil, err
	}
	out := make([]string, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range out {
		alias := fmt.Sprintf("b%d", i+1)
		if err := a.Fork("main", alias, 0, 0, false); err != nil {
			return nil, err
		}
		wg.Go(func() {
			reply, _, err := a.RespondTo(ctx, alias)
			if err == nil {
				out[i] = reply.Text()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// A tactic answering forks on goroutines (with injected errors) replays
// exactly: calls are matched by position, not arrival order.
func TestEdgeConcurrentBranches(t *testing.T) {
	cfg := edgeConfig(t, `
tactic_type: edge_fanout
global: {model_name: mock/demo, model_args: {temperature: 1}}
agent_configs:
  - {name: solver, system_prompt: You solve.}
mock:
  error_rate: 0.3
  seed: 3
  replies: [{text: "one"}, {text: "two"}, {text: "three"}, {text: "four"}]
`)
	res, run := recordRun(t, cfg, "Say a number.", logs.StatusOK)
	if res.Totals.ModelCalls == 4 {
		t.Fatal("error_rate 0.3 injected no failure: pick another seed")
	}
	rep := replayMatches(t, run, res)
	s, r := shape(t, run.Dir), shape(t, rep.Run.Dir)
	slices.Sort(s)
	slices.Sort(r)
	if !slices.Equal(s, r) {
		t.Errorf("replay tree differs at %s", firstDiff(s, r))
	}
	if c, r := byAlias(t, run.Dir), byAlias(t, rep.Run.Dir); !slices.Equal(c, r) {
		t.Errorf("replay log content differs at %s", firstDiff(c, r))
	}
}

// A log cut after some records (a crash; at a record's start, middle and
// end) replays as far as it goes: every whole call recorded before the
// cut is served, and the replay stops at the first call after it, saying
// the recording ends there, not that the request differs.
func TestEdgeCutLog(t *testing.T) {
	_, run := recordRun(t, configFile(t, "debate.yaml"), "Is 0.999... equal to 1?", logs.StatusOK)
	data, err := os.ReadFile(run.Path())
	if err != nil {
		t.Fatal(err)
	}
	// Cut somewhere after the third model_call record, before the fourth.
	idx := regexp.MustCompile(`"kind":"model_call"`).FindAllIndex(data, -1)
	if len(idx) != 5 {
		t.Fatalf("%d model calls recorded, want 5", len(idx))
	}
	lo := idx[2][1] + strings.IndexByte(string(data[idx[2][1]:]), '\n') + 1
	hi := idx[3][0]
	for _, cut := range []int{lo + 1, (lo + hi) / 2, hi - 1} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			torn, err := writeLog(t, run, data[:cut])
			if err != nil {
				t.Fatal(err)
			}
			rec := mustLoad(t, torn)
			// A cut just before a newline leaves a whole record.
			if data[cut-1] != '\n' && data[cut] != '\n' && len(rec.Warnings) == 0 {
				t.Errorf("no warning for the torn last line")
			}
			rep, err := replay.Run(t.Context(), rec, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			d := rep.Divergence
			if rep.Calls != 3 || rep.Recorded != 3 || d == nil {
				t.Fatalf("replay of a log cut after 3 calls served %d of %d, divergence %v", rep.Calls, rep.Recorded, d)
			}
			if d.Position != pos("con", "main", 2, 1) {
				t.Errorf("diverged at %+v, want the con's second call, the first the log lost", d.Position)
			}
			if !regexp.MustCompile(`(?i)torn|cut|ends|interrupted|incomplete|unfinished|did not finish`).MatchString(d.Error()) {
				t.Errorf("the divergence does not say the recording was cut short: %q", d.Error())
			}
			if rep.Run.Status != logs.StatusCancelled || !strings.Contains(rep.Run.Error, d.Error()) {
				t.Errorf("replay ended %s %q", rep.Run.Status, rep.Run.Error)
			}
		})
	}
}

func init() {
	tactics.Register("edge_twice", func(map[string]any) (tactics.Tactic, error) { return twice{}, nil })
}

// twice asks chat, as a sub-tactic, for the task and then for it again.
type twice struct{}

func (twice) Agents() []string { return []string{"assistant"} }

func (twice) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	var out []any
	for _, q := range []string{task, task + " Again."} {
		r, err := s.Sub(ctx, "chat", nil, q)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// A tactic that runs sub-tactics (whose agents have the same names and
// open the same aliases) replays exactly.
func TestEdgeSubTactics(t *testing.T) {
	cfg := edgeConfig(t, `
tactic_type: edge_twice
global: {model_name: mock/demo}
agent_configs:
  - {name: assistant, system_prompt: You answer.}
mock:
  replies: [{text: "Paris."}, {text: "Still Paris."}]
`)
	res, run := recordRun(t, cfg, "Capital of France?", logs.StatusOK)
	if string(res.Result) != `["Paris.","Still Paris."]` {
		t.Fatalf("recording: %s", res.Result)
	}
	assertExact(t, run, res)
	rep := replayRun(t, run, replay.Options{Set: []string{"agent_configs.assistant.system_prompt=You guess."}})
	if d := rep.Divergence; d == nil || d.Agent != "assistant" || d.Turn != 1 || d.Recorded == nil || rep.Calls != 0 ||
		!strings.Contains(d.Diff, "\n-You answer.\n") || !strings.Contains(d.Diff, "\n+You guess.\n") {
		t.Errorf("divergence %v after %d calls, want the first call, showing the prompt change", d, rep.Calls)
	}
}
