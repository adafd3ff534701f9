package tactics

import (
	"strings"
	"testing"
)

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
