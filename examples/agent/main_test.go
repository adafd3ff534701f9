package main

import (
	"testing"

	"github.com/lllm-go/lllm/logs"
)

func TestAgentExampleOffline(t *testing.T) {
	dir := t.TempDir()
	if err := run(t.Context(), "mock/demo", "", dir); err != nil {
		t.Fatal(err)
	}
	list, err := logs.List(dir)
	if err != nil || len(list) != 1 {
		t.Fatalf("runs: %v %v", list, err)
	}
	tot := list[0].End.Totals
	if list[0].Status() != logs.StatusOK || tot.ModelCalls != 2 || tot.ToolCalls != 1 || tot.Cost.InputTokens == 0 {
		t.Fatalf("summary %+v totals %+v", list[0].End, tot)
	}
}
