package prompts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lllm-go/lllm/dialog"
)

// ToolLookup returns the tool registered under name, or an error saying
// why there is none.
type ToolLookup func(name string) (*dialog.Function, error)

// An Option adjusts LoadDir.
type Option func(*options)

type options struct {
	tools ToolLookup
}

// WithTools resolves the names in front matter's tools list. Without it, a
// prompt file that names tools is an error.
func WithTools(lookup ToolLookup) Option {
	return func(o *options) { o.tools = lookup }
}

// Extensions are the file extensions LoadDir reads.
var Extensions = []string{".md", ".txt"}

// frontKeys are the keys allowed in front matter, sorted.
var frontKeys = []string{"description", "format", "md_tags", "optional_tags", "signal_tags", "tools", "xml_tags"}

// FileError is a problem in a prompt file. Line and Column are 1-based
// lines and columns of the file, zero when unknown.
type FileError struct {
	File   string
	Line   int
	Column int
	Msg    string
	Err    error
}

// Error formats the problem as "file:line:col: msg".
func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteString(":" + strconv.Itoa(e.Column))
		}
	}
	b.WriteString(": " + e.Msg)
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *FileError) Unwrap() error { return e.Err }

// LoadDir registers every *.md and *.txt file under dir, recursively, as
// described in the package documentation. Files and directories whose
// names start with "." are skipped. It reports the problems of all files
// at once (joined with errors.Join, mostly [*FileError]s) and then returns
// a nil registry.
func LoadDir(dir string, opts ...Option) (*Registry, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("prompts: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("prompts: %s is not a directory", dir)
	}
	return load(os.DirFS(dir), dir, opts)
}

// LoadFS is LoadDir for a file system, such as an embed.FS of prompt files
// shipped with a Go package (see RegisterPackage). Errors name files by
// their path in fsys.
func LoadFS(fsys fs.FS, opts ...Option) (*Registry, error) {
	return load(fsys, "", opts)
}

// load registers the prompt files of fsys; dir, if not empty, is where
// fsys lives on disk, for file names in errors.
func load(fsys fs.FS, dir string, opts []Option) (*Registry, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	r := &Registry{}
	from := map[string]string{} // prompt path -> file that defined it
	var errs []error
	walkErr := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, fmt.Errorf("prompts: %w", err))
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if name != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		ext := path.Ext(name)
		if d.IsDir() || !slices.Contains(Extensions, ext) {
			return nil
		}
		file := name
		if dir != "" {
			file = filepath.Join(dir, filepath.FromSlash(name))
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("prompts: %w", err))
			return nil
		}
		key := strings.TrimSuffix(name, ext)
		p, err := parseFile(file, key, data, &o)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if prev, dup := from[key]; dup {
			errs = append(errs, &FileError{File: file, Msg: fmt.Sprintf("prompt %q is already defined by %s", key, prev)})
			return nil
		}
		if err := r.addFile(p, string(data)); err != nil {
			errs = append(errs, &FileError{File: file, Msg: err.Error()})
			return nil
		}
		from[key] = file
		return nil
	})
	if walkErr != nil {
		errs = append(errs, walkErr)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// Parse builds the prompt registered as path from data, the contents of a
// prompt file named file (used in error messages), as LoadDir does.
func Parse(file, path string, data []byte, opts ...Option) (*dialog.Prompt, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return parseFile(file, path, data, &o)
}

// parseFile builds the prompt of one file; all problems of the file are
// reported at once.
func parseFile(file, path string, data []byte, o *options) (*dialog.Prompt, error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	text = strings.TrimPrefix(text, "\ufeff")
	front, body, bodyLine, err := splitFrontMatter(file, text)
	if err != nil {
		return nil, err
	}
	// Drop leading blank lines, keeping count for error positions, and
	// trailing white space.
	for {
		nl := strings.IndexByte(body, '\n')
		if nl < 0 || strings.TrimSpace(body[:nl]) != "" {
			break
		}
		body = body[nl+1:]
		bodyLine++
	}
	body = strings.TrimRight(body, " \t\n")

	var popts []dialog.PromptOption
	if front != "" {
		fm := &frontParser{file: file, lineOffset: 1, tools: o.tools}
		popts = fm.parse(front)
		if len(fm.errs) > 0 {
			return nil, errors.Join(fm.errs...)
		}
	}
	popts = append(popts, func(p *dialog.Prompt) {
		if p.Metadata == nil {
			p.Metadata = map[string]string{}
		}
		p.Metadata["source"] = file
	})
	p, err := dialog.NewPrompt(path, body, popts...)
	if err != nil {
		var te *dialog.TemplateError
		if errors.As(err, &te) {
			return nil, &FileError{File: file, Line: te.Line + bodyLine - 1, Column: te.Col, Msg: "template syntax error: " + te.Msg}
		}
		return nil, &FileError{File: file, Msg: err.Error()}
	}
	return p, nil
}

// splitFrontMatter separates the front matter (without its "---" lines)
// from the body, and returns the file line the body starts on.
func splitFrontMatter(file, text string) (front, body string, bodyLine int, err error) {
	first, rest, ok := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return "", text, 1, nil
	}
	if !ok {
		rest = ""
	}
	var fm strings.Builder
	line := 1
	for rest != "" {
		l, next, _ := strings.Cut(rest, "\n")
		line++
		if strings.TrimRight(l, " \t") == "---" {
			return fm.String(), next, line + 1, nil
		}
		fm.WriteString(l + "\n")
		rest = next
	}
	return "", "", 0, &FileError{File: file, Line: 1, Msg: `front matter is not closed (add a line "---" after it)`}
}

