package config

import (
	"strings"
	"testing"
)

// A key written twice in an anchored map is one problem, however many
// aliases name the map; and the problems come in file order, a repeat in
// a nested map before a later repeat of the map's own key.
func TestDuplicateKeyInAnchoredMapReportedOnce(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml string
		want []string
	}{
		"aliased twice": {
			yaml: "tactic_type: x\nx: &a {k: 1, k: 2}\ny: *a\nz: *a\n",
			want: []string{`t.yaml:2:14: duplicate key "k" (first at line 2)`},
		},
		"merged": {
			yaml: "tactic_type: x\nx: &a\n  k: 1\n  k: 2\ny:\n  <<: *a\n",
			want: []string{`t.yaml:4:3: duplicate key "k" (first at line 3)`},
		},
		"nested then outer": {
			yaml: "tactic_type: x\nglobal:\n  m: 1\n  m: 2\nglobal: {}\n",
			want: []string{
				`t.yaml:4:3: duplicate key "m" (first at line 3)`,
				`t.yaml:5:1: duplicate key "global" (first at line 2)`,
			},
		},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml), nil)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\ngot  %q\nwant %q", name, got, tc.want)
		}
	}
}

// An override value with a key written twice is refused at the repeat.
func TestSetDuplicateKey(t *testing.T) {
	_, err := parseValue("{a: 1, a: 2}")
	if err == nil || !strings.Contains(err.Error(), `duplicate key "a" (first at line 1)`) {
		t.Fatalf("parseValue: %v", err)
	}
}
