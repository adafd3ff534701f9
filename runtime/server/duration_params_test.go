package server

import (
	"strings"
	"testing"
	"time"
)

// A serve config's durations take a number of seconds, as call_timeout
// does; a bad one is an error naming its key.
func TestServeParamsDurationsInSeconds(t *testing.T) {
	const head = "tactic_type: serve\nglobal: {model_name: mock/x, tool_timeout: 1h}\nagent_configs: [{name: a, system_prompt: Hi.}]\n"
	for _, tc := range []struct {
		params     string
		ask, trash time.Duration
		err        string
	}{
		{"params: {ask_user_timeout: 300, trash_retention: 86400}\n", 5 * time.Minute, 24 * time.Hour, ""},
		{"params: {ask_user_timeout: 0.5, trash_retention: 0}\n", 500 * time.Millisecond, 0, ""},
		{"params: {ask_user_timeout: 0}\n", 0, 0, `serve.yaml:4:10: params.ask_user_timeout 0: want a positive duration such as 5m`},
		{"params: {trash_retention: -5}\n", 0, 0, `serve.yaml:4:10: params.trash_retention -5: want a duration such as 720h (30 days), or 0 to keep deleted conversations for ever`},
		{"params: {ask_user_timeout: [1]}\n", 0, 0, `serve.yaml:4:10: params.ask_user_timeout [1]: want a positive duration such as 5m`},
	} {
		got, err := fromYAML(t, head+tc.params)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: want an error with %q, got %v", tc.params, tc.err, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.params, err)
		case got.AskUserTimeout != tc.ask || got.TrashRetention != tc.trash:
			t.Errorf("%q: ask_user_timeout %v, trash_retention %v; want %v and %v", tc.params, got.AskUserTimeout, got.TrashRetention, tc.ask, tc.trash)
		}
	}
}
