package dialog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// ---- templates ----

// Escapes next to, around and between variables resolve like Python's str.format.
func TestEdgeTemplateEscapesNextToVariables(t *testing.T) {
	args := map[string]any{"a": 1, "b": "B"}
	for tmpl, want := range map[string]string{
		"{{{a}}}":          "{1}",
		"{{{{a}}}}":        "{{a}}",
		"}}{a}{{":          "}1{",
		"{a}}}":            "1}",
		"{{{a}":            "{1",
		"{{a}}{a}":         "{a}1",
		"{a}{{b}}{b}":      "1{b}B",
		`{{"k": [{a}]}}`:   `{"k": [1]}`,
		"é{a}é{{é}}":       "é1é{é}",
		"{a}\n}}\n{{\n{b}": "1\n}\n{\nB",
	} {
		p, err := NewPrompt("t", tmpl)
		if err != nil {
			t.Errorf("NewPrompt(%q): %v", tmpl, err)
			continue
		}
		if got, err := p.Render(args); err != nil || got != want {
			t.Errorf("Render(%q) = %q, %v; want %q", tmpl, got, err, want)
		}
	}
}

// A value containing braces, escapes or another variable's name is inserted verbatim, never re-expanded.
func TestEdgeTemplateValuesNotReexpanded(t *testing.T) {
	p := MustPrompt("t", "[{a}|{b}]")
	for _, v := range []string{"{b}", "{{b}}", "}", "{", "{a}", "}}{{", "{missing}"} {
		got, err := p.Render(map[string]any{"a": v, "b": "B"})
		if want := "[" + v + "|B]"; err != nil || got != want {
			t.Errorf("Render(a=%q) = %q, %v; want %q", v, got, err, want)
		}
	}
	// The exception handler's {error_message} often holds braces (JSON, Go maps).
	e := MustPrompt("p", "x").ExceptionPrompt()
	msg := `unexpected "{" in {"a": {b}}}`
	if got, err := e.Render(map[string]any{"error_message": msg}); err != nil || got != "Error: "+msg+". Please fix." {
		t.Errorf("exception prompt = %q, %v", got, err)
	}
}

// All missing variables are named in one error, each once and in order; extra arguments are ignored.
func TestEdgeTemplateMissingAllNamedOnce(t *testing.T) {
	p := MustPrompt("solver", "{x} {y.z} {{w}} {x} {v} {y.z}")
	_, err := p.Render(map[string]any{"v": 1, "w": 2, "y": 3, "extra": 4})
	var me *MissingVariablesError
	if !errors.As(err, &me) || !reflect.DeepEqual(me.Names, []string{"x", "y.z"}) {
		t.Fatalf("Render error = %v, want missing [x y.z]", err)
	}
	if s := err.Error(); !strings.Contains(s, "x, y.z") || !strings.Contains(s, "solver") || strings.Contains(s, "w") {
		t.Errorf("message %q should name the prompt and exactly x and y.z", s)
	}
	if got, err := p.Render(map[string]any{"x": 1, "y.z": 2, "v": 3, "extra": 4}); err != nil || got != "1 2 {w} 1 3 2" {
		t.Errorf("Render with extra args = %q, %v", got, err)
	}
}

// Nested, unbalanced and malformed braces are syntax errors with a position, never a panic.
func TestEdgeTemplateBadBraces(t *testing.T) {
	for _, tmpl := range []string{"{a{b}}", "{{a}", "{a}}", "{ {a} }", "{a b}", "{a:>10}", "{a!r}", "{a[0]}", "{{}", "x}y", "{\n}", "{}}"} {
		_, err := NewPrompt("t", tmpl)
		var te *TemplateError
		if !errors.As(err, &te) || te.Line < 1 || te.Col < 1 {
			t.Errorf("NewPrompt(%q) error = %v, want a *TemplateError with a position", tmpl, err)
		}
	}
}

