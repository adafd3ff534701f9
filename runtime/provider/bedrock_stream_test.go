package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/lllm-go/lllm/dialog"
)

// newBedrockStreamFake is a bedrockFake whose reply, to
// InvokeModelWithResponseStream, is events, each an Anthropic streaming
// event, sent as Bedrock's "chunk" events and flushed one by one. Before an event, it waits on the channel wait
// gives it (nil: no wait), so a test can hold the stream until a chunk
// has reached the caller.
func newBedrockStreamFake(t *testing.T, wait func(i int) <-chan struct{}, events ...map[string]any) *bedrockFake {
	t.Helper()
	return newBedrockFake(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.Header().Set("X-Amzn-Bedrock-Content-Type", "application/json")
		w.Header().Set("X-Amzn-Requestid", "req-test")
		w.WriteHeader(http.StatusOK)
		enc := eventstream.NewEncoder()
		for i, ev := range events {
			if wait != nil {
				if ch := wait(i); ch != nil {
					select {
					case <-ch:
					case <-time.After(5 * time.Second):
						t.Errorf("event %d: the caller got no chunk of what was sent before it: the reply is not streamed", i)
					}
				}
			}
			raw, _ := json.Marshal(ev)
			payload, _ := json.Marshal(map[string][]byte{"bytes": raw}) // base64
			var h eventstream.Headers
			h.Set(":message-type", eventstream.StringValue("event"))
			h.Set(":event-type", eventstream.StringValue("chunk"))
			h.Set(":content-type", eventstream.StringValue("application/json"))
			if err := enc.Encode(w, eventstream.Message{Headers: h, Payload: payload}); err != nil {
				t.Errorf("encoding event %d: %v", i, err)
				return
			}
			w.(http.Flusher).Flush()
		}
	})
}

// anthropicStream is the events of a streamed Anthropic text reply of
// deltas, as Bedrock sends them for anthropic.* models.
func anthropicStream(stop string, in, out int, deltas ...string) []map[string]any {
	evs := []map[string]any{
		{"type": "message_start", "message": map[string]any{
			"id": "msg_bdrk_01", "type": "message", "role": "assistant", "model": "claude-3-5-sonnet-20240620",
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": 1},
		}},
		{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}},
	}
	for _, d := range deltas {
		evs = append(evs, map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": d}})
	}
	return append(evs,
		map[string]any{"type": "content_block_stop", "index": 0},
		map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}},
		map[string]any{"type": "message_stop", "amazon-bedrock-invocationMetrics": map[string]any{
			"inputTokenCount": in, "outputTokenCount": out, "invocationLatency": 420, "firstByteLatency": 180,
		}},
	)
}

// chunkCollector is a Request.Stream that keeps the chunks and signals
// the first one.
type chunkCollector struct {
	mu     sync.Mutex
	chunks []string
	first  chan struct{}
	once   sync.Once
}

func newChunkCollector() *chunkCollector { return &chunkCollector{first: make(chan struct{})} }

func (c *chunkCollector) stream(_ context.Context, ch Chunk) error {
	c.mu.Lock()
	c.chunks = append(c.chunks, ch.Text)
	c.mu.Unlock()
	c.once.Do(func() { close(c.first) })
	return nil
}

func (c *chunkCollector) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.chunks...)
}

