package config

import (
	"fmt"
	suggestpkg "github.com/lllm-go/lllm/internal/suggest"
	"slices"
	"strconv"
)

// field says what a known key holds.
type field uint8

const (
	fString field = iota // a string
	fInt                 // a non-negative integer
	fFree                // a mapping with any keys
	fGlobal              // the global agent defaults
	fAgents              // the list of agent entries
	fEntry               // one agent entry
)

// topKeys are the keys allowed at the top level of a config.
var topKeys = map[string]field{
	"tactic_type":     fString,
	"base":            fString,
	"global":          fGlobal,
	"agent_configs":   fAgents,
	"context_manager": fFree,
	"params":          fFree,
	"log_dir":         fString,
	"prompts_dir":     fString,
	"mock":            fFree,
	"prices":          fFree, // checked by derive
}

// agentKeys are the keys allowed in an agent entry; global allows the
// same except name.
var agentKeys = map[string]field{
	"name":                fString,
	"model_name":          fString,
	"system_prompt":       fString,
	"system_prompt_path":  fString,
	"api_key_env":         fString,
	"base_url":            fString,
	"model_args":          fFree,
	"max_exception_retry": fInt,
	"max_interrupt_steps": fInt,
	"max_llm_recall":      fInt,
	"max_retries":         fInt,
	"call_timeout":        fString,
	"max_retry_wait":      fString,
	"tool_timeout":        fString,
	"max_tool_output":     fInt,
	"tool_concurrency":    fInt,
	"context_manager":     fFree,
}

// Sorted key names, for suggestions and messages.
var (
	topKeyNames    = sortedKeys(topKeys)
	agentKeyNames  = sortedKeys(agentKeys)
	globalKeyNames = slices.DeleteFunc(sortedKeys(agentKeys), func(s string) bool { return s == "name" })
)

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkKeys reports every unknown key in the known structure of tree
// (top level, global, agent entries), ordered by position.
func checkKeys(tree map[string]any, pt *posTree) []error {
	return sortedErrors(keyErrors(tree, pt))
}

// keyErrors returns the problems checkKeys reports, unordered.
func keyErrors(tree map[string]any, pt *posTree) []*Error {
	var errs []*Error
	unknown := func(where string, path []string, key string, allowed []string) {
		p := pt.lookup(append(path, key)...)
		e := p.errorf("unknown key %q %s%s", key, where, hint(key, allowed))
		errs = append(errs, e)
	}
	for _, k := range sortedKeys(tree) {
		if _, ok := topKeys[k]; !ok {
			unknown("at top level", nil, k, topKeyNames)
		}
	}
	if g, ok := tree["global"].(map[string]any); ok {
		for _, k := range sortedKeys(g) {
			if k == "name" {
				p := pt.lookup("global", k)
				errs = append(errs, p.errorf("name is not allowed in global: name each agent in agent_configs"))
			} else if _, ok := agentKeys[k]; !ok {
				unknown("in global", []string{"global"}, k, globalKeyNames)
			}
		}
	}
	if list, ok := tree["agent_configs"].([]any); ok {
		for i, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			idx := strconv.Itoa(i)
			for _, k := range sortedKeys(m) {
				if _, ok := agentKeys[k]; !ok {
					unknown(fmt.Sprintf("in agent_configs[%d]", i), []string{"agent_configs", idx}, k, agentKeyNames)
				}
			}
		}
	}
	return errs
}

// suggest returns the candidate closest to s by edit distance, if it is
// close enough to be a likely typo.
func suggest(s string, candidates []string) (string, bool) {
	return suggestpkg.Closest(s, candidates)
}