// A non-ASCII variable name either works or is rejected with a message that says names are ASCII.
func TestEdgeTemplateUnicodeName(t *testing.T) {
	for _, name := range []string{"café", "名前", "Ωmega"} {
		p, err := NewPrompt("t", "<{"+name+"}>")
		if err == nil {
			if got, err := p.Render(map[string]any{name: "v"}); err != nil || got != "<v>" {
				t.Errorf("{%s} accepted but Render = %q, %v", name, got, err)
			}
			continue
		}
		// "é" is a letter: a message saying names are "letters, digits and '_'" misleads.
		if !strings.Contains(err.Error(), "ASCII") {
			t.Errorf("{%s} rejected with %q, which does not say names must be ASCII", name, err)
		}
	}
}

// Parsing and rendering a large template takes linear time.
func TestEdgeTemplateLarge(t *testing.T) {
	tmpl := strings.Repeat("{{x}} {a} é ", 100_000)
	start := time.Now()
	p, err := NewPrompt("big", tmpl)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Render(map[string]any{"a": "{a}"})
	if err != nil || got != strings.Repeat("{x} {a} é ", 100_000) {
		t.Fatalf("Render of large template: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("1.3 MB template took %v", d)
	}
}

// The default handler prompts: exception and interrupt keep the tools, the final one drops them.
func TestEdgeHandlerDefaults(t *testing.T) {
	fn := mustAddFunction(t)
	p := MustPrompt("task", "{q}", WithFunctions(fn), WithParser(&TagParser{XMLTags: []string{"a"}}))
	ex, in, fin := p.ExceptionPrompt(), p.InterruptPrompt(), p.InterruptFinalPrompt()
	if len(ex.Functions) != 1 || len(in.Functions) != 1 || len(fin.Functions) != 0 || len(p.Functions) != 1 {
		t.Errorf("tools: exception %d interrupt %d final %d (prompt %d)", len(ex.Functions), len(in.Functions), len(fin.Functions), len(p.Functions))
	}
	if ex.Parser != p.Parser || in.Parser != p.Parser || fin.Parser != p.Parser {
		t.Error("handler prompts lost the parser")
	}
	results := `{"a": {b}} }}`
	if got, err := in.Render(map[string]any{"call_results": results}); err != nil || got != results {
		t.Errorf("interrupt prompt = %q, %v", got, err)
	}
	if got, err := fin.Render(nil); err != nil || got != "You are reaching the limit of tool calls. Provide the final response." {
		t.Errorf("final prompt = %q, %v", got, err)
	}
	var me *MissingVariablesError
	if _, err := ex.Render(nil); !errors.As(err, &me) || !reflect.DeepEqual(me.Names, []string{"error_message"}) {
		t.Errorf("exception prompt without args: %v", err)
	}
}

// ---- tag parser ----

// Nesting, repetition, unclosed tags, case and tag-like text follow re.findall(r"<t>(.*?)</t>", DOTALL).
func TestEdgeTagParserReferenceMatching(t *testing.T) {
	p := &TagParser{XMLTags: []string{"a"}, Optional: []string{"a"}}
	for text, want := range map[string][]string{
		"<a>1<a>2</a>3</a>":               {"1<a>2"},
		"<a>1</a> <a>2</a>\n<a>\n3\n</a>": {"1", "2", "3"},
		"<a>unclosed <a>x</a>":            {"unclosed <a>x"},
		"<a>open only":                    {},
		"<A>x</A> <a>y</A> <a>z</a>":      {"y</A> <a>z"},
		"<a >x</a> <a x=1>y</a>":          {},
		"<a></a><a> \n </a>":              {"", ""},
		"```\n<a>in fence</a>\n```":       {"in fence"},
		"<a>```python\nx\n```</a>":        {"```python\nx\n```"},
		"</a>x<a>":                        {},
	} {
		res, err := parseTags(t, p, text)
		if err != nil || !reflect.DeepEqual(res.XML["a"], want) {
			t.Errorf("Parse(%q) = %q, %v; want %q", text, res.XML["a"], err, want)
		}
	}
	// Present but empty counts as present: only absence is an error.
	if _, err := parseTags(t, &TagParser{XMLTags: []string{"a"}, MDTags: []string{"py"}}, "<a></a>```py\n```"); err != nil {
		t.Errorf("empty tags reported missing: %v", err)
	}
}

// Every kind of tag is found when they contain each other.
func TestEdgeTagParserMixedKinds(t *testing.T) {
	p := &TagParser{XMLTags: []string{"answer"}, MDTags: []string{"python"}, SignalTags: []string{"DONE", "FAIL"}}
	text := "<answer>\n```python\nprint('<DONE>')\n```\n</answer>"
	res, err := parseTags(t, p, text)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.XML["answer"], []string{"```python\nprint('<DONE>')\n```"}) ||
		!reflect.DeepEqual(res.MD["python"], []string{"print('<DONE>')"}) ||
		!reflect.DeepEqual(res.Signals, map[string]bool{"DONE": true, "FAIL": false}) {
		t.Errorf("result = %+v", res)
	}
	// Signals are exact: no case folding, no self-closing or closing forms.
	res, _ = parseTags(t, &TagParser{SignalTags: []string{"DONE"}}, "<done> <DONE/> </DONE> < DONE>")
	if res.Signals["DONE"] {
		t.Error("signal DONE detected in text without <DONE>")
	}
}

