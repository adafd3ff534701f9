package sweep

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

func init() {
	// The custom scorer of docs/sweeps.md, with a param of its own.
	RegisterScorer("decodetest:short_enough", func(params map[string]any, env Env) (Scorer, error) {
		p := struct {
			Max int `json:"max"`
		}{Max: 280}
		if err := DecodeParams(params, &p); err != nil {
			return nil, err
		}
		return ScorerFunc(func(_ context.Context, s *Sample) (float64, error) {
			return boolScore(len(s.Answer) <= p.Max), nil
		}), nil
	})
}

// A custom scorer decodes its params with DecodeParams: a typo or a wrong
// type is a problem of the spec at the scorer's line, and a param given
// is the one it scores with.
func TestScorerDecodeParams(t *testing.T) {
	for _, c := range []struct{ scorer, want string }{
		{"{type: decodetest:short_enough, maxx: 1}", `sweep.yaml:5: unknown param "maxx" (did you mean "max"?)`},
		{"{type: decodetest:short_enough, max: lots}", `sweep.yaml:5: param max must be an integer, not "lots"`},
	} {
		path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\ncache: off\nscorers:\n  - "+c.scorer+"\n", map[string]string{})
		spec, err := LoadSpec(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(t.Context(), spec, Options{Dir: t.TempDir()})
		var se *SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a *SpecError saying %s", c.scorer, err, c.want)
		}
	}
	// The mock answers 2, 4, 6, 8, 11 and 12: max 1 passes the four of one digit.
	path := writeSweep(t, "config: config.yaml\ndataset: rows.jsonl\ncache: off\nscorers:\n  - {type: decodetest:short_enough, max: 1}\n", map[string]string{})
	rep := run(t, path, Options{})
	if len(rep.Cells) != 1 || math.Abs(rep.Cells[0].Scores[0].Mean*6-4) > 1e-9 {
		t.Errorf("cells %+v; want one scoring 4 of 6", rep.Cells)
	}
}
