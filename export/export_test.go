package export_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/export"
	"github.com/lllm-go/lllm/logs"
)

// png is the smallest PNG header SniffImage knows, with a byte of data.
var png = []byte("\x89PNG\r\n\x1a\n\x00")

// toolDialog is a dialog with an image, a tool round and two declarations
// that both declare "add".
func toolDialog() *export.Dialog {
	return &export.Dialog{
		Messages: []*dialog.Message{
			{Role: dialog.RoleSystem, Content: "You add.", Name: "system"},
			{Role: dialog.RoleUser, Name: "user", Modality: dialog.ModalityImage, Parts: []dialog.Part{
				{Type: dialog.PartText, Text: "the sum <here>"},
				{Type: dialog.PartImage, Image: &dialog.Image{MIME: "image/png", Data: png}},
			}},
			{Role: dialog.RoleUser, Content: "Add them."},
			{Role: dialog.RoleToolCall, Name: "solver", FunctionCalls: []dialog.FunctionCall{
				{ID: "call_1", Name: "add", Arguments: json.RawMessage(`{"a": 1, "b": 2}`)},
				{ID: "call_2", Name: "add", Arguments: json.RawMessage(`"1 plus 2"`)},
			}},
			{Role: dialog.RoleTool, Name: "add", ToolCallID: "call_1", Content: "3",
				FunctionCalls: []dialog.FunctionCall{{ID: "call_1", Name: "add", Result: "3"}}},
			{Role: dialog.RoleTool, Name: "add", ToolCallID: "call_2", Content: "Error: bad arguments"},
			{Role: dialog.RoleAssistant, Name: "solver", Content: "It is 3.", Parsed: json.RawMessage(`{"raw":"It is 3."}`)},
		},
		Declarations: []*logs.Declarations{
			{Digest: "sha256:1", Tools: []logs.Tool{{Name: "add", Description: "Adds.", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}}}`), Strict: true}}},
			{Digest: "sha256:2", Tools: []logs.Tool{{Name: "add", Description: "Adds again."}, {Name: "noop"}}},
		},
	}
}

func encode(t *testing.T, f export.Format, d *export.Dialog) string {
	t.Helper()
	b, err := export.Encode(f, d, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
		t.Fatalf("not one line: %q", s)
	}
	return strings.TrimSuffix(s, "\n")
}

func TestOpenAI(t *testing.T) {
	got := encode(t, export.OpenAI, toolDialog())
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	want := `{"messages":[` +
		`{"role":"system","content":"You add."},` +
		`{"role":"user","content":[{"type":"text","text":"the sum <here>"},{"type":"image_url","image_url":{"url":"` + dataURL + `"}}]},` +
		`{"role":"user","content":"Add them."},` +
		`{"role":"assistant","tool_calls":[` +
		`{"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\": 1, \"b\": 2}"}},` +
		`{"id":"call_2","type":"function","function":{"name":"add","arguments":"1 plus 2"}}]},` +
		`{"role":"tool","content":"3","tool_call_id":"call_1"},` +
		`{"role":"tool","content":"Error: bad arguments","tool_call_id":"call_2"},` +
		`{"role":"assistant","content":"It is 3."}],` +
		`"tools":[` +
		`{"type":"function","function":{"name":"add","description":"Adds.","parameters":{"type":"object","properties":{"a":{"type":"integer"}}},"strict":true}},` +
		`{"type":"function","function":{"name":"noop","parameters":{"type":"object","properties":{}}}}]}`
	if got != want {
		t.Errorf("openai line:\n got %s\nwant %s", got, want)
	}
	// Every tool call's arguments are a string holding a JSON object, or
	// the text the model wrote.
	var line struct {
		Messages []struct {
			ToolCalls []struct {
				Function struct{ Arguments string } `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(got), &line); err != nil {
		t.Fatal(err)
	}
	var args map[string]int
	if err := json.Unmarshal([]byte(line.Messages[3].ToolCalls[0].Function.Arguments), &args); err != nil || args["a"] != 1 || args["b"] != 2 {
		t.Errorf("arguments %q: %v", line.Messages[3].ToolCalls[0].Function.Arguments, err)
	}
}

func TestOpenAIMetadataAndPlainAssistant(t *testing.T) {
	repeat := 0
	d := &export.Dialog{
		Messages: []*dialog.Message{{Role: dialog.RoleUser, Content: "Hi"}, {Role: dialog.RoleAssistant, Content: ""}},
		Metadata: &export.Metadata{RunID: "r1", Dialog: "d1", Owner: "a", Alias: "main", Tactic: "chat", Status: "ok",
			Cell: "c1", Row: "7", Repeat: &repeat, Scores: map[string]float64{"exact": 0}},
	}
	got := encode(t, export.OpenAI, d)
	want := `{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":""}],` +
		`"metadata":{"run_id":"r1","dialog":"d1","owner":"a","alias":"main","tactic":"chat","status":"ok","cell":"c1","row":"7","repeat":0,"scores":{"exact":0}}}`
	if got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}

