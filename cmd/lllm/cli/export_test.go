package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/vocab"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/sweep"
	"github.com/lllm-go/lllm/tactics"
)

func init() {
	tactics.Register("export_test_look", newExportLook)
}

// exportLook has agent "viewer" look at the image of its params and
// answer the task: a run whose dialog holds an image.
type exportLook struct{ image string }

func newExportLook(params map[string]any) (tactics.Tactic, error) {
	var p struct {
		Image string `json:"image"`
	}
	if err := tactics.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	return exportLook{image: p.Image}, nil
}

func (exportLook) Agents() []string { return []string{"viewer"} }

func (t exportLook) Call(ctx context.Context, s *tactics.Session, task string) (any, error) {
	a, err := s.Agent("viewer")
	if err != nil {
		return nil, err
	}
	if err := a.Open("main", nil); err != nil {
		return nil, err
	}
	if err := a.ReceiveImage(dialog.ImageFile(t.image), "the picture"); err != nil {
		return nil, err
	}
	if err := a.Receive(task); err != nil {
		return nil, err
	}
	reply, _, err := a.Respond(ctx)
	if err != nil {
		return nil, err
	}
	return reply.Text(), nil
}

// exportFixture is a log root with runs of the example configs and a
// sweep, all on the mock provider.
type exportFixture struct {
	dir, logDir                   string
	best, react, retry, look, png string // run ids; png is the image file
	pngBytes                      []byte
	sweepDir                      string
}

// exportRunID runs lllm run with args and -o json, and returns the run id.
func exportRunID(t *testing.T, args ...string) string {
	t.Helper()
	r := lllm(t, append(args, "-o", "json")...)
	var out struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); r.code != 0 || err != nil || out.Status != "ok" {
		t.Fatalf("lllm %s: %v\n%v", strings.Join(args, " "), err, r)
	}
	return out.RunID
}

func newExportFixture(t *testing.T) *exportFixture {
	t.Helper()
	dir := t.TempDir()
	f := &exportFixture{dir: dir, logDir: filepath.Join(dir, "logs")}
	ld := []string{"--log-dir", f.logDir}
	f.best = exportRunID(t, append([]string{"run", ctConfig("quickstart.yaml"), "--task", "Name a prime number above 10."}, ld...)...)
	f.react = exportRunID(t, append([]string{"run", ctConfig("react.yaml"), "--task", "What is (17 + 25) * 3?"}, ld...)...)
	// The judge's first reply has no <choice>: it is asked to fix it.
	f.retry = exportRunID(t, append([]string{"run", ctConfig("quickstart.yaml"), "--task", "Name a prime number above 10.",
		"--set", `mock.rules=[{match: "Please fix", reply: {text: "Sorry. <choice>2</choice>"}}, {match: "Candidate answers", reply: {text: "I cannot decide."}}]`}, ld...)...)

	f.pngBytes = pngBytes(t)
	f.png = filepath.Join(dir, "dot.png")
	ctWrite(t, f.png, string(f.pngBytes))
	look := filepath.Join(dir, "look.yaml")
	ctWrite(t, look, `tactic_type: export_test_look
params: {image: `+f.png+`}
global: {model_name: mock/demo}
agent_configs:
  - name: viewer
    system_prompt: You describe pictures.
mock:
  rules:
    - match: "What is in"
      reply: {text: "A red dot."}
`)
	f.look = exportRunID(t, append([]string{"run", look, "--task", "What is in the picture?"}, ld...)...)

	// A sweep: one sample its scorer passes, one it does not, one that fails.
	ctWrite(t, filepath.Join(dir, "sweep", "capitals.yaml"), `tactic_type: chat
global: {model_name: mock/demo}
agent_configs:
  - name: assistant
    system_prompt: You answer in one word.
mock:
  rules:
    - match: France
      reply: {text: "Paris."}
    - match: Spain
      reply: {text: "Madrid."}
    - match: Boom
      reply: {error: bad_request}
`)
	ctWrite(t, filepath.Join(dir, "sweep", "rows.jsonl"), `{"id": "fr", "input": "Capital of France?", "expected": "Paris"}
{"id": "es", "input": "Capital of Spain?", "expected": "Lisbon"}
{"id": "boom", "input": "Boom?", "expected": "x"}
`)
	spec := filepath.Join(dir, "sweep", "spec.yaml")
	ctWrite(t, spec, "name: capitals\nconfig: capitals.yaml\ndataset: rows.jsonl\naxes: {global.model_args.temperature: [0]}\nscorers: [{type: contains, name: mentions}]\n")
	if r := lllm(t, append([]string{"sweep", spec}, ld...)...); r.code != 1 && r.code != 0 {
		t.Fatalf("sweep:\n%v", r)
	}
	f.sweepDir = filepath.Join(f.logDir, "sweeps", "capitals")
	return f
}

// exportLines runs lllm export and returns its lines, each decoded, and
// its stderr; it must succeed.
func exportLines(t *testing.T, args ...string) ([]map[string]any, []string, string) {
	t.Helper()
	r := lllm(t, append([]string{"export"}, args...)...)
	if r.code != 0 {
		t.Fatalf("lllm export %s:\n%v", strings.Join(args, " "), r)
	}
	var out []map[string]any
	raw := ctLines(r.stdout)
	for i, l := range raw {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %d is not a JSON object: %v: %s", i+1, err, l)
		}
		out = append(out, v)
	}
	return out, raw, r.stderr
}

// exportSummary is the last line of stderr.
func exportSummary(t *testing.T, stderr string) string {
	t.Helper()
	lines := ctLines(stderr)
	if len(lines) == 0 {
		t.Fatalf("no summary on stderr")
	}
	return lines[len(lines)-1]
}

