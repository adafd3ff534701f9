package sweep

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lllm-go/lllm/internal/registry"
	"github.com/lllm-go/lllm/internal/suggest"
	"github.com/lllm-go/lllm/internal/yamldup"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
)

// Spec is a sweep file: the tactic config to start from, the dataset, the
// axes that vary the config, and how to score, run and bound the samples.
// See docs/sweeps.md for the YAML reference.
type Spec struct {
	// Name names the sweep; its results go to <log root>/sweeps/<Name>.
	// Empty means the spec file's base name without its extension.
	Name string `yaml:"name"`
	// Config is the path of the tactic config every cell starts from,
	// relative to the spec file.
	Config string `yaml:"config"`
	// Dataset says where the rows are and which fields mean what.
	Dataset DatasetSpec `yaml:"dataset"`
	// Axes are crossed as a grid, in order: the first axis varies slowest.
	Axes []Axis `yaml:"-"`
	// Zip are varied together: the i-th values of every zipped axis make
	// one point, and the points are crossed with the grid of Axes.
	Zip []Axis `yaml:"-"`
	// Repeats is how many times each row runs in each cell; 0 means 1.
	Repeats int `yaml:"repeats"`
	// PassK are the k of pass@k; empty means 1 and Repeats.
	PassK []int `yaml:"pass_k"`
	// PassScorer names the scorer whose score of 1 makes a sample pass,
	// for pass@k; empty means the first scorer.
	PassScorer string `yaml:"pass_scorer"`
	// Answer is the dotted field of the tactic's JSON result that scorers
	// read; empty takes a string result as it is, or the "answer" field of
	// an object, or else the whole JSON.
	Answer string `yaml:"answer"`
	// Scorers score each sample; empty means exact.
	Scorers []ScorerSpec `yaml:"scorers"`
	// Concurrency is how many samples run at once; 0 means 8.
	Concurrency int `yaml:"concurrency"`
	// ProviderConcurrency caps the model calls in flight per provider
	// ("openai", "mock", ...; registered providers only, named in any
	// case); unlisted providers are capped by Concurrency. A key names a
	// provider as a model name does: a package-qualified one
	// ("mylab:vllm") caps that provider; a bare one ("vllm") caps every
	// provider of that name, of whichever package, unless a qualified key
	// names it. Each provider has a limiter of its own.
	ProviderConcurrency map[string]int `yaml:"provider_concurrency"`
	// Timeout bounds each sample's run; 0 means none.
	Timeout time.Duration `yaml:"timeout"`
	// Retries is how many more times a sample whose run failed on a
	// provider error is tried, with exponential backoff. The agent already
	// retries each model call; this is a second line.
	Retries int `yaml:"retries"`
	// Budget stops launching samples once the sweep has spent this much.
	Budget Budget `yaml:"budget"`
	// MaxConsecutiveErrors stops the sweep after this many model calls
	// in a row failed; 0 means 25, a negative value never stops.
	MaxConsecutiveErrors int `yaml:"max_consecutive_errors"`
	// Cache is "auto" (the default: cache calls at temperature 0), "on"
	// (cache every call) or "off".
	Cache string `yaml:"cache"`

	// Path is the file the spec was read from.
	Path string `yaml:"-"`
	// lines maps top-level and axis keys to their line, for errors.
	lines map[string]int
}

// DatasetSpec locates the dataset and names its fields. In YAML it is a
// path, or a map with path and the field names.
type DatasetSpec struct {
	// Path is a .jsonl or .csv file, relative to the spec file.
	Path string `yaml:"path"`
	// ID names the field that identifies a row; empty means "id".
	ID string `yaml:"id"`
	// Input names the field holding the task; empty means "input".
	Input string `yaml:"input"`
	// Task, when set, is a template of the task, with {field} replaced
	// by the row's field; it takes the place of Input.
	Task string `yaml:"task"`
	// Expected names the field holding the expected answer; empty means
	// "expected".
	Expected string `yaml:"expected"`
}