// A fenced block ends at a fence on its own line, not at backticks inside the code.
func TestEdgeTagParserFenceClosesAtLineStart(t *testing.T) {
	p := &TagParser{MDTags: []string{"python"}}
	text := "```python\nfence = '```'\nprint(fence)\n```\nafter"
	res, err := parseTags(t, p, text)
	if want := []string{"fence = '```'\nprint(fence)"}; err != nil || !reflect.DeepEqual(res.MD["python"], want) {
		t.Errorf("MD = %q, %v; want %q", res.MD["python"], err, want)
	}
}

// Windows line endings do not leave a stray "\r" at the end of a block.
func TestEdgeTagParserCRLF(t *testing.T) {
	p := &TagParser{MDTags: []string{"python"}, XMLTags: []string{"a"}}
	res, err := parseTags(t, p, "<a>\r\n1\r\n</a>\r\n```python\r\nx = 1\r\n```\r\n")
	if err != nil || !reflect.DeepEqual(res.XML["a"], []string{"1"}) || !reflect.DeepEqual(res.MD["python"], []string{"x = 1"}) {
		t.Errorf("XML = %q, MD = %q, %v; want [1] and [x = 1]", res.XML["a"], res.MD["python"], err)
	}
}

// Fences at the very end of the text: closed without a final newline counts, unclosed does not.
func TestEdgeTagParserFenceAtEnd(t *testing.T) {
	p := &TagParser{MDTags: []string{"python"}, Optional: []string{"python"}}
	for text, want := range map[string][]string{
		"x\n```python\nx = 1\n```":             {"x = 1"},
		"x\n```python\nx = 1":                  {},
		"x\n```python\nx = 1\n``":              {},
		"```python":                            {},
		"```python\n```":                       {""},
		"```python\n\n```":                     {""},
		"```pythonic\nx\n```":                  {"x"}, // the info string starts with the tag
		"```Python\nx\n```":                    {},
		"```\npython\nx\n```":                  {},
		"````python\nx\n````":                  {"x"},
		"```python\na\n```\n```python\nb\n```": {"a", "b"},
	} {
		res, err := parseTags(t, p, text)
		if err != nil || !reflect.DeepEqual(res.MD["python"], want) {
			t.Errorf("Parse(%q) = %q, %v; want %q", text, res.MD["python"], err, want)
		}
	}
}

// A parse error names every missing required tag once, in configuration order, and the result keeps raw.
func TestEdgeTagParserMissingNamesAll(t *testing.T) {
	p := &TagParser{XMLTags: []string{"plan", "answer", "plan"}, MDTags: []string{"sql", "python"}, SignalTags: []string{"DONE"}, Optional: []string{"sql"}}
	text := "<Plan>x</Plan> <answer>42</answer> ```PYTHON\nx\n```"
	res, err := parseTags(t, p, text)
	var pe *ParseError
	if !errors.As(err, &pe) || !reflect.DeepEqual(pe.Missing, []string{"<plan>", "```python"}) {
		t.Fatalf("error = %v, want missing <plan> and ```python", err)
	}
	for _, s := range []string{"<plan>", "```python"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q does not name %s", err, s)
		}
	}
	if res.Raw != text || !reflect.DeepEqual(res.XML["answer"], []string{"42"}) || res.Signals["DONE"] {
		t.Errorf("partial result = %+v", res)
	}
	// Raw is present in the JSON even for an empty reply.
	v, _ := (&TagParser{}).Parse("")
	if b, _ := json.Marshal(v); string(b) != `{"raw":""}` {
		t.Errorf("JSON of empty result = %s", b)
	}
}