func TestExport(t *testing.T) {
	f := newExportFixture(t)
	ld := []string{"--log-dir", f.logDir}
	run := func(id string, more ...string) []string { return append(append([]string{id}, ld...), more...) }

	t.Run("best_of_n", func(t *testing.T) {
		_, lines, stderr := exportLines(t, run(f.best)...)
		system := `{"role":"system","content":"You solve tasks. Give the answer and one line of justification."},{"role":"user","content":"Name a prime number above 10."}`
		want := []string{
			`{"messages":[` + system + `,{"role":"assistant","content":"15 is prime."}]}`,
			`{"messages":[` + system + `,{"role":"assistant","content":"13: it has no divisor but 1 and itself."}]}`,
			`{"messages":[` + system + `,{"role":"assistant","content":"11, probably."}]}`,
			`{"messages":[{"role":"system","content":"You are a strict judge of answers."},` +
				`{"role":"user","content":"Task:\nName a prime number above 10.\n\nCandidate answers:\n` +
				`<candidate 1>\n15 is prime.\n</candidate 1>\n<candidate 2>\n13: it has no divisor but 1 and itself.\n</candidate 2>\n<candidate 3>\n11, probably.\n</candidate 3>\n\n` +
				`Which candidate answers the task best? Explain briefly, then give its number as <choice>N</choice>, with N from 1 to 3."},` +
				`{"role":"assistant","content":"Candidate 2 is right and justified. <choice>2</choice>"}]}`,
		}
		if !slices.Equal(lines, want) {
			t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		if got := exportSummary(t, stderr); got != "exported 4 dialogs from 1 run" {
			t.Errorf("summary %q", got)
		}
	})

	t.Run("react tool round", func(t *testing.T) {
		vals, lines, _ := exportLines(t, run(f.react)...)
		if len(lines) != 1 {
			t.Fatalf("%d lines, want 1 (agent/main): %q", len(lines), lines)
		}
		result := `Return of calling function calculator with arguments {\"expression\":\"(17 + 25) * 3\"}:\n126`
		wantMsgs := `{"messages":[{"role":"system","content":"You are a careful assistant who uses tools for arithmetic."},` +
			`{"role":"user","content":"What is (17 + 25) * 3?\n\nThink step by step. Call the tools you are given whenever they help; do not guess what a tool would return. When you are done, give your final answer as <answer>...</answer>."},` +
			`{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"calculator","arguments":"{\"expression\":\"(17 + 25) * 3\"}"}}]},` +
			`{"role":"tool","content":"` + result + `","tool_call_id":"call_1"},` +
			`{"role":"assistant","content":"The calculator says 126. <answer>126</answer>"}],"tools":`
		if !strings.HasPrefix(lines[0], wantMsgs) {
			t.Errorf("line:\n%s\nwant it to start with:\n%s", lines[0], wantMsgs)
		}
		// The tools are the log's declarations, as OpenAI declares them.
		decl := exportDeclarations(t, filepath.Join(f.logDir, f.react))
		var want []any
		for _, tool := range decl.Tools {
			want = append(want, map[string]any{"type": "function", "function": map[string]any{
				"name": tool.Name, "description": tool.Description, "parameters": exportJSON(t, tool.Parameters)}})
		}
		if got := vals[0]["tools"]; !exportSame(got, want) || len(want) != 2 {
			t.Errorf("tools %v\nwant %v", got, want)
		}
		for _, name := range []string{`"name":"calculator"`, `"name":"word_count"`} {
			if !strings.Contains(lines[0], name) {
				t.Errorf("tools lack %s", name)
			}
		}
		// The tool call's id is the one the tool result answers.
		msgs := vals[0]["messages"].([]any)
		call := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
		if call["id"] != msgs[3].(map[string]any)["tool_call_id"] {
			t.Errorf("tool_call_id %v does not answer the call %v", msgs[3], call)
		}
		var args map[string]string
		if err := json.Unmarshal([]byte(call["function"].(map[string]any)["arguments"].(string)), &args); err != nil || args["expression"] != "(17 + 25) * 3" {
			t.Errorf("arguments are not a JSON string of the object: %v %v", call, err)
		}
	})

	t.Run("react sharegpt", func(t *testing.T) {
		vals, _, _ := exportLines(t, run(f.react, "--format", "sharegpt")...)
		conv := vals[0]["conversations"].([]any)
		var froms []string
		for _, c := range conv {
			froms = append(froms, c.(map[string]any)["from"].(string))
		}
		if want := []string{"system", "human", "function_call", "observation", "gpt"}; !slices.Equal(froms, want) {
			t.Fatalf("from %v, want %v", froms, want)
		}
		var call struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
		}
		if err := json.Unmarshal([]byte(conv[2].(map[string]any)["value"].(string)), &call); err != nil ||
			call.Name != "calculator" || call.Arguments["expression"] != "(17 + 25) * 3" {
			t.Errorf("function_call %v: %v", conv[2], err)
		}
		if v := conv[3].(map[string]any)["value"]; !strings.HasSuffix(v.(string), ":\n126") {
			t.Errorf("observation %q", v)
		}
		if v := conv[4].(map[string]any)["value"]; v != "The calculator says 126. <answer>126</answer>" {
			t.Errorf("gpt %q", v)
		}
		var tools []map[string]any
		if err := json.Unmarshal([]byte(vals[0]["tools"].(string)), &tools); err != nil || len(tools) != 2 || tools[0]["name"] != "calculator" {
			t.Errorf("tools %v: %v", vals[0]["tools"], err)
		}
		if len(vals[0]) != 2 {
			t.Errorf("keys %v, want conversations and tools", vals[0])
		}
	})

	t.Run("image", func(t *testing.T) {
		_, lines, _ := exportLines(t, run(f.look)...)
		url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(f.pngBytes)
		want := `{"messages":[{"role":"system","content":"You describe pictures."},` +
			`{"role":"user","content":[{"type":"text","text":"the picture"},{"type":"image_url","image_url":{"url":"` + url + `"}}]},` +
			`{"role":"user","content":"What is in the picture?"},` +
			`{"role":"assistant","content":"A red dot."}]}`
		if len(lines) != 1 || lines[0] != want {
			t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), want)
		}
		vals, _, _ := exportLines(t, run(f.look, "--format", "sharegpt")...)
		conv := vals[0]["conversations"].([]any)
		if v := conv[1].(map[string]any); v["from"] != "human" || v["value"] != "the picture\n<image>" {
			t.Errorf("the image turn %v", v)
		}
		if !exportSame(vals[0]["images"], []string{url}) {
			t.Errorf("images %v", vals[0]["images"])
		}
	})

	t.Run("parse retry", func(t *testing.T) {
		_, lines, _ := exportLines(t, run(f.retry, "--dialog", "judge/main")...)
		if len(lines) != 1 || strings.Contains(lines[0], "I cannot decide") || strings.Contains(lines[0], "Please fix") ||
			!strings.HasSuffix(lines[0], `{"role":"assistant","content":"Sorry. <choice>2</choice>"}]}`) {
			t.Errorf("the judge's dialog keeps a refused reply, or lacks the kept one:\n%s", strings.Join(lines, "\n"))
		}
		// Its attempts, by name: the refused one, and the kept one with
		// everything it was sent.
		vals, _, _ := exportLines(t, run(f.retry, "--dialog", "judge/main#*", "--metadata")...)
		if len(vals) != 2 {
			t.Fatalf("%d attempts, want 2", len(vals))
		}
		var aliases []string
		for _, v := range vals {
			aliases = append(aliases, v["metadata"].(map[string]any)["alias"].(string))
		}
		if !slices.Equal(aliases, []string{"main#1", "main#2"}) {
			t.Errorf("attempts %v", aliases)
		}
		if n := len(vals[0]["messages"].([]any)); n != 3 {
			t.Errorf("main#1 has %d messages, want 3", n)
		}
		if msgs := vals[1]["messages"].([]any); len(msgs) != 5 || !strings.Contains(msgs[3].(map[string]any)["content"].(string), "Please fix") {
			t.Errorf("main#2: %v", msgs)
		}
	})

	t.Run("dialog selection", func(t *testing.T) {
		for _, c := range []struct {
			patterns []string
			want     []string // owner/alias of each line
		}{
			{nil, []string{"solver/try1", "solver/try2", "solver/try3", "judge/main"}},
			{[]string{"judge/main"}, []string{"judge/main"}},
			{[]string{"solver/try*"}, []string{"solver/try1", "solver/try2", "solver/try3"}},
			{[]string{"try2", "judge/*"}, []string{"solver/try2", "judge/main"}},
			{[]string{"solver/main"}, nil}, // no reply: nothing to train on
			{[]string{"*/*"}, []string{"solver/try1", "solver/try2", "solver/try3", "judge/main"}},
			{[]string{"*/try1#1"}, []string{"solver/try1#1"}},
		} {
			args := run(f.best, "--metadata")
			for _, p := range c.patterns {
				args = append(args, "--dialog", p)
			}
			vals, _, _ := exportLines(t, args...)
			var got []string
			for _, v := range vals {
				md := v["metadata"].(map[string]any)
				got = append(got, md["owner"].(string)+"/"+md["alias"].(string))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("--dialog %v: %v, want %v", c.patterns, got, c.want)
			}
		}
	})

	t.Run("metadata", func(t *testing.T) {
		vals, _, _ := exportLines(t, run(f.best, "--metadata", "--dialog", "judge/main")...)
		var judge string
		for _, n := range exportDialogs(t, filepath.Join(f.logDir, f.best)) {
			if n.Owner == "judge" && n.Alias == "main" {
				judge = n.ID
			}
		}
		want := map[string]any{"run_id": f.best, "dialog": judge, "owner": "judge", "alias": "main", "tactic": "best_of_n", "status": "ok"}
		if !exportSame(vals[0]["metadata"], want) {
			t.Errorf("metadata %v\nwant %v", vals[0]["metadata"], want)
		}
		// In the run log's vocabulary, as every line of every format.
		for _, format := range []string{"openai", "sharegpt", "lllm"} {
			vals, _, _ := exportLines(t, run(f.react, "--metadata", "--format", format)...)
			for _, v := range vals {
				if bad := append(vocab.Problems(v, false), vocab.Problems(v["metadata"], false)...); len(bad) > 0 {
					t.Errorf("%s: %v", format, bad)
				}
				if id, _ := v["metadata"].(map[string]any)["run_id"].(string); !vocab.RunID.MatchString(id) {
					t.Errorf("%s: run_id %q", format, id)
				}
			}
		}
		// Without --metadata, none.
		vals, _, _ = exportLines(t, run(f.best)...)
		if _, ok := vals[0]["metadata"]; ok {
			t.Errorf("metadata without --metadata")
		}
	})

	t.Run("lllm format", func(t *testing.T) {
		vals, _, _ := exportLines(t, run(f.react, "--format", "lllm")...)
		if len(vals) != 1 {
			t.Fatalf("%d lines", len(vals))
		}
		msgs := vals[0]["messages"].([]any)
		// The log's own message objects: the tool call's, the tool
		// result's and the kept reply's (with its parsed output).
		events := exportEvents(t, filepath.Join(f.logDir, f.react))
		var want []any
		for _, rec := range events {
			if rec.Kind != logs.KindMessage {
				continue
			}
			if rec.Index == 4 {
				continue // the working copy's reply: the dialog's copy (index 2 of main) stands for it
			}
			want = append(want, exportJSON(t, exportMarshal(t, rec.Message)))
		}
		if !exportSame(msgs, want) {
			t.Errorf("messages:\n%v\nwant:\n%v", msgs, want)
		}
		last := msgs[len(msgs)-1].(map[string]any)
		if last["parsed"] == nil || last["usage"] == nil {
			t.Errorf("the kept reply lost its parsed output or usage: %v", last)
		}
		decls := vals[0]["declarations"].([]any)
		if len(decls) != 1 || decls[0].(map[string]any)["digest"] != exportDeclarations(t, filepath.Join(f.logDir, f.react)).Digest {
			t.Errorf("declarations %v", decls)
		}
		if md := vals[0]["metadata"].(map[string]any); md["run_id"] != f.react || md["alias"] != "main" {
			t.Errorf("the lllm format's metadata: %v", md)
		}
	})

	t.Run("runs filters", func(t *testing.T) {
		vals, _, stderr := exportLines(t, append([]string{"--runs", "--tactic", "react", "--metadata"}, ld...)...)
		if len(vals) != 1 || vals[0]["metadata"].(map[string]any)["run_id"] != f.react {
			t.Errorf("--tactic react: %v", vals)
		}
		if got := exportSummary(t, stderr); got != "exported 1 dialog from 1 run; 3 runs of 4 under the log root did not pass the filters" {
			t.Errorf("summary %q", got)
		}
		// A filter implies --runs; every run, oldest first.
		vals, _, stderr = exportLines(t, append([]string{"--status", "ok", "--metadata"}, ld...)...)
		var runs []string
		for _, v := range vals {
			if id := v["metadata"].(map[string]any)["run_id"].(string); !slices.Contains(runs, id) {
				runs = append(runs, id)
			}
		}
		if want := []string{f.best, f.react, f.retry, f.look}; !slices.Equal(runs, want) || len(vals) != 4+1+4+1 {
			t.Errorf("runs %v (%d lines), want %v", runs, len(vals), want)
		}
		if got := exportSummary(t, stderr); got != "exported 10 dialogs from 4 runs" {
			t.Errorf("summary %q", got)
		}
		vals, _, _ = exportLines(t, append([]string{"--runs", "-n", "1", "--metadata"}, ld...)...)
		if len(vals) != 1 || vals[0]["metadata"].(map[string]any)["run_id"] != f.look {
			t.Errorf("-n 1: %v", vals)
		}
	})

	t.Run("sweep", func(t *testing.T) {
		recs := map[string]*sweep.Record{}
		if _, err := sweep.EachRecord(f.sweepDir, func(r *sweep.Record) error { recs[r.Row] = r; return nil }); err != nil {
			t.Fatal(err)
		}
		if len(recs) != 3 || recs["fr"].Status != "ok" || recs["es"].Status != "ok" || recs["boom"].Status != "failed" ||
			recs["fr"].Scores["mentions"] != 1 || recs["es"].Scores["mentions"] != 0 {
			t.Fatalf("the sweep's samples are not as the test needs them: %+v", recs)
		}
		rows := func(vals []map[string]any) []string {
			var out []string
			for _, v := range vals {
				out = append(out, v["metadata"].(map[string]any)["row"].(string))
			}
			slices.Sort(out)
			return out
		}
		for _, c := range []struct {
			where   []string
			rows    []string
			summary string
		}{
			{nil, []string{"es", "fr"}, "exported 2 dialogs from 2 runs; 2 of 3 samples selected (1 failed)"},
			{[]string{"mentions=1"}, []string{"fr"}, "exported 1 dialog from 1 run; 1 of 3 samples selected (1 failed, 1 did not pass --where)"},
			{[]string{"mentions>=0.5"}, []string{"fr"}, "exported 1 dialog from 1 run; 1 of 3 samples selected (1 failed, 1 did not pass --where)"},
			{[]string{"mentions<1"}, []string{"es"}, "exported 1 dialog from 1 run; 1 of 3 samples selected (1 failed, 1 did not pass --where)"},
			{[]string{"mentions>=0", "mentions!=0"}, []string{"fr"}, "exported 1 dialog from 1 run; 1 of 3 samples selected (1 failed, 1 did not pass --where)"},
			{[]string{"mentions>1"}, nil, "exported 0 dialogs from 0 runs; 0 of 3 samples selected (1 failed, 2 did not pass --where)"},
		} {
			args := []string{"--sweep", f.sweepDir, "--metadata"}
			for _, w := range c.where {
				args = append(args, "--where", w)
			}
			vals, _, stderr := exportLines(t, args...)
			if got := rows(vals); !slices.Equal(got, c.rows) {
				t.Errorf("--where %v: rows %v, want %v", c.where, got, c.rows)
			}
			if got := exportSummary(t, stderr); got != c.summary {
				t.Errorf("--where %v: summary %q\nwant %q", c.where, got, c.summary)
			}
		}
		vals, lines, _ := exportLines(t, "--sweep", f.sweepDir, "--where", "mentions=1", "--metadata")
		fr := recs["fr"]
		want := map[string]any{"sweep": "capitals", "cell": fr.Cell, "settings": map[string]any{"global.model_args.temperature": 0.0}, "row": "fr", "repeat": 0.0, "scores": map[string]any{"mentions": 1.0},
			"run_id": fr.RunID, "owner": "assistant", "alias": "main", "tactic": "chat", "status": "ok",
			"labels": map[string]any{"sweep": "capitals", "cell": fr.Cell, "row": "fr", "repeat": "0"}}
		md := vals[0]["metadata"].(map[string]any)
		delete(md, "dialog")
		if !exportSame(md, want) {
			t.Errorf("metadata %v\nwant %v", md, want)
		}
		if !strings.HasPrefix(lines[0], `{"messages":[{"role":"system","content":"You answer in one word."},{"role":"user","content":"Capital of France?"},{"role":"assistant","content":"Paris."}],"metadata":`) {
			t.Errorf("line %s", lines[0])
		}

		// A sample whose run log is gone is skipped and counted.
		if err := os.RemoveAll(filepath.Join(f.sweepDir, recs["es"].RunDir)); err != nil {
			t.Fatal(err)
		}
		vals, _, stderr := exportLines(t, "--sweep", f.sweepDir, "--metadata")
		if got := rows(vals); !slices.Equal(got, []string{"fr"}) {
			t.Errorf("rows %v", got)
		}
		if got, want := exportSummary(t, stderr), "exported 1 dialog from 1 run; 2 of 3 samples selected (1 failed); skipped 1 sample without a run log"; got != want {
			t.Errorf("summary %q\nwant %q", got, want)
		}
	})

	t.Run("out file", func(t *testing.T) {
		_, want, _ := exportLines(t, run(f.best)...)
		path := filepath.Join(f.dir, "data", "train.jsonl")
		r := lllm(t, append([]string{"export"}, append(run(f.best), "-O", path)...)...)
		if r.code != 0 || r.stdout != "" {
			t.Fatalf("%v", r)
		}
		if got := exportSummary(t, r.stderr); got != "exported 4 dialogs from 1 run to "+path {
			t.Errorf("summary %q", got)
		}
		data, err := os.ReadFile(path)
		if err != nil || string(data) != strings.Join(want, "\n")+"\n" {
			t.Errorf("the file holds:\n%s\nwant the lines of stdout (%v)", data, err)
		}
		// Replaced whole by the next export.
		if r := lllm(t, append([]string{"export"}, append(run(f.react), "--out", path)...)...); r.code != 0 {
			t.Fatalf("%v", r)
		}
		if data, _ := os.ReadFile(path); strings.Count(string(data), "\n") != 1 || !strings.Contains(string(data), "calculator") {
			t.Errorf("the second export did not replace the file:\n%s", data)
		}
		// An export that fails leaves the file as it was, and no
		// temporary file beside it.
		before, _ := os.ReadFile(path)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r = lllmCtx(t, ctx, append([]string{"export"}, append(run(f.best), "-O", path)...)...)
		if r.code == 0 {
			t.Fatalf("a cancelled export succeeded:\n%v", r)
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Errorf("a failed export changed the file")
		}
		if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
			t.Errorf("files beside the export: %v", entries)
		}
		wantError(t, lllm(t, append([]string{"export"}, append(run(f.best), "-O", f.dir)...)...), ExitError, f.dir, "is a directory")
	})
}

