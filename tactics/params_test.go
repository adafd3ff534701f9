package tactics

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDecodeParams(t *testing.T) {
	type params struct {
		Rounds int      `json:"rounds"`
		Temp   float64  `json:"temp"`
		Tools  []string `json:"tools"`
		Label  string   `json:"label,omitempty"`
		Skip   string   `json:"-"`
	}
	p := params{Rounds: 2, Label: "default"}
	if err := DecodeParams(map[string]any{"rounds": 3.0, "tools": []any{"a", "b"}}, &p); err != nil {
		t.Fatal(err)
	}
	if p.Rounds != 3 || len(p.Tools) != 2 || p.Label != "default" {
		t.Fatalf("decoded %+v: want rounds 3 from 3.0, the tools, the default label kept", p)
	}
	for _, c := range []struct {
		params map[string]any
		param  string
		want   string
	}{
		{map[string]any{"roundz": 1}, "roundz", `unknown param "roundz" (did you mean "rounds"?)`},
		{map[string]any{"x": 1, "y": 2}, "x", `unknown params "x", "y" (accepted: rounds, temp, tools, label)`},
		{map[string]any{"Skip": "no"}, "Skip", `unknown param "Skip"`},
		{map[string]any{"rounds": "two"}, "rounds", `param rounds must be an integer, not "two"`},
		{map[string]any{"rounds": 2.5}, "rounds", `param rounds must be an integer, not 2.5`},
		{map[string]any{"tools": "a"}, "tools", `param tools must be a list of strings, not "a"`},
		{map[string]any{"temp": true}, "temp", `param temp must be a number, not true`},
	} {
		err := DecodeParams(c.params, &params{})
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != c.param || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a ParamError about %s saying %q", c.params, err, c.param, c.want)
		}
	}
	var none struct{}
	if err := DecodeParams(map[string]any{"x": 1}, &none); err == nil || !strings.Contains(err.Error(), "it takes none") {
		t.Errorf("params for a tactic that takes none: %v", err)
	}
	if err := DecodeParams(nil, p); err == nil {
		t.Error("a struct, not a pointer to one, was accepted")
	}
}

// A param that names an untagged field but for case is the tactic's bug:
// the error says to tag the field, not to rename the config's key.
func TestDecodeParamsUntaggedField(t *testing.T) {
	var p struct {
		Rounds int
		Judge  string `json:"judge"`
	}
	err := DecodeParams(map[string]any{"rounds": 3}, &p)
	if err == nil || !strings.Contains(err.Error(), "field Rounds of struct") || !strings.Contains(err.Error(), "has no json tag: tag it `json:\"rounds\"`") {
		t.Errorf("untagged field: %v", err)
	}
	// The field's own name still decodes, and other typos still get a
	// did-you-mean.
	if err := DecodeParams(map[string]any{"Rounds": 3}, &p); err != nil || p.Rounds != 3 {
		t.Errorf("Rounds: %v, %d", err, p.Rounds)
	}
	if err := DecodeParams(map[string]any{"jugde": "x"}, &p); err == nil || !strings.Contains(err.Error(), `did you mean "judge"?`) {
		t.Errorf("typo: %v", err)
	}
}

// A tactic's duration params read as a config's durations do; a value
// that is no duration is a ParamError naming the param, and the params
// given are left as they are.
func TestDecodeParamsDurations(t *testing.T) {
	type p struct {
		Wait    time.Duration  `json:"wait"`
		Max     *time.Duration `json:"max"`
		Rounds  int            `json:"rounds"`
		Default time.Duration  `json:"default"`
	}
	params := map[string]any{"wait": 30, "max": "1m30s", "rounds": 2}
	got := p{Default: time.Hour}
	if err := DecodeParams(params, &got); err != nil {
		t.Fatal(err)
	}
	if got.Wait != 30*time.Second || got.Max == nil || *got.Max != 90*time.Second || got.Rounds != 2 || got.Default != time.Hour {
		t.Errorf("decoded %+v", got)
	}
	if fmt.Sprint(params) != "map[max:1m30s rounds:2 wait:30]" {
		t.Errorf("params changed to %v", params)
	}
	for v, want := range map[any]string{
		"soon": `param wait must be a duration such as 90s or 10m (0 for none), not the string "soon"`,
		-2:     `param wait must be a duration such as 90s or 10m (0 for none), not the integer -2`,
	} {
		err := DecodeParams(map[string]any{"wait": v}, new(p))
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != "wait" || err.Error() != want {
			t.Errorf("wait: %v: %v, want a ParamError %q", v, err, want)
		}
	}
}

// As DecodeParams's doc says, a tactic that takes no params refuses any
// with DecodeParams(params, &struct{}{}), in a ParamError a config places
// at the param's line.
func TestDecodeParamsNone(t *testing.T) {
	for _, params := range []map[string]any{nil, {}} {
		if err := DecodeParams(params, &struct{}{}); err != nil {
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
		err := DecodeParams(want.params, &struct{}{})
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != want.param || err.Error() != params {
			t.Errorf("DecodeParams(%v, &struct{}{}) = %v; want a ParamError about %s: %s", want.params, err, want.param, params)
		}
	}
}
