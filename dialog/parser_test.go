package dialog

import (
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
)

func parseTags(t *testing.T, p *TagParser, text string) (*TagResult, error) {
	t.Helper()
	v, err := p.Parse(text)
	res, ok := v.(*TagResult)
	if !ok {
		t.Fatalf("Parse returned %T, want *TagResult", v)
	}
	if res.Raw != text {
		t.Errorf("Raw = %q, want %q", res.Raw, text)
	}
	return res, err
}

func TestTagParserXML(t *testing.T) {
	p := &TagParser{XMLTags: []string{"answer", "why"}}
	text := "intro <answer> 42 </answer>\n<why>\nbecause\nreasons\n</why> and <answer>\n43</answer>"
	res, err := parseTags(t, p, text)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"answer": {"42", "43"}, "why": {"because\nreasons"}}
	if !reflect.DeepEqual(res.XML, want) {
		t.Errorf("XML = %q, want %q", res.XML, want)
	}
	if res.MD != nil || res.Signals != nil {
		t.Errorf("unconfigured parts set: %+v", res)
	}
	// Matches are the shortest; an unclosed tag does not match.
	res, err = parseTags(t, &TagParser{XMLTags: []string{"a"}}, "<a>1</a><a>2</a><a>3")
	if err != nil || !reflect.DeepEqual(res.XML["a"], []string{"1", "2"}) {
		t.Errorf("XML = %q, %v", res.XML, err)
	}
}

func TestTagParserMissing(t *testing.T) {
	p := &TagParser{XMLTags: []string{"a", "b", "c"}, MDTags: []string{"python", "sql"}, Optional: []string{"c", "sql"}}
	res, err := parseTags(t, p, "<b>x</b> <a>unclosed")
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v (%T), want *ParseError", err, err)
	}
	if want := []string{"<a>", "```python"}; !reflect.DeepEqual(pe.Missing, want) {
		t.Errorf("Missing = %q, want %q", pe.Missing, want)
	}
	if got, want := err.Error(), "missing required tags: <a>, ```python"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	// The partial result comes with the error; absent tags have empty lists.
	if !reflect.DeepEqual(res.XML, map[string][]string{"a": {}, "b": {"x"}, "c": {}}) {
		t.Errorf("partial XML = %q", res.XML)
	}
	b, _ := json.Marshal(res)
	if want := `{"raw":"\u003cb\u003ex\u003c/b\u003e \u003ca\u003eunclosed","xml_tags":{"a":[],"b":["x"],"c":[]},"md_tags":{"python":[],"sql":[]}}`; string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}

	// Only the optional tags absent: no error.
	if _, err := parseTags(t, p, "<a>1</a><b>2</b>```python\nprint()\n```"); err != nil {
		t.Errorf("Parse with optional tags absent: %v", err)
	}
}

func TestTagParserEmptyText(t *testing.T) {
	if _, err := parseTags(t, &TagParser{}, ""); err != nil {
		t.Errorf("empty parser, empty text: %v", err)
	}
	_, err := parseTags(t, &TagParser{XMLTags: []string{"x"}, MDTags: []string{"y"}}, "")
	var pe *ParseError
	if !errors.As(err, &pe) || len(pe.Missing) != 2 {
		t.Errorf("empty text: error = %v, want both tags missing", err)
	}
}

func TestTagParserMarkdown(t *testing.T) {
	p := &TagParser{MDTags: []string{"python", "json"}}
	text := "Here:\n```python3 title=x\nprint(1)\n\n  indented\n```\nand ```json\n{\"a\": 1}\n``` and ```python\nsecond\n```\n```py\nnot it\n```"
	res, err := parseTags(t, p, text)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"python": {"print(1)\n\n  indented", "second"},
		"json":   {`{"a": 1}`},
	}
	if !reflect.DeepEqual(res.MD, want) {
		t.Errorf("MD = %q, want %q", res.MD, want)
	}
	// A one-line fence is not a fenced block, and an info string must be
	// on the opening line.
	if _, err := parseTags(t, &TagParser{MDTags: []string{"sh"}}, "```sh ls```"); err == nil {
		t.Error("one-line fence matched")
	}
}

func TestTagParserSignals(t *testing.T) {
	p := &TagParser{SignalTags: []string{"DONE", "GIVE_UP", "DONE"}}
	res, err := parseTags(t, p, "ok <DONE> but not <give_up>")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"DONE": true, "GIVE_UP": false}; !reflect.DeepEqual(res.Signals, want) {
		t.Errorf("Signals = %v, want %v", res.Signals, want)
	}
}