// TestExportSkips: runs without a run_end are skipped and counted unless
// --include-unfinished, unreadable runs are skipped with a warning, and a
// dialog the format cannot hold is skipped with the reason.
func TestExportSkips(t *testing.T) {
	src := t.TempDir()
	id := exportRunID(t, "run", ctConfig("react.yaml"), "--task", "What is (17 + 25) * 3?", "--log-dir", src)
	root := t.TempDir()
	events, err := os.ReadFile(filepath.Join(src, id, logs.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	// The same log without its run_end: a run that was killed.
	lines := ctLines(string(events))
	if !strings.Contains(lines[len(lines)-1], `"kind":"run_end"`) {
		t.Fatalf("the log does not end with run_end")
	}
	killed := "20991231T000000.000000Z-aaaaaa"
	ctWrite(t, filepath.Join(root, id, logs.EventsFile), string(events))
	ctWrite(t, filepath.Join(root, killed, logs.EventsFile), strings.Join(lines[:len(lines)-1], "\n")+"\n")
	ctWrite(t, filepath.Join(root, "20991231T000001.000000Z-bbbbbb", logs.EventsFile), "not a log\n")

	vals, _, stderr := exportLines(t, "--runs", "--log-dir", root)
	if len(vals) != 1 {
		t.Errorf("%d lines, want the finished run's one", len(vals))
	}
	if !strings.Contains(stderr, "lllm: warning: run 20991231T000001.000000Z-bbbbbb is unreadable") {
		t.Errorf("no warning for the unreadable run:\n%s", stderr)
	}
	want := "exported 1 dialog from 1 run; skipped 1 run without a run_end (still running or interrupted; --include-unfinished exports it), 1 unreadable run"
	if got := exportSummary(t, stderr); got != want {
		t.Errorf("summary %q\nwant %q", got, want)
	}
	vals, _, stderr = exportLines(t, "--runs", "--include-unfinished", "--log-dir", root, "--metadata")
	if len(vals) != 2 || vals[1]["metadata"].(map[string]any)["status"] != "interrupted" {
		t.Errorf("--include-unfinished: %v", vals)
	}
	if got := exportSummary(t, stderr); got != "exported 2 dialogs from 2 runs; skipped 1 unreadable run" {
		t.Errorf("summary %q", got)
	}
	// A RUN given by name that cannot be read fails the export, which
	// writes nothing.
	corrupt := "20991231T000002.000000Z-cccccc"
	ctWrite(t, filepath.Join(root, corrupt, logs.EventsFile), string(events)+"garbage here\n")
	dest := filepath.Join(t.TempDir(), "out.jsonl")
	r := lllm(t, "export", id, corrupt, "--log-dir", root, "-O", dest)
	if r.code != 1 || !strings.Contains(r.stderr, "run "+corrupt+" cannot be exported: ") ||
		!strings.Contains(r.stderr, filepath.Join(root, corrupt, logs.EventsFile)) {
		t.Errorf("an unreadable RUN:\n%v", r)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Errorf("the export of an unreadable RUN left %s (%v)", dest, err)
	}
	// A RUN given by name without a run_end is skipped, as with --runs.
	_, out, stderr := exportLines(t, killed, "--log-dir", root)
	if len(out) != 0 || !strings.Contains(exportSummary(t, stderr), "skipped 1 run without a run_end") {
		t.Errorf("an unfinished RUN: %q\n%s", out, stderr)
	}
	// The filter --status interrupted finds it, and still needs the flag.
	vals, _, _ = exportLines(t, "--status", "interrupted", "--include-unfinished", "--log-dir", root)
	if len(vals) != 1 {
		t.Errorf("--status interrupted: %d lines", len(vals))
	}

	// An image whose bytes the log lacks.
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "handmade"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := must[*dialog.Dialog](t)(dialog.New("viewer", dialog.WithSink(w), dialog.WithAlias("main")))
	m := must[*dialog.Message](t)
	m(d.Append(dialog.Message{Role: dialog.RoleUser, Parts: []dialog.Part{{Type: dialog.PartImage, Image: &dialog.Image{MIME: "image/png"}}}}))
	m(d.Append(dialog.Message{Role: dialog.RoleAssistant, Content: "I see nothing."}))
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	_, out, stderr = exportLines(t, run.ID, "--log-dir", root)
	want = "exported 0 dialogs from 1 run; skipped 1 dialog the openai format cannot hold (run " + run.ID +
		", dialog viewer/main: message 0 (user): cannot be exported: an image whose bytes and URL the log does not hold)"
	if len(out) != 0 || exportSummary(t, stderr) != want {
		t.Errorf("an image without bytes: %q\nsummary %q\nwant    %q", out, exportSummary(t, stderr), want)
	}
	// The lllm format holds it as the log does.
	if vals, _, _ := exportLines(t, run.ID, "--log-dir", root, "--format", "lllm"); len(vals) != 1 {
		t.Errorf("the lllm format skipped it")
	}
}

// TestExportErrors: each mistake is one line naming it, nothing on stdout,
// and no file written.
func TestExportErrors(t *testing.T) {
	root := t.TempDir()
	id := exportRunID(t, "run", ctConfig("chat.yaml"), "--task", "Capital of France?", "--log-dir", root)
	sweepDir := filepath.Join(t.TempDir(), "sweeps", "s")
	ctWrite(t, filepath.Join(sweepDir, sweep.ManifestFile), `{"name": "s", "axes": [], "cells": [], "scorers": ["exact", "mentions"], "pass_k": [1], "rows": 0, "repeats": 1}`)
	ld := []string{"--log-dir", root}
	for _, c := range []struct {
		args []string
		code int
		subs []string
	}{
		{[]string{}, ExitUsage, []string{"RUNs", "--runs", "--sweep DIR"}},
		{[]string{id, "--runs"}, ExitUsage, []string{"RUNs or --runs"}},
		{[]string{id, "--tactic", "chat"}, ExitUsage, []string{"--tactic", "--runs"}},
		{[]string{"--runs", "--sweep", sweepDir}, ExitUsage, []string{"--sweep", "one of them"}},
		{[]string{id, "--where", "exact=1"}, ExitUsage, []string{"--where", "add --sweep"}},
		{[]string{"--sweep", sweepDir, "--where", "mention=1"}, ExitUsage, []string{`"mention"`, `did you mean "mentions"`, "exact, mentions"}},
		{[]string{"--sweep", sweepDir, "--where", "exact"}, ExitUsage, []string{`--where "exact"`, "SCORER=VALUE"}},
		{[]string{"--sweep", sweepDir, "--where", "exact=yes"}, ExitUsage, []string{`"yes" is not a number`}},
		{[]string{"--sweep", sweepDir, "--where", ">=1"}, ExitUsage, []string{"SCORER>=VALUE"}},
		{[]string{id, "--dialog", "judge/[main"}, ExitUsage, []string{"--dialog", "judge/[main"}},
		{[]string{id, "--dialog", "a/b/c"}, ExitUsage, []string{"OWNER/ALIAS"}},
		{[]string{id, "--format", "alpaca"}, ExitUsage, []string{`"alpaca"`, "openai or sharegpt or lllm"}},
		{[]string{id, "--status", "done"}, ExitUsage, []string{"--status"}},
		{[]string{"--runs", "--since", "yesterday"}, ExitUsage, []string{"--since"}},
		{[]string{"nosuchrun"}, ExitError, []string{`"nosuchrun"`, "lllm runs"}},
		{[]string{id, "nosuchrun"}, ExitError, []string{`"nosuchrun"`}},
		{[]string{"--sweep", filepath.Join(root, "nosweep")}, ExitError, []string{"nosweep", "not a sweep directory"}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.jsonl")
			args := append(append(append([]string{"export"}, c.args...), ld...), "-O", out)
			wantError(t, lllm(t, args...), c.code, c.subs...)
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("an export that failed wrote %s", out)
			}
		})
	}
	// A sweep with no finished sample exports nothing, and says so.
	_, lines, stderr := exportLines(t, "--sweep", sweepDir)
	if len(lines) != 0 || exportSummary(t, stderr) != "exported 0 dialogs from 0 runs" {
		t.Errorf("an empty sweep: %q %q", lines, stderr)
	}
}

