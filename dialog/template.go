package dialog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// A PromptOption sets an optional part of a prompt built by [NewPrompt].
type PromptOption func(*Prompt)

// WithParser sets the parser of the model's reply.
func WithParser(parser Parser) PromptOption {
	return func(p *Prompt) { p.Parser = parser }
}

// WithFormat sets the JSON schema the reply must follow (structured output).
// The schema must be a JSON object that github.com/google/jsonschema-go
// resolves, with no $ref that loops back to the same value (see
// [NewPrompt]). Without a parser, or with [JSONParser], the reply is parsed as
// JSON, and an agent holds it to the schema ([Prompt.CheckFormat]) and asks
// again, with the exception prompt, when it does not follow it.
func WithFormat(schema json.RawMessage) PromptOption {
	return func(p *Prompt) { p.Format = append(json.RawMessage(nil), schema...) }
}

// WithFunctions adds tools the model may call. Their names must be distinct.
func WithFunctions(fns ...*Function) PromptOption {
	return func(p *Prompt) { p.Functions = append(p.Functions, fns...) }
}

// WithHandler sets the follow-up prompts; zero fields take the defaults
// described at [Prompt.ExceptionPrompt] and its siblings.
func WithHandler(h Handler) PromptOption {
	return func(p *Prompt) { p.Handler = h }
}

// WithMetadata sets free-form information about the prompt. The map is copied.
func WithMetadata(md map[string]string) PromptOption {
	return func(p *Prompt) {
		if md == nil {
			p.Metadata = nil
			return
		}
		p.Metadata = make(map[string]string, len(md))
		for k, v := range md {
			p.Metadata[k] = v
		}
	}
}

// NewPrompt builds the prompt at path with the given template and options.
//
// In the template, {name} is a variable, where name is ASCII letters, digits
// and underscores not starting with a digit, optionally joined by dots ({a.b} is
// looked up as the single key "a.b"); {{ and }} are literal braces. Any other
// brace is a syntax error, reported as a [*TemplateError].
//
// NewPrompt also checks that Format, if set, is a JSON object, a schema
// whose every $ref resolves and none loops back to the same value (through
// allOf, anyOf and the like, with no properties or items between: checking
// a reply against it would never end), and that the functions are non-nil
// with distinct names.
func NewPrompt(path, template string, opts ...PromptOption) (*Prompt, error) {
	p := &Prompt{Path: path, Template: template}
	for _, opt := range opts {
		if opt != nil {
			opt(p)
		}
	}
	t, err := parseTemplate(path, template)
	if err != nil {
		return nil, err
	}
	p.tmpl = t
	if len(p.Format) > 0 {
		if p.format, err = resolveFormat(p.Format); err != nil {
			if cycle := (*schemaCycleError)(nil); errors.As(err, &cycle) {
				return nil, fmt.Errorf("dialog: prompt %q: format schema: %w", path, err)
			}
			return nil, fmt.Errorf("dialog: prompt %q: format must be a JSON schema object: %w", path, err)
		}
	}
	seen := make(map[string]bool, len(p.Functions))
	for i, f := range p.Functions {
		if f == nil {
			return nil, fmt.Errorf("dialog: prompt %q: function %d is nil", path, i)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("dialog: prompt %q: duplicate function name %q", path, f.Name)
		}
		seen[f.Name] = true
	}
	p.handlers = &handlerCache{owner: p}
	return p, nil
}

// MustPrompt is like [NewPrompt] but panics on error. It is meant for
// prompts declared as package-level variables, in tests and examples.
func MustPrompt(path, template string, opts ...PromptOption) *Prompt {
	p, err := NewPrompt(path, template, opts...)
	if err != nil {
		panic(err)
	}
	return p
}

// Variables returns the names of the template's variables in order of first
// appearance, each once. It returns nil if the template has none or is
// invalid.
func (p *Prompt) Variables() []string {
	t, err := p.template()
	if err != nil || len(t.vars) == 0 {
		return nil
	}
	return append([]string(nil), t.vars...)
}

// Render fills the template's variables from args, formatting each value with
// fmt.Sprint, and turns {{ and }} into literal braces. Arguments the template
// does not use are ignored. If any variables lack an argument, Render returns
// a [*MissingVariablesError] naming all of them.
//
// A template without variables renders to its text with the escapes
// resolved. This deliberately differs from the Python reference, which
// returned such a template verbatim, escapes included, so that the same
// text rendered differently depending on whether it had a variable.
//
// Render is safe for concurrent use.
func (p *Prompt) Render(args map[string]any) (string, error) {
	if p == nil {
		return "", errors.New("dialog: Render of a nil *Prompt")
	}
	t, err := p.template()
	if err != nil {
		return "", err
	}
	if len(t.vars) == 0 {
		return t.text(), nil
	}
	var missing []string
	for _, name := range t.vars {
		if _, ok := args[name]; !ok {
			missing = append(missing, name)
		}
	}
	if missing != nil {
		return "", &MissingVariablesError{Prompt: p.Path, Names: missing}
	}
	var b strings.Builder
	b.Grow(t.lits + 16*len(t.segs))
	for _, s := range t.segs {
		if s.name == "" {
			b.WriteString(s.text)
			continue
		}
		switch v := args[s.name].(type) {
		case string:
			b.WriteString(v)
		default:
			fmt.Fprint(&b, v)
		}
	}
	return b.String(), nil
}

