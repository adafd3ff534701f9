package provider

import (
	"encoding/json"
	"testing"
)

// An empty object in extra_body merges as a JSON merge patch does: it
// leaves an object there as it is (model_args' own settings in it
// included), and makes an empty one where there is none or where there is
// something else.
func TestExtraBodyEmptyObjectMerges(t *testing.T) {
	for _, tc := range []struct{ body, extra, want string }{
		{`{"options":{"temperature":0.3,"top_p":0.3}}`, `{"options":{}}`, `{"options":{"temperature":0.3,"top_p":0.3}}`},
		{`{"model":"m"}`, `{"web_search_options":{}}`, `{"model":"m","web_search_options":{}}`},
		{`{"a":1}`, `{"a":{}}`, `{"a":{}}`},
		{`{"generationConfig":{"candidateCount":1}}`, `{"generationConfig":{"thinkingConfig":{}}}`, `{"generationConfig":{"candidateCount":1,"thinkingConfig":{}}}`},
		{`{"generationConfig":{"thinkingConfig":{"thinkingBudget":5}}}`, `{"generationConfig":{"thinkingConfig":{}}}`, `{"generationConfig":{"thinkingConfig":{"thinkingBudget":5}}}`},
	} {
		es, err := extraEdits(json.RawMessage(tc.extra))
		if err != nil {
			t.Fatal(err)
		}
		got, err := editJSON([]byte(tc.body), es)
		if err != nil {
			t.Fatalf("%s + %s: %v", tc.body, tc.extra, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s + extra_body %s = %s, want %s", tc.body, tc.extra, got, tc.want)
		}
	}
}
