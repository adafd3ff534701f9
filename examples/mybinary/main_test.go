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
