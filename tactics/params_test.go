package tactics

import (
	"errors"
	"strings"
	"testing"
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
