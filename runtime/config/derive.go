package config

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// derive sets c's fields from c.tree, checking the type of every known
// field. It reports all type errors at once.
func (c *Config) derive() error {
	if errs := c.problems(); len(errs) > 0 {
		return errors.Join(sortedErrors(errs)...)
	}
	return nil
}

// problems sets c's fields as derive does and returns every problem.
func (c *Config) problems() []*Error {
	var errs []*Error
	bad := func(p pos, format string, args ...any) { errs = append(errs, p.errorf(format, args...)) }
	tree := c.tree
	// finite reports the NaNs and infinities of a free-form value, which
	// the run log (JSON) cannot record.
	var finite func(v any, path []string)
	finite = func(v any, path []string) {
		switch v := v.(type) {
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				bad(c.pos.lookup(path...), "%s must be a finite number, not %v (a run log cannot record it)", dotted(path[:len(path)-1], path[len(path)-1]), v)
			}
		case map[string]any:
			for _, k := range sortedKeys(v) {
				finite(v[k], append(slices.Clip(path), k))
			}
		case []any:
			for i, x := range v {
				finite(x, append(slices.Clip(path), strconv.Itoa(i)))
			}
		}
	}

	str := func(m map[string]any, path []string, key string) string {
		v, ok := m[key]
		if !ok || v == nil {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			bad(c.pos.lookup(append(path, key)...), "%s must be a string, not %s", dotted(path, key), describe(v))
		}
		return s
	}
	free := func(m map[string]any, path []string, key string) map[string]any {
		v, ok := m[key]
		if !ok || v == nil {
			return nil
		}
		fm, ok := v.(map[string]any)
		if !ok {
			bad(c.pos.lookup(append(path, key)...), "%s must be a mapping, not %s", dotted(path, key), describe(v))
			return nil
		}
		finite(fm, append(slices.Clip(path), key))
		return copyMap(fm)
	}
	integer := func(m map[string]any, path []string, key string) *int {
		v, ok := m[key]
		if !ok || v == nil {
			return nil
		}
		n, ok := toInt(v)
		if !ok || n < 0 {
			bad(c.pos.lookup(append(path, key)...), "%s must be a non-negative integer, not %s", dotted(path, key), describe(v))
			return nil
		}
		return &n
	}
	duration := func(m map[string]any, path []string, key string) *time.Duration {
		v, ok := m[key]
		if !ok || v == nil {
			return nil
		}
		d, err := ParseDuration(v)
		if err != nil {
			bad(c.pos.lookup(append(path, key)...), "%s %v", dotted(path, key), err)
			return nil
		}
		return &d
	}
	agent := func(m map[string]any, path []string) Agent {
		return Agent{
			Name:              str(m, path, "name"),
			ModelName:         str(m, path, "model_name"),
			SystemPrompt:      str(m, path, "system_prompt"),
			SystemPromptPath:  str(m, path, "system_prompt_path"),
			APIKeyEnv:         str(m, path, "api_key_env"),
			BaseURL:           str(m, path, "base_url"),
			ModelArgs:         free(m, path, "model_args"),
			MaxExceptionRetry: integer(m, path, "max_exception_retry"),
			MaxInterruptSteps: integer(m, path, "max_interrupt_steps"),
			MaxLLMRecall:      integer(m, path, "max_llm_recall"),
			MaxRetries:        integer(m, path, "max_retries"),
			CallTimeout:       duration(m, path, "call_timeout"),
			MaxRetryWait:      duration(m, path, "max_retry_wait"),
			ToolTimeout:       duration(m, path, "tool_timeout"),
			MaxToolOutput:     integer(m, path, "max_tool_output"),
			ToolConcurrency:   integer(m, path, "tool_concurrency"),
			ContextManager:    free(m, path, "context_manager"),
		}
	}

	c.TacticType = str(tree, nil, "tactic_type")
	c.LogDir = str(tree, nil, "log_dir")
	c.PromptsDir = str(tree, nil, "prompts_dir")
	c.ContextManager = free(tree, nil, "context_manager")
	c.Params = free(tree, nil, "params")
	c.Mock = free(tree, nil, "mock")
	c.Prices = nil
	switch table := tree["prices"].(type) {
	case nil:
	case map[string]any:
		c.Prices = map[string]Price{}
		for _, model := range sortedKeys(table) {
			path := []string{"prices", model}
			entry, ok := table[model].(map[string]any)
			if !ok {
				bad(c.pos.lookup(path...), "%s must be a mapping of %s (USD per million tokens), not %s",
					dotted(path[:1], model), strings.Join(priceKeyNames, ", "), describe(table[model]))
				continue
			}
			var p Price
			fields := map[string]*float64{"input": &p.Input, "cached_input": &p.CachedInput, "cache_write": &p.CacheWrite, "output": &p.Output}
			for _, k := range sortedKeys(entry) {
				dst, ok := fields[k]
				if !ok {
					bad(c.pos.lookup(append(path, k)...), "unknown key %q in %s%s", k, dotted(path[:1], model), hint(k, priceKeyNames))
					continue
				}
				if *dst, ok = toFloat(entry[k]); !ok || *dst < 0 {
					bad(c.pos.lookup(append(path, k)...), "%s must be a non-negative number (USD per million tokens), not %s", dotted(path, k), describe(entry[k]))
				}
			}
			c.Prices[model] = p
		}
	default:
		bad(c.pos.lookup("prices"), "prices must be a mapping from model name to prices, not %s", describe(table))
	}

	c.Global = Agent{}
	global := map[string]any{}
	switch g := tree["global"].(type) {
	case nil:
	case map[string]any:
		global = g
		c.Global = agent(g, []string{"global"})
	default:
		bad(c.pos.lookup("global"), "global must be a mapping, not %s", describe(g))
	}

	c.Agents = nil
	var entries []map[string]any
	switch list := tree["agent_configs"].(type) {
	case nil:
	case []any:
		for i, e := range list {
			path := []string{"agent_configs", strconv.Itoa(i)}
			m, ok := e.(map[string]any)
			if !ok {
				bad(c.pos.lookup(path...), "agent_configs[%d] must be a mapping, not %s", i, describe(e))
				continue
			}
			agent(m, path) // type-check the entry as written
			entries = append(entries, m)
		}
	default:
		bad(c.pos.lookup("agent_configs"), "agent_configs must be a list of agents, not %s", describe(list))
	}
	if len(errs) > 0 {
		return errs
	}
	// Both halves are type-checked, so merging cannot add errors.
	for _, m := range entries {
		c.Agents = append(c.Agents, agent(deepMerge(global, m), nil))
	}
	return nil
}

