package tactics

import paramspkg "github.com/lllm-go/lllm/internal/params"

// DecodeParams decodes a tactic's params, as a [Factory] gets them, into
// v, a pointer to a struct whose json tags name the params; fields keep
// their values for params that are absent, so set the defaults first:
//
//	p := struct {
//		Rounds int `json:"rounds"`
//	}{Rounds: 2}
//	if err := tactics.DecodeParams(params, &p); err != nil {
//		return nil, err
//	}
//
// A param v has no field for is an error naming it and the accepted ones,
// suggesting the closest; a value of the wrong type is one naming the
// param and the type it wants; both are *ParamError. Whole numbers written
// as 2.0 decode into integer fields. A time.Duration field reads a
// duration as a config's others are read (config.ParseDuration): text such
// as "90s" or "10m", or a number of seconds.
//
// A tactic that takes no params refuses any a config gives it with
// tactics.DecodeParams(params, &struct{}{}).
func DecodeParams(params map[string]any, v any) error {
	err := paramspkg.Decode(params, v, paramspkg.Options{Caller: "tactics: DecodeParams", Noun: "param", Plural: "params"})
	if ke, ok := err.(*paramspkg.KeyError); ok {
		return &ParamError{Param: ke.Key, Err: ke.Err}
	}
	return err
}

// ParamError is a problem with a tactic's param, which a config reports
// at the line that sets it. DecodeParams returns them; a Factory may too.
type ParamError struct {
	Param string // the param at fault (the first, when several are)
	Err   error
}

func (e *ParamError) Error() string { return e.Err.Error() }

func (e *ParamError) Unwrap() error { return e.Err }
