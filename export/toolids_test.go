package export_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/export"
)

// idlessDialog is a dialog with two rounds of tool calls, as a provider
// that gives calls no id (Gemini through langchaingo, Ollama) leaves it in
// the log: two calls at once, then one more, and the results in the order
// of the calls. With ids, the calls have those, and the results the ids of
// the calls they answer.
func idlessDialog(ids ...string) *export.Dialog {
	id := func(i int) string {
		if i < len(ids) {
			return ids[i]
		}
		return ""
	}
	call := func(i int, name, args string) dialog.FunctionCall {
		return dialog.FunctionCall{ID: id(i), Name: name, Arguments: json.RawMessage(args)}
	}
	result := func(i int, name, text string) *dialog.Message {
		return &dialog.Message{Role: dialog.RoleTool, Name: name, ToolCallID: id(i), Content: text,
			FunctionCalls: []dialog.FunctionCall{{ID: id(i), Name: name, Result: text}}}
	}
	return &export.Dialog{Messages: []*dialog.Message{
		{Role: dialog.RoleSystem, Content: "You compute."},
		{Role: dialog.RoleUser, Content: "What is 2 + 3, 4 * 5, and their sum?"},
		{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{
			call(0, "add", `{"a": 2, "b": 3}`), call(1, "mul", `{"a": 4, "b": 5}`)}},
		result(0, "add", "5"),
		result(1, "mul", "20"),
		{Role: dialog.RoleAssistant, Content: "Now the sum.", FunctionCalls: []dialog.FunctionCall{call(2, "add", `{"a": 5, "b": 20}`)}},
		result(2, "add", "25"),
		{Role: dialog.RoleAssistant, Content: "5, 20 and 25."},
	}}
}

// openAIIDs decodes an OpenAI line into the ids of its tool calls, message
// by message, and the tool_call_id of each tool message ("-" for the
// other messages).
func openAIIDs(t *testing.T, line string) (calls [][]string, results []string) {
	t.Helper()
	var v struct {
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
			ToolCallID *string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatal(err)
	}
	for _, m := range v.Messages {
		var ids []string
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
		calls = append(calls, ids)
		switch {
		case m.Role == "tool" && m.ToolCallID != nil:
			results = append(results, *m.ToolCallID)
		case m.Role == "tool":
			results = append(results, "")
		default:
			results = append(results, "-")
		}
	}
	return calls, results
}

// Tool calls without ids get "call_N" by their position in the dialog, and
// each tool result the id of the call it answers, the same on every
// export; with ids, the line is the one the log's own ids make.
func TestOpenAIToolCallsWithoutIDs(t *testing.T) {
	got := encode(t, export.OpenAI, idlessDialog())
	if again := encode(t, export.OpenAI, idlessDialog()); again != got {
		t.Errorf("two exports of one dialog differ:\n%s\n%s", got, again)
	}
	want := encode(t, export.OpenAI, idlessDialog("call_1", "call_2", "call_3"))
	if got != want {
		t.Errorf("without ids:\n got %s\nwant %s", got, want)
	}
	calls, results := openAIIDs(t, got)
	if want := [][]string{nil, nil, {"call_1", "call_2"}, nil, nil, {"call_3"}, nil, nil}; !slices.EqualFunc(calls, want, slices.Equal) {
		t.Errorf("call ids %q, want %q", calls, want)
	}
	if want := []string{"-", "-", "-", "call_1", "call_2", "-", "call_3", "-"}; !slices.Equal(results, want) {
		t.Errorf("tool_call_ids %q, want %q", results, want)
	}
}

// The ids given are unique in the dialog: a position taken by an id the
// log has moves to the next free number, and a call whose id an earlier
// call has (a provider numbering the calls of each reply from 0) gets a
// new one, which its result follows.
func TestOpenAIToolCallIDsUnique(t *testing.T) {
	for _, c := range []struct {
		name      string
		logged    []string
		calls     [][]string
		results   []string
		unchanged bool
	}{
		{"a later call has call_1", []string{"", "", "call_1"},
			[][]string{{"call_2", "call_3"}, {"call_1"}}, []string{"call_2", "call_3", "call_1"}, false},
		{"numbered per reply", []string{"call_0", "call_1", "call_0"},
			[][]string{{"call_0", "call_1"}, {"call_3"}}, []string{"call_0", "call_1", "call_3"}, false},
		{"the provider's own ids", []string{"toolu_a", "toolu_b", "toolu_c"},
			[][]string{{"toolu_a", "toolu_b"}, {"toolu_c"}}, []string{"toolu_a", "toolu_b", "toolu_c"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls, results := openAIIDs(t, encode(t, export.OpenAI, idlessDialog(c.logged...)))
			if got := [][]string{calls[2], calls[5]}; !slices.EqualFunc(got, c.calls, slices.Equal) {
				t.Errorf("call ids %q, want %q", got, c.calls)
			}
			if got := []string{results[3], results[4], results[6]}; !slices.Equal(got, c.results) {
				t.Errorf("tool_call_ids %q, want %q", got, c.results)
			}
		})
	}

	// Results without ids after calls with ids (a log that lost only the
	// results' ids) answer the calls in order.
	d := idlessDialog("x", "y", "z")
	for _, i := range []int{3, 4, 6} {
		m := *d.Messages[i]
		m.ToolCallID = ""
		d.Messages[i] = &m
	}
	if _, results := openAIIDs(t, encode(t, export.OpenAI, d)); !slices.Equal([]string{results[3], results[4], results[6]}, []string{"x", "y", "z"}) {
		t.Errorf("results without ids: tool_call_ids %q, want x, y, z", results)
	}
}

// ShareGPT has no ids: a dialog without them makes the line it makes with
// them, each call in its function_call turn and each result an
// observation. The lllm format keeps the log as it is, empty ids included.
func TestShareGPTAndLLLMToolCallsWithoutIDs(t *testing.T) {
	got := encode(t, export.ShareGPT, idlessDialog())
	if want := encode(t, export.ShareGPT, idlessDialog("call_1", "call_2", "call_3")); got != want {
		t.Errorf("without ids:\n got %s\nwant %s", got, want)
	}
	var v struct {
		Conversations []struct{ From, Value string } `json:"conversations"`
	}
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatal(err)
	}
	var turns []string
	for _, c := range v.Conversations {
		turns = append(turns, c.From+" "+c.Value)
	}
	want := []string{
		"system You compute.",
		"human What is 2 + 3, 4 * 5, and their sum?",
		`function_call [{"name":"add","arguments":{"a":2,"b":3}},{"name":"mul","arguments":{"a":4,"b":5}}]`,
		"observation 5",
		"observation 20",
		"gpt Now the sum.",
		`function_call {"name":"add","arguments":{"a":5,"b":20}}`,
		"observation 25",
		"gpt 5, 20 and 25.",
	}
	if !slices.Equal(turns, want) {
		t.Errorf("turns:\n%s\nwant\n%s", strings.Join(turns, "\n"), strings.Join(want, "\n"))
	}
	if line := encode(t, export.LLLM, idlessDialog()); !strings.Contains(line, `"function_calls":[{"id":"","name":"add"`) {
		t.Errorf("the lllm line does not keep the log's empty ids: %s", line)
	}
}
