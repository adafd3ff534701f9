package provider

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// A response whose connection is reset in the middle of its body is a
// network failure, retryable, whatever the client's decoder says of it.
func TestResponseCutShort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"id\":\"x\",\"choices\":[{\"message\":")
		buf.Flush()
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not a clean close
		}
		conn.Close()
	}))
	defer srv.Close()
	for _, tc := range []struct{ model, base string }{
		{"openai/gpt-4o-mini", srv.URL + "/v1"},
		{"anthropic/claude-sonnet-4-5", srv.URL},
		{"ollama/llama3.1", srv.URL},
	} {
		t.Run(tc.model, func(t *testing.T) {
			m, err := Open(context.Background(), tc.model, Config{BaseURL: tc.base, APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			pe := generateErr(t, ctx, m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
			if pe.Kind != ErrNetwork || !pe.Retryable() {
				t.Fatalf("kind %s (%v), want a retryable network error", pe.Kind, pe)
			}
		})
	}
}
