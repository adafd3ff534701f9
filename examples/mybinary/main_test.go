package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/lllm-go/lllm/cmd/lllm/cli"
)

func TestOwnTacticThroughTheCLI(t *testing.T) {
	var out, errOut bytes.Buffer
	code := cli.Execute(t.Context(), []string{"run", "shout.yaml", "--task", "hello", "--log-dir", t.TempDir(), "-o", "json"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var res struct {
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if res.Status != "ok" || string(res.Result) != `"HELLO TO YOU TOO."` {
		t.Fatalf("result = %+v", res)
	}
}

// The tactic's param comes from the config; a typo in it is one usage
// error placed where it was written, with a suggestion.
func TestOwnTacticParams(t *testing.T) {
	var out, errOut bytes.Buffer
	code := cli.Execute(t.Context(), []string{"run", "shout.yaml", "--task", "hello", "--log-dir", t.TempDir(), "-o", "json", "--set", "params.marks=2"}, &out, &errOut)
	if code != 0 || !bytes.Contains(out.Bytes(), []byte(`"HELLO TO YOU TOO.!!"`)) {
		t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	errOut.Reset()
	code = cli.Execute(t.Context(), []string{"run", "shout.yaml", "--task", "hello", "--log-dir", t.TempDir(), "--set", "params.markz=2"}, &out, &errOut)
	if want := `--set params.markz: tactic shout: unknown param "markz" (did you mean "marks"?)`; code != cli.ExitUsage || !bytes.Contains(errOut.Bytes(), []byte(want)) {
		t.Fatalf("exit %d: %s, want %q", code, errOut.String(), want)
	}
}
