package dialog

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name, tmpl string
		args       map[string]any
		want       string
	}{
		{"plain", "hello", nil, "hello"},
		{"empty", "", nil, ""},
		{"no vars escapes resolved", "a {{b}} c}}", nil, "a {b} c}"},
		// However the literal text is split by the escapes.
		{"no vars escapes split", "{{a}} and }}{{ ", nil, "{a} and }{ "},
		{"no vars only an escape", "{{", nil, "{"},
		{"var", "Hi {name}!", map[string]any{"name": "Ann"}, "Hi Ann!"},
		{"adjacent", "{a}{b}{a}", map[string]any{"a": 1, "b": "x"}, "1x1"},
		{"escaped var", "{{a}}", map[string]any{"a": 1}, "{a}"},
		{"triple braces", "{{{a}}}", map[string]any{"a": 1}, "{1}"},
		{"json literal", `{{"k": {v}}}`, map[string]any{"v": 2.5}, `{"k": 2.5}`},
		{"dotted", "{a.b} {a_b}", map[string]any{"a.b": "dot", "a_b": "us"}, "dot us"},
		{"unicode text", "héllo {x} 世界 {{ü}}", map[string]any{"x": "→"}, "héllo → 世界 {ü}"},
		{"extra args ignored", "{a}", map[string]any{"a": 1, "b": 2}, "1"},
		{"value with braces kept", "{a}", map[string]any{"a": "{b}}"}, "{b}}"},
		{"nil value", "{a}", map[string]any{"a": nil}, "<nil>"},
		{"sprint formatting", "{a} {b} {c}", map[string]any{"a": []int{1, 2}, "b": true, "c": errors.New("e")}, "[1 2] true e"},
		{"multiline", "x\n{a}\ny", map[string]any{"a": "A"}, "x\nA\ny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPrompt("t", tt.tmpl)
			if err != nil {
				t.Fatalf("NewPrompt(%q): %v", tt.tmpl, err)
			}
			got, err := p.Render(tt.args)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got != tt.want {
				t.Errorf("Render(%q) = %q, want %q", tt.tmpl, got, tt.want)
			}
		})
	}
}

func TestVariables(t *testing.T) {
	p := MustPrompt("t", "{b} {a} {{c}} {b} {x.y}")
	want := []string{"b", "a", "x.y"}
	if got := p.Variables(); !reflect.DeepEqual(got, want) {
		t.Errorf("Variables() = %q, want %q", got, want)
	}
	// The result is a copy.
	p.Variables()[0] = "zzz"
	if got := p.Variables(); got[0] != "b" {
		t.Errorf("Variables() aliased its cache: %q", got)
	}
	if got := MustPrompt("t", "{{x}}").Variables(); got != nil {
		t.Errorf("Variables() of variable-free template = %q, want nil", got)
	}
}

func TestRenderMissing(t *testing.T) {
	p := MustPrompt("research/solver", "{task} in {style} for {task} and {who}")
	_, err := p.Render(map[string]any{"who": "me", "other": 1})
	var me *MissingVariablesError
	if !errors.As(err, &me) {
		t.Fatalf("Render error = %v (%T), want *MissingVariablesError", err, err)
	}
	if !reflect.DeepEqual(me.Names, []string{"task", "style"}) || me.Prompt != "research/solver" {
		t.Errorf("error = %+v", me)
	}
	want := `prompt "research/solver": missing template variables: task, style (pass them in args)`
	if err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
	if _, err := p.Render(nil); !errors.As(err, &me) || len(me.Names) != 3 {
		t.Errorf("Render(nil) = %v, want 3 missing", err)
	}
}

