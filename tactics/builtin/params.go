package builtin

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/lllm-go/lllm/dialog"
)

// checkParams reports the keys of params that are not in known, naming
// them and the accepted ones.
func checkParams(tactic string, params map[string]any, known ...string) error {
	var unknown []string
	for k := range params {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("%s: unknown params %q (accepted: %s)", tactic, unknown, strings.Join(known, ", "))
}

// intParam reads the integer param key, def when it is absent, and checks
// that it is at least least. YAML gives ints; JSON and --set may give
// integral floats.
func intParam(tactic string, params map[string]any, key string, def, least int) (int, error) {
	v, ok := params[key]
	if !ok || v == nil {
		return def, nil
	}
	var n int
	switch v := v.(type) {
	case int:
		if v > math.MaxInt32 || v < math.MinInt32 {
			return 0, fmt.Errorf("%s: param %s = %d is too large", tactic, key, v)
		}
		n = v
	case int64:
		if v > math.MaxInt32 || v < math.MinInt32 {
			return 0, fmt.Errorf("%s: param %s = %d is too large", tactic, key, v)
		}
		n = int(v)
	case uint64:
		if v > math.MaxInt32 {
			return 0, fmt.Errorf("%s: param %s = %d is too large", tactic, key, v)
		}
		n = int(v)
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > math.MaxInt32 {
			return 0, fmt.Errorf("%s: param %s must be an integer, not %v", tactic, key, v)
		}
		n = int(v)
	default:
		return 0, fmt.Errorf("%s: param %s must be an integer, not %T %v", tactic, key, v, v)
	}
	if n < least {
		return 0, fmt.Errorf("%s: param %s must be at least %d, not %d", tactic, key, least, n)
	}
	return n, nil
}

// lastTag is the last <tag>...</tag> of a reply parsed by a TagParser, and
// whether there is one.
func lastTag(m *dialog.Message, tag string) (string, bool) {
	r, err := tagResult(m)
	if err != nil {
		return "", false
	}
	vs := r.XML[tag]
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

// tagResult decodes the parsed output of a reply parsed by a TagParser.
func tagResult(m *dialog.Message) (*dialog.TagResult, error) {
	var r dialog.TagResult
	if len(m.Parsed) == 0 {
		return nil, fmt.Errorf("reply of %s was not parsed", m.Name)
	}
	if err := m.ParsedInto(&r); err != nil {
		return nil, fmt.Errorf("decoding the parsed reply of %s: %w", m.Name, err)
	}
	return &r, nil
}
