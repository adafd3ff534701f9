package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
)

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
