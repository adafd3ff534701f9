package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/lllm-go/lllm/internal/registry"
	"github.com/lllm-go/lllm/internal/suggest"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/runtime/provider"
)

// Scorer scores one sample's answer, usually from 0 (wrong) to 1 (right).
// Implementations are safe for concurrent use.
type Scorer interface {
	Score(ctx context.Context, s *Sample) (float64, error)
}

// ScorerFunc is a Scorer made of a function.
type ScorerFunc func(ctx context.Context, s *Sample) (float64, error)

// Score calls f.
func (f ScorerFunc) Score(ctx context.Context, s *Sample) (float64, error) { return f(ctx, s) }

// Sample is what a scorer scores: a row, the answer the tactic gave for it
// and its whole result.
type Sample struct {
	Row *Row
	// Answer is the text scored: the field of the result the spec's answer
	// names, a string result, or the result's "answer" field.
	Answer string
	// Result is the tactic's result as JSON.
	Result json.RawMessage
	// Repeat is the sample's repeat index, from 0.
	Repeat int
}

// Env is what a scorer factory may use beyond its params.
type Env struct {
	// Dir is the folder of the spec file, for relative paths in params.
	Dir string
	// Config is the sweep's base tactic config.
	Config *config.Config
	// Open opens a model as the sweep does: through its cache, its
	// per-provider limits and its call counting.
	Open func(ctx context.Context, name string, cfg provider.Config) (provider.Model, error)
}

// ScorerFactory builds a scorer from the params of its spec entry. It must
// reject params it does not know.
type ScorerFactory func(params map[string]any, env Env) (Scorer, error)

var scorers = registry.New[ScorerFactory]("scorer", "scorers", nil)

// RegisterScorer makes a scorer available to sweep specs under name: a
// path ("length_ok") or a package-qualified one ("mylab:length_ok"), which
// a spec names in a scorer's type (a bare path finds a qualified name
// when only one package has it). It panics when name is malformed or
// taken, or f is nil, which are programming errors of init code.
func RegisterScorer(name string, f ScorerFactory) {
	if f == nil {
		panic("sweep: RegisterScorer " + name + " with a nil factory")
	}
	scorers.MustRegister(name, f)
}

// ScorerNames lists the registered scorers, sorted.
func ScorerNames() []string { return scorers.Names() }

// NewScorer builds the registered scorer name with params. An unknown
// name is an error listing the registered ones, with a suggestion when
// one is close, worded as for tactics.
func NewScorer(name string, params map[string]any, env Env) (Scorer, error) {
	f, _, err := scorers.Lookup(name)
	if err != nil {
		return nil, err
	}
	return f(params, env)
}

func closest(s string, candidates []string) (string, bool) { return suggest.Closest(s, candidates) }

func init() {
	RegisterScorer("exact", noParams("exact", func(a, e string) bool { return strings.TrimSpace(a) == strings.TrimSpace(e) }))
	RegisterScorer("normalized", noParams("normalized", func(a, e string) bool { return Normalize(a) == Normalize(e) }))
	RegisterScorer("normalised", noParams("normalised", func(a, e string) bool { return Normalize(a) == Normalize(e) }))
	RegisterScorer("contains", newContains)
	RegisterScorer("regex", newRegex)
	RegisterScorer("numeric", newNumeric)
	RegisterScorer("json_field", newJSONField)
	RegisterScorer("judge", newJudge)
}

