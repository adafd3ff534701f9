package tactics

import (
	"slices"
	"strings"

	"github.com/lllm-go/lllm/runtime/config"
)

// PromptVariables is implemented by a tactic that says which template
// variables ({name}) it fills in the system prompts of the agents it
// opens. Check and Prepare refuse a config in which the system prompt of
// one of the tactic's agents uses another: that prompt cannot be
// rendered, so every run would fail when the tactic opens the agent. A
// tactic that does not implement it is not checked.
type PromptVariables interface {
	// PromptVariables names the variables the tactic gives the system
	// prompt of agent (one of Agents); nil when it gives none.
	PromptVariables(agent string) []string
}

// unfilledVariables reports each agent of t whose system prompt uses a
// variable t does not fill, at the place its prompt was set.
func unfilledVariables(cfg *config.Config, t Tactic, specs map[string]*agentSpec) []error {
	pv, ok := t.(PromptVariables)
	if !ok {
		return nil
	}
	var errs []error
	for i, ac := range cfg.Agents {
		sp := specs[ac.Name]
		if sp == nil || sp.system == nil || !slices.Contains(t.Agents(), ac.Name) {
			continue
		}
		given := pv.PromptVariables(ac.Name)
		var unfilled []string
		for _, v := range sp.system.Variables() {
			if !slices.Contains(given, v) {
				unfilled = append(unfilled, "{"+v+"}")
			}
		}
		if len(unfilled) == 0 {
			continue
		}
		key := "system_prompt"
		if ac.SystemPromptPath != "" {
			key = "system_prompt_path"
		}
		fills := "fills no variable in it"
		if len(given) > 0 {
			fills = "fills only {" + strings.Join(given, "}, {") + "}"
		}
		them := "them"
		if len(unfilled) == 1 {
			them = "it"
		}
		errs = append(errs, cfg.AgentErrorf(i, []string{key}, "%s: %s uses %s, but tactic %s %s, so every run would fail opening the agent: remove %s, or write {{ and }} for a literal brace",
			AgentLabel(ac.Name), key, strings.Join(unfilled, ", "), cfg.TacticType, fills, them))
	}
	return errs
}
