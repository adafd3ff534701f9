package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/runtime/config"
)

// A negative params.max_content_bytes is an error at its place (it
// silently meant the default), and so is one over 1 GiB (the body limit,
// six times it, overflowed and refused every request).
func TestServeParamsMaxContentBytes(t *testing.T) {
	const head = "tactic_type: serve\nglobal: {model_name: mock/x}\nagent_configs: [{name: a, system_prompt: Hi.}]\n"
	for _, tc := range []struct {
		params string
		want   int
		err    string
	}{
		{"", 0, ""},
		{"params: {max_content_bytes: 0}\n", 0, ""},
		{"params: {max_content_bytes: 1000}\n", 1000, ""},
		{"params: {max_content_bytes: -1}\n", 0, `serve.yaml:4:10: params.max_content_bytes is -1: want a number of bytes such as 65536, at most 1073741824 (1 GiB), or 0 for the default (65536)`},
		{"params: {max_content_bytes: 1073741824}\n", 1 << 30, ""},
		{"params: {max_content_bytes: 9223372036854775807}\n", 0, `serve.yaml:4:10: params.max_content_bytes is 9223372036854775807: want`},
		{"params:\n  data_dir: d\n  max_content_bytes: -65536\n", 0, `serve.yaml:6:3: params.max_content_bytes is -65536`},
	} {
		got, err := fromYAML(t, head+tc.params)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: want an error with %q, got %v", tc.params, tc.err, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.params, err)
		case got.MaxContentBytes != tc.want:
			t.Errorf("%q: MaxContentBytes %d, want %d", tc.params, got.MaxContentBytes, tc.want)
		}
	}
}

// fromYAML is FromConfig of the serve config body, in a file serve.yaml.
func fromYAML(t *testing.T, body string) (*Config, error) {
	t.Helper()
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "serve.yaml"), []byte(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	return FromConfig(context.Background(), cfg)
}
