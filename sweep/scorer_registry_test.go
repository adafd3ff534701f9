package sweep

import (
	"context"
	"strings"
	"testing"
)

// Scorers are registered as tactics are: a package-qualified name is found
// by its bare path, and an unknown name says what is registered in the
// same words.
func TestScorerRegistryAsTactics(t *testing.T) {
	RegisterScorer("sweeptest:length_ok", func(map[string]any, Env) (Scorer, error) {
		return ScorerFunc(func(_ context.Context, s *Sample) (float64, error) { return boolScore(len(s.Answer) <= 3), nil }), nil
	})
	for _, name := range []string{"sweeptest:length_ok", "length_ok"} {
		sc, err := NewScorer(name, nil, Env{})
		if err != nil {
			t.Fatalf("NewScorer(%q): %v", name, err)
		}
		if v, err := sc.Score(context.Background(), &Sample{Answer: "abc"}); v != 1 || err != nil {
			t.Errorf("%s scored %v, %v; want 1", name, v, err)
		}
	}
	_, err := NewScorer("lenght_ok", nil, Env{})
	if err == nil || !strings.Contains(err.Error(), `unknown scorer "lenght_ok" (did you mean "sweeptest:length_ok"?); registered scorers: `) {
		t.Errorf("an unknown scorer: %v", err)
	}
	for _, bad := range []string{"two words", "a:b:c", ":x"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterScorer(%q) did not panic", bad)
				}
			}()
			RegisterScorer(bad, func(map[string]any, Env) (Scorer, error) { return nil, nil })
		}()
	}
}
