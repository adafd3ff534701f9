package params

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

var keys = Options{Caller: "test: Decode", Noun: "key", Plural: "keys", Skip: []string{"type"}}

// The words of Options name the settings; Skip keys are accepted, listed
// first, and not decoded, even into a field of their name.
func TestDecodeOptions(t *testing.T) {
	type c struct {
		N    int           `json:"n"`
		Type string        `json:"type"`
		Wait time.Duration `json:"wait"`
	}
	m := map[string]any{"type": "lastturns", "n": 6.0, "wait": "2s"}
	got := c{N: 1, Type: "kept"}
	if err := Decode(m, &got, keys); err != nil {
		t.Fatal(err)
	}
	if got != (c{N: 6, Type: "kept", Wait: 2 * time.Second}) {
		t.Errorf("decoded %+v", got)
	}
	if fmt.Sprint(m) != "map[n:6 type:lastturns wait:2s]" {
		t.Errorf("the map changed to %v", m)
	}
	for _, tc := range []struct {
		m        map[string]any
		key, msg string
	}{
		{map[string]any{"type": "x", "wiat": 1}, "wiat", `unknown key "wiat" (did you mean "wait"?)`},
		{map[string]any{"tpye": "x"}, "tpye", `unknown key "tpye" (did you mean "type"?)`},
		{map[string]any{"a": 1, "zz": 2}, "a", `unknown keys "a", "zz" (accepted: n, type, wait)`}, // type where its field is
		{map[string]any{"n": "six"}, "n", `key n must be an integer, not "six"`},
		{map[string]any{"wait": "soon"}, "wait", `key wait must be a duration such as 90s or 10m (0 for none), not the string "soon"`},
	} {
		err := Decode(tc.m, &c{}, keys)
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != tc.key || err.Error() != tc.msg {
			t.Errorf("%v: %v; want a KeyError about %s: %s", tc.m, err, tc.key, tc.msg)
		}
	}
	var none struct{}
	if err := Decode(map[string]any{"type": "x"}, &none, keys); err != nil {
		t.Errorf("type alone into no fields: %v", err)
	}
	if err := Decode(map[string]any{"x": 1}, &none, keys); err == nil || err.Error() != `unknown key "x" (accepted: type)` {
		t.Errorf("x into no fields: %v", err)
	}
	if err := Decode(map[string]any{"x": 1}, &none, Options{Noun: "param", Plural: "params"}); err == nil || err.Error() != `unknown param "x" (it takes none)` {
		t.Errorf("x into no fields, nothing skipped: %v", err)
	}
	if err := Decode(nil, none, keys); err == nil || err.Error() != "test: Decode needs a pointer to a struct, not struct {}" {
		t.Errorf("a struct, not a pointer: %v", err)
	}
}
