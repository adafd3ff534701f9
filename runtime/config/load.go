package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/internal/yamldup"
)

// maxNodes bounds the values one YAML document may expand to, so that
// alias bombs fail instead of exhausting memory.
const maxNodes = 1 << 18

// maxDepth bounds the nesting of values and the length of a base chain.
const (
	maxDepth     = 1000
	maxBaseChain = 64
)

// yamlLineRE extracts the line from yaml.v3's syntax errors.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the messages of yaml.v3's parser (not scanner)
// errors, whose reported line is 0-based: yaml.v3 adds one only for
// scanner errors. For these the line is where the enclosing collection
// starts.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// pos is where a value was written.
type pos struct {
	file      string
	line, col int
}

// errorf returns an *Error at p.
func (p pos) errorf(format string, args ...any) *Error {
	return &Error{File: p.file, Line: p.line, Column: p.col, Msg: fmt.Sprintf(format, args...)}
}

// posTree mirrors a generic value with the position of each part.
// keys is non-nil for a mapping, items for a sequence.
type posTree struct {
	at    pos
	keys  map[string]*posTree
	items []*posTree
}

// lookup returns the position of the deepest part of t along path.
func (t *posTree) lookup(path ...string) pos {
	if t == nil {
		return pos{}
	}
	at := t.at
	for _, seg := range path {
		var next *posTree
		if t.keys != nil {
			next = t.keys[seg]
		} else if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(t.items) {
			next = t.items[i]
		}
		if next == nil {
			break
		}
		t, at = next, next.at
	}
	return at
}

// has reports whether path names a written part of t.
func (t *posTree) has(path ...string) bool {
	for _, seg := range path {
		if t == nil {
			return false
		}
		if t.keys != nil {
			t = t.keys[seg]
		} else if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(t.items) {
			t = t.items[i]
		} else {
			return false
		}
	}
	return t != nil
}

// mergePos merges position trees the way deepMerge merges values.
func mergePos(base, over *posTree) *posTree {
	if base == nil {
		return over
	}
	if over == nil {
		return base
	}
	if base.keys == nil || over.keys == nil {
		return over
	}
	out := &posTree{at: over.at, keys: make(map[string]*posTree, len(base.keys)+len(over.keys))}
	for k, v := range base.keys {
		out.keys[k] = v
	}
	for k, v := range over.keys {
		out.keys[k] = mergePos(base.keys[k], v)
	}
	return out
}

// doc is one file of a base chain, resolved.
type doc struct {
	tree map[string]any
	pos  *posTree
	base string // as written
}

// loader resolves a base chain.
type loader struct {
	readFile func(string) ([]byte, error)
	files    []string
	errs     []*Error // problems that do not stop the resolution, in chain order
}