// UnmarshalYAML accepts a path as well as a map.
func (d *DatasetSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		d.Path = n.Value
		return nil
	}
	if n.Kind == yaml.MappingNode {
		// A misspelt field name would silently read the default field.
		var unknown []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !slices.Contains(datasetKeys, k.Value) {
				m := fmt.Sprintf("line %d: unknown key %q in dataset", k.Line, k.Value)
				if s, ok := closest(k.Value, datasetKeys); ok {
					m += fmt.Sprintf(" (did you mean %q?)", s)
				}
				unknown = append(unknown, m+"; known keys: "+strings.Join(datasetKeys, ", "))
			}
		}
		if unknown != nil {
			type plain DatasetSpec
			var te *yaml.TypeError // the known keys still count, and their problems
			if err := n.Decode((*plain)(d)); errors.As(err, &te) {
				unknown = append(unknown, te.Errors...)
			}
			return &yaml.TypeError{Errors: unknown}
		}
	}
	type plain DatasetSpec
	return n.Decode((*plain)(d))
}

var datasetKeys = []string{"path", "id", "input", "task", "expected"}

// Budget bounds what a sweep spends on fresh model calls (cache hits are
// free). A zero field is no bound.
type Budget struct {
	MaxCost   float64 `yaml:"max_cost"`
	MaxTokens int     `yaml:"max_tokens"`
}

// Axis is one config path and the values it takes.
type Axis struct {
	Path   string
	Values []any
	Line   int
}

// ScorerSpec names a registered scorer and its parameters. In YAML it is
// a name, or a map with type, an optional name (its column) and the
// scorer's own parameters.
type ScorerSpec struct {
	// Type is the registered scorer.
	Type string
	// Name labels its column; empty means Type.
	Name string
	// Params are the remaining keys.
	Params map[string]any
	Line   int
}

// UnmarshalYAML accepts "exact" as well as {type: numeric, tolerance: 0.01}.
func (s *ScorerSpec) UnmarshalYAML(n *yaml.Node) error {
	s.Line = n.Line
	if n.Kind == yaml.ScalarNode {
		s.Type = n.Value
		return nil
	}
	if n.Kind != yaml.MappingNode && (n.Kind != yaml.AliasNode || n.Alias == nil || n.Alias.Kind != yaml.MappingNode) {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s", n.Line, scorerKinds)}}
	}
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		return err
	}
	t, _ := m["type"].(string)
	if t == "" {
		// A type error, as yaml.v3 reports its own: decoding goes on, and
		// the spec's other problems are reported with this one.
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: a scorer needs a type, such as {type: exact}", n.Line)}}
	}
	s.Type = t
	if name, ok := m["name"].(string); ok {
		s.Name = name
	}
	delete(m, "type")
	delete(m, "name")
	s.Params = m
	return nil
}

// Label is the scorer's column name.
func (s ScorerSpec) Label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Type
}

