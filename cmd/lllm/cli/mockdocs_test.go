package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// mockDocBlock is a YAML block of docs/mock.md and the line it starts on.
type mockDocBlock struct {
	line int
	text string
}

// mockDocBlocks returns the ```yaml blocks of docs/mock.md.
func mockDocBlocks(t *testing.T) []mockDocBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ctRepo, "docs", "mock.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []mockDocBlock
	var cur *mockDocBlock
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```yaml":
			cur = &mockDocBlock{line: i + 2}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("docs/mock.md:%d: a yaml block is not closed", cur.line-1)
	}
	return out
}

// TestMockDocExamples: every YAML example of docs/mock.md is a mock script
// that lllm validate accepts and lllm run runs, in a chat config on the
// mock provider.
func TestMockDocExamples(t *testing.T) {
	blocks := mockDocBlocks(t)
	if len(blocks) < 6 {
		t.Fatalf("found %d yaml blocks in docs/mock.md: the scan is broken", len(blocks))
	}
	for _, b := range blocks {
		var top map[string]any
		if err := yaml.Unmarshal([]byte(b.text), &top); err != nil {
			t.Errorf("docs/mock.md:%d: %v", b.line, err)
			continue
		}
		if _, ok := top["mock"]; !ok || len(top) != 1 {
			t.Errorf("docs/mock.md:%d: the example is not a mock: section alone:\n%s", b.line, b.text)
			continue
		}
		dir := t.TempDir()
		cfg := filepath.Join(dir, "config.yaml")
		// No retries: an example that scripts errors fails its run at
		// once rather than after the agent's backoff.
		ctWrite(t, cfg, "tactic_type: chat\nglobal: {model_name: mock/demo, max_retries: 0}\n"+
			"agent_configs:\n  - name: assistant\n    system_prompt: You are a strict judge of answers.\n"+b.text)
		if r := ct(t, "validate", cfg); r.code != 0 {
			t.Errorf("docs/mock.md:%d: lllm validate refuses the example:\n%v", b.line, r)
			continue
		}
		// The run starts and ends (a scripted error may fail it: exit 1),
		// with its result on stdout.
		r := ct(t, "run", cfg, "--task", "Capital of France? (17 + 25) * 3, too long", "--log-dir", filepath.Join(dir, "logs"), "-o", "json")
		var res struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		}
		if r.code > 1 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.RunID == "" {
			t.Errorf("docs/mock.md:%d: lllm run of the example:\n%v", b.line, r)
		}
	}
}

// TestMockTimesCountsPerOpenedModel checks what docs/mock.md says a rule's
// times counts over: each run of lllm run --tasks opens its own mock, while
// the samples of a sweep's cell share one.
func TestMockTimesCountsPerOpenedModel(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	ctWrite(t, cfg, `tactic_type: chat
global: {model_name: mock/demo, model_args: {temperature: 0}}
agent_configs:
  - name: assistant
    system_prompt: You answer.
mock:
  rules:
    - times: 1
      reply: {text: "FIRST"}
    - regex: .
      reply: {text: "LATER"}
`)
	tasks := filepath.Join(dir, "tasks.jsonl")
	ctWrite(t, tasks, "{\"task\": \"one\"}\n{\"task\": \"two\"}\n{\"task\": \"three\"}\n")
	r := ct(t, "run", cfg, "--tasks", tasks, "--log-dir", filepath.Join(dir, "logs"), "-o", "json")
	if r.code != 0 {
		t.Fatalf("lllm run --tasks:\n%v", r)
	}
	if n := strings.Count(r.stdout, `"FIRST"`); n != 3 {
		t.Errorf("lllm run --tasks: %d of 3 runs answered by the times: 1 rule, want each (a mock per run):\n%s", n, r.stdout)
	}

	ctWrite(t, filepath.Join(dir, "rows.jsonl"),
		"{\"id\": 1, \"input\": \"one\", \"expected\": \"FIRST\"}\n{\"id\": 2, \"input\": \"two\", \"expected\": \"FIRST\"}\n{\"id\": 3, \"input\": \"three\", \"expected\": \"FIRST\"}\n")
	spec := filepath.Join(dir, "spec.yaml")
	ctWrite(t, spec, "name: times\nconfig: config.yaml\ndataset: rows.jsonl\nscorers: [contains]\ncache: off\nconcurrency: 2\n")
	if r := ct(t, "sweep", spec, "--log-dir", filepath.Join(dir, "logs")); r.code != 0 {
		t.Fatalf("lllm sweep:\n%v", r)
	}
	r = ct(t, "sweep", "report", filepath.Join(dir, "logs", "sweeps", "times"), "-o", "json")
	var rep struct {
		Cells []struct {
			N      int `json:"n"`
			Scores []struct {
				Mean float64 `json:"mean"`
			} `json:"scores"`
		} `json:"cells"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || len(rep.Cells) != 1 || len(rep.Cells[0].Scores) != 1 {
		t.Fatalf("lllm sweep report:\n%v", r)
	}
	if c := rep.Cells[0]; c.N != 3 || c.Scores[0].Mean*3 < 0.99 || c.Scores[0].Mean*3 > 1.01 {
		t.Errorf("sweep: %d samples, %.3f of them answered by the times: 1 rule; want 3 and one of them (one mock per cell):\n%s", c.N, c.Scores[0].Mean, r.stdout)
	}
}
