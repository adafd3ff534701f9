package provider

import (
	"context"
	"errors"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// A stream's last event is told by its JSON, whatever the spaces around
// its colons (Python servers write `"done": true`; Anthropic's documented
// error event is `{"type": "error", ...}`): a whole Ollama stream written
// so is a reply, not an unfinished one, and an Anthropic error event so
// written is the error it carries, not a stream cut short.
func TestStreamEndsWithSpaces(t *testing.T) {
	generateStream := func(model, ct, body string) (*Response, error) {
		srv := streamServer(t, ct, body, false)
		m, err := Open(context.Background(), model, Config{BaseURL: srv.URL, APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		return m.Generate(context.Background(), &Request{
			Messages: []*dialog.Message{userMsg("hi")},
			Stream:   func(context.Context, Chunk) error { return nil },
		})
	}

	ollama := `{"model": "q", "message": {"role": "assistant", "content": "Hi"}, "done": false}` + "\n" +
		`{"model": "q", "message": {"role": "assistant", "content": ""}, "done" : true, "done_reason": "stop"}` + "\n"
	resp, err := generateStream("ollama/qwen3", "application/x-ndjson", ollama)
	if err != nil || resp.Message.Text() != "Hi" {
		t.Errorf("a whole Ollama stream with spaces: %v (reply %+v)", err, resp)
	}
	if _, err := generateStream("ollama/qwen3", "application/x-ndjson", ollama[:len(ollama)/2]+"\n"); err == nil {
		t.Error("an Ollama stream without its last line made a reply")
	}

	event := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
	anthropic := event("message_start", `{"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}`) +
		event("content_block_start", `{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}`) +
		event("content_block_delta", `{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Par"}}`) +
		event("error", `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`)
	_, err = generateStream("anthropic/claude-sonnet-4-5", "text/event-stream", anthropic)
	var pe *Error
	if !errors.As(err, &pe) || pe.Kind != ErrServer {
		t.Errorf("an Anthropic overloaded error event with spaces: %v, want a server error", err)
	}
}
