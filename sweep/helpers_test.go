package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
	_ "github.com/lllm-go/lllm/tactics/builtin"
)

// chatConfig is a chat tactic config on the mock provider that answers
// "What is N + M?" questions right.
const chatConfig = `tactic_type: chat
global:
  model_name: mock/m
  model_args: {temperature: 0}
agent_configs:
  - name: assistant
    system_prompt: You add numbers.
mock:
  rules:
    - {match: "1 + 1", reply: {text: "2"}}
    - {match: "2 + 2", reply: {text: "4"}}
    - {match: "3 + 3", reply: {text: "6"}}
    - {match: "4 + 4", reply: {text: "8"}}
    - {match: "5 + 5", reply: {text: "11"}}
    - {match: "6 + 6", reply: {text: "12"}}
`

// rowsJSONL are six rows, the fifth of which the mock answers wrong.
func rowsJSONL(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"id": "r%d", "input": "What is %d + %d?", "expected": %d}`+"\n", i, i, i, 2*i)
	}
	return b.String()
}

// writeSweep writes a spec, its config and a dataset into a new folder
// and returns the spec's path.
func writeSweep(t testing.TB, spec string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if _, ok := files["config.yaml"]; !ok {
		files["config.yaml"] = chatConfig
	}
	if _, ok := files["rows.jsonl"]; !ok {
		files["rows.jsonl"] = rowsJSONL(6)
	}
	files["sweep.yaml"] = spec
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "sweep.yaml")
}

// newSweep loads the spec at path and prepares it with its results in a
// "results" folder beside it.
func newSweep(t testing.TB, path string, opts Options) *Sweep {
	t.Helper()
	spec, err := LoadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Join(filepath.Dir(path), "results")
	}
	s, err := New(context.Background(), spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t testing.TB, path string, opts Options) *Report {
	t.Helper()
	rep, err := newSweep(t, path, opts).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// countingModel answers every call with a text unique to the call, except
// a judge's prompt, which it answers with <choice>1</choice>. It fails the
// calls fail says to fail.
type countingModel struct {
	n    atomic.Int64
	fail func(n int64) error
}

func (m *countingModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	n := m.n.Add(1)
	if m.fail != nil {
		if err := m.fail(n); err != nil {
			return nil, err
		}
	}
	last := req.Messages[len(req.Messages)-1].Text()
	text := fmt.Sprintf("reply %d", n)
	if strings.Contains(last, "Candidate answers") {
		text = "<choice>1</choice>"
	}
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: text,
		Usage: dialog.Usage{InputTokens: 10, OutputTokens: 2}, USD: 0.001}}, nil
}

func (m *countingModel) opener() func(context.Context, string, provider.Config) (provider.Model, error) {
	return func(context.Context, string, provider.Config) (provider.Model, error) { return m, nil }
}

// keysIn counts the records of each sample in a directory's samples files.
func keysIn(t testing.TB, dir string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(dir, "samples*.jsonl"))
	for _, f := range files {
		if _, err := readRecords(f, func(r *Record) { counts[r.Key()]++ }); err != nil {
			t.Fatal(err)
		}
	}
	return counts
}