// paramsErr rejects params other than known.
func paramsErr(scorer string, params map[string]any, known ...string) error {
	for k := range params {
		if !slices.Contains(known, k) {
			msg := fmt.Sprintf("scorer %s: unknown param %q", scorer, k)
			if s, ok := closest(k, known); ok {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			if len(known) == 0 {
				return fmt.Errorf("%s; it takes none", msg)
			}
			return fmt.Errorf("%s; known: %s", msg, strings.Join(known, ", "))
		}
	}
	return nil
}

func boolScore(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}

func noParams(name string, match func(answer, expected string) bool) ScorerFactory {
	return func(params map[string]any, _ Env) (Scorer, error) {
		if err := paramsErr(name, params); err != nil {
			return nil, err
		}
		return ScorerFunc(func(_ context.Context, s *Sample) (float64, error) {
			return boolScore(match(s.Answer, s.Row.Expected)), nil
		}), nil
	}
}

var articles = map[string]bool{"a": true, "an": true, "the": true}

// Normalize lowercases s, removes punctuation and the articles a, an and
// the, and collapses white space, as SQuAD's answer normalisation does.
func Normalize(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPunct(r) || unicode.IsSymbol(r) {
			return ' '
		}
		return unicode.ToLower(r)
	}, s)
	words := strings.Fields(s)
	out := words[:0]
	for _, w := range words {
		if !articles[w] {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

func stringParam(scorer string, params map[string]any, key string) (string, error) {
	v, ok := params[key]
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("scorer %s: %s is %v, not a string", scorer, key, v)
	}
	return s, nil
}

func floatParam(scorer string, params map[string]any, key string) (float64, error) {
	switch v := params[key].(type) {
	case nil:
		return 0, nil
	case int:
		return float64(v), nil
	case int64:
		return float64(v), nil
	case float64:
		return v, nil
	default:
		return 0, fmt.Errorf("scorer %s: %s is %v, not a number", scorer, key, v)
	}
}

func boolParam(scorer string, params map[string]any, key string) (bool, error) {
	switch v := params[key].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	default:
		return false, fmt.Errorf("scorer %s: %s is %v, not true or false", scorer, key, v)
	}
}

// readsExpected says whether sc, a built-in scorer, compares answers with
// the row's expected answer. A scorer of another type may or may not.
func readsExpected(sc ScorerSpec) bool {
	switch sc.Type {
	case "exact", "normalized", "normalised", "contains", "numeric":
		return true
	case "regex":
		p, _ := sc.Params["pattern"].(string)
		return p == ""
	case "json_field":
		_, fixed := sc.Params["value"]
		return !fixed
	case "judge":
		p, _ := sc.Params["prompt"].(string)
		return strings.Contains(orDefault(p, DefaultJudgePrompt), "{expected}")
	}
	return false
}

// contains: the answer contains the expected text; ignore_case: true
// compares case-insensitively.
func newContains(params map[string]any, _ Env) (Scorer, error) {
	if err := paramsErr("contains", params, "ignore_case"); err != nil {
		return nil, err
	}
	fold, err := boolParam("contains", params, "ignore_case")
	if err != nil {
		return nil, err
	}
	return ScorerFunc(func(_ context.Context, s *Sample) (float64, error) {
		a, e := s.Answer, strings.TrimSpace(s.Row.Expected)
		if fold {
			a, e = strings.ToLower(a), strings.ToLower(e)
		}
		return boolScore(e != "" && strings.Contains(a, e)), nil
	}), nil
}

// regex: the answer matches pattern; without a pattern, the row's
// expected answer is the pattern.
func newRegex(params map[string]any, _ Env) (Scorer, error) {
	if err := paramsErr("regex", params, "pattern"); err != nil {
		return nil, err
	}
	pat, err := stringParam("regex", params, "pattern")
	if err != nil {
		return nil, err
	}
	var re *regexp.Regexp
	if pat != "" {
		if re, err = regexp.Compile(pat); err != nil {
			return nil, fmt.Errorf("scorer regex: pattern: %w", err)
		}
	}
	return ScorerFunc(func(_ context.Context, s *Sample) (float64, error) {
		r := re
		if r == nil {
			var err error
			if r, err = regexp.Compile(s.Row.Expected); err != nil {
				return 0, fmt.Errorf("row %s: expected is not a regular expression: %w", s.Row.ID, err)
			}
		}
		return boolScore(r.MatchString(s.Answer)), nil
	}), nil
}

var number = regexp.MustCompile(`[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`)

