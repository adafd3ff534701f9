// Package vocab holds the rules of the run log's vocabulary, which every
// machine-readable output of lllm speaks (every -o json of the CLI, the
// viewer's API): a run is run_id, spending is the log's cost object
// (dialog.Cost), durations are NAME_ms, times RFC 3339, and a sweep cell
// with nothing finished has null means and latencies. Tests walk outputs
// with Problems, so that one added later that names things otherwise is
// caught.
package vocab

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// RunID matches a run id, wherever it appears as a whole value.
var RunID = regexp.MustCompile(`^\d{8}T\d{6}\.\d{6}Z-[0-9a-f]{6}$`)

// dataKeys hold the user's data (a result, labels, a config and its
// paths' values, a parser's output), whose keys are not lllm's to name.
var dataKeys = map[string]bool{
	"result": true, "settings": true, "labels": true, "parsed": true, "metadata": true,
	"arguments": true, "params": true, "task": true, "pass_at_k": true, "config": true,
}

// costKeys are the fields of the run log's cost object (dialog.Cost).
var costKeys = []string{"input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens", "usd"}

// badKeys name what the vocabulary names otherwise.
var badKeys = map[string]string{
	"tokens":     "spending is cost, the log's cost object",
	"tokens_in":  "input tokens are cost.input_tokens",
	"tokens_out": "output tokens are cost.output_tokens",
}

// Problems walks v, a decoded JSON value (as encoding/json decodes into
// an any), and returns where it departs from the vocabulary, one line
// each. priced says every model call was priced, so that a cost with
// tokens must have dollars too.
func Problems(v any, priced bool) []string { return problems(v, "", "", priced) }

// problems is Problems of v, found at the path at under key.
func problems(v any, at, key string, priced bool) []string {
	var bad []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			where := at + "." + k
			if why, ok := badKeys[k]; ok {
				bad = append(bad, fmt.Sprintf("%s: key %q: %s", where, k, why))
			}
			if k == "cost" || strings.HasSuffix(k, "_cost") {
				bad = append(bad, checkCost(x, where, priced)...)
			}
			if (strings.Contains(k, "duration") || strings.Contains(k, "latency")) && !strings.HasSuffix(k, "_ms") {
				bad = append(bad, fmt.Sprintf("%s: a duration is NAME_ms, in milliseconds", where))
			}
			if strings.HasSuffix(k, "_ms") {
				if _, isNumber := x.(float64); !isNumber && x != nil {
					bad = append(bad, fmt.Sprintf("%s: %v is not a number of milliseconds", where, x))
				}
			}
			if k == "started" || k == "ended" || k == "ts" {
				if s, ok := x.(string); !ok || !isTime(s) {
					bad = append(bad, fmt.Sprintf("%s: %v is not an RFC 3339 time", where, x))
				}
			}
			if k == "n" && x == 0.0 {
				bad = append(bad, unfinishedCell(v, at)...)
			}
			if dataKeys[k] {
				continue
			}
			bad = append(bad, problems(x, where, k, priced)...)
		}
	case []any:
		for i, x := range v {
			bad = append(bad, problems(x, fmt.Sprintf("%s[%d]", at, i), key, priced)...)
		}
	case string:
		if RunID.MatchString(v) && key != "run_id" && key != "replay_of" {
			bad = append(bad, fmt.Sprintf("%s: the run %s is named by %q; a run is run_id", at, v, key))
		}
		if dateLike.MatchString(v) && !isTime(v) {
			bad = append(bad, fmt.Sprintf("%s: time %q is not RFC 3339", at, v))
		}
	}
	return bad
}

// dateLike matches a string that starts as a date and time do.
var dateLike = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T`)

func isTime(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// checkCost checks a cost: the log's cost object, with dollars when it
// has tokens and the calls were priced.
func checkCost(v any, at string, priced bool) []string {
	c, ok := v.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: cost %v is not the log's cost object", at, v)}
	}
	var bad []string
	tokens := 0.0
	for k, x := range c {
		n, isNumber := x.(float64)
		switch {
		case !slices.Contains(costKeys, k):
			bad = append(bad, fmt.Sprintf("%s.%s: not a field of the log's cost object", at, k))
		case !isNumber:
			bad = append(bad, fmt.Sprintf("%s.%s: %v is not a number", at, k, x))
		case n == 0:
			bad = append(bad, fmt.Sprintf("%s.%s: a zero field is left out", at, k))
		case k != "usd":
			tokens += n
		}
	}
	if _, hasUSD := c["usd"]; priced && tokens > 0 && !hasUSD {
		bad = append(bad, fmt.Sprintf("%s: %v tokens of priced calls and no usd", at, tokens))
	}
	return bad
}

// unfinishedCell checks a sweep cell with no finished sample: its
// means, standard errors and latencies are null, not a 0 that reads as a
// result.
func unfinishedCell(cell map[string]any, at string) []string {
	var bad []string
	scores, _ := cell["scores"].([]any)
	for i, s := range scores {
		s, _ := s.(map[string]any)
		for _, k := range []string{"mean", "stderr"} {
			if x, ok := s[k]; !ok || x != nil {
				bad = append(bad, fmt.Sprintf("%s.scores[%d].%s: %v in a cell with n 0, want null", at, i, k, x))
			}
		}
	}
	for _, k := range []string{"latency_p50_ms", "latency_p95_ms"} {
		if x, ok := cell[k]; ok && x != nil {
			bad = append(bad, fmt.Sprintf("%s.%s: %v in a cell with n 0, want null", at, k, x))
		}
	}
	return bad
}
