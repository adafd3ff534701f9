package sweep

import "github.com/lllm-go/lllm/internal/params"

// DecodeParams decodes a scorer's params, as a [ScorerFactory] gets them,
// into v, a pointer to a struct whose json tags name the params, as
// tactics.DecodeParams decodes a tactic's; fields keep their values for
// params that are absent, so set the defaults first:
//
//	p := struct {
//		Max int `json:"max"`
//	}{Max: 280}
//	if err := sweep.DecodeParams(params, &p); err != nil {
//		return nil, err
//	}
//
// A param v has no field for is an error naming it and the accepted ones,
// suggesting the closest; a value of the wrong type is one naming the
// param and the type it wants. A spec reports either at its scorer's line.
// A scorer that takes no params refuses any with
// DecodeParams(params, &struct{}{}), as a ScorerFactory must.
func DecodeParams(p map[string]any, v any) error {
	return params.Decode(p, v, params.Options{Caller: "sweep: DecodeParams", Noun: "param", Plural: "params"})
}
