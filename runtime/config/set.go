package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lllm-go/lllm/internal/yamldup"
)

// Set overrides one value of the resolved config, as for
// "--set key.path=value". path is dotted: map keys by name, list items by
// index, and agent_configs entries by index or by agent name
// ("agent_configs.solver.model_args.max_tokens"). value is parsed as YAML,
// so "0.7", "3", "true", "null", "[a, b]" and "{k: v}" are typed; an
// empty value is the empty string. Keys in the known structure must be
// known; keys under free-form maps (model_args, context_manager, params,
// mock) are created as needed. On error c is unchanged.
func (c *Config) Set(path, value string) error {
	if c == nil {
		return errors.New("--set: nil config")
	}
	at := pos{file: "--set " + path}
	fail := func(format string, args ...any) error {
		return &Error{File: at.file, Msg: fmt.Sprintf(format, args...)}
	}
	segs := strings.Split(path, ".")
	for _, s := range segs {
		if s == "" {
			return fail("empty key in path %q (want a dotted path such as global.model_name)", path)
		}
	}
	if segs[0] == "base" {
		return fail("base cannot be overridden: the base chain is resolved when the file is loaded")
	}
	segs = agentSegs(c.tree, segs)
	v, err := parseValue(value)
	if err != nil {
		return &Error{File: at.file, Msg: fmt.Sprintf("value %q", truncate(value, 60)), Err: err}
	}

	tree := deepCopy(c.tree).(map[string]any)
	if tree == nil {
		tree = map[string]any{}
	}
	resolved, err := setIn(tree, segs, v)
	if err != nil {
		return &Error{File: at.file, Err: err}
	}
	pt := setPos(c.pos, resolved, at)
	if errs := checkKeys(tree, pt); len(errs) > 0 {
		return errors.Join(errs...)
	}
	next := *c
	next.tree, next.pos = tree, pt
	if err := next.derive(); err != nil {
		return err
	}
	*c = next
	return nil
}

// parseValue parses an override value as a YAML scalar, flow list or
// flow mapping.
func parseValue(s string) (any, error) {
	if strings.TrimSpace(s) == "" {
		return s, nil
	}
	root, err := parseYAML("", []byte(s))
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Line, e.Column = 0, 0
		}
		return nil, err
	}
	if literal(root) {
		return s, nil
	}
	dups := yamldup.Remove(root)
	cv := &converter{}
	v, _, err := cv.value(root, 0)
	if err == nil && len(dups) > 0 {
		err = cv.at(dups[0].Node).errorf("%s", dups[0].Message())
	}
	return v, err
}

// literal reports whether an override value is text that YAML would read
// as a comment, wholly or in part, and so silently drop.
func literal(root *yaml.Node) bool {
	if root == nil || len(root.Content) == 0 {
		return true
	}
	n := root.Content[0]
	return root.HeadComment != "" || root.LineComment != "" || root.FootComment != "" ||
		n.HeadComment != "" || n.LineComment != "" || n.FootComment != ""
}

// agentSegs joins the segments after agent_configs that together name an
// agent whose name contains dots, preferring the longest such name.
func agentSegs(tree map[string]any, segs []string) []string {
	if len(segs) < 3 || segs[0] != "agent_configs" {
		return segs
	}
	list, _ := tree["agent_configs"].([]any)
	for end := len(segs); end > 2; end-- {
		name := strings.Join(segs[1:end], ".")
		for _, e := range list {
			if m, ok := e.(map[string]any); ok && m["name"] == name {
				return append([]string{segs[0], name}, segs[end:]...)
			}
		}
	}
	return segs
}

