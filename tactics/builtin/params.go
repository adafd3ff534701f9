package builtin

import (
	"fmt"
	"math"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/tactics"
)

// atLeast checks the integer param name: from least to math.MaxInt32, as
// it sizes loops and capacities.
func atLeast(name string, n, least int) error {
	switch {
	case n < least:
		return &tactics.ParamError{Param: name, Err: fmt.Errorf("param %s must be at least %d, not %d", name, least, n)}
	case n > math.MaxInt32:
		return &tactics.ParamError{Param: name, Err: fmt.Errorf("param %s = %d is too large", name, n)}
	}
	return nil
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