func TestTemplateErrors(t *testing.T) {
	tests := []struct {
		tmpl      string
		line, col int
		msg       string // substring
	}{
		{"a { b", 1, 3, `unmatched "{"; write "{{"`},
		{"a } b", 1, 3, `unmatched "}"; write "}}"`},
		{"{}", 1, 1, `"{}" is not a variable`},
		{"ok\n  { name }", 2, 3, `"{ name }" is not a variable`},
		{"{1x}", 1, 1, "not a variable"},
		{"{a.}", 1, 1, "not a variable"},
		{"{.a}", 1, 1, "not a variable"},
		{"{a..b}", 1, 1, "not a variable"},
		{"{a-b}", 1, 1, "not a variable"},
		{"{café}", 1, 1, "not a variable"},
		{"{a}}", 1, 4, `unmatched "}"`},
		{"{{a}", 1, 4, `unmatched "}"`},
		{"{a", 1, 1, `unmatched "{"`},
		{"é}", 1, 2, `unmatched "}"`},           // columns count characters
		{"x\ny\nzz{\n}", 3, 3, `unmatched "{"`}, // '{' then a newline before '}'
		{"}}}", 1, 3, `unmatched "}"`},
		{"{", 1, 1, `unmatched "{"`},
	}
	for _, tt := range tests {
		_, err := NewPrompt("p/x", tt.tmpl)
		var te *TemplateError
		if !errors.As(err, &te) {
			t.Errorf("NewPrompt(%q) error = %v, want *TemplateError", tt.tmpl, err)
			continue
		}
		if te.Line != tt.line || te.Col != tt.col || te.Prompt != "p/x" || !strings.Contains(te.Msg, tt.msg) {
			t.Errorf("NewPrompt(%q) = %d:%d %q, want %d:%d containing %q", tt.tmpl, te.Line, te.Col, te.Msg, tt.line, tt.col, tt.msg)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%d:%d", tt.line, tt.col)) {
			t.Errorf("message %q lacks the position", err)
		}
		// A prompt literal with the same template fails at Render instead.
		if _, err := (&Prompt{Path: "p/x", Template: tt.tmpl}).Render(nil); !errors.As(err, &te) {
			t.Errorf("Render of literal prompt %q: error = %v, want *TemplateError", tt.tmpl, err)
		}
	}
}

// A brace around text that is no variable quotes at most about 40
// characters of it, whatever the length of its line; bytes that are not
// UTF-8 stay escaped.
func TestTemplateErrorQuotesShort(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"x {not a var} y", `"{not a var}" is not a variable`},
		{"{" + strings.Repeat("long words ", 10000) + "}", `"{` + strings.Repeat("long words ", 4)[:37] + `…}" is not a variable`},
		{"{\xff" + strings.Repeat("é", 100) + "}", `"{\xff` + strings.Repeat("é", 36) + `…}" is not a variable`},
	} {
		_, err := NewPrompt("p", tc.src)
		var te *TemplateError
		if !errors.As(err, &te) || !strings.HasPrefix(te.Msg, tc.want) || len(te.Msg) > 300 {
			t.Errorf("NewPrompt(%.30q...): %v, want a TemplateError starting %s", tc.src, err, tc.want)
		}
	}
}

func TestPromptLiteralAndMutation(t *testing.T) {
	// A prompt built as a literal parses its template on use.
	lit := &Prompt{Path: "lit", Template: "x={x}"}
	if got, err := lit.Render(map[string]any{"x": 1}); err != nil || got != "x=1" {
		t.Errorf("literal Render = %q, %v", got, err)
	}
	// The cache never serves a stale template, even to a copy whose
	// Template changed.
	p := MustPrompt("p", "a={a}")
	c := *p
	c.Template = "b={b}"
	if got, err := c.Render(map[string]any{"b": 2}); err != nil || got != "b=2" {
		t.Errorf("copy Render = %q, %v", got, err)
	}
	var nilp *Prompt
	if _, err := nilp.Render(nil); err == nil {
		t.Error("Render of nil prompt: no error")
	}
}