func TestTagParserMetacharacters(t *testing.T) {
	p := &TagParser{XMLTags: []string{"a.b", "x+"}, MDTags: []string{"c++"}, SignalTags: []string{"[*]"}}
	text := "<a.b>dot</a.b><aXb>no</aXb><x+>plus</x+>```c++\nint\n```<[*]>"
	res, err := parseTags(t, p, text)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.XML, map[string][]string{"a.b": {"dot"}, "x+": {"plus"}}) {
		t.Errorf("XML = %q", res.XML)
	}
	if !reflect.DeepEqual(res.MD["c++"], []string{"int"}) || !res.Signals["[*]"] {
		t.Errorf("MD = %q, Signals = %v", res.MD, res.Signals)
	}
	// Metacharacters are literal: "a.b" does not match "aXb".
	if _, err := parseTags(t, &TagParser{XMLTags: []string{"a.b"}}, "<aXb>no</aXb>"); err == nil {
		t.Error(`tag "a.b" matched <aXb>`)
	}
}

func TestTagParserBadConfig(t *testing.T) {
	for _, p := range []*TagParser{{XMLTags: []string{""}}, {MDTags: []string{""}}, {SignalTags: []string{""}}} {
		_, err := p.Parse("x")
		var pe *ParseError
		if err == nil || errors.As(err, &pe) {
			t.Errorf("Parse with empty tag name: error = %v, want a non-ParseError", err)
		}
	}
	var nilp *TagParser
	if _, err := nilp.Parse("x"); err == nil {
		t.Error("nil parser: no error")
	}
}

func TestTagParserConcurrent(t *testing.T) {
	p := &TagParser{XMLTags: []string{"a"}, SignalTags: []string{"S"}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				v, err := p.Parse("<a>1</a><S>")
				if err != nil || v.(*TagResult).XML["a"][0] != "1" {
					t.Errorf("Parse = %v, %v", v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestJSONParser(t *testing.T) {
	good := []struct{ in, want string }{
		{`{"a": 1, "b": [1, 2]}`, `{"a":1,"b":[1,2]}`},
		{"  \n{\"a\":1}\n", `{"a":1}`},
		{"```json\n{\"a\": 1}\n```", `{"a":1}`},
		{"```\n{\"a\": 1}\n```", `{"a":1}`},
		{"Sure! Here it is:\n```json\n{\"a\": \"<b>\"}\n```\nDone.", `{"a":"<b>"}`},
		{"```python\nx\n```\n```json\n{\"n\": 12345678901234567890}\n```", `{"n":12345678901234567890}`},
	}
	for _, tt := range good {
		v, err := JSONParser{}.Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		raw, ok := v.(json.RawMessage)
		if !ok || string(raw) != tt.want {
			t.Errorf("Parse(%q) = %T %s, want %s", tt.in, v, v, tt.want)
		}
		// The caller marshals the result into Message.Parsed.
		var back, want any
		b, err := json.Marshal(v)
		json.Unmarshal(b, &back)
		json.Unmarshal([]byte(tt.want), &want)
		if err != nil || !reflect.DeepEqual(back, want) {
			t.Errorf("json.Marshal(result) = %s, %v", b, err)
		}
	}
	for _, in := range []string{"", "not json", `[1, 2]`, `"str"`, `{"a": 1`, `{"a":1} {"b":2}`, "```json\n{bad}\n```", `{"a":1} trailing`} {
		v, err := JSONParser{}.Parse(in)
		var pe *ParseError
		if !errors.As(err, &pe) || v != nil {
			t.Errorf("Parse(%q) = %v, %v; want nil and *ParseError", in, v, err)
		}
	}
	var syn *json.SyntaxError
	if _, err := (JSONParser{}).Parse(`{"a": }`); !errors.As(err, &syn) {
		t.Errorf("ParseError does not wrap the JSON error: %v", err)
	}
}

func TestParseErrorMessage(t *testing.T) {
	tests := []struct {
		e    *ParseError
		want string
	}{
		{&ParseError{Missing: []string{"<a>"}}, "missing required tags: <a>"},
		{&ParseError{Msg: "bad", Missing: []string{"x", "y"}}, "bad: x, y"},
		{&ParseError{Msg: "bad"}, "bad"},
		{&ParseError{Err: errors.New("inner")}, "inner"},
		{&ParseError{}, "malformed reply"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.e, got, tt.want)
		}
	}
}
