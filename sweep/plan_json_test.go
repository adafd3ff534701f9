package sweep

import (
	"encoding/json"
	"testing"
)

// A dry run's cells have their settings as a report's cells do: a map of
// axis path to value.
func TestPlanCellJSONSettings(t *testing.T) {
	c := PlanCell{Hash: "h", Settings: Point{{Path: "global.model_name", Value: "mock/a"}, {Path: "params.n", Value: 3, Index: 1}}, Samples: 4, ToRun: 4}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Hash     string         `json:"hash"`
		Settings map[string]any `json:"settings"`
		ToRun    int            `json:"to_run"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Hash != "h" || got.ToRun != 4 || len(got.Settings) != 2 || got.Settings["global.model_name"] != "mock/a" || got.Settings["params.n"] != 3.0 {
		t.Errorf("%s", b)
	}
}
