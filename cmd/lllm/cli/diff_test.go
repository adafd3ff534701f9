package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
)

type diffJSON struct {
	A struct {
		RunID string `json:"run_id"`
		Dir   string `json:"dir"`
	} `json:"a"`
	B struct {
		RunID string `json:"run_id"`
		Dir   string `json:"dir"`
	} `json:"b"`
	Identical bool `json:"identical"`
	Task      *struct {
		A, B string
	} `json:"task"`
	Config []struct {
		Path string `json:"path"`
		A    string `json:"a"`
		B    string `json:"b"`
	} `json:"config"`
	Divergences []diffDivergenceJSON  `json:"divergences"`
	OnlyA       []struct{ ID string } `json:"only_a"`
	OnlyB       []struct{ ID string } `json:"only_b"`
	Dialogs     []struct {
		A, B string
		Cost struct {
			A, B, Delta struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
			}
		} `json:"cost"`
	} `json:"dialogs"`
}

// diffDivergenceJSON is an entry of "divergences" in lllm diff -o json.
type diffDivergenceJSON struct {
	Key struct {
		Owner string `json:"owner"`
		Alias string `json:"alias"`
		Turn  int    `json:"turn"`
	} `json:"key"`
	A           string `json:"a"`
	B           string `json:"b"`
	Index       int    `json:"index"`
	RoleA       string `json:"role_a"`
	RoleB       string `json:"role_b"`
	Diff        string `json:"diff"`
	LaterDiffer int    `json:"later_differ"`
	ExtraA      int    `json:"extra_a"`
	ExtraB      int    `json:"extra_b"`
}

// first is the first divergence, or nil.
func (d *diffJSON) first() *diffDivergenceJSON {
	if len(d.Divergences) == 0 {
		return nil
	}
	return &d.Divergences[0]
}

func TestDiffIdentical(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	a := runInto(t, cfg, logDir, "Capital of France?")
	b := runInto(t, cfg, logDir, "Capital of France?")
	for _, pair := range [][2]string{{a, a}, {a, b}} {
		r := lllm(t, "diff", pair[0], pair[1], "--log-dir", logDir)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("%v", r)
		}
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "A "+pair[0]+" (chat, ok)") || !strings.HasPrefix(lines[1], "B "+pair[1]) ||
			!strings.HasPrefix(lines[2], "identical: 2 dialogs, tokens ") {
			t.Errorf("diff %s %s:\n%s", pair[0], pair[1], r.stdout)
		}
		r = lllm(t, "diff", pair[0], pair[1], "--log-dir", logDir, "-o", "json")
		d := decodeJSON[diffJSON](t, r.stdout)
		if r.code != 0 || !d.Identical || d.Divergences == nil || len(d.Divergences) != 0 || len(d.Config) != 0 || len(d.Dialogs) != 2 ||
			d.A.RunID != pair[0] || d.B.RunID != pair[1] {
			t.Errorf("json: %+v", d)
		}
	}
}