// sortedErrors orders errs by file and place, as plain errors.
func sortedErrors(errs []*Error) []error {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}

// priceKeyNames are the keys of a prices entry.
var priceKeyNames = []string{"input", "cached_input", "cache_write", "output"}

// ParseDuration reads a duration as a config writes it (call_timeout,
// max_retry_wait): text that time.ParseDuration reads, such as "90s" or
// "10m", or a number of seconds, as YAML decodes it into an any (30 is
// 30s, 0.5 is 500ms). Anything else, and a negative duration, is an
// error that says what the value should be, worded to follow the key's
// name: "must be a duration such as 90s or 10m (0 for none), not ...".
func ParseDuration(v any) (time.Duration, error) {
	var d time.Duration
	var err error
	if s, ok := v.(string); ok {
		d, err = time.ParseDuration(s)
	} else if secs, ok := toFloat(v); ok && math.Abs(secs) <= math.MaxInt64/float64(time.Second) {
		d = time.Duration(secs * float64(time.Second)) // a number is seconds
	} else {
		err = errors.New("not a duration")
	}
	if err != nil || d < 0 {
		return 0, fmt.Errorf("must be a duration such as 90s or 10m (0 for none), not %s", describe(v))
	}
	return d, nil
}

// toFloat converts a YAML number to float64.
func toFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, !math.IsNaN(v) && !math.IsInf(v, 0)
	case int, int64, uint64:
		n, ok := toInt(v)
		return float64(n), ok
	}
	return 0, false
}

// toInt converts a YAML integer to int.
func toInt(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case int64:
		if v >= math.MinInt && v <= math.MaxInt {
			return int(v), true
		}
	case uint64:
		if v <= math.MaxInt {
			return int(v), true
		}
	}
	return 0, false
}

// dotted formats a path and key as "agent_configs[0].model_name".
func dotted(path []string, key string) string {
	var b strings.Builder
	for i, p := range append(slices.Clip(path), key) {
		if _, err := strconv.Atoi(p); err == nil && i > 0 {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}