// resolve parses data as file name and merges it over its base chain.
// chain holds the files that include name.
func (l *loader) resolve(name string, data []byte, chain []string) (doc, error) {
	l.files = append(l.files, name)
	chain = append(chain, name)
	root, err := parseYAML(name, data)
	if err != nil {
		return doc{}, err
	}
	dups := yamldup.Remove(root)
	cv := &converter{file: name}
	v, pt, err := cv.value(root, 0)
	if err != nil {
		return doc{}, err
	}
	if len(dups) > 0 {
		errs := make([]error, len(dups))
		for i, k := range dups {
			errs[i] = cv.at(k.Node).errorf("%s", k.Message())
		}
		return doc{}, errors.Join(errs...)
	}
	var tree map[string]any
	switch v := v.(type) {
	case nil:
		tree = map[string]any{}
		pt = &posTree{at: pos{file: name}, keys: map[string]*posTree{}}
	case map[string]any:
		tree = v
	default:
		return doc{}, pt.at.errorf("a config must be a YAML mapping, not %s", describe(v))
	}
	l.errs = append(l.errs, keyErrors(tree, pt)...)
	d := doc{tree: tree, pos: pt}
	b, ok := tree["base"]
	if !ok || b == nil {
		delete(tree, "base")
		return d, nil
	}
	basePos := pt.lookup("base")
	base, ok := b.(string)
	if !ok || base == "" {
		return doc{}, basePos.errorf("base must be a file path, not %s", describe(b))
	}
	d.base = base
	delete(tree, "base")
	delete(pt.keys, "base")
	if len(chain) >= maxBaseChain {
		return doc{}, basePos.errorf("base chain longer than %d files", maxBaseChain)
	}
	path, bdata, err := l.readBase(name, base)
	if err != nil {
		msg := fmt.Sprintf("base %q", base)
		if len(chain) > 1 {
			msg += " (reached from " + strings.Join(chain[:len(chain)-1], " -> ") + ")"
		}
		return doc{}, &Error{File: basePos.file, Line: basePos.line, Column: basePos.col, Msg: msg, Err: err}
	}
	for _, f := range chain {
		if samePath(f, path) {
			return doc{}, basePos.errorf("base cycle: %s -> %s", strings.Join(chain, " -> "), path)
		}
	}
	parent, err := l.resolve(path, bdata, chain)
	if err != nil {
		return doc{}, err
	}
	d.tree = deepMerge(parent.tree, tree)
	d.pos = mergePos(parent.pos, pt)
	return d, nil
}

// samePath reports whether a and b name the same file, however written.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// join returns the problems found so far and err, if not nil, as one
// error: by file in chain order, then by place.
func (l *loader) join(err error) error {
	errs := slices.Clone(l.errs)
	if e, ok := err.(*Error); ok {
		errs, err = append(errs, e), nil
	}
	rank := func(f string) int {
		if i := slices.Index(l.files, f); i >= 0 {
			return i
		}
		return len(l.files)
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(rank(a.File), rank(b.File)), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	out := make([]error, 0, len(errs)+1)
	for _, e := range errs {
		out = append(out, e)
	}
	if err != nil {
		out = append(out, err)
	}
	return errors.Join(out...)
}

// readBase finds and reads base, a path relative to the directory of the
// file from; ".yaml" (or ".yml") may be left off.
func (l *loader) readBase(from, base string) (string, []byte, error) {
	p := base
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(from), p)
	}
	candidates := []string{p}
	if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
		candidates = []string{p + ".yaml", p + ".yml", p}
	}
	for _, c := range candidates {
		data, err := l.readFile(c)
		if err == nil {
			return c, data, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", nil, err
		}
	}
	return "", nil, fmt.Errorf("%w: tried %s", fs.ErrNotExist, strings.Join(candidates, ", "))
}

// parseYAML parses one YAML document; nil means an empty document.
func parseYAML(name string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, yamlError(name, data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, yamlError(name, data, err)
	default:
		return nil, &Error{File: name, Line: extra.Line, Column: extra.Column, Msg: "more than one YAML document (remove the extra ---)"}
	}
	return &root, nil
}

// yamlError turns a yaml.v3 syntax error into an *Error with its line.
func yamlError(name string, data []byte, err error) error {
	e := &Error{File: name, Msg: "invalid YAML", Err: err}
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Err = errors.New(m[2])
		if parserProblems[m[2]] {
			e.Line++
		}
		lines := bytes.Split(data, []byte("\n"))
		if e.Line >= 1 && e.Line <= len(lines) && !strings.Contains(m[2], "tab") {
			line := lines[e.Line-1]
			if indent := line[:len(line)-len(bytes.TrimLeft(line, " \t"))]; bytes.ContainsRune(indent, '\t') {
				e.Err = fmt.Errorf("%s (line %d is indented with a tab: YAML indents with spaces)", m[2], e.Line)
			}
		}
	}
	if i := jsontext.InvalidUTF8(data); e.Line == 0 && i >= 0 {
		// yaml.v3 says "invalid leading UTF-8 octet" and no more: place it.
		e.Line = bytes.Count(data[:i], []byte("\n")) + 1
		e.Column = i - bytes.LastIndexByte(data[:i], '\n')
		e.Err = errors.New("not UTF-8 text: save the file as UTF-8")
	}
	return e
}