func TestNewPromptOptions(t *testing.T) {
	fn := mustAddFunction(t)
	md := map[string]string{"k": "v"}
	format := json.RawMessage(`{"type":"object"}`)
	parser := &TagParser{XMLTags: []string{"a"}}
	p, err := NewPrompt("p", "x", WithParser(parser), WithFormat(format), WithFunctions(fn), WithMetadata(md))
	if err != nil {
		t.Fatal(err)
	}
	md["k"] = "changed"
	format[2] = 'X'
	if p.Metadata["k"] != "v" || string(p.Format) != `{"type":"object"}` {
		t.Errorf("NewPrompt kept references to caller data: %v %s", p.Metadata, p.Format)
	}
	if p.Parser != Parser(parser) || len(p.Functions) != 1 || p.Functions[0] != fn {
		t.Errorf("options not applied: %+v", p)
	}
	for _, bad := range []PromptOption{
		WithFunctions(fn, fn),
		WithFunctions(nil),
		WithFormat(json.RawMessage(`[1]`)),
		WithFormat(json.RawMessage(`{bad`)),
		WithFormat(json.RawMessage(`null`)),
		WithFormat(json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"#/$defs/missing"}}}`)),
	} {
		if _, err := NewPrompt("p", "x", bad); err == nil {
			t.Errorf("NewPrompt with bad option: no error")
		}
	}
	if _, err := NewPrompt("p", "x", nil); err != nil {
		t.Errorf("NewPrompt with nil option: %v", err)
	}
}

// CheckFormat holds a parsed reply to the prompt's format, for the model
// to read where it does not follow it.
func TestCheckFormat(t *testing.T) {
	p := MustPrompt("p", "Answer.", WithFormat(json.RawMessage(
		`{"type":"object","properties":{"x":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["x"],"additionalProperties":false}`)))
	for reply, ok := range map[string]bool{
		`{"x":3}`:              true,
		`{"x":3,"tags":["a"]}`: true,
		`{"y":"not an int"}`:   false, // x missing, y not allowed
		`{"x":"3"}`:            false,
		`{"x":3.5}`:            false,
		`{"x":3,"tags":[1]}`:   false,
		`{"x":3,"extra":true}`: false,
	} {
		err := p.CheckFormat(json.RawMessage(reply))
		var pe *ParseError
		if ok && err != nil || !ok && (!errors.As(err, &pe) || !strings.Contains(err.Error(), "does not follow the required JSON schema")) {
			t.Errorf("CheckFormat(%s) = %v, want ok=%v", reply, err, ok)
		}
	}
	// The derived prompts check the same format; a prompt without one
	// checks nothing.
	if err := p.ExceptionPrompt().CheckFormat(json.RawMessage(`{"y":1}`)); err == nil {
		t.Error("the exception prompt does not check the format")
	}
	if err := MustPrompt("q", "Answer.").CheckFormat(json.RawMessage(`{"y":1}`)); err != nil {
		t.Errorf("no format: %v", err)
	}
}

func TestMustPromptPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustPrompt did not panic on a bad template")
		}
	}()
	MustPrompt("p", "{")
}

func TestWithoutTools(t *testing.T) {
	fn := mustAddFunction(t)
	parser := &TagParser{}
	p := MustPrompt("p", "{a}", WithFunctions(fn), WithParser(parser), WithFormat(json.RawMessage(`{}`)))
	q := p.WithoutTools()
	if q == p || len(q.Functions) != 0 || len(p.Functions) != 1 {
		t.Fatalf("WithoutTools: q.Functions=%v p.Functions=%v", q.Functions, p.Functions)
	}
	if q.Parser != Parser(parser) || string(q.Format) != "{}" || q.Path != "p" {
		t.Errorf("WithoutTools lost fields: %+v", q)
	}
	if got, err := q.Render(map[string]any{"a": 1}); err != nil || got != "1" {
		t.Errorf("Render of copy = %q, %v", got, err)
	}
	// The copy's handler prompts are its own.
	if len(q.ExceptionPrompt().Functions) != 0 || len(p.ExceptionPrompt().Functions) != 1 {
		t.Error("WithoutTools copy shares the handler cache")
	}
}

func TestRenderConcurrent(t *testing.T) {
	p := MustPrompt("p", "{a}-{b}-{{c}}")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				want := fmt.Sprintf("%d-%d-{c}", i, j)
				got, err := p.Render(map[string]any{"a": i, "b": j})
				if err != nil || got != want {
					errs <- fmt.Errorf("Render = %q, %v; want %q", got, err, want)
					return
				}
				_ = p.Variables()
				_ = p.ExceptionPrompt()
				_ = p.InterruptPrompt()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// oracleToken matches, leftmost first, the tokens of a valid template: the
// independent definition the fuzz test checks the parser against.
var oracleToken = regexp.MustCompile(`\{\{|\}\}|\{[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\}`)

func FuzzRender(f *testing.F) {
	for _, s := range []string{
		"", "plain", "{a}", "{a}{b}", "{{a}}", "{{{a}}}", "{a.b.c}", "{ a }", "{",
		"}", "a}}b{{c", "x\n{\ny", "é{ü}", "{a}}", "{{a}", "{_1}", "{1}", "{a.}",
		`{{"json": {v}}}`, "{a}\n\n  }", "\xff{a}\xfe}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tmpl string) {
		p, err := NewPrompt("fz", tmpl)

		// Oracle: tokenise with the regexp; any brace outside a token is an error.
		locs := oracleToken.FindAllStringIndex(tmpl, -1)
		firstBad := -1
		pos := 0
		var vars []string
		seen := map[string]bool{}
		for _, loc := range append(locs, []int{len(tmpl), len(tmpl)}) {
			if i := strings.IndexAny(tmpl[pos:loc[0]], "{}"); i >= 0 {
				firstBad = pos + i
				break
			}
			if tok := tmpl[loc[0]:loc[1]]; len(tok) > 2 {
				if name := tok[1 : len(tok)-1]; !seen[name] {
					seen[name] = true
					vars = append(vars, name)
				}
			}
			pos = loc[1]
		}

		if firstBad >= 0 {
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("NewPrompt(%q) = %v, want *TemplateError at byte %d", tmpl, err, firstBad)
			}
			line := 1 + strings.Count(tmpl[:firstBad], "\n")
			col := 1 + utf8.RuneCountInString(tmpl[strings.LastIndexByte(tmpl[:firstBad], '\n')+1:firstBad])
			if te.Line != line || te.Col != col {
				t.Fatalf("NewPrompt(%q) error at %d:%d, want %d:%d", tmpl, te.Line, te.Col, line, col)
			}
			if _, err := (&Prompt{Template: tmpl}).Render(nil); err == nil {
				t.Fatalf("Render of invalid literal %q succeeded", tmpl)
			}
			return
		}
		if err != nil {
			t.Fatalf("NewPrompt(%q) = %v, want success", tmpl, err)
		}
		if got := p.Variables(); !reflect.DeepEqual(got, vars) {
			t.Fatalf("Variables(%q) = %q, want %q", tmpl, got, vars)
		}

		// Render with every variable bound matches the oracle's substitution,
		// whether or not the values contain braces.
		for _, val := range []func(string) string{
			func(n string) string { return "<" + n + ">" },
			func(n string) string { return "{" + n + "}}" },
		} {
			args := map[string]any{"unused": "{"}
			for _, v := range vars {
				args[v] = val(v)
			}
			got, err := p.Render(args)
			if err != nil {
				t.Fatalf("Render(%q) = %v", tmpl, err)
			}
			want := oracleToken.ReplaceAllStringFunc(tmpl, func(tok string) string {
				switch tok {
				case "{{":
					return "{"
				case "}}":
					return "}"
				}
				return val(tok[1 : len(tok)-1])
			})
			if got != want {
				t.Fatalf("Render(%q) = %q, want %q", tmpl, got, want)
			}
		}

		// Any one variable missing is reported, and only that one.
		if len(vars) > 0 {
			args := map[string]any{}
			for _, v := range vars[1:] {
				args[v] = v
			}
			_, err := p.Render(args)
			var me *MissingVariablesError
			if !errors.As(err, &me) || !reflect.DeepEqual(me.Names, vars[:1]) {
				t.Fatalf("Render(%q) without %q = %v", tmpl, vars[0], err)
			}
		}

		// Escaping the braces of the variable-free rendering gives a template
		// without variables that renders back to it.
		empty := map[string]any{}
		for _, v := range vars {
			empty[v] = ""
		}
		lit, _ := p.Render(empty)
		esc := strings.NewReplacer("{", "{{", "}", "}}").Replace(lit)
		q, err := NewPrompt("fz", esc)
		if err != nil {
			t.Fatalf("NewPrompt(escaped %q) = %v", esc, err)
		}
		if got, err := q.Render(nil); err != nil || got != lit || q.Variables() != nil {
			t.Fatalf("escaped round trip of %q = %q, %v; want %q", lit, got, err, lit)
		}
	})
}
