package provider

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// An Ollama stream served without the ndjson content type (by a proxy, or
// an Ollama-compatible server) streams its thinking as reasoning all the
// same, in order, and its pieces add up to the reply's.
func TestOllamaStreamContentType(t *testing.T) {
	const lines = `{"model":"qwen3","message":{"role":"assistant","content":"","thinking":"Think A. "},"done":false}
{"model":"qwen3","message":{"role":"assistant","content":"","thinking":"Think B."},"done":false}
{"model":"qwen3","message":{"role":"assistant","content":"Hello"},"done":false}
{"model":"qwen3","message":{"role":"assistant","content":" world"},"done":false}
{"model":"qwen3","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":4}
`
	for _, ct := range []string{"application/x-ndjson", "application/json; charset=utf-8", "text/plain; charset=utf-8"} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", ct)
			io.WriteString(w, lines)
		}))
		m, err := Open(context.Background(), "ollama/qwen3", Config{BaseURL: s.URL})
		if err != nil {
			t.Fatal(err)
		}
		var r recorder
		msg := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Hi")}, Stream: r.stream}).Message
		if msg.Content != "Hello world" || msg.ReasoningText() != "Think A. Think B." {
			t.Errorf("%s: reply %q, reasoning %q", ct, msg.Content, msg.ReasoningText())
		}
		r.check(t, &msg, 2)
		s.Close()
	}
}