// TestExportRunsTwice: a run given twice, or by two names, is exported once.
// A --dialog that matches no dialog (a typo) is a warning naming the dialogs there are, with a suggestion, not a silent empty export.
func TestExportWarnsOfAnUnmatchedDialog(t *testing.T) {
	root := t.TempDir()
	exportRunID(t, "run", ctConfig("chat.yaml"), "--task", "Capital of France?", "--log-dir", root)
	_, lines, stderr := exportLines(t, "latest", "--log-dir", root, "--dialog", "asistant/main")
	want := "lllm: warning: --dialog asistant/main matches no dialog of the runs read (did you mean assistant/main?); they have assistant/main"
	if len(lines) != 0 || !strings.Contains(stderr, want) {
		t.Errorf("%q\n%s", lines, stderr)
	}
	if _, _, stderr = exportLines(t, "latest", "--log-dir", root, "--dialog", "assistant/*"); strings.Contains(stderr, "warning") {
		t.Errorf("a matching pattern warned: %s", stderr)
	}
}

func TestExportRunsTwice(t *testing.T) {
	root := t.TempDir()
	id := exportRunID(t, "run", ctConfig("chat.yaml"), "--task", "Capital of France?", "--log-dir", root)
	_, lines, stderr := exportLines(t, id, "latest", filepath.Join(root, id), "--log-dir", root)
	if len(lines) != 1 || exportSummary(t, stderr) != "exported 1 dialog from 1 run" {
		t.Errorf("%q\n%s", lines, stderr)
	}
}