// WithoutTools returns a copy of p that offers the model no tools.
func (p *Prompt) WithoutTools() *Prompt {
	if p == nil {
		return nil
	}
	c := p.clone()
	c.Functions = nil
	return c
}

// clone returns a shallow copy of p with its own handler cache. The copy
// shares p's parser, format, functions and metadata, which are never modified.
func (p *Prompt) clone() *Prompt {
	c := *p
	c.handlers = &handlerCache{owner: &c}
	return &c
}

// template returns p's parsed template, parsing it if p was not built by
// NewPrompt (or its Template was changed since).
func (p *Prompt) template() (*template, error) {
	if t := p.tmpl; t != nil && t.src == p.Template {
		return t, nil
	}
	return parseTemplate(p.Path, p.Template)
}

// MissingVariablesError reports template variables that Render got no
// argument for.
type MissingVariablesError struct {
	Prompt string   // the prompt's path
	Names  []string // the missing variables, in order of first appearance
}

// Error names the prompt and every missing variable.
func (e *MissingVariablesError) Error() string {
	return fmt.Sprintf("prompt %q: missing template variables: %s (pass them in args)",
		e.Prompt, strings.Join(e.Names, ", "))
}

// TemplateError reports a syntax error in a prompt template.
type TemplateError struct {
	Prompt string // the prompt's path
	Line   int    // 1-based line of the offending brace
	Col    int    // 1-based column, in characters (runes)
	Msg    string
}

// Error names the prompt and the position of the error.
func (e *TemplateError) Error() string {
	return fmt.Sprintf("prompt %q: template syntax error at %d:%d: %s", e.Prompt, e.Line, e.Col, e.Msg)
}

// template is a parsed prompt template.
type template struct {
	src  string    // the source it was parsed from
	segs []segment // literal text and variables, in order
	vars []string  // distinct variable names in order of first appearance
	lits int       // bytes of literal text, escapes resolved
}

// text is the text of a template without variables, escapes resolved:
// its one literal segment.
func (t *template) text() string {
	if len(t.segs) == 0 {
		return ""
	}
	return t.segs[0].text
}

// segment is literal text (name == "") or a variable.
type segment struct {
	text string
	name string
}

// parseTemplate parses src, the template of the prompt at path.
func parseTemplate(path, src string) (*template, error) {
	t := &template{src: src}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.segs = append(t.segs, segment{text: lit.String()})
			t.lits += lit.Len()
			lit.Reset()
		}
	}
	seen := map[string]bool{}
	for i := 0; i < len(src); {
		switch src[i] {
		case '{':
			if i+1 < len(src) && src[i+1] == '{' {
				lit.WriteByte('{')
				i += 2
				continue
			}
			n := scanName(src[i+1:])
			if n == 0 || i+1+n >= len(src) || src[i+1+n] != '}' {
				return nil, braceError(path, src, i)
			}
			name := src[i+1 : i+1+n]
			flush()
			t.segs = append(t.segs, segment{name: name})
			if !seen[name] {
				seen[name] = true
				t.vars = append(t.vars, name)
			}
			i += n + 2
		case '}':
			if i+1 < len(src) && src[i+1] == '}' {
				lit.WriteByte('}')
				i += 2
				continue
			}
			return nil, templateError(path, src, i, `unmatched "}"; write "}}" for a literal brace`)
		default:
			j := strings.IndexAny(src[i:], "{}")
			if j < 0 {
				j = len(src) - i
			}
			lit.WriteString(src[i : i+j])
			i += j
		}
	}
	flush()
	return t, nil
}

// scanName returns the length of the variable name at the start of s:
// identifiers of ASCII letters, digits and '_' joined by dots.
func scanName(s string) int {
	n := 0
	for {
		k := scanIdent(s[n:])
		if k == 0 {
			// A trailing dot is not part of the name.
			if n > 0 {
				n--
			}
			return n
		}
		n += k
		if n < len(s) && s[n] == '.' {
			n++
			continue
		}
		return n
	}
}

func scanIdent(s string) int {
	i := 0
	for i < len(s) {
		c := s[i]
		letter := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			break
		}
		i++
	}
	return i
}

// braceError explains the unescaped '{' at src[i].
func braceError(path, src string, i int) error {
	rest := src[i+1:]
	if end := strings.IndexAny(rest, "{}\n"); end >= 0 && rest[end] == '}' {
		bad := src[i : i+1+end+1]
		if utf8.RuneCountInString(bad) > maxShown { // a long line is not quoted whole
			cut := 0
			for range maxShown - 2 {
				_, size := utf8.DecodeRuneInString(bad[cut:])
				cut += size
			}
			bad = bad[:cut] + "…}"
		}
		return templateError(path, src, i, fmt.Sprintf(
			"%q is not a variable (names are ASCII letters, digits and '_', not starting with a digit, joined by '.'); "+
				`write "{{" and "}}" for literal braces`, bad))
	}
	return templateError(path, src, i, `unmatched "{"; write "{{" for a literal brace`)
}

func templateError(path, src string, i int, msg string) error {
	line := 1 + strings.Count(src[:i], "\n")
	start := strings.LastIndexByte(src[:i], '\n') + 1
	return &TemplateError{Prompt: path, Line: line, Col: 1 + utf8.RuneCountInString(src[start:i]), Msg: msg}
}