// Adversarial inputs of a few hundred kilobytes parse in linear time (a quadratic parser would take minutes).
func TestEdgeTagParserLargeInput(t *testing.T) {
	p := &TagParser{XMLTags: []string{"a", "b"}, MDTags: []string{"python"}, SignalTags: []string{"S"}}
	// Adversarial inputs of n repeats of a piece: parsing must grow
	// linearly with n. Timed as a ratio of the same input at two sizes
	// (the fastest of three tries each, the two sizes taking turns so
	// that a busy machine slows both alike): 8x the input should take
	// about 8x the time, and a quadratic parser 64x; the bound, 24x,
	// leaves a busy machine room, as does the floor: a quadratic parser
	// takes seconds on the larger input, a linear one milliseconds,
	// whose ratio a collection can skew.
	pieces := []string{"<a>", "<a>x</b>", "```python\n", "`", "<a>1</a>"}
	timed := func(in string) time.Duration {
		start := time.Now()
		p.Parse(in)
		return time.Since(start)
	}
	for _, piece := range pieces {
		n := 200_000 / 8 / len(piece)
		small, large := time.Duration(1<<63-1), time.Duration(1<<63-1)
		for range 3 {
			small = min(small, timed(strings.Repeat(piece, n)))
			large = min(large, timed(strings.Repeat(piece, 8*n)))
		}
		if large > 24*small && large > 250*time.Millisecond {
			t.Errorf("parsing %d repeats of %q took %v, %d took %v: not linear", n, piece, small, 8*n, large)
		}
	}
	res, _ := parseTags(t, p, strings.Repeat("<a>1</a>", 25_000))
	if len(res.XML["a"]) != 25_000 {
		t.Errorf("found %d <a> tags, want 25000", len(res.XML["a"]))
	}
}

// ---- forks ----

// refFork is the reference fork rule: the kept parent indexes and the recorded last_n and first_k.
func refFork(n, lastN, firstK int) (idx []int, recLastN, recFirstK int) {
	if lastN >= n {
		lastN = 0
	}
	if lastN > 0 {
		tail := n - lastN
		if firstK > 0 {
			firstK = min(firstK, tail)
		} else {
			firstK = 0
		}
		for i := range firstK {
			idx = append(idx, i)
		}
		for i := tail; i < n; i++ {
			idx = append(idx, i)
		}
		return idx, lastN, firstK
	}
	for i := range n {
		idx = append(idx, i)
	}
	return idx, 0, firstK
}

// Every (lastN, firstK), including 0, negative, overlapping and beyond the length, follows the reference and shares pointers.
func TestEdgeForkAllCombinations(t *testing.T) {
	var f Forest
	for n := range 7 {
		parent := dialogOf(t, n, WithSink(&f))
		before := parent.Messages()
		for lastN := -1; lastN <= n+2; lastN++ {
			for firstK := -1; firstK <= n+2; firstK++ {
				c, err := parent.Fork(lastN, firstK)
				if err != nil {
					t.Fatal(err)
				}
				idx, wl, wk := refFork(n, lastN, firstK)
				got := c.Messages()
				if len(got) != len(idx) {
					t.Fatalf("n=%d fork(%d,%d): %d messages %q, want indexes %v", n, lastN, firstK, len(got), contents(c), idx)
				}
				for i, j := range idx {
					if got[i] != before[j] {
						t.Fatalf("n=%d fork(%d,%d): message %d is not the parent's message %d (copied or wrong)", n, lastN, firstK, i, j)
					}
				}
				nd := c.Node()
				if nd.SplitPoint != len(idx) || nd.LastN != wl || nd.FirstK != wk || nd.ParentLen != n || nd.ParentID != parent.ID() {
					t.Errorf("n=%d fork(%d,%d): node %+v, want split %d last_n %d first_k %d", n, lastN, firstK, nd, len(idx), wl, wk)
				}
				if r := f.Dialog(c.ID()); r == nil || !reflect.DeepEqual(r.Messages(), got) {
					t.Errorf("n=%d fork(%d,%d): forest replay differs", n, lastN, firstK)
				}
			}
		}
		if !reflect.DeepEqual(parent.Messages(), before) {
			t.Fatalf("n=%d: forking changed the parent", n)
		}
	}
}