func TestDiffChangedPrompt(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	a := runInto(t, cfg, logDir, "Capital of France?")
	b := runInto(t, cfg, logDir, "Capital of France?", "--set", "agent_configs.assistant.system_prompt=You are verbose and thorough.")
	ta, tb := treeNodes(t, logDir, a), treeNodes(t, logDir, b)

	r := lllm(t, "diff", a, b, "--log-dir", logDir, "-o", "json")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	d := decodeJSON[diffJSON](t, r.stdout)
	if d.A.RunID != a || d.A.Dir != filepath.Join(logDir, a) || d.B.RunID != b || d.B.Dir != filepath.Join(logDir, b) {
		t.Errorf("runs named %+v and %+v, want run_id and dir of %s and %s", d.A, d.B, a, b)
	}
	if d.Identical || d.Task != nil || len(d.Config) != 1 || d.Config[0].Path != "agent_configs.assistant.system_prompt" ||
		d.Config[0].A != `"You are concise."` || d.Config[0].B != `"You are verbose and thorough."` {
		t.Errorf("config %+v", d.Config)
	}
	// Only the root's system prompt differs: its working copy inherits it
	// and its reply is the same, so there is one divergence.
	if len(d.Divergences) != 1 {
		t.Errorf("%d divergences, want 1: %+v", len(d.Divergences), d.Divergences)
	}
	f := d.first()
	if f == nil || f.Key.Owner != "assistant" || f.Key.Alias != "main" || f.Key.Turn != 1 || f.Index != 0 || f.RoleA != "system" ||
		f.A != ta[0].ID || f.B != tb[0].ID {
		t.Fatalf("first divergence %+v, want assistant/main turn 1 message 0", f)
	}
	if f.Diff != "  [system system]\n- You are concise.\n+ You are verbose and thorough." {
		t.Errorf("diff:\n%s", f.Diff)
	}
	// Per dialog, the token deltas are B minus A of what lllm tree shows.
	if len(d.Dialogs) != 2 || len(d.OnlyA)+len(d.OnlyB) != 0 {
		t.Fatalf("dialogs %+v", d)
	}
	for i, dd := range d.Dialogs {
		if dd.A != ta[i].ID || dd.B != tb[i].ID {
			t.Errorf("dialog %d matched %s with %s", i, dd.A, dd.B)
		}
		c := dd.Cost
		if c.A.InputTokens != ta[i].Cost.InputTokens || c.B.InputTokens != tb[i].Cost.InputTokens ||
			c.Delta.InputTokens != tb[i].Cost.InputTokens-ta[i].Cost.InputTokens ||
			c.Delta.OutputTokens != tb[i].Cost.OutputTokens-ta[i].Cost.OutputTokens {
			t.Errorf("dialog %d: cost %+v, trees %+v and %+v", i, c, ta[i].Cost, tb[i].Cost)
		}
	}
	// The longer system prompt costs input tokens in the working copy.
	if d.Dialogs[1].Cost.Delta.InputTokens <= 0 {
		t.Errorf("input token delta %d, want more in B", d.Dialogs[1].Cost.Delta.InputTokens)
	}

	r = lllm(t, "diff", a, b, "--log-dir", logDir)
	for _, want := range []string{
		"config:\n  agent_configs.assistant.system_prompt: \"You are concise.\" → \"You are verbose and thorough.\"\n",
		"divergence 1 of 1: assistant/main turn 1 (A " + ta[0].ID[:8] + ", B " + tb[0].ID[:8] + "), message 0\n" +
			"    [system system]\n  - You are concise.\n  + You are verbose and thorough.\n",
		"assistant/main#1 turn 1",
		"total (model calls)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("text lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.code != 0 {
		t.Errorf("a diff that finds differences exits %d, want 0", r.code)
	}
}

// Another task and a failed run: the task shows, and the runs' extra
// dialogs are listed per side.
func TestDiffTaskAndFailedRun(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	a := runInto(t, cfg, logDir, "Capital of France?")
	r := lllm(t, "run", cfg, "--task", "fail now", "--log-dir", logDir)
	if r.code != ExitError {
		t.Fatalf("%v", r)
	}
	r = lllm(t, "diff", a, "latest", "--log-dir", logDir, "-o", "json")
	d := decodeJSON[diffJSON](t, r.stdout)
	if d.Task == nil || d.Task.A != `"Capital of France?"` || d.Task.B != `"fail now"` {
		t.Errorf("task %+v", d.Task)
	}
	if f := d.first(); f == nil || f.Key.Alias != "main" || f.Index != 1 {
		t.Errorf("first divergence %+v, want the user message of main", f)
	}
	r = lllm(t, "diff", a, "latest", "--log-dir", logDir)
	if !strings.Contains(r.stdout, "(chat, failed)") || !strings.Contains(r.stdout, "- Capital of France?\n  + fail now") {
		t.Errorf("text:\n%s", r.stdout)
	}
}

func TestDiffBadInput(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	a := runInto(t, cfg, logDir, "Capital of France?")
	wantError(t, lllm(t, "diff", a, "nosuchrun", "--log-dir", logDir), ExitError, "run B: no run", `"nosuchrun"`)
	wantError(t, lllm(t, "diff", "nosuchrun", a, "--log-dir", logDir), ExitError, "run A: no run", `"nosuchrun"`)
	wantError(t, lllm(t, "diff", a, "--log-dir", logDir), ExitUsage, "two runs")
	wantError(t, lllm(t, "diff", a, a, a, "--log-dir", logDir), ExitUsage, "two runs")
	wantError(t, lllm(t, "diff", a, a, "--log-dir", logDir, "-o", "yaml"), ExitUsage, `"yaml"`)

	newer := `{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"2.0","run_id":"x"}}` + "\n"
	p := writeRun(t, logDir, "20200101T000000.000000Z-newer0", newer)
	wantError(t, lllm(t, "diff", a, "newer0", "--log-dir", logDir), ExitError, "run B", p, "version 2.0")

	// A torn last line: a warning, and the diff of what was read.
	path := filepath.Join(logDir, a, logs.EventsFile)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":99,"ts":"2026-01-01T00:00:00Z","kind":"mess`)
	f.Close()
	r := lllm(t, "diff", a, a, "--log-dir", logDir)
	if r.code != 0 || !strings.Contains(r.stdout, "identical") || strings.Count(r.stderr, "lllm: warning: "+path) != 2 {
		t.Errorf("torn log:\n%v", r)
	}
}

// Runs whose replies, and so results, differ say so in a result line
// (and in the JSON), beside the message that diverged.
func TestDiffResult(t *testing.T) {
	cfg, logDir := writeConfig(t, chatConfig)
	a := runInto(t, cfg, logDir, "Capital of France?")
	b := runInto(t, cfg, logDir, "Capital of France?", "--set", "mock.replies=[{text: Lyon.}]")
	r := lllm(t, "diff", a, b, "--log-dir", logDir)
	if r.code != 0 || !strings.Contains(r.stdout, "\nresult: \"Paris.\" → \"Lyon.\"\n") {
		t.Fatalf("%v", r)
	}
	r = lllm(t, "diff", a, b, "--log-dir", logDir, "-o", "json")
	var d struct {
		Identical bool `json:"identical"`
		Result    *struct{ A, B string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || d.Identical || d.Result == nil || d.Result.A != `"Paris."` || d.Result.B != `"Lyon."` {
		t.Fatalf("json %s: %+v", r.stdout, d)
	}
}

// debateA is a debate of three rounds on the mock provider: each reply
// answers the other side's last argument, by its tag.
const debateA = `tactic_type: debate
global: {model_name: mock/debate}
params: {rounds: 3}
agent_configs:
  - name: pro
    system_prompt: You argue for the motion.
  - name: con
    system_prompt: You argue against the motion.
  - name: judge
    system_prompt: You judge debates.
mock:
  rules:
    - match: Weigh the arguments
      reply: {text: "Pro was clearer. <verdict>pro wins</verdict>"}
    - match: You argue FOR it
      reply: {text: "[P1] No commute."}
    - match: "[P1]"
      reply: {text: "[C1] Meetings."}
    - match: "[C1]"
      reply: {text: "[P2] Async tools."}
    - match: "[P2]"
      reply: {text: "[C2] Mentoring needs a room."}
    - match: "[C2]"
      reply: {text: "[P3] Video calls mentor well."}
    - match: "[P3]"
      reply: {text: "[C3] Not as well."}
`

// debateB is debateA where con argues otherwise in round 2 and the judge,
// in round 3's wake, gives the other verdict.
var debateB = strings.NewReplacer(
	"[C2] Mentoring needs a room.", "[C2] Juniors learn by overhearing.",
	"Pro was clearer. <verdict>pro wins</verdict>", "Con was clearer. <verdict>con wins</verdict>",
).Replace(debateA)

// debateRuns records debateA and debateB under one log root and returns
// it and the two run ids.
func debateRuns(t *testing.T) (logDir, a, b string) {
	t.Helper()
	cfgA, logDir := writeConfig(t, debateA)
	cfgB := filepath.Join(filepath.Dir(cfgA), "debate_b.yaml")
	if err := os.WriteFile(cfgB, []byte(debateB), 0o644); err != nil {
		t.Fatal(err)
	}
	const task = "Remote work is better."
	return logDir, runInto(t, cfgA, logDir, task), runInto(t, cfgB, logDir, task)
}

// The divergences of the two debates, in the order A's log wrote them:
// con's round-2 reply where it was made (where it was kept, con's main,
// says it again and is left out), pro receiving it, the judge's prompt
// (its transcript) with the verdict after it, and the verdict where it
// was made. Round 3's working copies inherit round 2's reply and answer
// alike: none of their own.
var debateDivergences = []struct {
	owner, alias string
	turn, index  int
	roleA, roleB string
	diff         string
	later        int
	header       string // what the text says after "message N"
}{
	{"con", "main#1", 2, 5, "assistant", "assistant", "  [assistant con]\n- [C2] Mentoring needs a room.\n+ [C2] Juniors learn by overhearing.", 0, ""},
	{"pro", "main", 1, 5, "user", "user", "  [user con]\n- [C2] Mentoring needs a room.\n+ [C2] Juniors learn by overhearing.", 0, ""},
	{"judge", "main", 1, 1, "user", "user", "  Round 2\n  PRO: [P2] Async tools.\n- CON: [C2] Mentoring needs a room.\n+ CON: [C2] Juniors learn by overhearing.\n  \n  Round 3", 1, "; 1 later message differs"},
	{"judge", "main#1", 1, 2, "assistant", "assistant", "  [assistant judge]\n- Pro was clearer. <verdict>pro wins</verdict>\n+ Con was clearer. <verdict>con wins</verdict>", 0, ""},
}

// diffTreeNode is a dialog of lllm tree -o json.
type diffTreeNode struct {
	ID       string         `json:"id"`
	Owner    string         `json:"owner"`
	Alias    string         `json:"alias"`
	Children []diffTreeNode `json:"children"`
}

// dialogIDs maps "owner/alias turn N" to the dialog ids of a run, from
// lllm tree -o json, numbering turns as lllm diff does (the runs here
// have no retries, so the tree's order is the log's for each alias).
func dialogIDs(t *testing.T, logDir, run string) map[string]string {
	t.Helper()
	ids := map[string]string{}
	turns := map[string]int{}
	var walk func([]diffTreeNode)
	walk = func(ns []diffTreeNode) {
		for _, n := range ns {
			k := n.Owner + "/" + n.Alias
			turns[k]++
			ids[fmt.Sprintf("%s turn %d", k, turns[k])] = n.ID
			walk(n.Children)
		}
	}
	r := lllm(t, "tree", run, "--log-dir", logDir, "-o", "json")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	walk(decodeJSON[struct {
		Dialogs []diffTreeNode `json:"dialogs"`
	}](t, r.stdout).Dialogs)
	if len(ids) != 10 {
		t.Fatalf("run %s has %d dialogs, want 10: %v", run, len(ids), ids)
	}
	return ids
}

func TestDiffEveryDivergence(t *testing.T) {
	logDir, a, b := debateRuns(t)
	idsA, idsB := dialogIDs(t, logDir, a), dialogIDs(t, logDir, b)

	r := lllm(t, "diff", a, b, "--log-dir", logDir, "-o", "json")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%v", r)
	}
	d := decodeJSON[diffJSON](t, r.stdout)
	if d.Identical || d.A.RunID != a || d.B.RunID != b {
		t.Errorf("runs %q and %q, identical %v; want %s and %s", d.A.RunID, d.B.RunID, d.Identical, a, b)
	}
	if len(d.Divergences) != len(debateDivergences) {
		t.Fatalf("%d divergences, want %d:\n%s", len(d.Divergences), len(debateDivergences), r.stdout)
	}
	var blocks []string
	for i, w := range debateDivergences {
		v := d.Divergences[i]
		key := fmt.Sprintf("%s/%s turn %d", w.owner, w.alias, w.turn)
		if v.Key.Owner != w.owner || v.Key.Alias != w.alias || v.Key.Turn != w.turn || v.Index != w.index ||
			v.RoleA != w.roleA || v.RoleB != w.roleB || v.Diff != w.diff || v.LaterDiffer != w.later || v.ExtraA+v.ExtraB != 0 {
			t.Errorf("divergence %d: %+v\nwant %s message %d:\n%s", i+1, v, key, w.index, w.diff)
		}
		if v.A != idsA[key] || v.B != idsB[key] || v.A == "" || v.B == "" {
			t.Errorf("divergence %d: dialogs %s and %s, want %s's %s and %s", i+1, v.A, v.B, key, idsA[key], idsB[key])
		}
		block := fmt.Sprintf("divergence %d of %d: %s (A %s, B %s), message %d%s\n", i+1, len(debateDivergences), key, idsA[key][:8], idsB[key][:8], w.index, w.header)
		for _, l := range strings.Split(w.diff, "\n") {
			block += strings.TrimRight("  "+l, " ") + "\n"
		}
		blocks = append(blocks, block)
	}

	// Text: every block, in order, between the summary lines and the table.
	r = lllm(t, "diff", a, b, "--log-dir", logDir)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("%v", r)
	}
	head := "A " + a + " (debate, ok)\nB " + b + " (debate, ok)\nconfig:\n"
	result := "result:\n  reasoning: \"Pro was clearer. <verdict>pro wins</verdict>\" → \"Con was clearer. <verdict>con wins</verdict>\"\n" +
		"  rounds.1.con: \"[C2] Mentoring needs a room.\" → \"[C2] Juniors learn by overhearing.\"\n  verdict: \"pro wins\" → \"con wins\"\n"
	want := strings.Join(blocks, "") + "dialog "
	if !strings.HasPrefix(r.stdout, head) || !strings.Contains(r.stdout, "\n"+result) || !strings.Contains(r.stdout, "\n"+want) ||
		strings.Index(r.stdout, result) > strings.Index(r.stdout, want) || strings.Contains(r.stdout, "… and") {
		t.Errorf("text:\n%s\nwant after %q and %q:\n%s", r.stdout, head, result, want)
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.TrimRight(l, " ") != l {
			t.Errorf("trailing blanks: %q", l)
		}
	}

	// --max: the first N, then how many more; 0 or enough shows all.
	r = lllm(t, "diff", a, b, "--log-dir", logDir, "--max", "2")
	if want := "\n" + blocks[0] + blocks[1] + "… and 2 more (--max 0 shows all)\ndialog "; r.code != 0 || !strings.Contains(r.stdout, want) ||
		strings.Contains(r.stdout, "divergence 3 of 4") {
		t.Errorf("--max 2:\n%s\nwant:\n%s", r.stdout, want)
	}
	all := lllm(t, "diff", a, b, "--log-dir", logDir, "--max", "0")
	if four := lllm(t, "diff", a, b, "--log-dir", logDir, "--max", "4"); all.stdout != four.stdout || !strings.Contains(all.stdout, blocks[3]) {
		t.Errorf("--max 0:\n%s\n--max 4:\n%s", all.stdout, four.stdout)
	}
	// -o json has them all whatever --max says.
	if j := decodeJSON[diffJSON](t, lllm(t, "diff", a, b, "--log-dir", logDir, "-o", "json", "--max", "1").stdout); len(j.Divergences) != 4 {
		t.Errorf("-o json --max 1: %d divergences, want 4", len(j.Divergences))
	}
	wantError(t, lllm(t, "diff", a, b, "--log-dir", logDir, "--max", "-1"), ExitUsage, "--max -1")

	// B against A: the same places, in B's log order (the same here), the
	// sides swapped.
	j := decodeJSON[diffJSON](t, lllm(t, "diff", b, a, "--log-dir", logDir, "-o", "json").stdout)
	swapped := "  [assistant judge]\n- Con was clearer. <verdict>con wins</verdict>\n+ Pro was clearer. <verdict>pro wins</verdict>"
	if len(j.Divergences) != 4 || j.Divergences[3].Diff != swapped || j.Divergences[0].Key.Owner != "con" || j.Divergences[2].LaterDiffer != 1 {
		t.Errorf("B against A: %+v", j.Divergences)
	}
}

// The same debate twice: no divergence in text or JSON.
func TestDiffNoDivergence(t *testing.T) {
	cfg, logDir := writeConfig(t, debateA)
	a := runInto(t, cfg, logDir, "Remote work is better.")
	b := runInto(t, cfg, logDir, "Remote work is better.")
	r := lllm(t, "diff", a, b, "--log-dir", logDir, "-o", "json")
	if d := decodeJSON[diffJSON](t, r.stdout); r.code != 0 || !d.Identical || d.Divergences == nil || len(d.Divergences) != 0 {
		t.Errorf("json: %v", r)
	}
	r = lllm(t, "diff", a, b, "--log-dir", logDir, "--max", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "\nidentical: 10 dialogs") || strings.Contains(r.stdout, "divergence") {
		t.Errorf("text: %v", r)
	}
}
