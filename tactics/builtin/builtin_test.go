package builtin

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
	"github.com/lllm-go/lllm/tactics"
)

// run runs cfg on task in a fresh log root and checks that it ended ok.
func run(t *testing.T, cfg *config.Config, task string) (*tactics.Result, *logs.Run) {
	t.Helper()
	dir := t.TempDir()
	res, err := tactics.Run(t.Context(), cfg, task, tactics.RunOptions{LogDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != logs.StatusOK {
		t.Fatalf("status %s: %s", res.Status, res.Error)
	}
	r, err := logs.Open(dir, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return res, r
}

// decode decodes a run's result into v.
func decode(t *testing.T, res *tactics.Result, v any) {
	t.Helper()
	if err := json.Unmarshal(res.Result, v); err != nil {
		t.Fatalf("result %s: %v", res.Result, err)
	}
}

// dialogs lists the run's canonical dialogs as "owner/alias", leaving out
// the working copies of each call ("alias#n"), in the order they were
// opened, with the parent of each fork after an arrow.
func dialogs(t *testing.T, r *logs.Run) []string {
	t.Helper()
	f, warns, err := r.Forest(t.Context())
	if err != nil || len(warns) > 0 {
		t.Fatalf("forest: %v %v", err, warns)
	}
	var out []string
	for _, id := range f.IDs() {
		d := f.Dialog(id)
		if strings.Contains(d.Alias(), "#") {
			continue
		}
		s := d.Owner() + "/" + d.Alias()
		if p := d.Node().ParentID; p != "" {
			pd := f.Dialog(p)
			s += " <- " + pd.Owner() + "/" + pd.Alias()
		}
		out = append(out, s)
	}
	return out
}

// tail is the last message of the canonical dialog owner/alias.
func tail(t *testing.T, r *logs.Run, owner, alias string) *dialog.Message {
	t.Helper()
	f, _, err := r.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range f.IDs() {
		if d := f.Dialog(id); d.Owner() == owner && d.Alias() == alias {
			return d.Tail()
		}
	}
	t.Fatalf("no dialog %s/%s", owner, alias)
	return nil
}

func load(t *testing.T, name string) *config.Config {
	t.Helper()
	cfg, err := config.Load(filepath.Join("..", "..", "configs", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// configTests run each config of configs/ on the mock provider.
var configTests = map[string]func(t *testing.T, cfg *config.Config){
	"chat": func(t *testing.T, cfg *config.Config) {
		res, r := run(t, cfg, "Capital of France?")
		if string(res.Result) != `"The capital of France is Paris."` {
			t.Fatalf("result %s", res.Result)
		}
		if got, want := dialogs(t, r), []string{"assistant/main"}; !slices.Equal(got, want) {
			t.Fatalf("dialogs %q, want %q", got, want)
		}
		// The system prompt came from prompts/quickstart/solver.md.
		f, _, _ := r.Forest(t.Context())
		if head := f.Dialog(f.Roots()[0]).Head(); head.Role != dialog.RoleSystem || !strings.Contains(head.Content, "call the calculator") {
			t.Fatalf("system message %+v", head)
		}
	},
	"best_of_n":  testBestOfN,
	"quickstart": testBestOfN,
	"react": func(t *testing.T, cfg *config.Config) {
		res, r := run(t, cfg, "What is (17 + 25) * 3?")
		var out ReactResult
		decode(t, res, &out)
		if out != (ReactResult{Answer: "126", ToolCalls: 1}) || res.Totals.ToolCalls != 1 || res.Totals.ModelCalls != 2 {
			t.Fatalf("result %+v, totals %+v", out, res.Totals)
		}
		// The tool really ran: its result went back to the model.
		f, _, _ := r.Forest(t.Context())
		var toolMsg *dialog.Message
		for _, id := range f.IDs() {
			for _, m := range f.Dialog(id).Messages() {
				if m.Role == dialog.RoleTool {
					toolMsg = m
				}
			}
		}
		if toolMsg == nil || !strings.HasSuffix(toolMsg.Content, "\n126") || toolMsg.Name != "calculator" {
			t.Fatalf("tool message %+v", toolMsg)
		}
		if got, want := dialogs(t, r), []string{"agent/main"}; !slices.Equal(got, want) {
			t.Fatalf("dialogs %q, want %q", got, want)
		}
	},
	"self_refine": func(t *testing.T, cfg *config.Config) {
		res, r := run(t, cfg, "Write a haiku about autumn.")
		var out SelfRefineResult
		decode(t, res, &out)
		if !strings.HasPrefix(out.Answer, "Red maple") || out.Iterations != 1 || len(out.Critiques) != 2 ||
			!strings.Contains(out.Critiques[1], "<DONE>") {
			t.Fatalf("result %+v", out)
		}
		if got, want := dialogs(t, r), []string{"solver/main", "critic/main"}; !slices.Equal(got, want) {
			t.Fatalf("dialogs %q, want %q", got, want)
		}
		// The revision happened in the solver's one dialog, after the critique.
		f, _, _ := r.Forest(t.Context())
		for _, id := range f.Roots() {
			d := f.Dialog(id)
			if d.Owner() != "solver" {
				continue
			}
			var names []string
			for _, m := range d.Messages() {
				names = append(names, m.Name)
			}
			if want := []string{"system", "user", "solver", "critic", "solver"}; !slices.Equal(names, want) {
				t.Fatalf("solver dialog senders %q, want %q", names, want)
			}
		}
	},
	"debate": func(t *testing.T, cfg *config.Config) {
		res, r := run(t, cfg, "Remote work is better than office work.")
		var out DebateResult
		decode(t, res, &out)
		want := []DebateRound{
			{Pro: "[P1] No commute saves an hour a day.", Con: "[C1] The hour is lost again to meetings about meetings."},
			{Pro: "[P2] Async tools make most meetings unnecessary.", Con: "[C2] Mentoring juniors still needs a shared room."},
		}
		if out.Verdict != "con wins" || !slices.Equal(out.Rounds, want) {
			t.Fatalf("result %+v", out)
		}
		if got, want := dialogs(t, r), []string{"pro/main", "con/main", "judge/main"}; !slices.Equal(got, want) {
			t.Fatalf("dialogs %q, want %q", got, want)
		}
		if m := tail(t, r, "judge", "main"); !strings.Contains(m.Content, "<verdict>con wins</verdict>") {
			t.Fatalf("judge's last message %q", m.Content)
		}
	},
}

func testBestOfN(t *testing.T, cfg *config.Config) {
	res, r := run(t, cfg, "Name a prime between 10 and 20.")
	var out BestOfNResult
	decode(t, res, &out)
	want := BestOfNResult{Answer: "13: it has no divisor but 1 and itself.", Choice: 2,
		Candidates: []string{"15 is prime.", "13: it has no divisor but 1 and itself.", "11, probably."}}
	if out.Answer != want.Answer || out.Choice != want.Choice || !slices.Equal(out.Candidates, want.Candidates) {
		t.Fatalf("result %+v, want %+v", out, want)
	}
	got := dialogs(t, r)
	wantDialogs := []string{"solver/main", "solver/try1 <- solver/main", "solver/try2 <- solver/main", "solver/try3 <- solver/main", "judge/main"}
	if !slices.Equal(got, wantDialogs) {
		t.Fatalf("dialogs %q, want %q", got, wantDialogs)
	}
	if m := tail(t, r, "solver", "try3"); m.Content != "11, probably." {
		t.Fatalf("try3 ends with %q", m.Content)
	}
	if res.Totals.ModelCalls != 4 {
		t.Fatalf("model calls %d, want 4", res.Totals.ModelCalls)
	}
}

func TestConfigs(t *testing.T) {
	files, err := filepath.Glob("../../configs/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		switch name {
		case "base":
			continue // inherited by the others, not runnable alone
		case "serve":
			continue // lllm serve's agents, tested in runtime/server
		case "sweep-example":
			continue // a sweep spec, not a tactic config: tested in cmd/lllm/cli
		}
		if configTests[name] == nil {
			t.Errorf("configs/%s.yaml has no test in configTests", name)
		}
	}
	for name, test := range configTests {
		t.Run(name, func(t *testing.T) { test(t, load(t, name)) })
	}
}

// TestQuickstartShowsItsParts checks what the quickstart's comments
// promise: inheritance from base.yaml, a context manager at work.
func TestQuickstartShowsItsParts(t *testing.T) {
	cfg := load(t, "quickstart")
	if len(cfg.Files) != 2 || filepath.Base(cfg.Files[1]) != "base.yaml" {
		t.Fatalf("files %q, want quickstart.yaml and its base", cfg.Files)
	}
	solver, err := cfg.Agent("solver")
	if err != nil {
		t.Fatal(err)
	}
	if solver.ModelName != "mock/demo" || solver.ModelArgs["max_tokens"] != 1024 || solver.ModelArgs["temperature"] != 0.9 ||
		solver.ContextManager["max_tokens"] != 64000 {
		t.Fatalf("solver config %+v", solver)
	}
	_, r := run(t, cfg, "Name a prime between 10 and 20.")
	rd, err := r.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	fits := 0
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		if rec.Kind == logs.KindContext && rec.Context.Manager == "default" {
			fits++
		}
	}
	if fits != 4 {
		t.Fatalf("%d context manager records, want one per model call (4)", fits)
	}
}

// TestForestByAliasOnQuickstartRun: the forest rebuilt from a run of the
// quickstart (best_of_n on the mock) finds each agent's dialogs by alias.
func TestForestByAliasOnQuickstartRun(t *testing.T) {
	_, r := run(t, load(t, "quickstart"), "Name a prime number above 10.")
	f, _, err := r.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	one := func(owner, alias string) *dialog.Dialog {
		t.Helper()
		ds := f.ByAlias(owner, alias)
		if len(ds) != 1 {
			t.Fatalf("ByAlias(%q, %q): %d dialogs, want 1", owner, alias, len(ds))
		}
		if ds[0].Owner() != owner || ds[0].Alias() != alias {
			t.Fatalf("ByAlias(%q, %q) gave %s/%s", owner, alias, ds[0].Owner(), ds[0].Alias())
		}
		return ds[0]
	}
	solver, judge := one("solver", "main"), one("judge", "main")
	if !solver.Node().IsRoot() || !judge.Node().IsRoot() || solver == judge {
		t.Errorf("solver/main %+v and judge/main %+v: want two roots", solver.Node(), judge.Node())
	}
	try2 := one("solver", "try2")
	if try2.Node().ParentID != solver.ID() || try2.Tail().Content != "13: it has no divisor but 1 and itself." {
		t.Errorf("solver/try2: parent %s, last message %q", try2.Node().ParentID, try2.Tail().Content)
	}
	for _, miss := range [][2]string{{"judge", "try2"}, {"solver", "nope"}, {"", "main"}} {
		if ds := f.ByAlias(miss[0], miss[1]); len(ds) != 0 {
			t.Errorf("ByAlias(%q, %q) = %d dialogs, want none", miss[0], miss[1], len(ds))
		}
	}
}

// TestForestByAliasReused: an alias an agent closed and opened again names
// both dialogs, in the order they were opened.
func TestForestByAliasReused(t *testing.T) {
	model, err := provider.Open(t.Context(), "mock/demo", provider.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w, run, err := logs.Create(t.TempDir(), logs.RunStart{Tactic: "reuse"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &tactics.Agent{Name: "solver", System: dialog.MustPrompt("sys", "You solve."), Model: model, ModelName: "mock/demo", Log: w}
	for _, task := range []string{"first task", "second task"} {
		if err := a.Open("main", nil); err != nil {
			t.Fatal(err)
		}
		if err := a.Receive(task); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Respond(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := a.Close("main"); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	f, _, err := run.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ds := f.ByAlias("solver", "main")
	if len(ds) != 2 {
		t.Fatalf("ByAlias(solver, main): %d dialogs, want 2", len(ds))
	}
	for i, want := range []string{"first task", "second task"} {
		// The system prompt, the task, the reply.
		if msgs := ds[i].Messages(); len(msgs) != 3 || msgs[1].Content != want {
			t.Errorf("dialog %d of solver/main: %d messages, want 3 with the task %q", i, len(msgs), want)
		}
	}
}

// openAIConfig is a config for tactic on the fake OpenAI server at base.
func openAIConfig(t *testing.T, tactic, params string, base string, agents ...string) *config.Config {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "sk-test")
	var b strings.Builder
	fmt.Fprintf(&b, "tactic_type: %s\nparams: %s\nglobal:\n  model_name: openai/gpt-4o-mini\n  base_url: %s\nagent_configs:\n", tactic, params, base)
	for _, a := range agents {
		fmt.Fprintf(&b, "  - name: %s\n    system_prompt: You are %s.\n", a, a)
	}
	cfg, err := config.Parse("openai.yaml", []byte(b.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// lastUser is the content of the last user message of a request.
func lastUser(t *testing.T, req providertest.Request) string {
	t.Helper()
	msgs := providertest.Messages(req.JSON())
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i]["role"] == "user" {
			s, _ := msgs[i]["content"].(string)
			return s
		}
	}
	t.Fatalf("no user message in %s", req.Body)
	return ""
}

func TestOnOpenAIServer(t *testing.T) {
	t.Run("chat", func(t *testing.T) {
		srv := providertest.NewOpenAIServer(t, providertest.Reply{Text: "Paris."})
		res, _ := run(t, openAIConfig(t, "chat", "{}", srv.BaseURL(), "assistant"), "Capital of France?")
		if string(res.Result) != `"Paris."` || lastUser(t, srv.LastRequest()) != "Capital of France?" {
			t.Fatalf("result %s", res.Result)
		}
	})
	t.Run("best_of_n", func(t *testing.T) {
		srv := providertest.NewOpenAIServer(t,
			providertest.Reply{Text: "A"}, providertest.Reply{Text: "B"},
			providertest.Reply{Text: "I pick <choice>7</choice>"}, // out of range: sent back
			providertest.Reply{Text: "<choice>1</choice>"})
		res, _ := run(t, openAIConfig(t, "best_of_n", "{n: 2}", srv.BaseURL(), "solver", "judge"), "Pick a letter.")
		var out BestOfNResult
		decode(t, res, &out)
		if out.Answer != "A" || out.Choice != 1 || !slices.Equal(out.Candidates, []string{"A", "B"}) {
			t.Fatalf("result %+v", out)
		}
		reqs := srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d requests, want 4", len(reqs))
		}
		judged := lastUser(t, reqs[2])
		if !strings.Contains(judged, "<candidate 1>\nA\n</candidate 1>") || !strings.Contains(judged, "<candidate 2>\nB\n") {
			t.Fatalf("judge saw %q", judged)
		}
		if fix := lastUser(t, reqs[3]); !strings.Contains(fix, "from 1 to 2") {
			t.Fatalf("judge was asked to fix with %q", fix)
		}
	})
	t.Run("react", func(t *testing.T) {
		srv := providertest.NewOpenAIServer(t,
			providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"(2+3)*4"}`}}},
			providertest.Reply{Text: "<answer>20</answer>"})
		res, _ := run(t, openAIConfig(t, "react", "{tools: [calculator]}", srv.BaseURL(), "agent"), "What is (2+3)*4?")
		var out ReactResult
		decode(t, res, &out)
		if out != (ReactResult{Answer: "20", ToolCalls: 1}) {
			t.Fatalf("result %+v", out)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		tools, _ := reqs[0].JSON()["tools"].([]any)
		if len(tools) != 1 || !strings.Contains(string(reqs[0].Body), `"calculator"`) {
			t.Fatalf("tools offered: %v", tools)
		}
		msgs := providertest.Messages(reqs[1].JSON())
		last := msgs[len(msgs)-1]
		if last["role"] != "tool" || last["tool_call_id"] != "c1" || !strings.HasSuffix(fmt.Sprint(last["content"]), "\n20") {
			t.Fatalf("tool result sent as %v", last)
		}
	})
	t.Run("self_refine", func(t *testing.T) {
		srv := providertest.NewOpenAIServer(t,
			providertest.Reply{Text: "draft"}, providertest.Reply{Text: "too short"},
			providertest.Reply{Text: "longer draft"}, providertest.Reply{Text: "fine <DONE>"})
		res, _ := run(t, openAIConfig(t, "self_refine", "{iterations: 5}", srv.BaseURL(), "solver", "critic"), "Write.")
		var out SelfRefineResult
		decode(t, res, &out)
		if out.Answer != "longer draft" || out.Iterations != 1 || !slices.Equal(out.Critiques, []string{"too short", "fine <DONE>"}) {
			t.Fatalf("result %+v", out)
		}
		if reqs := srv.Requests(); len(reqs) != 4 || !strings.Contains(lastUser(t, reqs[2]), "too short") {
			t.Fatalf("requests %d", len(reqs))
		}
	})
	t.Run("debate", func(t *testing.T) {
		srv := providertest.NewOpenAIServer(t,
			providertest.Reply{Text: "pro 1"}, providertest.Reply{Text: "con 1"},
			providertest.Reply{Text: "<verdict>pro</verdict>"})
		res, _ := run(t, openAIConfig(t, "debate", "{rounds: 1}", srv.BaseURL(), "pro", "con", "judge"), "Tea beats coffee.")
		var out DebateResult
		decode(t, res, &out)
		if out.Verdict != "pro" || !slices.Equal(out.Rounds, []DebateRound{{Pro: "pro 1", Con: "con 1"}}) {
			t.Fatalf("result %+v", out)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 || lastUser(t, reqs[1]) != "pro 1" || !strings.Contains(lastUser(t, reqs[2]), "PRO: pro 1\nCON: con 1") {
			t.Fatalf("requests %d", len(reqs))
		}
	})
}

func TestParamErrors(t *testing.T) {
	cases := []struct {
		tactic string
		params map[string]any
		want   string
	}{
		{"best_of_n", map[string]any{"m": 3}, `tactic best_of_n: unknown param "m" (accepted: n)`},
		{"best_of_n", map[string]any{"n": 0}, "n must be at least 1"},
		{"best_of_n", map[string]any{"n": "3"}, "n must be an integer"},
		{"best_of_n", map[string]any{"n": 2.5}, "n must be an integer"},
		{"debate", map[string]any{"rounds": -1}, "rounds must be at least 1"},
		{"debate", map[string]any{"round": 1, "judges": 2}, `unknown params "judges", "round" (accepted: rounds)`},
		{"debate", map[string]any{"roundz": 1}, `unknown param "roundz" (did you mean "rounds"?)`},
		{"self_refine", map[string]any{"iterations": 0}, "iterations must be at least 1"},
		{"react", map[string]any{"tools": []any{"calculater"}}, `unknown tool "calculater" (did you mean "calculator"?); registered tools: calculator, echo, word_count`},
		{"react", map[string]any{"tools": "calculator"}, "must be a list"},
		{"react", map[string]any{"max_steps": 0}, "max_steps must be at least 1"},
		{"react", map[string]any{"steps": 3}, "accepted: max_steps, tools"},
	}
	for _, c := range cases {
		_, err := tactics.New(c.tactic, c.params)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), c.tactic) != 1 {
			t.Errorf("%s %v: error %v, want it to contain %q and name the tactic once", c.tactic, c.params, err, c.want)
		}
	}
	for _, name := range []string{"best_of_n", "debate", "self_refine", "react"} {
		if _, err := tactics.New(name, nil); err != nil {
			t.Errorf("%s with default params: %v", name, err)
		}
	}
	if _, err := tactics.New("best_of_n", map[string]any{"n": float64(4)}); err != nil {
		t.Errorf("an integral float: %v", err)
	}
}

func TestParamErrorInConfig(t *testing.T) {
	cfg := load(t, "best_of_n")
	if err := cfg.Set("params.n", "0"); err != nil {
		t.Fatal(err)
	}
	_, err := tactics.Run(t.Context(), cfg, "x", tactics.RunOptions{LogDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "n must be at least 1") {
		t.Fatalf("error %v", err)
	}
	// Placed where the value came from: here the --set.
	if !strings.Contains(err.Error(), "--set params.n: tactic best_of_n: param n must be at least 1") {
		t.Errorf("error %q is not placed at the param", err)
	}
	// An unknown tool in react's tools too.
	cfg = load(t, "react")
	if err := cfg.Set("params.tools", "[calculater]"); err != nil {
		t.Fatal(err)
	}
	_, err = tactics.Run(t.Context(), cfg, "x", tactics.RunOptions{LogDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `--set params.tools: tactic react: param tools: unknown tool "calculater"`) {
		t.Errorf("error %v is not placed at the param", err)
	}
}

func TestCalculate(t *testing.T) {
	good := []struct {
		expr string
		want float64
	}{
		{"1 + 2 * 3", 7},
		{"(1 + 2) * 3", 9},
		{"10 - 4 - 3", 3},
		{"2 * 3 / 4", 1.5},
		{"8 / 4 / 2", 1},
		{"-3 + 5", 2},
		{"-(2 + 3) * -2", 10},
		{"--4", 4},
		{" ( ( 7 ) ) ", 7},
		{"0.5 + .25 + 3.", 3.75},
		{"1e3 / 10", 100},
		{"(17 + 25) * 3", 126},
	}
	for _, c := range good {
		got, err := calculate(c.expr)
		if err != nil || got != c.want {
			t.Errorf("calculate(%q) = %v, %v; want %v", c.expr, got, err, c.want)
		}
	}
	bad := []struct{ expr, want string }{
		{"1 / 0", "division by zero"},
		{"1 / (2 - 2)", "division by zero"},
		{"", "empty expression"},
		{"   ", "empty expression"},
		{"1 +", "unexpected end"},
		{"(1 + 2", "missing )"},
		{"1 + 2)", `unexpected ')'`},
		{"2 ** 3", `unexpected '*'`},
		{"abc", `unexpected 'a'`},
		{"1..2", "unexpected '.'"},
		{".", "malformed number"},
		{"1e", "malformed exponent"},
		{"1e400", "out of range"},
		{"1e300 * 1e300", "out of range"},
		{"import os", "unexpected 'i'"},
		{strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000), "nested more than"},
		{strings.Repeat("-", 10000) + "1", "nested more than"},
	}
	for _, c := range bad {
		got, err := calculate(c.expr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("calculate(%.20q) = %v, %v; want an error containing %q", c.expr, got, err, c.want)
		}
	}
}

func FuzzCalculate(f *testing.F) {
	for _, s := range []string{"1+2*3", "(1", "1/0", "-(-.5e3)", "))(("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := calculate(s)
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("calculate(%q) = %v without an error", s, v)
		}
	})
}

func TestCalculatorTool(t *testing.T) {
	fns, err := lookupTools([]string{"calculator", "word_count", "echo"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args, result string
		failed       bool
	}{
		{`{"expression":"6*7"}`, "\n42", false},
		{`{"expression":"6/0"}`, "Error: ", true},
		{`{}`, "Error: ", true},
	}
	for _, c := range cases {
		got := fns[0].Call(t.Context(), dialog.FunctionCall{Name: "calculator", Arguments: json.RawMessage(c.args)})
		if (got.Error != "") != c.failed || !strings.Contains(got.Result, c.result) {
			t.Errorf("calculator %s = %+v", c.args, got)
		}
	}
	wc := fns[1].Call(t.Context(), dialog.FunctionCall{Name: "word_count", Arguments: json.RawMessage(`{"text":"a b  c\nd"}`)})
	if !strings.HasSuffix(wc.Result, "\n4") {
		t.Errorf("word_count = %+v", wc)
	}
	echo := fns[2].Call(t.Context(), dialog.FunctionCall{Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	if !strings.HasSuffix(echo.Result, "\nhi") {
		t.Errorf("echo = %+v", echo)
	}
}