// Forks of forks share the common prefix by pointer and never see each other's later messages.
func TestEdgeForkOfForkIsolation(t *testing.T) {
	root := dialogOf(t, 9) // spans two chunks
	a, _ := root.Fork(0, 0)
	a.PutText("a1")
	b, _ := a.Fork(0, 0)
	c, _ := a.Fork(2, 1) // m0, m8, a1
	a.PutText("a2")
	b.PutText("b1")
	d, _ := b.Fork(0, 0)
	root.PutText("r1")
	c.PutText("c1")
	d.PutText("d1")
	b.PutText("b2")
	want := map[*Dialog]string{
		root: "m0,m1,m2,m3,m4,m5,m6,m7,m8,r1",
		a:    "m0,m1,m2,m3,m4,m5,m6,m7,m8,a1,a2",
		b:    "m0,m1,m2,m3,m4,m5,m6,m7,m8,a1,b1,b2",
		c:    "m0,m8,a1,c1",
		d:    "m0,m1,m2,m3,m4,m5,m6,m7,m8,a1,b1,d1",
	}
	for dl, w := range want {
		if got := contents(dl); got != w {
			t.Errorf("depth %d: %q, want %q", dl.Node().Depth, got, w)
		}
	}
	if d.At(8) != root.At(8) || d.At(9) != a.At(9) || d.At(10) != b.At(10) || c.At(2) != a.At(9) {
		t.Error("forks of forks copied shared messages")
	}
	if d.Node().Depth != 3 || d.Node().SplitPoint != 11 || c.Node().SplitPoint != 3 {
		t.Errorf("nodes: d %+v c %+v", d.Node(), c.Node())
	}
}

// Concurrent appends, reads and forks on a parent and its forks keep every dialog's history exact (-race).
func TestEdgeForkConcurrentAppends(t *testing.T) {
	var f Forest
	root := dialogOf(t, 5, WithSink(&f))
	full, _ := root.Fork(0, 0)
	part, _ := root.Fork(2, 1)
	grand, _ := full.Fork(0, 0)
	prefix := root.Messages()
	dialogs := []*Dialog{root, full, part, grand}
	const n = 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	var late []*Dialog
	for k, d := range dialogs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range n {
				if _, err := d.PutText(fmt.Sprintf("d%d-%d", k, i)); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					c, err := d.Fork(0, 0)
					if err != nil {
						t.Error(err)
						return
					}
					c.PutText("late")
					mu.Lock()
					late = append(late, c)
					mu.Unlock()
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range n {
				ms := d.Messages()
				for i, m := range ms {
					if m == nil || (i < len(prefix) && k == 0 && m != prefix[i]) {
						t.Error("reader saw a nil or changed message")
						return
					}
				}
				_ = d.Tail()
			}
		}()
	}
	wg.Wait()
	for k, d := range dialogs {
		ms := d.Messages()
		start := d.Node().SplitPoint
		if k == 0 {
			start = 5
		}
		if len(ms) != start+n {
			t.Fatalf("dialog %d has %d messages, want %d", k, len(ms), start+n)
		}
		for i := range n {
			if got, want := ms[start+i].Content, fmt.Sprintf("d%d-%d", k, i); got != want {
				t.Fatalf("dialog %d message %d = %q, want %q", k, start+i, got, want)
			}
		}
		if r := f.Dialog(d.ID()); r == nil || !reflect.DeepEqual(r.Messages(), ms) {
			t.Errorf("forest copy of dialog %d differs", k)
		}
	}
	for _, c := range late {
		ms := c.Messages()
		if ms[len(ms)-1].Content != "late" || len(ms) != c.Node().SplitPoint+1 {
			t.Errorf("late fork saw later messages: %q", contents(c))
		}
	}
}

