package providertest

// The plumbing of the fakes whose endpoints are not one path suffix
// (Gemini's ":generateContent" and ":streamGenerateContent", Bedrock's
// "/model/{id}/invoke") or that refuse some requests as the real API does
// (a bad signature, a field the API does not know, a tool call left
// unanswered): they reuse Server's queue and recording, and hand the
// protocol the HTTP request along with the decoded body.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// checkFunc looks at a request before any scripted reply is used, and
// refuses it, with the error reply the real API would send, when that API
// would. A refused request is recorded and uses no scripted reply.
type checkFunc func(r *http.Request, body []byte) (refusal Reply, refused bool)

// newRoutedServer starts a fake whose requests reach p when route accepts
// them (others get a 404) and check does not refuse them. The server is
// closed when the test ends.
func newRoutedServer(t testing.TB, p protocol, replies []Reply, route func(*http.Request) bool, check checkFunc) *Server {
	t.Helper()
	s := &Server{
		protocol: p,
		queue:    append([]Reply(nil), replies...),
		def:      Reply{Text: "ok", Usage: Usage{Input: 10, Output: 1}},
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rw := &requestWriter{ResponseWriter: w, req: r}
		if !route(r) {
			s.note(r, body)
			http.Error(w, "no such endpoint: "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		if check != nil {
			if refusal, refused := check(r, body); refused {
				s.note(r, body)
				for k, vs := range refusal.Header {
					w.Header()[k] = vs
				}
				if refusal.RetryAfter != "" {
					w.Header().Set("Retry-After", refusal.RetryAfter)
				}
				p.writeError(rw, refusal)
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.serve(rw, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// note records a request that serve does not see.
func (s *Server) note(r *http.Request, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	if s.maxRecorded > 0 && len(s.reqs) > s.maxRecorded {
		s.reqs = append(s.reqs[:0], s.reqs[len(s.reqs)-s.maxRecorded:]...)
	}
}

// requestWriter is the ResponseWriter a routed protocol writes to: it
// carries the request, whose path and query choose the reply's shape.
type requestWriter struct {
	http.ResponseWriter
	req *http.Request
}

func (w *requestWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// requestOf is the request a routed protocol is answering.
func requestOf(w http.ResponseWriter) *http.Request {
	if rw, ok := w.(*requestWriter); ok {
		return rw.req
	}
	return &http.Request{}
}

// jsonObject decodes body as a JSON object, or returns nil.
func jsonObject(body []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil
	}
	return m
}

// objects returns the JSON objects of the array v; other elements are
// skipped.
func objects(v any) []map[string]any {
	raw, _ := v.([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, e := range raw {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// toolArgs is a tool call's arguments as a JSON object value.
func toolArgs(args string) map[string]any {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil || m == nil {
		return map[string]any{}
	}
	return m
}

// rawJSON is s, a JSON text, as a value that encodes as it is.
func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

// jsonMarshalString is v encoded as JSON text.
func jsonMarshalString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