// LastNumber is the last number written in s (commas between digits
// ignored), and whether there is one.
func LastNumber(s string) (float64, bool) {
	all := number.FindAllString(s, -1)
	for i := len(all) - 1; i >= 0; i-- {
		if f, err := strconv.ParseFloat(strings.ReplaceAll(all[i], ",", ""), 64); err == nil {
			return f, true
		}
	}
	return 0, false
}

// numeric: the last number in the answer is within tolerance (absolute)
// or relative (a fraction of the expected value) of the expected number.
func newNumeric(params map[string]any, _ Env) (Scorer, error) {
	if err := paramsErr("numeric", params, "tolerance", "relative"); err != nil {
		return nil, err
	}
	tol, err := floatParam("numeric", params, "tolerance")
	if err != nil {
		return nil, err
	}
	rel, err := floatParam("numeric", params, "relative")
	if err != nil {
		return nil, err
	}
	if tol < 0 || rel < 0 {
		return nil, fmt.Errorf("scorer numeric: tolerance and relative must not be negative")
	}
	if tol == 0 && rel == 0 {
		tol = 1e-9
	}
	return ScorerFunc(func(_ context.Context, s *Sample) (float64, error) {
		want, err := strconv.ParseFloat(strings.TrimSpace(s.Row.Expected), 64)
		if err != nil {
			return 0, fmt.Errorf("row %s: expected %q is not a number", s.Row.ID, s.Row.Expected)
		}
		got, ok := LastNumber(s.Answer)
		if !ok {
			return 0, nil
		}
		d := math.Abs(got - want)
		return boolScore(d <= tol || d <= rel*math.Abs(want)), nil
	}), nil
}

// json_field: the answer, parsed as JSON (or the tactic's result, with
// source: result), has at the dotted field the expected value (or value,
// when given). Values compare as JSON; numbers by value.
func newJSONField(params map[string]any, _ Env) (Scorer, error) {
	if err := paramsErr("json_field", params, "field", "value", "source"); err != nil {
		return nil, err
	}
	field, err := stringParam("json_field", params, "field")
	if err != nil {
		return nil, err
	}
	if field == "" {
		return nil, fmt.Errorf("scorer json_field needs field: the dotted path of the value to check, such as answer.city")
	}
	src, err := stringParam("json_field", params, "source")
	if err != nil {
		return nil, err
	}
	if src != "" && src != "answer" && src != "result" {
		return nil, fmt.Errorf("scorer json_field: source %q: want answer or result", src)
	}
	want, fixed := params["value"]
	return ScorerFunc(func(_ context.Context, s *Sample) (float64, error) {
		doc := []byte(s.Answer)
		if src == "result" {
			doc = s.Result
		}
		var v any
		if json.Unmarshal(doc, &v) != nil {
			return 0, nil // not JSON: wrong
		}
		got, ok := lookup(v, field)
		if !ok {
			return 0, nil
		}
		w := want
		if !fixed {
			w = s.Row.ExpectedValue
		}
		return boolScore(sameJSON(got, w)), nil
	}), nil
}

// lookup follows a dotted path through maps and lists.
func lookup(v any, path string) (any, bool) {
	if path == "" {
		return v, true
	}
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// sameJSON compares two decoded values as JSON, numbers by value, and a
// string against a non-string by the other's JSON text.
func sameJSON(a, b any) bool {
	na, aNum := toFloat(a)
	nb, bNum := toFloat(b)
	if aNum && bNum {
		return na == nb
	}
	ja, _ := json.Marshal(normalizeNums(a))
	jb, _ := json.Marshal(normalizeNums(b))
	if string(ja) == string(jb) {
		return true
	}
	sa, aStr := a.(string)
	sb, bStr := b.(string)
	switch {
	case aStr && !bStr:
		return strings.TrimSpace(sa) == string(jb)
	case bStr && !aStr:
		return strings.TrimSpace(sb) == string(ja)
	}
	return false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func normalizeNums(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeNums(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeNums(e)
		}
		return out
	}
	if f, ok := toFloat(v); ok {
		return f
	}
	return v
}
