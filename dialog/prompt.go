package dialog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
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
	// nil means free text. See [WithFormat].
	Format json.RawMessage
	// Functions are the tools the model may call.
	Functions []*Function
	// Handler holds the follow-up prompts; zero fields take the defaults.
	Handler Handler
	// Metadata is free-form information about the prompt.
	Metadata map[string]string

	tmpl     *template            // the parsed Template, set by NewPrompt
	format   *jsonschema.Resolved // the resolved Format, set by NewPrompt
	handlers *handlerCache        // the derived handler prompts; nil disables caching
}

// CheckFormat reports whether reply, the JSON of a parsed reply, follows
// the prompt's Format: nil when it does, or when the prompt has no format
// (or was not built by [NewPrompt]); else a *ParseError listing, for the
// model to read and in a stable order, where it does not (at most 10
// violations, such as "age: 11 is greater than the maximum 10").
func (p *Prompt) CheckFormat(reply json.RawMessage) error {
	if p == nil || p.format == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(reply, &v); err != nil {
		return &ParseError{Msg: "the reply is not valid JSON: " + err.Error(), Err: err}
	}
	if err := p.format.Validate(v); err != nil {
		return &ParseError{Msg: "the reply does not follow the required JSON schema: " + violationText(p.format, v, err), Err: err}
	}
	return nil
}

// violationText lists the ways v breaks rs, which failed it with err:
// "a: ...; b: ...", with at most maxViolations of them. When they cannot
// be worked out, it is err without the schema locations jsonschema-go
// puts before the problem.
func violationText(rs *jsonschema.Resolved, v any, err error) string {
	vs := schemaViolations(rs, v)
	if len(vs) == 0 {
		msg := err.Error()
		for {
			rest, ok := strings.CutPrefix(msg, "validating ")
			if !ok {
				return msg
			}
			_, after, ok := strings.Cut(rest, ": ")
			if !ok {
				return msg
			}
			msg = after
		}
	}
	if len(vs) > maxViolations {
		more := len(vs) - maxViolations
		vs = append(vs[:maxViolations:maxViolations], fmt.Sprintf("and %d more", more))
	}
	return strings.Join(vs, "; ")
}

// resolveFormat resolves a Format for CheckFormat. It refuses, with a
// *schemaCycleError, a schema on which validation would never end.
func resolveFormat(schema json.RawMessage) (*jsonschema.Resolved, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(schema, &obj); err != nil || obj == nil {
		if err == nil {
			err = errors.New("not a JSON object")
		}
		return nil, err
	}
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(schema, s); err != nil {
		return nil, err
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	if err := checkSchemaCycles(rs); err != nil {
		return nil, err
	}
	return rs, nil
}