// digest names what the scorer computes, its type and params, so that a
// score made with other params is not taken for one of this scorer.
func (s ScorerSpec) digest() string {
	b, err := json.Marshal(struct {
		Type   string         `json:"type"`
		Params map[string]any `json:"params,omitempty"`
	}{s.Type, s.Params})
	if err != nil {
		b = fmt.Appendf(nil, "%s %v", s.Type, s.Params)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// SpecError is a problem with a sweep's spec, dataset, axes, scorers or
// base config, found before anything runs. Err joins the problems; each
// one that has a place (a file, a line, a --set) is a *config.Error, as a
// tactic config's problems are, so that a program can take it apart
// without reading its text.
type SpecError struct{ Err error }

func (e *SpecError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying problem.
func (e *SpecError) Unwrap() error { return e.Err }

// LoadSpec reads the sweep spec at path.
func LoadSpec(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &SpecError{fmt.Errorf("sweep spec: %w", err)}
	}
	return ParseSpec(path, data)
}

// ParseSpec parses data as the sweep spec file name. Unknown keys are
// errors naming their line. Every problem the spec alone shows is reported
// at once.
func ParseSpec(name string, data []byte) (*Spec, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &SpecError{&config.Error{File: name, Err: err}}
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &SpecError{&config.Error{File: name, Msg: "a sweep spec is a YAML map with config, dataset and axes"}}
	}
	doc := root.Content[0]
	s := &Spec{Path: name, lines: map[string]int{}}
	// A key given twice in a map is one problem at its line; the first
	// stands, so that the rest of the spec is still checked (decoding a
	// map with a duplicate key would skip the whole map).
	var errs []error
	for _, k := range yamldup.Remove(doc) {
		errs = append(errs, &config.Error{File: name, Line: k.Node.Line, Column: k.Node.Column, Msg: k.Message()})
	}
	// Take axes and zip out, keeping their order; decode the rest strictly.
	rest := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		s.lines[k.Value] = k.Line
		switch k.Value {
		case "axes", "zip":
			axes, axErrs := parseAxes(name, k.Value, v)
			errs = append(errs, axErrs...)
			if k.Value == "axes" {
				s.Axes = axes
			} else {
				s.Zip = axes
			}
		case "scorers":
			v, scErrs := scorerEntries(name, v)
			errs = append(errs, scErrs...)
			if v != nil {
				rest.Content = append(rest.Content, k, v)
			}
		case "provider_concurrency":
			errs = append(errs, providerKeys(name, v)...)
			errs = append(errs, fractions(name, k.Value, v)...)
			rest.Content = append(rest.Content, k, v)
		default:
			errs = append(errs, fractions(name, k.Value, v)...)
			if durationKeys[k.Value] {
				var err error
				if v, err = durationNode(name, k.Value, v); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			rest.Content = append(rest.Content, k, v)
		}
	}
	// Decoding the node keeps its line numbers; the strict decode of its
	// re-encoding finds the unknown keys, nested ones included.
	if err := rest.Decode(s); err != nil {
		errs = append(errs, yamlErrors(name, err, nil)...)
	}
	var buf bytes.Buffer
	if err := yaml.NewEncoder(&buf).Encode(rest); err == nil {
		dec := yaml.NewDecoder(&buf)
		dec.KnownFields(true)
		if err := dec.Decode(new(strictSpec)); err != nil {
			errs = append(errs, yamlErrors(name, err, doc)...)
		}
	}
	if err := s.check(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, &SpecError{errors.Join(errs...)}
	}
	return s, nil
}

// providerKeys reports each key of the provider_concurrency map v that
// is not a registered provider (a typo would leave the provider's calls
// capped by concurrency alone, silently), or names one twice, at its line.
// A bare name that several packages register is a key: it caps each.
func providerKeys(file string, v *yaml.Node) []error {
	if v.Kind != yaml.MappingNode {
		return nil // yaml.v3 reports it
	}
	var errs []error
	seen := map[string]bool{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k := v.Content[i]
		if err := providerKey(k.Value); err != nil {
			errs = append(errs, errorAt(file, k.Line, "provider_concurrency: %v", err))
			continue
		}
		if p := strings.ToLower(k.Value); seen[p] {
			errs = append(errs, errorAt(file, k.Line, "provider_concurrency: provider %q twice", k.Value))
		} else {
			seen[p] = true
		}
	}
	return errs
}

// providerKey returns nil when key names registered providers as a
// provider_concurrency key may: a provider's name, package-qualified or
// not, or the bare name of package-qualified ones ("vllm" for
// "mylab:vllm"), in any case. Otherwise its error says what is wrong,
// with the closest key for a typo.
func providerKey(key string) error {
	err := provider.Check(key)
	if err == nil {
		return nil
	}
	k := strings.ToLower(strings.TrimSpace(key))
	if strings.ContainsAny(k, "/:") {
		return err // a model name, or an unknown qualified provider
	}
	var paths []string
	for _, n := range provider.Providers() {
		if _, path := registry.Split(n); path != n {
			if path == k {
				return nil // the bare name of one provider or more
			}
			paths = append(paths, path)
		}
	}
	if s, ok := suggest.Closest(k, append(provider.Providers(), paths...)); ok {
		return fmt.Errorf("unknown provider %q (did you mean %q?); known providers: %s", key, s, strings.Join(provider.Providers(), ", "))
	}
	return err
}

// providerLimit is the provider_concurrency of the registered provider p
// (lowercase, as provider.Providers names it): the key naming p, else the
// bare key naming p without its package, else def.
func (s *Spec) providerLimit(p string, def int) int {
	_, path := registry.Split(p)
	n := def
	for k, m := range s.ProviderConcurrency {
		switch strings.ToLower(strings.TrimSpace(k)) {
		case p:
			return m // keys are unique in any case: no other names p
		case path:
			n = m
		}
	}
	return n
}

// scorerEntries reports the scorers section v when it is not a list, and
// each entry that is neither a name nor a map, by its place and its text.
// It returns v without the bad entries, nil when v is no list.
func scorerEntries(file string, v *yaml.Node) (*yaml.Node, []error) {
	switch v.Kind {
	case yaml.SequenceNode:
	case yaml.ScalarNode, yaml.MappingNode:
		if v.ShortTag() == "!!null" {
			return v, nil
		}
		return nil, []error{errorAt(file, v.Line, "scorers: want a list of scorers, such as [%s]", flowText(v))}
	default:
		return v, nil // yaml.v3 reports it
	}
	out := *v
	out.Content = nil
	var errs []error
	for i, e := range v.Content {
		n := e
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind == yaml.SequenceNode {
			errs = append(errs, errorAt(file, e.Line, "scorers[%d]: %s is a list: %s", i, flowText(n), scorerKinds))
			continue
		}
		out.Content = append(out.Content, e)
	}
	return &out, errs
}

// scorerKinds says what one scorer of a spec's scorers list is.
const scorerKinds = "a scorer is a name, such as numeric, or a map, such as {type: numeric, tolerance: 0.01}"

// flowText is n as one line of flow-style YAML, cut to 60 characters.
func flowText(n *yaml.Node) string {
	var flow func(n *yaml.Node) *yaml.Node
	flow = func(n *yaml.Node) *yaml.Node {
		c := *n
		c.Style |= yaml.FlowStyle
		c.Anchor, c.HeadComment, c.LineComment, c.FootComment = "", "", "", ""
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, x := range n.Content {
			c.Content[i] = flow(x)
		}
		return &c
	}
	b, err := yaml.Marshal(flow(n))
	if err != nil {
		return n.Value
	}
	text := []rune(strings.TrimSpace(string(b)))
	if len(text) > 60 {
		return string(text[:57]) + "..."
	}
	return string(text)
}

// wholeKeys are the spec's keys that take whole numbers (or a list or
// map of them), which yaml.v3 would fill from a fraction by cutting it:
// repeats: 2.7 ran 2 repeats. They are read off Spec's fields, so that a
// new one is checked too.
var wholeKeys = func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[Spec]()
	for i := range t.NumField() {
		f := t.Field(i)
		ft := f.Type
		if ft.Kind() == reflect.Slice || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if ft.Kind() == reflect.Int && name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}()

// durationKeys are the spec's keys that take a duration, read off Spec's
// fields as wholeKeys are.
var durationKeys = func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[Spec]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Type == reflect.TypeFor[time.Duration]() && name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}()

