package provider

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
)

// TestMockCountsToolDeclarations: the mock's input tokens include what the
// request's tool declarations cost, as a context manager counts them
// (contextmgr.Tokenizer.CountTools), as a real provider's usage does.
func TestMockCountsToolDeclarations(t *testing.T) {
	search, err := dialog.NewFunctionSchema("search", "Search the web for pages about a query and return the ten best.",
		json.RawMessage(`{"type": "object", "properties": {"query": {"type": "string", "description": "what to look for"}}, "required": ["query"]}`),
		func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	tools := []*dialog.Function{weatherTool(t), search}
	msgs := []*dialog.Message{systemMsg("sys"), userMsg("What is the weather in Paris?")}
	for _, name := range []string{"mock/test", "mock/gpt-4"} {
		m, err := Open(t.Context(), name, Config{Mock: &MockConfig{}})
		if err != nil {
			t.Fatal(err)
		}
		bare := generate(t, m, &Request{Messages: msgs}).Message.Usage.InputTokens
		with := generate(t, m, &Request{Messages: msgs, Tools: tools}).Message.Usage.InputTokens
		want := contextmgr.NewTokenizer().CountTools(name, tools)
		if want == 0 || with-bare != want {
			t.Errorf("%s: input tokens %d with the tools, %d without: the tools counted %d, want %d (contextmgr's count)", name, with, bare, with-bare, want)
		}
	}
}
