package cli

import (
	"encoding/json"
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
