package provider

import (
	"context"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// A streamed request that declares no tools may still get tool calls (an
// agent's final prompt withdraws them): the calls are assembled from the
// stream by index, not taken from langchaingo, which appends every
// argument fragment to the last call.
func TestOpenAIStreamedToolCallsWithoutTools(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Reply{ToolCalls: twoCalls})
	m := openFake(t, "openai/gpt-4o", srv)
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{userMsg("Paris and Tokyo?")},
		Stream:   func(context.Context, Chunk) error { return nil },
	})
	if stream, _ := srv.LastRequest().JSON()["stream"].(bool); !stream {
		t.Fatal("the request was not streamed")
	}
	calls := resp.Message.FunctionCalls
	if len(calls) != 2 || resp.Message.Role != dialog.RoleToolCall {
		t.Fatalf("role %s, calls %+v", resp.Message.Role, calls)
	}
	for i, want := range twoCalls {
		if calls[i].ID != want.ID || calls[i].Name != want.Name || !jsonEqual(t, calls[i].Arguments, want.Arguments) {
			t.Errorf("call %d = %s %s(%s), want %+v", i, calls[i].ID, calls[i].Name, calls[i].Arguments, want)
		}
	}
}