// Append stores a copy: changing the caller's maps and slices afterwards does not change history.
func TestEdgeAppendCopiesMessage(t *testing.T) {
	d := dialogOf(t, 0)
	meta := map[string]string{"k": "v"}
	parts := []Part{{Type: PartText, Text: "caption"}}
	calls := []FunctionCall{{ID: "c1", Name: "add", Arguments: json.RawMessage(`{"a":1}`)}}
	stored, err := d.Append(Message{Role: RoleAssistant, Metadata: meta, Parts: parts, FunctionCalls: calls})
	if err != nil {
		t.Fatal(err)
	}
	meta["k"] = "changed"
	parts[0].Text = "changed"
	calls[0].Name = "changed"
	if m := d.At(0); m != stored || m.Metadata["k"] != "v" || m.Parts[0].Text != "caption" || m.FunctionCalls[0].Name != "add" {
		t.Errorf("stored message changed with the caller's data: %+v", d.At(0))
	}
}

// ---- functions ----

type edgeBase struct {
	ID string `json:"id"`
}

type edgeItem struct {
	Count int `json:"count"`
}

type edgeArgs struct {
	edgeBase
	Ptr    *int           `json:"ptr"`
	Scores map[string]int `json:"scores,omitempty"`
	Items  []edgeItem     `json:"items,omitempty"`
	Secret string         `json:"-"`
	Opt    string         `json:"opt,omitempty"`
	When   time.Time      `json:"when,omitzero"`
	Any    any            `json:"any,omitempty"`
}

