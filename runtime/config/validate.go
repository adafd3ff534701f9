package config

import (
	"errors"
	"strconv"
	"strings"
)

// Validate reports every semantic problem of c at once, each naming the
// file and, where known, the line of the offending entry: a missing
// tactic_type; an agent without a name, without model_name, or with
// model_name not of the form provider/model; an agent with neither or
// both of system_prompt and system_prompt_path; duplicate agent names;
// and each of needAgents (the agents the tactic uses) that the config
// lacks. It returns nil if c is valid.
func Validate(c *Config, needAgents []string) []error {
	if c == nil {
		return []error{errors.New("config: nil config")}
	}
	var errs []error
	top := pos{file: c.Path}
	if c.TacticType == "" {
		errs = append(errs, top.errorf("missing tactic_type (the registered tactic to run)"))
	}
	first := map[string]pos{}
	var names []string
	for i, a := range c.Agents {
		idx := strconv.Itoa(i)
		at := c.pos.lookup("agent_configs", idx)
		who := "agent_configs[" + idx + "]"
		if a.Name == "" {
			errs = append(errs, at.errorf("%s: missing name", who))
		} else {
			who = "agent " + strconv.Quote(a.Name)
			if p, dup := first[a.Name]; dup {
				errs = append(errs, at.errorf("duplicate agent name %q (first at %s)", a.Name, where(p)))
			} else {
				first[a.Name] = at
				names = append(names, a.Name)
			}
		}
		if a.ModelName == "" {
			errs = append(errs, at.errorf("%s: missing model_name (set it in the entry or in global)", who))
		} else if provider, model, ok := strings.Cut(a.ModelName, "/"); !ok || provider == "" || model == "" || strings.TrimSpace(a.ModelName) != a.ModelName {
			errs = append(errs, c.agentPos(i, "model_name").errorf("%s: model_name %q is not of the form provider/model (such as openai/gpt-4o-mini)", who, a.ModelName))
		}
		switch {
		case a.SystemPrompt == "" && a.SystemPromptPath == "":
			errs = append(errs, at.errorf("%s: needs system_prompt or system_prompt_path", who))
		case a.SystemPrompt != "" && a.SystemPromptPath != "":
			errs = append(errs, at.errorf("%s: has both system_prompt and system_prompt_path (keep one; global may set the other; with --set, set the other to null)", who))
		}
	}
	for _, n := range needAgents {
		if _, ok := first[n]; ok {
			continue
		}
		at := top
		if c.pos.has("agent_configs") {
			at = c.pos.lookup("agent_configs")
		}
		tactic := c.TacticType
		if tactic == "" {
			tactic = "the tactic"
		} else {
			tactic = "tactic " + strconv.Quote(tactic)
		}
		errs = append(errs, at.errorf("%s needs agent %q, which agent_configs lacks%s", tactic, n, hint(n, names)))
	}
	return errs
}

// agentPos returns where agent i's key was written: in its entry, else
// in global, else the entry itself.
func (c *Config) agentPos(i int, key string) pos {
	idx := strconv.Itoa(i)
	switch {
	case c.pos.has("agent_configs", idx, key):
		return c.pos.lookup("agent_configs", idx, key)
	case c.pos.has("global", key):
		return c.pos.lookup("global", key)
	}
	return c.pos.lookup("agent_configs", idx)
}

// AgentErrorf returns a problem at the place agent i's setting at path
// (such as model_args, temperature) was written: in its entry, else in
// global, else the entry itself.
func (c *Config) AgentErrorf(i int, path []string, format string, args ...any) error {
	entry := append([]string{"agent_configs", strconv.Itoa(i)}, path...)
	global := append([]string{"global"}, path...)
	at := c.pos.lookup(entry[:2]...)
	switch {
	case c.pos.has(entry...):
		at = c.pos.lookup(entry...)
	case c.pos.has(global...):
		at = c.pos.lookup(global...)
	case c.pos.has(path...):
		// A top-level setting every agent inherits (context_manager),
		// or its --set.
		at = c.pos.lookup(path...)
	}
	return at.errorf(format, args...)
}

// Errorf returns a problem at the place the setting at path (such as
// params, rounds) was written, or else at the nearest enclosing setting
// that was, or else naming the config's file.
func (c *Config) Errorf(path []string, format string, args ...any) error {
	at := c.pos.lookup(path...)
	if at.file == "" {
		at.file = c.Path
	}
	return at.errorf(format, args...)
}

// where formats a position for "first at ..." notes.
func where(p pos) string {
	e := &Error{File: p.file, Line: p.line, Column: p.col}
	return strings.TrimSuffix(e.Error(), ": ")
}