func exportEvents(t *testing.T, runDir string) []*logs.Record {
	t.Helper()
	file, err := os.Open(filepath.Join(runDir, logs.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var out []*logs.Record
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec logs.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		out = append(out, &rec)
	}
	return out
}

// exportDeclarations is the one declarations record of a run's log.
func exportDeclarations(t *testing.T, runDir string) *logs.Declarations {
	t.Helper()
	var found []*logs.Declarations
	for _, rec := range exportEvents(t, runDir) {
		if rec.Kind == logs.KindDeclarations {
			found = append(found, rec.Declarations)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d declarations records, want 1", len(found))
	}
	return found[0]
}

// exportNode is a dialog of a run, as its log opened it.
type exportNode struct{ ID, Owner, Alias string }

// exportDialogs are the dialogs of a run's log, in order.
func exportDialogs(t *testing.T, runDir string) []exportNode {
	t.Helper()
	var out []exportNode
	for _, rec := range exportEvents(t, runDir) {
		n := rec.DialogOpen
		if n == nil {
			n = rec.Fork
		}
		if n != nil {
			out = append(out, exportNode{n.ID, n.Owner, n.Alias})
		}
	}
	return out
}

func exportMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func exportJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

// exportSame reports whether a and b encode to the same JSON.
func exportSame(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	ca, _ := json.Marshal(va) // maps marshal with sorted keys
	cb, _ := json.Marshal(vb)
	return string(ca) == string(cb)
}

// --runs leaves out the runs of lllm replay, whose dialogs repeat the runs they replay, and says so; --include-replays or a replay_of filter exports them.
func TestExportRunsSkipsReplays(t *testing.T) {
	root := t.TempDir()
	id := exportRunID(t, "run", ctConfig("chat.yaml"), "--task", "Capital of France?", "--log-dir", root)
	if r := lllm(t, "replay", id, "--log-dir", root); r.code != 0 {
		t.Fatalf("replay: %v", r)
	}
	_, lines, stderr := exportLines(t, "--runs", "--log-dir", root)
	if want := "exported 1 dialog from 1 run; skipped 1 replay of other runs (their dialogs would be duplicates; --include-replays exports them)"; len(lines) != 1 || exportSummary(t, stderr) != want {
		t.Errorf("%q\n%s", lines, stderr)
	}
	_, lines, _ = exportLines(t, "--runs", "--include-replays", "--log-dir", root)
	if len(lines) != 2 || lines[0] != lines[1] {
		t.Errorf("with --include-replays: %q", lines)
	}
	if _, lines, _ = exportLines(t, "--label", "replay_of", "--log-dir", root); len(lines) != 1 {
		t.Errorf("--label replay_of: %q", lines)
	}
	// A replay named as a RUN is exported: it was asked for.
	if _, lines, _ = exportLines(t, "latest", "--log-dir", root); len(lines) != 1 {
		t.Errorf("latest (the replay): %q", lines)
	}
}

// An export's -O FILE gets the mode any new file gets (os.Create's 0666
// less the umask), not a temporary file's 0600, and a FILE it replaces
// keeps its mode.
func TestExportFileMode(t *testing.T) {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	exportRunID(t, "run", ctConfig("quickstart.yaml"), "--task", "Name a prime number above 10.", "--log-dir", logDir)

	probe, err := os.Create(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	st, err := os.Stat(probe.Name())
	if err != nil {
		t.Fatal(err)
	}
	want := st.Mode().Perm()

	out := filepath.Join(dir, "out", "train.jsonl")
	if r := lllm(t, "export", "latest", "--log-dir", logDir, "-O", out); r.code != 0 {
		t.Fatalf("export:\n%v", r)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != want {
		t.Errorf("a new -O file: %v, %v; want mode %v as os.Create gives", st.Mode().Perm(), err, want)
	}

	if runtime.GOOS == "windows" {
		return // no permission bits beyond read-only
	}
	if err := os.Chmod(out, 0o640); err != nil {
		t.Fatal(err)
	}
	if r := lllm(t, "export", "latest", "--log-dir", logDir, "-O", out); r.code != 0 {
		t.Fatalf("export again:\n%v", r)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("a replaced -O file: %v, %v; want its mode 0640 kept", st.Mode().Perm(), err)
	}
	if entries, err := os.ReadDir(filepath.Dir(out)); err != nil || len(entries) != 1 {
		t.Errorf("beside the export: %v, %v; want it alone", entries, err)
	}
}

// lllm export --sweep reads no run log outside the sweep's runs/: a
// samples file whose run_dir climbs out (hand-edited or hostile) is an
// error naming the run_dir, not an export of whatever it points to.
func TestExportSweepRefusesRunDirOutside(t *testing.T) {
	f := newExportFixture(t)
	var fr *sweep.Record
	if _, err := sweep.EachRecord(f.sweepDir, func(r *sweep.Record) error {
		if r.Row == "fr" {
			fr = r
		}
		return nil
	}); err != nil || fr == nil {
		t.Fatalf("no record of row fr (%v)", err)
	}
	// The run log, copied outside the sweep directory, and the record
	// pointed there.
	outside := filepath.Join(f.dir, "elsewhere")
	if err := os.CopyFS(outside, os.DirFS(filepath.Join(f.sweepDir, fr.RunDir))); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(f.sweepDir, outside)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.sweepDir, sweep.SamplesFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := `"run_dir":"` + fr.RunDir + `"`
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %s", path, old)
	}
	bad := filepath.ToSlash(rel)
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, `"run_dir":"`+bad+`"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	r := lllm(t, "export", "--sweep", f.sweepDir, "-O", out)
	wantError(t, r, ExitError, `run_dir "`+bad+`"`, "sample fr", "runs/")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an export that failed wrote %s", out)
	}
}

// TestExportSweepOnlyWhatReportCounts: lllm export --sweep exports the
// samples lllm sweep report counts, and no others. After a row is removed,
// another is changed (and its new run fails on the provider, so its old
// record still stands) and the repeats are cut from 2 to 1, the samples of
// the old rows and of the dropped repeat are outdated: the report leaves
// them out, and so does the export, which counts them in its summary.
func TestExportSweepOnlyWhatReportCounts(t *testing.T) {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	ctWrite(t, filepath.Join(dir, "chat.yaml"), `tactic_type: chat
global: {model_name: mock/demo}
agent_configs:
  - name: assistant
    system_prompt: You answer in one word.
mock:
  rules:
    - match: Boom
      reply: {error: bad_request}
`)
	rows := filepath.Join(dir, "rows.jsonl")
	ctWrite(t, rows, `{"id": "a", "input": "Say a.", "expected": "a"}
{"id": "b", "input": "Say b.", "expected": "b"}
{"id": "c", "input": "Say c.", "expected": "c"}
`)
	spec := filepath.Join(dir, "spec.yaml")
	ctWrite(t, spec, "name: outdated\nconfig: chat.yaml\ndataset: rows.jsonl\nrepeats: 2\nscorers: [{type: contains, name: mentions}]\n")
	if r := lllm(t, "sweep", spec, "--log-dir", logDir); r.code != 0 {
		t.Fatalf("first run:\n%v", r)
	}
	sweepDir := filepath.Join(logDir, "sweeps", "outdated")
	_, lines, _ := exportLines(t, "--sweep", sweepDir)
	if len(lines) != 6 {
		t.Fatalf("before the change: %d lines, want the 6 samples", len(lines))
	}

	// Row c removed, row b changed into one the provider refuses, one
	// repeat. The run of b fails (it is left to retry); its old record
	// succeeded, so it stands for the sample, but for the row as it was.
	ctWrite(t, rows, `{"id": "a", "input": "Say a.", "expected": "a"}
{"id": "b", "input": "Boom b.", "expected": "b"}
`)
	ctWrite(t, spec, "name: outdated\nconfig: chat.yaml\ndataset: rows.jsonl\nrepeats: 1\nscorers: [{type: contains, name: mentions}]\n")
	r := lllm(t, "sweep", spec, "--log-dir", logDir, "-o", "json")
	var second struct {
		Ran int `json:"ran"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &second); err != nil || r.code == ExitUsage || second.Ran != 1 {
		t.Fatalf("second run: want it to run sample b again (and fail): %v\n%v", err, r)
	}

	r = lllm(t, "sweep", "report", sweepDir, "-o", "json")
	if r.code != 0 {
		t.Fatalf("report:\n%v", r)
	}
	rep := decodeJSON[sweepJSON](t, r.stdout)
	counted := 0
	for _, c := range rep.Cells {
		counted += c.N
	}
	if counted != 1 {
		t.Fatalf("the report counts %d samples, want 1 (row a, repeat 0): %+v", counted, rep)
	}

	vals, _, stderr := exportLines(t, "--sweep", sweepDir, "--metadata")
	var got []string
	for _, v := range vals {
		md := v["metadata"].(map[string]any)
		got = append(got, fmt.Sprintf("%v/%v", md["row"], md["repeat"]))
	}
	slices.Sort(got)
	if want := []string{"a/0"}; !slices.Equal(got, want) {
		t.Errorf("exported samples %v, want %v: those the report counts", got, want)
	}
	const want = "exported 1 dialog from 1 run; 1 of 1 sample selected; skipped 5 outdated samples (made before their row, the repeats or the scorers changed; lllm sweep report does not count them)"
	if s := exportSummary(t, stderr); s != want {
		t.Errorf("summary %q\nwant %q", s, want)
	}
}

// stripToolIDs removes the tool call ids from a run log's records, as a
// provider that gives none (Gemini through langchaingo, Ollama) leaves
// them: the id of each function call, each tool message's tool_call_id
// and each tool_call record's call_id.
func stripToolIDs(t *testing.T, events string) {
	t.Helper()
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	var strip func(v any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "tool_call_id")
			delete(x, "call_id")
			if calls, ok := x["function_calls"].([]any); ok {
				for _, c := range calls {
					if c, ok := c.(map[string]any); ok {
						c["id"] = ""
					}
				}
			}
			for _, y := range x {
				strip(y)
			}
		case []any:
			for _, y := range x {
				strip(y)
			}
		}
	}
	var out bytes.Buffer
	for _, l := range ctLines(string(data)) {
		dec := json.NewDecoder(strings.NewReader(l))
		dec.UseNumber()
		var rec map[string]any
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		strip(rec)
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(b, '\n'))
	}
	if bytes.Contains(out.Bytes(), []byte(`"call_`)) {
		t.Fatalf("ids left in the log:\n%s", out.Bytes())
	}
	if err := os.WriteFile(events, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A run whose log has no tool call ids exports lines whose every tool call
// and tool result has one, "call_N" by position, the result's that of the
// call it answers; the ShareGPT line, which has no ids, is the one the log
// with ids gives.
func TestExportToolCallsWithoutIDs(t *testing.T) {
	logDir := t.TempDir()
	// Two calls at once, then one more, then the answer.
	id := exportRunID(t, "run", ctConfig("react.yaml"), "--task", "What is (17 + 25) * 3, and how many words in 'a b c'?", "--log-dir", logDir,
		"--set", `mock.replies=[{tool_calls: [{name: calculator, arguments: {expression: "17 + 25"}}, {name: word_count, arguments: {text: "a b c"}}]}, {tool_calls: [{name: calculator, arguments: {expression: "42 * 3"}}]}, {text: "<answer>126 and 3</answer>"}]`)
	run, err := logs.Open(logDir, id)
	if err != nil {
		t.Fatal(err)
	}
	_, withIDs, _ := exportLines(t, id, "--log-dir", logDir, "--format", "sharegpt")
	stripToolIDs(t, filepath.Join(run.Dir, logs.EventsFile))

	vals, _, _ := exportLines(t, id, "--log-dir", logDir)
	if len(vals) != 1 {
		t.Fatalf("%d lines, want the agent's dialog", len(vals))
	}
	var line struct {
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	b, _ := json.Marshal(vals[0])
	if err := json.Unmarshal(b, &line); err != nil {
		t.Fatal(err)
	}
	var calls, results []string
	for _, m := range line.Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID)
		}
		if m.Role == "tool" {
			results = append(results, m.ToolCallID)
		}
	}
	if want := []string{"call_1", "call_2", "call_3"}; !slices.Equal(calls, want) || !slices.Equal(results, want) {
		t.Errorf("tool call ids %q and tool_call_ids %q, want %q for both\n%s", calls, results, want, b)
	}

	// The conversations (not the tools: rewriting the log reordered the
	// keys of their schemas).
	sharegpt, _, _ := exportLines(t, id, "--log-dir", logDir, "--format", "sharegpt")
	var before map[string]any
	if err := json.Unmarshal([]byte(withIDs[0]), &before); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(sharegpt[0]["conversations"])
	want, _ := json.Marshal(before["conversations"])
	if !bytes.Equal(got, want) {
		t.Errorf("sharegpt conversations without ids:\n%s\nwith them:\n%s", got, want)
	}
	if strings.Count(string(got), `"from":"function_call"`) != 2 || strings.Count(string(got), `"from":"observation"`) != 3 {
		t.Errorf("sharegpt line: want 2 function_call turns and 3 observations:\n%s", got)
	}
}
