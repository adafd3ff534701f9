package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// cutServer serves one agent and streams the start of a reply, then
// closes the stream: abruptly (the connection dropped mid-body, as when
// the server dies) or cleanly but without the reply's end event.
func cutServer(t *testing.T, abrupt bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/agents":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"agents": [{"name": "assistant"}]}`)
		case "/v1/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: start\ndata: {\"type\":\"start\",\"agent\":\"assistant\"}\n\n")
			fmt.Fprint(w, "event: text\ndata: {\"type\":\"text\",\"agent\":\"assistant\",\"text\":\"half a\"}\n\n")
			w.(http.Flusher).Flush()
			if abrupt {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close() // the chunked body never ends
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestChatStreamCutShort(t *testing.T) {
	for _, abrupt := range []bool{true, false} {
		t.Run(fmt.Sprintf("abrupt=%v", abrupt), func(t *testing.T) {
			srv := cutServer(t, abrupt)
			addr := strings.TrimPrefix(srv.URL, "http://")
			code, out, errs := chatRun(t, "hello\n", "assistant", "--sender", "bob", "--addr", addr)
			if code != ExitError {
				t.Errorf("exit %d, want %d", code, ExitError)
			}
			if !strings.Contains(out, "assistant: half a\n") {
				t.Errorf("the partial reply does not end its line:\n%q", out)
			}
			want := "lllm: the server closed the stream before the reply ended"
			if !strings.Contains(errs, want) || !strings.Contains(errs, "/history") || !strings.Contains(errs, addr) {
				t.Errorf("stderr does not say the stream was cut short (%q), where, and what to do:\n%s", want, errs)
			}
		})
	}
}

// TestChatInterruptedMidReply: Ctrl-C while a reply streams ends the
// partial reply's line, so that "lllm: interrupted" is not glued to it.
func TestChatInterruptedMidReply(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/agents":
			fmt.Fprint(w, `{"agents": [{"name": "assistant"}]}`)
		case "/v1/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: start\ndata: {\"type\":\"start\",\"agent\":\"assistant\"}\n\n")
			fmt.Fprint(w, "event: text\ndata: {\"type\":\"text\",\"agent\":\"assistant\",\"text\":\"half a\"}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done() // a slow model
		}
	}))
	defer srv.Close()
	seen := make(chan struct{})
	out := &signalWriter{want: "half a", seen: seen}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-seen; cancel() }() // the signal, as Execute turns it into
	root := NewRootCmd()
	root.SetArgs([]string{"chat", "assistant", "--addr", strings.TrimPrefix(srv.URL, "http://")})
	root.SetIn(strings.NewReader("hello\n"))
	root.SetOut(out)
	root.SetErr(io.Discard)
	if err := root.ExecuteContext(ctx); err == nil {
		t.Fatalf("an interrupted chat succeeded:\n%s", out.String())
	}
	if got := out.String(); got != "assistant: half a\n" {
		t.Errorf("stdout %q, want the partial reply's line ended", got)
	}
}

// signalWriter closes seen once what was written to it contains want.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if w.seen != nil && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
		w.seen = nil
	}
	return n, err
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