// setIn sets the value at segs in tree, checking the path against the
// known structure, and returns the path with agent names replaced by
// indexes.
func setIn(tree map[string]any, segs []string, v any) ([]string, error) {
	f, ok := topKeys[segs[0]]
	if !ok {
		return nil, fmt.Errorf("unknown key %q at top level%s", segs[0], hint(segs[0], topKeyNames))
	}
	// Invariant: cur[key] is the value at path, of field kind f.
	var cur any = tree
	key := segs[0]
	path := []string{key}
	for _, seg := range segs[1:] {
		name := dotted(path[:len(path)-1], path[len(path)-1])
		next, _ := get(cur, key)
		switch f {
		case fString, fInt:
			return nil, fmt.Errorf("%s is a plain value, not a mapping", name)
		case fGlobal, fFree:
			if next == nil {
				next = map[string]any{}
				put(cur, key, next)
			}
			free := f == fFree
			if f == fGlobal {
				if seg == "name" {
					return nil, errors.New("name is not allowed in global: name each agent in agent_configs")
				}
				nf, ok := agentKeys[seg]
				if !ok {
					return nil, fmt.Errorf("unknown key %q in global%s", seg, hint(seg, globalKeyNames))
				}
				f = nf
			}
			if _, ok := next.(map[string]any); !ok {
				if _, isList := next.([]any); !isList || !free {
					return nil, fmt.Errorf("%s is %s, not a mapping", name, describe(next))
				}
				if i, err := strconv.Atoi(seg); err != nil || i < 0 || i >= len(next.([]any)) {
					return nil, fmt.Errorf("%s has no item %q (it is a list of %d)", name, seg, len(next.([]any)))
				}
			}
		case fAgents:
			list, ok := next.([]any)
			if !ok {
				return nil, fmt.Errorf("agent_configs is %s, not a list of agents", describe(next))
			}
			idx, err := agentIndex(list, seg)
			if err != nil {
				return nil, err
			}
			seg = strconv.Itoa(idx)
			f = fEntry
		case fEntry:
			if _, ok := next.(map[string]any); !ok {
				return nil, fmt.Errorf("%s is %s, not a mapping", name, describe(next))
			}
			nf, ok := agentKeys[seg]
			if !ok {
				return nil, fmt.Errorf("unknown key %q in %s%s", seg, name, hint(seg, agentKeyNames))
			}
			f = nf
		}
		cur, key = next, seg
		path = append(path, seg)
	}
	put(cur, key, v)
	return path, nil
}

// get returns the value under key in a mapping, or at index key in a
// list; nil if there is none.
func get(container any, key string) (any, bool) {
	switch c := container.(type) {
	case map[string]any:
		v, ok := c[key]
		return v, ok
	case []any:
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(c) {
			return c[i], true
		}
	}
	return nil, false
}

// put sets the value under key in a mapping, or at index key in a list;
// setIn has checked that the index is in range.
func put(container any, key string, v any) {
	switch c := container.(type) {
	case map[string]any:
		c[key] = v
	case []any:
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(c) {
			c[i] = v
		}
	}
}

// agentIndex finds the agent entry seg names, by index or by name.
func agentIndex(list []any, seg string) (int, error) {
	if i, err := strconv.Atoi(seg); err == nil {
		if i < 0 || i >= len(list) {
			return 0, fmt.Errorf("agent_configs has no entry %d (it has %d)", i, len(list))
		}
		return i, nil
	}
	var names []string
	for i, e := range list {
		if m, ok := e.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				if n == seg {
					return i, nil
				}
				names = append(names, n)
			}
		}
	}
	return 0, fmt.Errorf("no agent named %q in agent_configs%s", seg, hint(seg, names))
}

// setPos returns a copy of t in which path was written at at.
func setPos(t *posTree, path []string, at pos) *posTree {
	if len(path) == 0 {
		return &posTree{at: at}
	}
	out := posTree{at: at} // a map the --set creates is placed at it
	if t != nil {
		out = *t
	}
	seg := path[0]
	if i, err := strconv.Atoi(seg); err == nil && out.keys == nil && i >= 0 && i < len(out.items) {
		out.items = append([]*posTree(nil), out.items...)
		out.items[i] = setPos(out.items[i], path[1:], at)
		return &out
	}
	keys := make(map[string]*posTree, len(out.keys)+1)
	for k, v := range out.keys {
		keys[k] = v
	}
	keys[seg] = setPos(keys[seg], path[1:], at)
	out.keys = keys
	out.items = nil
	return &out
}