// A streamed reply: the deltas reach Stream in order while the reply is
// still coming, the message is their concatenation with the usage of
// message_start and message_delta, and the request is a signed
// InvokeModelWithResponseStream of the model.
func TestBedrockStream(t *testing.T) {
	bedrockEnv(t)
	c := newChunkCollector()
	evs := anthropicStream("end_turn", 21, 9, "Hello", " from the stream.")
	secondDelta := 3 // message_start, content_block_start, delta 0, then this one
	f := newBedrockStreamFake(t, func(i int) <-chan struct{} {
		if i == secondDelta {
			return c.first
		}
		return nil
	}, evs...)
	m := openBedrockFake(t, f)
	resp := generate(t, m, &Request{Messages: []*dialog.Message{systemMsg("You are terse."), userMsg("Hi")}, Stream: c.stream})

	if got := c.got(); strings.Join(got, "|") != "Hello| from the stream." {
		t.Errorf("chunks = %q, want [\"Hello\" \" from the stream.\"]", got)
	}
	msg := resp.Message
	if msg.Role != dialog.RoleAssistant || msg.Content != "Hello from the stream." || len(msg.FunctionCalls) != 0 {
		t.Errorf("message = %s %q %v", msg.Role, msg.Content, msg.FunctionCalls)
	}
	if want := (dialog.Usage{InputTokens: 21, OutputTokens: 9}); msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}
	if msg.Model != "bedrock/"+bedrockModel || resp.FinishReason != "end_turn" {
		t.Errorf("model %q, finish %q", msg.Model, resp.FinishReason)
	}

	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if want := "/model/" + bedrockModel + "/invoke-with-response-stream"; reqs[0].Path != want {
		t.Errorf("path = %q, want %q", reqs[0].Path, want)
	}
	if auth := reqs[0].Header.Get("Authorization"); !strings.Contains(auth, "/us-east-1/bedrock/aws4_request") {
		t.Errorf("Authorization = %q, want it signed for us-east-1", auth)
	}
	if body := reqs[0].Body; body["anthropic_version"] != "bedrock-2023-05-31" || body["system"] != "You are terse." {
		t.Errorf("anthropic_version %v, system %v", body["anthropic_version"], body["system"])
	}
}

// A streamed reply cut short by max_tokens is not an error: the text
// streamed so far comes back, with FinishReason "max_tokens" and usage;
// the streamed request gets the params' edits too (a temperature of 0).
func TestBedrockStreamMaxTokens(t *testing.T) {
	bedrockEnv(t)
	c := newChunkCollector()
	f := newBedrockStreamFake(t, nil, anthropicStream("max_tokens", 12, 4, "Once upon", " a time")...)
	m := openBedrockFake(t, f)
	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{userMsg("Tell me a story")}, Params: Params{MaxTokens: ptr(4), Temperature: ptr(0.0)}, Stream: c.stream,
	})
	if got := c.got(); strings.Join(got, "|") != "Once upon| a time" {
		t.Errorf("chunks = %q", got)
	}
	if resp.Message.Content != "Once upon a time" || resp.FinishReason != "max_tokens" {
		t.Errorf("message %q, finish %q; want the truncated text and max_tokens", resp.Message.Content, resp.FinishReason)
	}
	if want := (dialog.Usage{InputTokens: 12, OutputTokens: 4}); resp.Message.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Message.Usage, want)
	}
	if body := f.last(t).Body; body["max_tokens"] != 4.0 || body["temperature"] != 0.0 {
		t.Errorf("max_tokens = %v, temperature = %v; want 4 and 0", body["max_tokens"], body["temperature"])
	}
}

// heldConn passes writes through but holds each after the first (the
// request's headers) until release is closed, as a slow net/http
// writeLoop would be; closed is closed when the client closes it.
type heldConn struct {
	net.Conn
	writes  atomic.Int32
	release <-chan struct{}
	closed  chan struct{}
	once    sync.Once
}

func (c *heldConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.writes.Add(1) > 1 && !bytes.HasPrefix(p, []byte("POST ")) {
		select {
		case <-c.release:
		case <-time.After(5 * time.Second):
		}
	}
	return n, err
}

func (c *heldConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// A stream survives a request write that ends after the response has
// begun: the SDK then closes the request body, and the connection must
// not be torn down under the stream.
func TestBedrockStreamLateRequestWrite(t *testing.T) {
	bedrockEnv(t)
	c := newChunkCollector()
	conn := &heldConn{release: c.first, closed: make(chan struct{})}
	f := newBedrockStreamFake(t, func(i int) <-chan struct{} {
		if i != 3 {
			return nil
		}
		// After the first chunk, give a torn-down connection time to show.
		ch := make(chan struct{})
		go func() {
			<-c.first
			select {
			case <-conn.closed:
			case <-time.After(300 * time.Millisecond):
			}
			close(ch)
		}()
		return ch
	}, anthropicStream("end_turn", 5, 3, "Hello", " again.")...)
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		conn.Conn = nc
		return conn, nil
	}}}
	m, err := Open(context.Background(), "bedrock/"+bedrockModel, Config{BaseURL: f.URL, Region: "us-east-1", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Hi")}, Stream: c.stream})
	if got := c.got(); resp.Message.Content != "Hello again." || strings.Join(got, "|") != "Hello| again." {
		t.Errorf("content %q, chunks %q", resp.Message.Content, got)
	}
}