type edgeSchema struct {
	Type       string                     `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

func mustEdgeFunction(t *testing.T) *Function {
	t.Helper()
	f, err := NewFunction("edge", "", func(_ context.Context, in edgeArgs) (edgeArgs, error) { return in, nil })
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Schemas inferred from structs: embedded fields promoted, "-" dropped, omitempty optional, pointers nullable.
func TestEdgeFunctionSchemaShapes(t *testing.T) {
	f := mustEdgeFunction(t)
	var s edgeSchema
	if err := json.Unmarshal(f.Parameters, &s); err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range s.Properties {
		names = append(names, k)
	}
	for _, want := range []string{"id", "ptr", "scores", "items", "opt", "when", "any"} {
		if s.Properties[want] == nil {
			t.Errorf("property %q missing from %s", want, f.Parameters)
		}
	}
	if len(s.Properties) != 7 || s.Properties["edgeBase"] != nil || s.Properties["Secret"] != nil {
		t.Errorf("properties = %v, want embedded fields promoted and json:\"-\" dropped", names)
	}
	if !reflect.DeepEqual(f.Required, []string{"id", "ptr"}) || !reflect.DeepEqual(s.Required, f.Required) {
		t.Errorf("Required = %v (schema %v), want [id ptr]", f.Required, s.Required)
	}
	if !strings.Contains(string(s.Properties["ptr"]), "null") || !strings.Contains(string(s.Properties["when"]), `"string"`) ||
		!strings.Contains(string(s.Properties["items"]), `"additionalProperties":false`) {
		t.Errorf("schema = %s", f.Parameters)
	}
	args := `{"id":"x","ptr":null,"scores":{"a":1},"items":[{"count":2}],"when":"2024-02-29T12:00:00Z","any":{"deep":[1,"two",null]}}`
	got := f.Call(context.Background(), FunctionCall{Arguments: json.RawMessage(args)})
	if got.Error != "" || !strings.Contains(got.Result, `"when":"2024-02-29T12:00:00Z"`) || !strings.Contains(got.Result, `"any":{"deep":[1,"two",null]}`) {
		t.Errorf("Call = %+v", got)
	}
	if got := f.Call(context.Background(), FunctionCall{Arguments: json.RawMessage(`{"id":"x","ptr":1,"Secret":"s"}`)}); !strings.Contains(got.Error, "Secret") {
		t.Errorf(`json:"-" field accepted as an argument: %+v`, got)
	}
}

// A json.RawMessage field accepts any JSON value, as encoding/json does, not an array of bytes.
func TestEdgeFunctionRawMessageField(t *testing.T) {
	var seen json.RawMessage
	f, err := NewFunction("raw", "", func(_ context.Context, in struct {
		Payload json.RawMessage `json:"payload"`
	}) (string, error) {
		seen = in.Payload
		return "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := f.Call(context.Background(), FunctionCall{Arguments: json.RawMessage(`{"payload":{"k":[1,2]}}`)})
	if got.Error != "" || string(seen) != `{"k":[1,2]}` {
		t.Errorf("Call = %+v (payload %s), schema %s", got, seen, f.Parameters)
	}
}

// Wrong arguments give an error result that names the offending field.
func TestEdgeFunctionCallErrorsNameField(t *testing.T) {
	f := mustEdgeFunction(t)
	for _, tt := range []struct{ args, field string }{
		{`{"id":7,"ptr":1}`, "id"},
		{`{"id":"x"}`, "ptr"},
		{`{"id":null,"ptr":1}`, "id"},
		{`{"id":"x","ptr":"1"}`, "ptr"},
		{`{"id":"x","ptr":1,"scores":{"a":"high"}}`, "scores"},
		{`{"id":"x","ptr":1,"items":[{"count":"2"}]}`, "count"},
		{`{"id":"x","ptr":1,"items":[{"count":2,"weight":3}]}`, "weight"},
		{`{"id":"x","ptr":1,"bogus":true}`, "bogus"},
		{`{"id":"x","ptr":1,"when":"yesterday"}`, "when"},
	} {
		got := f.Call(context.Background(), FunctionCall{Arguments: json.RawMessage(tt.args)})
		if got.Error == "" || got.Result != "Error: "+got.Error || !strings.Contains(got.Error, tt.field) {
			t.Errorf("Call(%s) = %q, want an error result naming %q", tt.args, got.Result, tt.field)
		}
	}
}

// Numbers JSON Schema counts as integers (2.0) are accepted for integer fields, and big integers stay exact.
func TestEdgeFunctionCallIntegralFloat(t *testing.T) {
	f := mustAddFunction(t)
	for args, want := range map[string]string{
		`{"a": 2.0, "b": 1}`:              "3",
		`{"a": 9007199254740993, "b": 0}`: "9007199254740993",
	} {
		got := f.Call(context.Background(), FunctionCall{Name: "add", Arguments: json.RawMessage(args)})
		if got.Error != "" || !strings.HasSuffix(got.Result, "\n"+want) {
			t.Errorf("Call(%s) = %q, want result %s", args, got.Result, want)
		}
	}
}

// The call wrapper turns every failure into an error result and never crashes.
func TestEdgeFunctionCallNeverCrashes(t *testing.T) {
	ctx := context.Background()
	type none struct{}
	panics := map[string]func(){
		"string": func() { panic("boom") },
		"error":  func() { panic(errors.New("boom")) },
		"nilmap": func() {
			var m map[string]int
			//lint:ignore SA5000 the panic is what this case tests
			m["boom"] = 1
		},
		"index": func() { _ = []int{}[len("boom")] },
		"nil":   func() { panic(nil) },
	}
	for name, fn := range panics {
		f, err := NewFunction("p_"+name, "", func(context.Context, none) (int, error) { fn(); return 0, nil })
		if err != nil {
			t.Fatal(err)
		}
		got := f.Call(ctx, FunctionCall{ID: "c", Arguments: json.RawMessage(`{}`)})
		if got.Error == "" || got.Result != "Error: "+got.Error || !strings.Contains(got.Error, "panic") || got.ID != "c" {
			t.Errorf("panic %s: %+v", name, got)
		}
	}
	nilAny, _ := NewFunction("nil_any", "", func(context.Context, none) (any, error) { return nil, nil })
	nilPtr, _ := NewFunction("nil_ptr", "", func(context.Context, none) (*edgeItem, error) { return nil, nil })
	for _, f := range []*Function{nilAny, nilPtr} {
		got := f.Call(ctx, FunctionCall{})
		if got.Error != "" || got.Result != "Return of calling function "+f.Name+" with arguments {}:\nnull" {
			t.Errorf("%s: %+v", f.Name, got)
		}
	}
	add := mustAddFunction(t)
	for _, args := range []string{`null`, `"x"`, `42`, `{"a":1,"b":2}garbage`, "\x00"} {
		got := add.Call(ctx, FunctionCall{Name: "add", Arguments: json.RawMessage(args)})
		if got.Error == "" || got.Result != "Error: "+got.Error {
			t.Errorf("Call(%q) = %+v, want an error result", args, got)
		}
	}
}

// ---- messages ----

// checkAllSet fails for every zero field, recursively (each struct type once), so a new Message field must join the round trip.
func checkAllSet(t *testing.T, path string, v reflect.Value, seen map[reflect.Type]bool) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			t.Errorf("%s is nil in the sample", path)
			return
		}
		checkAllSet(t, path, v.Elem(), seen)
	case reflect.Struct:
		if seen[v.Type()] {
			return
		}
		seen[v.Type()] = true
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				checkAllSet(t, path+"."+v.Type().Field(i).Name, v.Field(i), seen)
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			t.Errorf("%s is empty in the sample", path)
		} else if k := v.Type().Elem().Kind(); k == reflect.Struct || k == reflect.Pointer {
			checkAllSet(t, path+"[0]", v.Index(0), seen)
		}
	default:
		if v.IsZero() {
			t.Errorf("%s is zero in the sample", path)
		}
	}
}

// A message with every field set survives a JSON round trip unchanged, and its JSON is stable.
func TestEdgeMessageJSONEveryField(t *testing.T) {
	m := Message{
		Role: RoleAssistant, Content: "héllo <b>&</b> \u2028 {x}", Name: "coder/1", Agent: "critic", Modality: ModalityImage,
		Parts:         []Part{{Type: PartImage, Text: "cap", Image: &Image{MIME: "image/png", Data: pngBytes(), URL: "https://example.invalid/x.png"}}},
		FunctionCalls: []FunctionCall{{ID: "call_1", Name: "add", Arguments: json.RawMessage(`{"a":1,"s":"\u00e9"}`), Result: "3", Error: "none"}},
		Reasoning:     []Reasoning{{Text: "first \u00e9", Signature: "sig==", Redacted: "EmwK", Call: "call_1"}},
		ToolCallID:    "call_0",
		Parsed:        json.RawMessage(`{"raw":"x","xml_tags":{"a":["1"]}}`),
		Usage:         Usage{InputTokens: 100, CachedInputTokens: 20, CacheWriteTokens: 5, OutputTokens: 30, ReasoningTokens: 10},
		USD:           0.1 + 0.2,
		Model:         "openai/gpt-4o-mini",
		Logprobs:      []TokenLogprob{{Token: "4", Logprob: -0.01, Bytes: []int{52}, TopLogprobs: []TokenLogprob{{Token: "5", Logprob: -4.5, Bytes: []int{53}, TopLogprobs: []TokenLogprob{{Token: "6", Logprob: -9}}}}}},
		Metadata:      map[string]string{"tool_call_id": "call_0", "dialog_id": "abc", "": "empty key"},
		APIType:       APIResponse,
		Vectors:       []float64{0.25, -1, 3e-9, 1e300},
	}
	checkAllSet(t, "Message", reflect.ValueOf(m), map[reflect.Type]bool{})
	back, b := roundTrip(t, m)
	if !reflect.DeepEqual(back, m) {
		t.Errorf("round trip changed the message:\n got %+v\nwant %+v", back, m)
	}
	if b2, _ := json.Marshal(back); string(b2) != string(b) {
		t.Errorf("JSON not stable:\n%s\n%s", b, b2)
	}
	if back.Cost() != m.Cost() || back.SanitizedName() != "coder_1" {
		t.Errorf("derived fields differ: %+v %q", back.Cost(), back.SanitizedName())
	}
}
