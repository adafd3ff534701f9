package vocab

import (
	"encoding/json"
	"strings"
	"testing"
)

// The walk catches what the vocabulary forbids, wherever it is nested.
func TestProblems(t *testing.T) {
	for _, c := range []struct {
		json string
		want string // in the one problem found; "" for none
	}{
		{`{"run_id": "20261122T052011.659613Z-4c2769", "cost": {"input_tokens": 3, "usd": 0.1}, "duration_ms": 4}`, ""},
		{`[{"id": "20261122T052011.659613Z-4c2769"}]`, `named by "id"`},
		{`{"a": {"b": [{"tokens_in": 3}]}}`, `"tokens_in"`},
		{`{"tokens": {"input": 1}}`, `"tokens"`},
		{`{"cost": 0.5}`, "not the log's cost object"},
		{`{"cells": [{"cost": {"input_tokens": 3}}]}`, "no usd"},
		{`{"cost": {"input_tokens": 0, "usd": 1}}`, "zero field"},
		{`{"call_cost": {"in": 1, "usd": 1}}`, "not a field"},
		{`{"latency": 3}`, "NAME_ms"},
		{`{"started": "2026-11-22 05:20"}`, "RFC 3339"},
		{`{"n": 0, "scores": [{"name": "exact", "mean": 0, "stderr": null}]}`, "want null"},
		{`{"n": 0, "scores": [{"name": "exact", "mean": null, "stderr": null}], "latency_p50_ms": null}`, ""},
		{`{"result": {"id": "20261122T052011.659613Z-4c2769", "tokens": 1}}`, ""}, // the user's data
		{`{"config": {"mock": {"latency": "1ms"}}}`, ""},                          // the user's config
		// What the viewer's API used to say.
		{`{"runs": [{"run_id": "20261122T052011.659613Z-4c2769", "dir": "logs/20261122T052011.659613Z-4c2769", "totals": {"cost": {"input_tokens": 3, "usd": 0.1}, "duration_ms": 4}}]}`, ""},
		{`{"root": "logs", "runs": [{"id": "20261122T052011.659613Z-4c2769", "status": "ok"}]}`, `named by "id"`},
		{`{"messages": [{"index": 1, "ts": "0001-01-01 00:00:00"}]}`, "RFC 3339"},
		{`{"totals": {"cost": {"input_tokens": 3}}}`, "no usd"},
		{`{"config": {"mock": {"latency": "1ms"}, "tokens": 3}}`, ""},
		{`{"settings": {"latency": "1ms"}}`, ""},
		{`{"model_calls": 1, "latency": 3}`, "NAME_ms"},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.json), &v); err != nil {
			t.Fatal(err)
		}
		got := Problems(v, true)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: %q, want no problem", c.json, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: %q, want one problem with %q", c.json, got, c.want)
		}
	}
}
