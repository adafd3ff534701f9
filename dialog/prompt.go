package dialog

import (
	"encoding/json"
)

// Prompt is a template together with everything that governs the model turn
// it starts: the parser for the reply, the JSON schema of structured output,
// the tools the model may call, and the follow-up prompts of its handler.
//
// Build prompts with [NewPrompt], which checks the template. A Prompt is
// immutable once built: never modify one that may be in use; derive variants
// with methods such as [Prompt.WithoutTools].
type Prompt struct {
	// Path is the prompt's registry key, such as "research/solver".
	Path string
	// Template is the text, with {name} variables and {{ }} literal braces.
	Template string
	// Parser parses the model's reply; nil means no parsing.
	Parser Parser
	// Format is the JSON schema the reply must follow (structured output);
	// nil means free text.
	Format json.RawMessage
	// Functions are the tools the model may call.
	Functions []*Function
	// Handler holds the follow-up prompts; zero fields take the defaults.
	Handler Handler
	// Metadata is free-form information about the prompt.
	Metadata map[string]string

	tmpl     *template     // the parsed Template, set by NewPrompt
	handlers *handlerCache // the derived handler prompts; nil disables caching
}