// yamlLineRE extracts the line from yaml.v3's syntax errors.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// frontParser reads front matter into prompt options.
type frontParser struct {
	file       string
	lineOffset int // file line = YAML line + lineOffset
	tools      ToolLookup
	errs       []error
}

func (f *frontParser) errorf(n *yaml.Node, format string, args ...any) {
	e := &FileError{File: f.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line+f.lineOffset, n.Column
	}
	f.errs = append(f.errs, e)
}

func (f *frontParser) parse(src string) []dialog.PromptOption {
	dec := yaml.NewDecoder(strings.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		e := &FileError{File: f.file, Msg: "invalid front matter", Err: err}
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			e.Line, e.Err = n+f.lineOffset, errors.New(m[2])
		}
		f.errs = append(f.errs, e)
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil
		}
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		f.errorf(root, "front matter must be a YAML mapping of %s", strings.Join(frontKeys, ", "))
		return nil
	}
	var (
		opts     []dialog.PromptOption
		tp       dialog.TagParser
		tagNode  *yaml.Node
		format   *yaml.Node
		metadata = map[string]string{}
		seen     = map[string]int{}
	)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			f.errorf(k, "front matter keys must be plain strings")
			continue
		}
		if line, dup := seen[k.Value]; dup {
			f.errorf(k, "duplicate key %q (first at line %d)", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line + f.lineOffset
		switch k.Value {
		case "xml_tags":
			tp.XMLTags, tagNode = f.stringList(k, v), k
		case "md_tags":
			tp.MDTags, tagNode = f.stringList(k, v), k
		case "signal_tags":
			tp.SignalTags, tagNode = f.stringList(k, v), k
		case "optional_tags":
			tp.Optional = f.stringList(k, v)
		case "description":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				f.errorf(v, "description must be a string")
				continue
			}
			metadata["description"] = v.Value
		case "tools":
			opts = append(opts, f.toolsOpt(k, v))
		case "format":
			format = v
			opts = append(opts, f.formatOpt(v))
		default:
			msg := fmt.Sprintf("unknown front-matter key %q", k.Value)
			if best, _ := nearest(k.Value, frontKeys, 1); best != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", best)
			}
			f.errorf(k, "%s; allowed: %s", msg, strings.Join(frontKeys, ", "))
		}
	}
	if tp.Optional != nil && tagNode == nil {
		f.errorf(root, "optional_tags needs xml_tags or md_tags")
	}
	if tagNode != nil {
		if format != nil {
			f.errorf(format, "format cannot be combined with xml_tags, md_tags or signal_tags: both set the reply's parser")
		}
		for _, t := range slices.Concat(tp.XMLTags, tp.MDTags, tp.SignalTags) {
			if t == "" {
				f.errorf(tagNode, "tag names must not be empty")
				break
			}
		}
		opts = append(opts, dialog.WithParser(&dialog.TagParser{
			XMLTags: tp.XMLTags, MDTags: tp.MDTags, SignalTags: tp.SignalTags, Optional: tp.Optional}))
	}
	if len(metadata) > 0 {
		opts = append(opts, dialog.WithMetadata(metadata))
	}
	return opts
}

// stringList decodes a list of strings.
func (f *frontParser) stringList(k, v *yaml.Node) []string {
	if v.Kind != yaml.SequenceNode {
		f.errorf(v, "%s must be a list of strings, such as [answer]", k.Value)
		return nil
	}
	out := make([]string, 0, len(v.Content))
	for _, item := range v.Content {
		if item.Kind != yaml.ScalarNode || item.ShortTag() == "!!null" {
			f.errorf(item, "%s: each item must be a string", k.Value)
			continue
		}
		out = append(out, item.Value)
	}
	return out
}

func (f *frontParser) toolsOpt(k, v *yaml.Node) dialog.PromptOption {
	names := f.stringList(k, v)
	if names == nil {
		return nil
	}
	if f.tools == nil {
		f.errorf(k, "tools: no tool lookup is configured to resolve %s", strings.Join(names, ", "))
		return nil
	}
	var fns []*dialog.Function
	for i, n := range names {
		fn, err := f.tools(n)
		if err == nil && fn == nil {
			err = errors.New("not found")
		}
		if err != nil {
			f.errorf(v.Content[i], "tools: %v", err)
			continue
		}
		if slices.ContainsFunc(fns, func(g *dialog.Function) bool { return g.Name == fn.Name }) {
			f.errorf(v.Content[i], "tools: %q is listed twice", n)
			continue
		}
		fns = append(fns, fn)
	}
	return dialog.WithFunctions(fns...)
}

func (f *frontParser) formatOpt(v *yaml.Node) dialog.PromptOption {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Value == "json" {
			return dialog.WithParser(dialog.JSONParser{})
		}
	case yaml.MappingNode:
		var schema any
		if err := v.Decode(&schema); err != nil {
			f.errorf(v, "format: %v", err)
			return nil
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(schema); err != nil {
			f.errorf(v, "format: the schema cannot be written as JSON (keys must be strings): %v", err)
			return nil
		}
		return dialog.WithFormat(json.RawMessage(bytes.TrimSpace(buf.Bytes())))
	}
	f.errorf(v, `format must be "json" or a JSON schema written as a YAML mapping`)
	return nil
}