func TestShareGPT(t *testing.T) {
	got := encode(t, export.ShareGPT, toolDialog())
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	want := `{"conversations":[` +
		`{"from":"system","value":"You add."},` +
		`{"from":"human","value":"the sum <here>\n<image>"},` +
		`{"from":"human","value":"Add them."},` +
		`{"from":"function_call","value":"[{\"name\":\"add\",\"arguments\":{\"a\":1,\"b\":2}},{\"name\":\"add\",\"arguments\":\"1 plus 2\"}]"},` +
		`{"from":"observation","value":"3"},` +
		`{"from":"observation","value":"Error: bad arguments"},` +
		`{"from":"gpt","value":"It is 3."}],` +
		`"tools":"[{\"name\":\"add\",\"description\":\"Adds.\",\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}},{\"name\":\"noop\",\"parameters\":{\"type\":\"object\",\"properties\":{}}}]",` +
		`"images":["` + dataURL + `"]}`
	if got != want {
		t.Errorf("sharegpt line:\n got %s\nwant %s", got, want)
	}

	// One call is an object; text beside it is a gpt turn before it.
	d := &export.Dialog{Messages: []*dialog.Message{
		{Role: dialog.RoleAssistant, Content: "Let me add.", FunctionCalls: []dialog.FunctionCall{{ID: "c", Name: "add"}}},
	}}
	got = encode(t, export.ShareGPT, d)
	want = `{"conversations":[{"from":"gpt","value":"Let me add."},{"from":"function_call","value":"{\"name\":\"add\",\"arguments\":{}}"}]}`
	if got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}

func TestLLLM(t *testing.T) {
	d := toolDialog()
	d.Metadata = &export.Metadata{RunID: "r1", Dialog: "d1", Owner: "solver", Status: "ok"}
	got := encode(t, export.LLLM, d)
	var line struct {
		Messages     []*dialog.Message    `json:"messages"`
		Declarations []*logs.Declarations `json:"declarations"`
		Metadata     *export.Metadata     `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(got), &line); err != nil {
		t.Fatal(err)
	}
	for i, m := range d.Messages {
		want, _ := json.Marshal(m)
		have, _ := json.Marshal(line.Messages[i])
		if string(want) != string(have) {
			t.Errorf("message %d:\n got %s\nwant %s", i, have, want)
		}
	}
	if len(line.Messages) != len(d.Messages) || len(line.Declarations) != 2 || line.Metadata.RunID != "r1" {
		t.Errorf("lllm line: %s", got)
	}
	if !strings.Contains(got, `"parsed":{"raw":"It is 3."}`) {
		t.Errorf("the log's fields are not kept: %s", got)
	}
	if got := encode(t, export.LLLM, &export.Dialog{}); got != `{"messages":[]}` {
		t.Errorf("an empty dialog: %s", got)
	}
}

func TestImages(t *testing.T) {
	at := func(img *dialog.Image) *export.Dialog {
		return &export.Dialog{Messages: []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{{Type: dialog.PartImage, Image: img}}}}}
	}
	// A URL the log keeps is the URL; bytes without a MIME type are sniffed.
	got := encode(t, export.OpenAI, at(&dialog.Image{URL: "https://example.org/a.png"}))
	if want := `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.org/a.png"}}]}]}`; got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	got = encode(t, export.OpenAI, at(&dialog.Image{Data: png}))
	if !strings.Contains(got, `"url":"data:image/png;base64,`) {
		t.Errorf("sniffed image: %s", got)
	}
	for _, f := range []export.Format{export.OpenAI, export.ShareGPT} {
		for name, d := range map[string]*export.Dialog{
			"no bytes nor URL": at(&dialog.Image{MIME: "image/png"}),
			"unknown bytes":    at(&dialog.Image{Data: []byte("not an image")}),
			"assistant image": {Messages: []*dialog.Message{{Role: dialog.RoleAssistant,
				Parts: []dialog.Part{{Type: dialog.PartImage, Image: &dialog.Image{MIME: "image/png", Data: png}}}}}},
			"unknown role": {Messages: []*dialog.Message{{Role: "narrator", Content: "Once"}}},
		} {
			if _, err := export.Encode(f, d, export.Options{}); !errors.Is(err, export.ErrUnexportable) {
				t.Errorf("%s, %s: %v, want ErrUnexportable", f, name, err)
			}
		}
	}
	if _, err := export.Encode("csv", &export.Dialog{}, export.Options{}); err == nil || !strings.Contains(err.Error(), "openai, sharegpt, lllm") {
		t.Errorf("an unknown format: %v", err)
	}
}

func TestPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern, owner, alias string
		match                 bool
	}{
		{"judge/main", "judge", "main", true},
		{"judge/main", "solver", "main", false},
		{"main", "solver", "main", true},
		{"solver/try*", "solver", "try12", true},
		{"solver/try*", "solver", "main", false},
		{"*/main#?", "judge", "main#2", true},
		{"*/main", "judge", "main#2", false},
	} {
		p, err := export.ParsePattern(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Match(c.owner, c.alias); got != c.match {
			t.Errorf("%s on %s/%s: %v", c.pattern, c.owner, c.alias, got)
		}
	}
	for _, bad := range []string{"", "/main", "judge/", "a/b/c", "judge/[main"} {
		if _, err := export.ParsePattern(bad); err == nil || !strings.Contains(err.Error(), "OWNER/ALIAS") && !strings.Contains(err.Error(), "wildcards") {
			t.Errorf("pattern %q: %v", bad, err)
		}
	}
	if f, err := export.ParseFormat("sharegpt"); err != nil || f != export.ShareGPT {
		t.Errorf("ParseFormat: %v %v", f, err)
	}
}