// durationNode reads the value v of the duration key as a tactic config
// reads its durations (config.ParseDuration: 90s, 10m, or a number of
// seconds, so that timeout: 30 is 30s as call_timeout: 30 is), and
// returns it as text that yaml.v3 decodes into a time.Duration. A value
// that is no duration is an error at its line.
func durationNode(file, key string, v *yaml.Node) (*yaml.Node, error) {
	var x any
	if err := v.Decode(&x); err != nil || x == nil {
		return v, nil // yaml.v3 reports it; null is no timeout
	}
	d, err := config.ParseDuration(x)
	if err != nil {
		return nil, errorAt(file, v.Line, "%s %v", key, err)
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.String(), Line: v.Line, Column: v.Column}, nil
}

// fractions reports each number with a fraction given to key, at its
// line (2.0 is 2).
func fractions(file, key string, v *yaml.Node) []error {
	if !wholeKeys[key] {
		return nil
	}
	var errs []error
	check := func(n *yaml.Node) {
		var f float64
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" && (n.Decode(&f) != nil || f != math.Trunc(f)) {
			errs = append(errs, errorAt(file, n.Line, "%s: %s: want a whole number", key, n.Value))
		}
	}
	switch v.Kind {
	case yaml.SequenceNode:
		for _, n := range v.Content {
			check(n)
		}
	case yaml.MappingNode:
		for i := 1; i < len(v.Content); i += 2 {
			check(v.Content[i])
		}
	default:
		check(v)
	}
	return errs
}

