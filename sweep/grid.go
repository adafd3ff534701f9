package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lllm-go/lllm/internal/suggest"
	"github.com/lllm-go/lllm/runtime/config"
)

// Setting is one axis value of a cell.
type Setting struct {
	Path  string `json:"path"`
	Value any    `json:"value"`
	// Index is the value's place in its axis's list, from 0.
	Index int `json:"index"`
}

// Text renders the value for a table: scalars as they are, lists and maps
// by their place in the axis ("#1", "#2", ...).
func (s Setting) Text() string {
	switch s.Value.(type) {
	case map[string]any, []any:
		return fmt.Sprintf("#%d", s.Index+1)
	}
	return valueText(s.Value)
}

// Point is one combination of axis values: the settings of a cell.
type Point []Setting

// Expand crosses axes as a grid (the first axis varies slowest) and the
// zipped axes as one more axis whose i-th point sets the i-th value of each;
// the zipped axis varies fastest. No axes at all is one point with no
// settings.
func expand(axes, zip []Axis) []Point {
	points := []Point{{}}
	for _, a := range axes {
		var next []Point
		for _, p := range points {
			for i, v := range a.Values {
				next = append(next, append(slices.Clip(p), Setting{a.Path, v, i}))
			}
		}
		points = next
	}
	if len(zip) > 0 {
		var next []Point
		for _, p := range points {
			for i := range zip[0].Values {
				q := slices.Clip(p)
				for _, z := range zip {
					q = append(q, Setting{z.Path, z.Values[i], i})
				}
				next = append(next, q)
			}
		}
		points = next
	}
	return points
}

// Cell is one resolved config of a sweep: a point of the grid applied to
// the base config.
type Cell struct {
	// Index is the cell's place in the grid, from 0.
	Index int
	// Settings are the axis values that make the cell.
	Settings Point
	// Hash identifies the cell: a hash of its resolved config.
	Hash string
	// Config is the cell's config.
	Config *config.Config
}

// Label is the cell's settings as path=value pairs.
func (c *Cell) Label() string {
	parts := make([]string, len(c.Settings))
	for i, s := range c.Settings {
		parts[i] = s.Path + "=" + s.Text()
	}
	return strings.Join(parts, " ")
}

// configHash is the hash of a resolved config that identifies a cell.
func configHash(cfg *config.Config) (string, error) {
	b, err := json.Marshal(cfg.Resolved()) // map keys are sorted
	if err != nil {
		return "", fmt.Errorf("hashing the config: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16], nil
}

// buildCells applies each point to a copy of the base config, which it
// leaves as it was. Every bad axis is reported, once, in the errors.Join
// of its problems; a cell with a bad axis is left out of the duplicate
// check.
func buildCells(points []Point, base *config.Config, lines map[string]int, file string) ([]*Cell, error) {
	resolved := base.Resolved()
	known := leafPaths(resolved, "")
	checked := map[string]bool{}
	bad := map[string]bool{}      // the axes whose path is refused
	reported := map[string]bool{} // the problems reported, by their text
	var errs []error
	report := func(err error) {
		if !reported[err.Error()] {
			reported[err.Error()] = true
			errs = append(errs, err)
		}
	}
	type axisValue struct {
		path  string
		index int
	}
	texts := map[axisValue]string{} // each axis value as YAML, for Set
	seen := map[string]int{}
	cells := make([]*Cell, 0, len(points))
	for i, p := range points {
		cfg := base.Clone()
		ok := true
		for _, s := range p {
			if !checked[s.Path] {
				checked[s.Path] = true
				if err := checkPath(s.Path, resolved, known); err != nil {
					bad[s.Path] = true
					report(errorAt(file, lines[s.Path], "axis %v", err))
				}
			}
			if bad[s.Path] {
				ok = false
				continue
			}
			at := axisValue{s.Path, s.Index}
			v, done := texts[at]
			if !done {
				b, err := yaml.Marshal(s.Value)
				if err != nil {
					report(&config.Error{File: file, Line: lines[s.Path], Msg: "axis " + s.Path, Err: err})
					ok = false
					continue
				}
				v = strings.TrimSuffix(string(b), "\n")
				texts[at] = v
			}
			if err := cfg.Set(s.Path, v); err != nil {
				for _, e := range unjoin(atAxis(file, lines[s.Path], s.Path, err)) {
					report(e)
				}
				ok = false
			}
		}
		if !ok {
			continue
		}
		h, err := configHash(cfg)
		if err != nil {
			return nil, err
		}
		c := &Cell{Index: i, Settings: p, Hash: h, Config: cfg}
		if j, dup := seen[h]; dup {
			report(errorAt(file, 0, "cells %q and %q resolve to the same config: remove the duplicate axis value", cells[j].Label(), c.Label()))
			continue
		}
		seen[h] = len(cells)
		cells = append(cells, c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return cells, nil
}

// checkPath refuses an axis path that is not in the base config when its
// first segment the config lacks lies close to a key beside it (a likely
// typo: model_argz for model_args). Any other path is left to config.Set
// and the tactic's checks, since axes may add keys (model_args.seed,
// params.n): the segment is compared with its siblings only, as a whole
// path would be close to its own parent (global.model_args.top_p is six
// edits from global.model_args).
func checkPath(path string, base map[string]any, known []string) error {
	if slices.Contains(known, path) || hasPrefixPath(known, path) {
		return nil
	}
	segs := strings.Split(path, ".")
	prefix := ""
	for i, seg := range segs {
		p := seg
		if i > 0 {
			p = prefix + "." + seg
		}
		if slices.Contains(known, p) {
			prefix = p
			continue
		}
		var siblings []string
		for _, k := range known {
			rest := k
			if i > 0 {
				var ok bool
				if rest, ok = strings.CutPrefix(k, prefix+"."); !ok {
					continue
				}
			}
			if !strings.Contains(rest, ".") {
				siblings = append(siblings, rest)
			}
		}
		s, ok := suggest.Closest(seg, siblings)
		if !ok {
			return nil
		}
		guess := strings.Join(append([]string{s}, segs[i+1:]...), ".")
		if i > 0 {
			guess = prefix + "." + guess
		}
		return fmt.Errorf("%s is not in the config (did you mean %q?)", path, guess)
	}
	return nil
}

func hasPrefixPath(known []string, p string) bool {
	for _, k := range known {
		if strings.HasPrefix(k, p+".") {
			return true
		}
	}
	return false
}

// leafPaths lists the dotted paths of every value in a resolved config,
// agent_configs entries by index and by name.
func leafPaths(m map[string]any, prefix string) []string {
	var out []string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := prefix + k
		out = append(out, p)
		switch v := m[k].(type) {
		case map[string]any:
			out = append(out, leafPaths(v, p+".")...)
		case []any:
			for i, x := range v {
				sub, ok := x.(map[string]any)
				if !ok {
					continue
				}
				names := []string{fmt.Sprint(i)}
				if n, ok := sub["name"].(string); ok && k == "agent_configs" {
					names = append(names, n)
				}
				for _, n := range names {
					out = append(out, p+"."+n)
					out = append(out, leafPaths(sub, p+"."+n+".")...)
				}
			}
		}
	}
	return out
}

// valueText renders an axis value for a table: scalars as they are, lists
// and maps as compact JSON, cut to 40 characters.
func valueText(v any) string {
	switch v.(type) {
	case map[string]any, []any:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		s := string(b)
		if r := []rune(s); len(r) > 40 {
			s = string(r[:39]) + "…"
		}
		return s
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}
