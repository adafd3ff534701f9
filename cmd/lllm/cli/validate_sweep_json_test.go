package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// lllm validate -o json on a sweep spec gives each problem's place from
// the problem's fields: the spec's line, a dataset's line and column, the
// base config's own place, or a --set and its path; and each problem is
// the text's line, taken apart.
func TestValidateSweepSpecJSON(t *testing.T) {
	dir := t.TempDir()
	ctWrite(t, filepath.Join(dir, "chat.yaml"), "tactic_type: chat\nglobal: {model_name: mock/m}\nagent_configs: [{name: assistant, system_prompt: Hi.}]\n")
	ctWrite(t, filepath.Join(dir, "bad.yaml"), "tactic_type: chat\nglobal: {model_name: mock/m, modl: 3}\nagent_configs: [{name: assistant, system_prompt: Hi.}]\n")
	ctWrite(t, filepath.Join(dir, "rows.csv"), "id,input\na,x\nb,y \"z\" w\n")
	spec := filepath.Join(dir, "sweep.yaml")
	logDir := filepath.Join(dir, "logs")

	check := func(t *testing.T, args []string, want []problemJSON) {
		t.Helper()
		text := lllm(t, append([]string{"validate", spec, "--log-dir", logDir}, args...)...)
		r := lllm(t, append([]string{"validate", spec, "--log-dir", logDir, "-o", "json"}, args...)...)
		if r.code != ExitUsage || text.code != ExitUsage {
			t.Fatalf("text:\n%v\njson:\n%v", text, r)
		}
		got := decodeJSON[validationJSON](t, r.stdout)
		if got.Kind != "sweep" || got.Valid || len(got.Problems) != len(want) {
			t.Fatalf("%d problems, want %d:\n%s", len(got.Problems), len(want), r.stdout)
		}
		lines := strings.Split(strings.TrimSuffix(text.stderr, "\n"), "\n")
		for i, p := range got.Problems {
			line := p.Message
			if p.Where != "" {
				line = p.Where + ": " + p.Message
			}
			if line != lines[i] {
				t.Errorf("problem %d: %+v; the text says %q", i+1, p, lines[i])
			}
			w := want[i]
			if p.Where != w.Where || p.File != w.File || p.Line != w.Line || p.Column != w.Column || p.Path != w.Path || !strings.HasPrefix(p.Message, w.Message) {
				t.Errorf("problem %d: %+v\nwant %+v (the message starting so)", i+1, p, w)
			}
		}
	}

	t.Run("spec", func(t *testing.T) {
		ctWrite(t, spec, "config: chat.yaml\ndataset: rows.csv\nrepeats: -1\nscorers: [exact, {name: x}]\n")
		check(t, nil, []problemJSON{
			{Where: spec + ":4", File: spec, Line: 4, Message: "a scorer needs a type"},
			{Where: spec + ":3", File: spec, Line: 3, Message: "repeats: -1: want 1 or more"},
		})
	})
	t.Run("files", func(t *testing.T) {
		ctWrite(t, spec, "config: bad.yaml\ndataset: rows.csv\n")
		bad := filepath.Join(dir, "bad.yaml")
		rows := filepath.Join(dir, "rows.csv")
		check(t, nil, []problemJSON{
			{Where: bad + ":2:30", File: bad, Line: 2, Column: 30, Message: `unknown key "modl" in global`},
			{Where: rows + ":3:5", File: rows, Line: 3, Column: 5, Message: `bare " in non-quoted-field`},
		})
	})
	t.Run("axes and scorers", func(t *testing.T) {
		ctWrite(t, filepath.Join(dir, "rows.jsonl"), `{"id": "a", "input": "x"}`+"\n")
		ctWrite(t, spec, "config: chat.yaml\ndataset: rows.jsonl\nscorers: [exakt]\naxes:\n  global.zzzzzzzzqqq: [1]\n")
		check(t, nil, []problemJSON{
			{Where: spec + ":5", File: spec, Line: 5, Message: `axis global.zzzzzzzzqqq: unknown key "zzzzzzzzqqq" in global`},
			{Where: spec + ":3", File: spec, Line: 3, Message: `unknown scorer "exakt"`},
		})
	})
	t.Run("--set", func(t *testing.T) {
		ctWrite(t, spec, "config: chat.yaml\ndataset: rows.jsonl\n")
		check(t, []string{"--set", "global.modl_name=x"}, []problemJSON{
			{Where: "--set global.modl_name", Path: "global.modl_name", Message: `unknown key "modl_name" in global (did you mean "model_name"?)`},
		})
	})
}