// yamlErrors splits a decoding error into one *config.Error per problem,
// "file:line: message". With doc, they come from the strict decode of a
// re-encoding: only unknown keys are kept (the plain decode reports the
// rest), at their lines in doc.
func yamlErrors(name string, err error, doc *yaml.Node) []error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return []error{&config.Error{File: name, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	var out []error
	for _, msg := range te.Errors {
		if doc != nil {
			if m := unknownField.FindStringSubmatch(msg); m != nil {
				out = append(out, unknownKey(name, m[1], m[2], doc))
			}
			continue
		}
		e := &config.Error{File: name, Msg: msg}
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		out = append(out, e)
	}
	return out
}

var (
	yamlLine     = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownField = regexp.MustCompile(`field (\S+) not found in type \S+\.(\w+)`)
)

// unknownKey is the error for the unknown key of the mapping of Go type
// typ (strictSpec or Budget), at its line in doc, with a suggestion.
func unknownKey(file, key, typ string, doc *yaml.Node) error {
	known, where := specKeys, ""
	if typ == "Budget" {
		known, where = []string{"max_cost", "max_tokens"}, " in budget"
		if _, b := mapEntry(doc, "budget"); b != nil {
			doc = b
		}
	}
	line := doc.Line
	if k, _ := mapEntry(doc, key); k != nil {
		line = k.Line
	}
	m := fmt.Sprintf("unknown key %q%s", key, where)
	if s, ok := closest(key, known); ok {
		m += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return &config.Error{File: file, Line: line, Msg: m + "; known keys: " + strings.Join(known, ", ")}
}

// mapEntry is the key and value nodes of key in the mapping m, or nils.
func mapEntry(m *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// strictSpec mirrors Spec's YAML keys for the strict decode.
type strictSpec struct {
	Name                 string         `yaml:"name"`
	Config               string         `yaml:"config"`
	Dataset              yaml.Node      `yaml:"dataset"`
	Repeats              int            `yaml:"repeats"`
	PassK                []int          `yaml:"pass_k"`
	PassScorer           string         `yaml:"pass_scorer"`
	Answer               string         `yaml:"answer"`
	Scorers              yaml.Node      `yaml:"scorers"`
	Concurrency          int            `yaml:"concurrency"`
	ProviderConcurrency  map[string]int `yaml:"provider_concurrency"`
	Timeout              string         `yaml:"timeout"`
	Retries              int            `yaml:"retries"`
	Budget               Budget         `yaml:"budget"`
	MaxConsecutiveErrors int            `yaml:"max_consecutive_errors"`
	Cache                string         `yaml:"cache"`
}

var specKeys = []string{"name", "config", "dataset", "axes", "zip", "repeats", "pass_k", "pass_scorer", "answer", "scorers",
	"concurrency", "provider_concurrency", "timeout", "retries", "budget", "max_consecutive_errors", "cache"}

// parseAxes reads the axes or zip section v, with an error for each bad
// axis; the good ones are returned all the same.
func parseAxes(file, key string, v *yaml.Node) ([]Axis, []error) {
	if v.Kind != yaml.MappingNode {
		return nil, []error{errorAt(file, v.Line, "%s is a map of config paths to lists of values, such as global.model_args.temperature: [0, 0.7]", key)}
	}
	var axes []Axis
	var errs []error
	seen := map[string]bool{}
axis:
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, vals := v.Content[i], v.Content[i+1]
		if seen[k.Value] {
			errs = append(errs, errorAt(file, k.Line, "%s: path %q twice", key, k.Value))
			continue
		}
		seen[k.Value] = true
		if vals.Kind != yaml.SequenceNode || len(vals.Content) == 0 {
			errs = append(errs, errorAt(file, k.Line, "%s.%s: want a non-empty list of values, such as [0, 0.7]", key, k.Value))
			continue
		}
		a := Axis{Path: k.Value, Line: k.Line}
		for _, n := range vals.Content {
			var x any
			if err := n.Decode(&x); err != nil {
				errs = append(errs, &config.Error{File: file, Line: n.Line, Msg: key + "." + k.Value, Err: err})
				continue axis
			}
			a.Values = append(a.Values, x)
		}
		axes = append(axes, a)
	}
	return axes, errs
}

// check reports the problems of the spec that need nothing but the spec.
func (s *Spec) check() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, errorAt(s.Path, s.lines[key], "%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if s.Config == "" {
		errs = append(errs, errorAt(s.Path, 0, "no config: name the tactic config every cell starts from, such as config: ../chat.yaml"))
	}
	if s.Dataset.Path == "" {
		errs = append(errs, errorAt(s.Path, 0, "no dataset: name a .jsonl or .csv file, such as dataset: rows.jsonl"))
	}
	if s.Repeats < 0 {
		bad("repeats", "%d: want 1 or more", s.Repeats)
	}
	for _, k := range s.PassK {
		if k < 1 || k > s.repeats() {
			bad("pass_k", "%d: want 1 to repeats (%d)", k, s.repeats())
		}
	}
	if s.PassScorer != "" {
		var names []string
		for _, sc := range s.scorers() {
			names = append(names, sc.Label())
		}
		if !slices.Contains(names, s.PassScorer) {
			hint := ""
			if c, ok := suggest.Closest(s.PassScorer, names); ok {
				hint = fmt.Sprintf(" (did you mean %q?)", c)
			}
			for _, sc := range s.scorers() {
				if sc.Type == s.PassScorer {
					hint = fmt.Sprintf(" (the scorer of type %s is named %q: pass_scorer takes the name)", sc.Type, sc.Label())
				}
			}
			bad("pass_scorer", "%q is not a scorer of this spec%s: want one of %s", s.PassScorer, hint, strings.Join(names, ", "))
		}
	}
	if s.Concurrency < 0 {
		bad("concurrency", "%d: want 1 or more", s.Concurrency)
	}
	for p, n := range s.ProviderConcurrency {
		if n < 1 {
			bad("provider_concurrency", "%s: %d: want 1 or more", p, n)
		}
	}
	if s.Timeout < 0 { // set in Go: a negative one in YAML is refused where it is read
		bad("timeout", "%s: want a positive duration such as 2m", s.Timeout)
	}
	if s.Retries < 0 {
		bad("retries", "%d: want 0 or more", s.Retries)
	}
	if s.Budget.MaxCost < 0 || s.Budget.MaxTokens < 0 {
		bad("budget", "want max_cost and max_tokens of 0 (none) or more")
	}
	switch s.Cache {
	case "", "auto", "on", "off":
	default:
		bad("cache", "%q: want auto, on or off", s.Cache)
	}
	if len(s.Zip) > 0 {
		n := len(s.Zip[0].Values)
		for _, a := range s.Zip[1:] {
			if len(a.Values) != n {
				errs = append(errs, errorAt(s.Path, a.Line, "zip: %s has %d values but %s has %d: zipped axes vary together, so their lists must be as long",
					a.Path, len(a.Values), s.Zip[0].Path, n))
			}
		}
	}
	for _, a := range s.Axes {
		for _, z := range s.Zip {
			if a.Path == z.Path {
				errs = append(errs, errorAt(s.Path, z.Line, "%s is both in axes and in zip", z.Path))
			}
		}
	}
	labels := map[string]bool{}
	for _, sc := range s.Scorers {
		if labels[sc.Label()] {
			errs = append(errs, errorAt(s.Path, sc.Line, "two scorers named %q: give one a name", sc.Label()))
		}
		labels[sc.Label()] = true
	}
	return errors.Join(errs...)
}

func (s *Spec) repeats() int { return max(s.Repeats, 1) }

// passK is the k of pass@k to report.
func (s *Spec) passK() []int {
	if len(s.PassK) > 0 {
		return s.PassK
	}
	if s.repeats() > 1 {
		return []int{1, s.repeats()}
	}
	return []int{1}
}

func (s *Spec) concurrency() int {
	if s.Concurrency > 0 {
		return s.Concurrency
	}
	return 8
}

func (s *Spec) maxConsecutive() int {
	if s.MaxConsecutiveErrors == 0 {
		return 25
	}
	return s.MaxConsecutiveErrors
}

func (s *Spec) scorers() []ScorerSpec {
	if len(s.Scorers) == 0 {
		return []ScorerSpec{{Type: "exact"}}
	}
	return s.Scorers
}

// passScorer is the scorer pass@k counts passes of.
func (s *Spec) passScorer() string {
	if s.PassScorer != "" {
		return s.PassScorer
	}
	return s.scorers()[0].Label()
}

// name is the sweep's name.
func (s *Spec) name() string {
	if s.Name != "" {
		return s.Name
	}
	b := filepath.Base(s.Path)
	return strings.TrimSuffix(b, filepath.Ext(b))
}

// errorAt is the problem of a sweep's files at line of file (0: the file
// as a whole), as a config's problems are.
func errorAt(file string, line int, format string, args ...any) error {
	return &config.Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// placed returns err as a *config.Error when err is one as a whole (its
// text is the config.Error's, with no words added around it).
func placed(err error) (*config.Error, bool) {
	var pe *config.Error
	if errors.As(err, &pe) && pe.Error() == err.Error() {
		return pe, true
	}
	return nil, false
}

// message is pe's message, without its place.
func message(pe *config.Error) string { return (&config.Error{Msg: pe.Msg, Err: pe.Err}).Error() }

// unjoin splits the problems errors.Join joined in err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// atAxis places each problem of err, which applying a value of the axis
// path written at line of file made, at the axis: a problem the config
// places at "--set path" (as axis values are applied) is the axis's
// own; another one is placed at the axis with its own place in its text.
func atAxis(file string, line int, path string, err error) error {
	var out []error
	what := "axis " + path
	for _, e := range unjoin(err) {
		if pe, ok := placed(e); ok && pe.File == "--set "+path {
			out = append(out, errorAt(file, line, "%s: %s", what, message(pe)))
			continue
		}
		out = append(out, &config.Error{File: file, Line: line, Msg: what, Err: e})
	}
	return errors.Join(out...)
}

// rel resolves p against the spec file's folder.
func (s *Spec) rel(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(s.Path), p)
}