// converter turns yaml.v3 nodes into generic values (map[string]any,
// []any and scalars) with their positions. Remove the duplicate keys
// first (yamldup.Remove): of a key written twice, the last would win.
type converter struct {
	file  string
	nodes int
}

func (c *converter) at(n *yaml.Node) pos { return pos{file: c.file, line: n.Line, col: n.Column} }

// value converts n, expanding aliases and merge keys.
func (c *converter) value(n *yaml.Node, depth int) (any, *posTree, error) {
	if n == nil {
		return nil, nil, nil
	}
	c.nodes++
	if c.nodes > maxNodes {
		return nil, nil, c.at(n).errorf("document expands to more than %d values (alias bomb?)", maxNodes)
	}
	if depth > maxDepth {
		return nil, nil, c.at(n).errorf("values nested more than %d deep", maxDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil, nil
		}
		return c.value(n.Content[0], depth+1)
	case yaml.AliasNode:
		v, t, err := c.value(n.Alias, depth+1)
		if t != nil {
			t = &posTree{at: c.at(n), keys: t.keys, items: t.items}
		}
		return v, t, err
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, nil, &Error{File: c.file, Line: n.Line, Column: n.Column, Msg: "bad value", Err: err}
		}
		if _, ok := v.(time.Time); ok {
			v = n.Value // a date is text, as JSON (the run log) has it
		}
		return v, &posTree{at: c.at(n)}, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		t := &posTree{at: c.at(n), items: make([]*posTree, 0, len(n.Content))}
		for _, item := range n.Content {
			v, it, err := c.value(item, depth+1)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, v)
			t.items = append(t.items, it)
		}
		return out, t, nil
	case yaml.MappingNode:
		return c.mapping(n, depth)
	}
	return nil, nil, c.at(n).errorf("unsupported YAML node")
}

// mapping converts a mapping node. Explicit keys win over keys merged in
// with "<<", and earlier merged mappings over later ones.
func (c *converter) mapping(n *yaml.Node, depth int) (any, *posTree, error) {
	out := make(map[string]any, len(n.Content)/2)
	t := &posTree{at: c.at(n), keys: make(map[string]*posTree, len(n.Content)/2)}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, nil, c.at(k).errorf("mapping keys must be plain strings")
		}
		val, vt, err := c.value(v, depth+1)
		if err != nil {
			return nil, nil, err
		}
		out[k.Value] = val
		// A key's position is where the key is written.
		if vt == nil {
			vt = &posTree{}
		}
		vt.at = c.at(k)
		t.keys[k.Value] = vt
	}
	for _, m := range merges {
		var srcs []*yaml.Node
		if r := resolveAlias(m); r != nil && r.Kind == yaml.SequenceNode {
			srcs = r.Content
		} else {
			srcs = []*yaml.Node{m}
		}
		for _, s := range srcs {
			v, st, err := c.value(s, depth+1)
			if err != nil {
				return nil, nil, err
			}
			mv, ok := v.(map[string]any)
			if !ok {
				return nil, nil, c.at(s).errorf("a merge key (<<) needs a mapping or a list of mappings, not %s", describe(v))
			}
			for k, kv := range mv {
				if _, ok := out[k]; !ok {
					out[k] = kv
					t.keys[k] = st.keys[k]
				}
			}
		}
	}
	return out, t, nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxDepth; i++ {
		n = n.Alias
	}
	return n
}

// describe names the kind of a generic value for error messages.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the string %q", truncate(v, 40))
	case bool:
		return fmt.Sprintf("the bool %v", v)
	case int, int64, uint64:
		return fmt.Sprintf("the integer %v", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	default:
		return fmt.Sprintf("%v", v)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}
