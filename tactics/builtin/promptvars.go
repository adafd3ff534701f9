package builtin

// The built-in tactics open every agent's dialogs with no prompt
// variables (Agent.Open(alias, nil)): a {name} in an agent's system prompt
// could never be filled, and tactics.Check refuses it.

// PromptVariables implements tactics.PromptVariables: chat fills none.
func (chat) PromptVariables(string) []string { return nil }

// PromptVariables implements tactics.PromptVariables: best_of_n fills none.
func (bestOfN) PromptVariables(string) []string { return nil }

// PromptVariables implements tactics.PromptVariables: debate fills none.
func (debate) PromptVariables(string) []string { return nil }

// PromptVariables implements tactics.PromptVariables: self_refine fills none.
func (selfRefine) PromptVariables(string) []string { return nil }

// PromptVariables implements tactics.PromptVariables: react fills none.
func (*react) PromptVariables(string) []string { return nil }
