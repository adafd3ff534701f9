package tactics_test

import (
	"errors"
	"testing"

	"github.com/lllm-go/lllm/tactics"
)

// As DecodeParams's doc says, a tactic that takes no params refuses any
// with DecodeParams(params, &struct{}{}), in a ParamError a config places
// at the param's line.
func TestDecodeParamsNone(t *testing.T) {
	for _, params := range []map[string]any{nil, {}} {
		if err := tactics.DecodeParams(params, &struct{}{}); err != nil {
			t.Errorf("DecodeParams(%v, &struct{}{}) = %v", params, err)
		}
	}
	for params, want := range map[string]struct {
		params map[string]any
		param  string
	}{
		`unknown param "rounds" (it takes none)`:       {map[string]any{"rounds": 2}, "rounds"},
		`unknown params "a", "b" (it takes none)`:      {map[string]any{"b": 1, "a": nil}, "a"},
		`unknown param "type" (it takes none)`:         {map[string]any{"type": "x"}, "type"},
		`unknown params "rounds", "x" (it takes none)`: {map[string]any{"rounds": 2, "x": 1}, "rounds"},
	} {
		err := tactics.DecodeParams(want.params, &struct{}{})
		var pe *tactics.ParamError
		if !errors.As(err, &pe) || pe.Param != want.param || err.Error() != params {
			t.Errorf("DecodeParams(%v, &struct{}{}) = %v; want a ParamError about %s: %s", want.params, err, want.param, params)
		}
	}
}
