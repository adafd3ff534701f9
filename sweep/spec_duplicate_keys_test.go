package sweep

import (
	"strings"
	"testing"
)

// A key written twice in a sweep spec, at the top or in a nested map, is
// one problem at its line (as in a tactic config), the first value
// stands, and the rest of the spec is still checked: no false "no config"
// or "no dataset" because the map that held the repeat was skipped.
func TestParseSpecDuplicateKeys(t *testing.T) {
	for name, tc := range map[string]struct {
		spec string
		want []string
	}{
		"top level": {
			spec: "config: c.yaml\ndataset: d.jsonl\nrepeats: 2\nrepeats: 3\nrepeets: 2\n",
			want: []string{
				`s.yaml:4:1: duplicate key "repeats" (first at line 3)`,
				`s.yaml:5: unknown key "repeets" (did you mean "repeats"?)`,
			},
		},
		"in dataset": {
			spec: "config: c.yaml\ndataset:\n  path: d.jsonl\n  input: q\n  input: question\n",
			want: []string{`s.yaml:5:3: duplicate key "input" (first at line 4)`},
		},
		"in budget": {
			spec: "config: c.yaml\ndataset: d.jsonl\nbudget: {max_cost: 1, max_cost: 2}\n",
			want: []string{`s.yaml:3:23: duplicate key "max_cost" (first at line 3)`},
		},
	} {
		_, err := ParseSpec("s.yaml", []byte(tc.spec))
		if err == nil {
			t.Errorf("%s: no problem", name)
			continue
		}
		got := strings.Split(err.Error(), "\n")
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d problems, want %d:\n%v", name, len(got), len(tc.want), err)
			continue
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(got[i], w) {
				t.Errorf("%s: problem %d is %q, want it to start %q", name, i+1, got[i], w)
			}
		}
	}
}
