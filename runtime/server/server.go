// Package server serves a conversation.Service over HTTP: JSON in and
// out, and Server-Sent Events for the replies as they stream. See
// docs/conversations.md for the API.
//
//	POST /v1/stream   {agent, sender?, content, cwd?, guest?}  -> SSE: start, reasoning, text, tool, ask, error, end
//	POST /v1/kill     {agent, sender}
//	POST /v1/compact  {agent, sender}
//	POST /v1/reply    {agent, sender, content}
//	POST /v1/mark-read {agent, sender}
//	GET  /v1/search?q=TEXT&agent=&sender=&limit=&archives=
//	GET  /v1/conversations
//	DELETE /v1/conversations/{agent}/{sender}
//	GET  /v1/conversations/{agent}/{sender}/messages
//	GET  /v1/conversations/{agent}/{sender}/archives
//	GET  /v1/conversations/{agent}/{sender}/archives/{id}
//	GET  /v1/agents
//
// Errors are JSON objects {"error": "...", "code": "..."} with a 4xx or
// 5xx status; a request that is refused stores nothing.
package server

import (
	"bytes"
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/runtime/conversation"
)

// DefaultMaxContentBytes is the largest content a request may carry when
// Options.MaxContentBytes is zero.
const DefaultMaxContentBytes = 64 << 10

// MaxMaxContentBytes is the largest Options.MaxContentBytes a Server takes
// (1 GiB): a request's body, which may spell a content byte in six, must
// stay countable.
const MaxMaxContentBytes = 1 << 30

// DefaultSender is the sender of a stream request that names none.
const DefaultSender = "user"

// Options adjust a Server. The zero value serves loopback clients without
// authentication.
type Options struct {
	// Token, when set, is the bearer token every request must carry in
	// "Authorization: Bearer TOKEN".
	Token string
	// AllowRemote serves clients that are not on a loopback address even
	// without a Token. By default they are refused (403).
	AllowRemote bool
	// MaxContentBytes bounds a request's content; zero means
	// DefaultMaxContentBytes, and above MaxMaxContentBytes it is that.
	MaxContentBytes int
	// KeepAlive is how often a stream with nothing to send (a run waiting
	// on ask_user or a slow model) sends an SSE comment, so that proxies
	// and clients with an idle timeout keep it open; zero means
	// DefaultKeepAlive.
	KeepAlive time.Duration
	// WriteTimeout bounds each write of a stream: a client that reads
	// nothing for that long (its socket buffers full) is cut off, and its
	// run ends as for a client that went away, rather than holding the
	// conversation busy, past a kill, until the connection dies; zero
	// means DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// DefaultWriteTimeout is the WriteTimeout of Options that set none.
const DefaultWriteTimeout = 30 * time.Second

// DefaultKeepAlive is the KeepAlive of Options that set none: below the
// 60 seconds idle timeout common to proxies.
const DefaultKeepAlive = 15 * time.Second

// Server is an http.Handler serving a conversation.Service.
type Server struct {
	svc  *conversation.Service
	opts Options
	mux  *http.ServeMux
}

// New returns a Server for svc.
func New(svc *conversation.Service, opts Options) *Server {
	if opts.MaxContentBytes <= 0 {
		opts.MaxContentBytes = DefaultMaxContentBytes
	}
	opts.MaxContentBytes = min(opts.MaxContentBytes, MaxMaxContentBytes)
	s := &Server{svc: svc, opts: opts, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /v1/stream", s.stream)
	s.mux.HandleFunc("POST /v1/kill", s.kill)
	s.mux.HandleFunc("POST /v1/compact", s.compact)
	s.mux.HandleFunc("POST /v1/reply", s.reply)
	s.mux.HandleFunc("POST /v1/mark-read", s.markRead)
	s.mux.HandleFunc("GET /v1/search", s.search)
	s.mux.HandleFunc("GET /v1/conversations", s.conversations)
	s.mux.HandleFunc("DELETE /v1/conversations/{agent}/{sender}", s.deleteConversation)
	s.mux.HandleFunc("GET /v1/conversations/{agent}/{sender}/messages", s.messages)
	s.mux.HandleFunc("GET /v1/conversations/{agent}/{sender}/archives", s.archives)
	s.mux.HandleFunc("GET /v1/conversations/{agent}/{sender}/archives/{id}", s.archive)
	s.mux.HandleFunc("GET /v1/agents", s.agents)
	for path, allow := range map[string]string{
		"/v1/stream": "POST", "/v1/kill": "POST", "/v1/compact": "POST", "/v1/reply": "POST", "/v1/mark-read": "POST",
		"/v1/search": "GET, HEAD", "/v1/conversations/{agent}/{sender}": "DELETE",
		"/v1/conversations": "GET, HEAD", "/v1/conversations/{agent}/{sender}/messages": "GET, HEAD",
		"/v1/conversations/{agent}/{sender}/archives": "GET, HEAD", "/v1/conversations/{agent}/{sender}/archives/{id}": "GET, HEAD",
		"/v1/agents": "GET, HEAD",
	} {
		s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s %s: this endpoint takes %s", r.Method, r.URL.Path, allow))
		})
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no endpoint %s %s (see docs/conversations.md)", r.Method, r.URL.Path))
	})
	return s
}

// ServeHTTP checks the client and its token, then serves the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opts.Token != "" {
		auth := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lllm"`)
			msg := "missing bearer token: send Authorization: Bearer TOKEN (lllm chat: pass --token-env NAME, the variable holding it)"
			if ok {
				msg = "wrong bearer token"
			}
			writeError(w, http.StatusUnauthorized, "unauthorized", msg)
			return
		}
	} else if !s.opts.AllowRemote && !isLoopback(r.RemoteAddr) {
		writeError(w, http.StatusForbidden, "forbidden", "this server serves loopback clients only: set a token to serve others")
		return
	}
	s.mux.ServeHTTP(w, r)
}

func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether the listen address addr ("host:port")
// is on a loopback interface only.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Error is the body of every error response.
type Error struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status, b = http.StatusInternalServerError, *bytes.NewBufferString(`{"error":"encoding the response failed","code":"internal"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, Error{Error: msg, Code: code})
}

// fail writes err with the status its kind calls for.
func fail(w http.ResponseWriter, err error) {
	status, code := http.StatusInternalServerError, "internal"
	switch {
	case errors.Is(err, conversation.ErrUnknownAgent):
		status, code = http.StatusNotFound, "unknown_agent"
	case errors.Is(err, conversation.ErrUnknownGuest):
		status, code = http.StatusBadRequest, "unknown_guest"
	case errors.Is(err, conversation.ErrGuestNotAdmitted):
		status, code = http.StatusForbidden, "guest_not_admitted"
	case errors.Is(err, conversation.ErrBadName):
		status, code = http.StatusBadRequest, "bad_name"
	case errors.Is(err, conversation.ErrEmptyContent):
		status, code = http.StatusBadRequest, "empty_content"
	case errors.Is(err, conversation.ErrBusy):
		status, code = http.StatusConflict, "busy"
	case errors.Is(err, conversation.ErrNotRunning):
		status, code = http.StatusConflict, "not_running"
	case errors.Is(err, conversation.ErrNothingPending):
		status, code = http.StatusConflict, "nothing_pending"
	case errors.Is(err, conversation.ErrNothingToCompact):
		status, code = http.StatusConflict, "nothing_to_compact"
	case errors.Is(err, conversation.ErrNoArchive):
		status, code = http.StatusNotFound, "no_archive"
	case errors.Is(err, conversation.ErrNoConversation):
		status, code = http.StatusNotFound, "no_conversation"
	case errors.Is(err, conversation.ErrEmptyQuery):
		status, code = http.StatusBadRequest, "empty_query"
	}
	writeError(w, status, code, err.Error())
}

// request is the body of the POST endpoints.
type request struct {
	Agent   string `json:"agent"`
	Sender  string `json:"sender"`
	Content string `json:"content"`
	CWD     string `json:"cwd"`
	Guest   string `json:"guest"`
}

// decode reads r's JSON body into a request, allowing only the fields
// named in allowed. It writes the error response and returns false when
// the body is bad.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, req *request, allowed ...string) bool {
	// JSON may spell one content byte in up to six (\u00XX).
	limit := 6*int64(s.opts.MaxContentBytes) + 16<<10
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("request body over %d bytes: content may have at most %d bytes", limit, s.opts.MaxContentBytes))
		} else {
			writeError(w, http.StatusBadRequest, "bad_body", "reading the request body: "+err.Error())
		}
		return false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		msg := "malformed JSON: "
		var te *json.UnmarshalTypeError
		switch {
		case err == nil:
			msg += "the body must be a JSON object, not null"
		case errors.As(err, &te): // any JSON value fits a field's RawMessage
			msg += "the body must be a JSON object, not " + jsontext.Kind(te.Value)
		default:
			msg += err.Error()
		}
		writeError(w, http.StatusBadRequest, "malformed_json", msg)
		return false
	}
	for k := range fields {
		if !slices.Contains(allowed, k) {
			writeError(w, http.StatusBadRequest, "unknown_field", fmt.Sprintf("unknown field %q (this endpoint takes %s)", k, strings.Join(allowed, ", ")))
			return false
		}
	}
	if err := json.Unmarshal(body, req); err != nil {
		msg := "malformed JSON: " + err.Error()
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Field != "" {
			msg = fmt.Sprintf("field %s must be a %s, not a %s", te.Field, jsonKind(te.Type.Kind()), te.Value)
		}
		writeError(w, http.StatusBadRequest, "malformed_json", msg)
		return false
	}
	if len(req.Content) > s.opts.MaxContentBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("content has %d bytes, over the limit of %d", len(req.Content), s.opts.MaxContentBytes))
		return false
	}
	return true
}

// jsonKind names a Go kind as JSON does.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "number"
	}
	return "value of another kind"
}

// need checks that the named fields are set.
func need(w http.ResponseWriter, req *request, names ...string) bool {
	var missing []string
	for _, n := range names {
		var v string
		switch n {
		case "agent":
			v = req.Agent
		case "sender":
			v = req.Sender
		case "content":
			v = req.Content // blank content is the service's empty_content
		}
		if v == "" {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		msg := "missing field: " + strings.Join(missing, ", ")
		if slices.Contains(missing, "sender") {
			msg += ` (whose conversation it is: a stream request that named no sender was sent as "` + DefaultSender + `")`
		}
		writeError(w, http.StatusBadRequest, "missing_field", msg)
		return false
	}
	return true
}

// sse writes Server-Sent Events, committing the response on the first.
type sse struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration // for each write
	begun   bool
	err     error
}

// deadline bounds the next write, so that a client that stopped reading
// cannot block the run forever.
func (e *sse) deadline() {
	_ = e.rc.SetWriteDeadline(time.Now().Add(e.timeout))
}

// keepAlive writes an SSE comment every interval once the stream has
// begun, until stop closes; it closes stopped when it is done.
func (e *sse) keepAlive(every time.Duration, stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			e.mu.Lock()
			if e.begun && e.err == nil {
				e.deadline()
				if _, err := io.WriteString(e.w, ": keep-alive\n\n"); err != nil {
					e.err = err
				} else if err := e.rc.Flush(); err != nil {
					e.err = err
				}
			}
			e.mu.Unlock()
		}
	}
}

func (e *sse) emit(ev conversation.Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return e.err
	}
	e.deadline()
	if !e.begun {
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		e.w.WriteHeader(http.StatusOK)
		e.begun = true
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", ev.Type, data); err != nil {
		e.err = err
		return err
	}
	if err := e.rc.Flush(); err != nil {
		e.err = err
	}
	return e.err
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	var req request
	if !s.decode(w, r, &req, "agent", "sender", "content", "cwd", "guest") || !need(w, &req, "agent", "content") {
		return
	}
	if req.Sender == "" {
		req.Sender = DefaultSender
	}
	rr := conversation.RunRequest{Agent: req.Agent, Sender: req.Sender, Content: req.Content, CWD: req.CWD, Guest: req.Guest}
	if err := s.svc.Check(rr); err != nil {
		fail(w, err)
		return
	}
	out := &sse{w: w, rc: http.NewResponseController(w), timeout: cmp.Or(s.opts.WriteTimeout, DefaultWriteTimeout)}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go out.keepAlive(cmp.Or(s.opts.KeepAlive, DefaultKeepAlive), stop, stopped)
	_, err := s.svc.Run(r.Context(), rr, out.emit)
	close(stop)
	<-stopped // nothing is written after the handler returns
	// The connection may serve another request: no deadline of ours on it.
	defer func() { _ = out.rc.SetWriteDeadline(time.Time{}) }()
	out.mu.Lock()
	begun := out.begun
	out.mu.Unlock()
	if err != nil && !begun {
		fail(w, err) // refused before the run started (busy): nothing stored
	}
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request) {
	var req request
	if !s.decode(w, r, &req, "agent", "sender") || !need(w, &req, "agent", "sender") {
		return
	}
	if err := s.svc.Kill(req.Agent, req.Sender); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"killed": true, "agent": req.Agent, "sender": req.Sender})
}

func (s *Server) compact(w http.ResponseWriter, r *http.Request) {
	var req request
	if !s.decode(w, r, &req, "agent", "sender") || !need(w, &req, "agent", "sender") {
		return
	}
	a, err := s.svc.Compact(r.Context(), req.Agent, req.Sender)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) reply(w http.ResponseWriter, r *http.Request) {
	var req request
	if !s.decode(w, r, &req, "agent", "sender", "content") || !need(w, &req, "agent", "sender", "content") {
		return
	}
	if err := s.svc.Reply(req.Agent, req.Sender, req.Content); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"answered": true})
}

func (s *Server) conversations(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"conversations": s.svc.Store().List()})
}

// lookup resolves the path's conversation; ok is false when a response
// was written. A conversation never stored in is nil, without error.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (agent, sender string, c *conversation.Conversation, ok bool) {
	agent, sender = r.PathValue("agent"), r.PathValue("sender")
	if err := errors.Join(conversation.CheckName("agent", agent), conversation.CheckName("sender", sender)); err != nil {
		fail(w, err)
		return "", "", nil, false
	}
	c, _ = s.svc.Store().Lookup(agent, sender)
	// A conversation stored for an agent the config no longer has is
	// listed, so it can be read too; only an unknown agent with nothing
	// stored is an error.
	if _, err := s.svc.Agent(agent); err != nil && c == nil {
		fail(w, err)
		return "", "", nil, false
	}
	return agent, sender, c, true
}

// MessagesResponse is the body of GET .../messages.
type MessagesResponse struct {
	conversation.Summary
	Running  bool                 `json:"running"`
	Pending  bool                 `json:"pending"`
	Messages []conversation.Entry `json:"messages"`
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	agent, sender, c, ok := s.lookup(w, r)
	if !ok {
		return
	}
	resp := MessagesResponse{Summary: conversation.Summary{Agent: agent, Sender: sender, Participants: []string{sender, agent}},
		Messages: []conversation.Entry{}}
	if c != nil {
		resp.Summary, resp.Messages = c.Summary(), c.Messages()
	}
	resp.Running, resp.Pending = s.svc.Running(agent, sender), s.svc.Pending(agent, sender)
	writeJSON(w, http.StatusOK, resp)
}

// ArchiveInfo is one archive in GET .../archives.
type ArchiveInfo struct {
	conversation.Archive
	// Missing is set when the archive's file cannot be found.
	Missing bool `json:"missing,omitempty"`
}

func (s *Server) archives(w http.ResponseWriter, r *http.Request) {
	agent, sender, c, ok := s.lookup(w, r)
	if !ok {
		return
	}
	out := []ArchiveInfo{}
	if c != nil {
		for _, a := range c.Archives() {
			out = append(out, ArchiveInfo{Archive: a, Missing: c.ArchiveMissing(a)})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"agent": agent, "sender": sender, "archives": out})
}

func (s *Server) archive(w http.ResponseWriter, r *http.Request) {
	agent, sender, c, ok := s.lookup(w, r)
	if !ok {
		return
	}
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id < 1 {
		writeError(w, http.StatusBadRequest, "bad_archive", fmt.Sprintf("archive %q: want a number from 1", r.PathValue("id")))
		return
	}
	if c == nil {
		writeError(w, http.StatusNotFound, "no_archive", fmt.Sprintf("conversation %s/%s has no archives", agent, sender))
		return
	}
	af, err := c.ReadArchive(id)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, af)
}

func (s *Server) agents(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"agents": s.svc.Agents()})
}

func (s *Server) markRead(w http.ResponseWriter, r *http.Request) {
	var req request
	if !s.decode(w, r, &req, "agent", "sender") || !need(w, &req, "agent", "sender") {
		return
	}
	if err := s.svc.MarkRead(req.Agent, req.Sender); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"agent": req.Agent, "sender": req.Sender, "unread": 0})
}

func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request) {
	agent, sender := r.PathValue("agent"), r.PathValue("sender")
	trash, err := s.svc.Delete(agent, sender)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": true, "agent": agent, "sender": sender, "trash": trash})
}

// searchParams are the query parameters GET /v1/search takes.
var searchParams = []string{"q", "agent", "sender", "limit", "archives"}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	for k, vs := range qs {
		if !slices.Contains(searchParams, k) {
			writeError(w, http.StatusBadRequest, "unknown_field", fmt.Sprintf("unknown parameter %q (this endpoint takes %s)", k, strings.Join(searchParams, ", ")))
			return
		}
		if len(vs) > 1 {
			writeError(w, http.StatusBadRequest, "bad_parameter", fmt.Sprintf("parameter %s is given %d times: give it once", k, len(vs)))
			return
		}
	}
	req := conversation.SearchRequest{Query: qs.Get("q"), Agent: qs.Get("agent"), Sender: qs.Get("sender")}
	if strings.TrimSpace(req.Query) == "" {
		writeError(w, http.StatusBadRequest, "empty_query", "the search query is empty: pass ?q=TEXT (URL-encoded)")
		return
	}
	if len(req.Query) > s.opts.MaxContentBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("query has %d bytes, over the limit of %d", len(req.Query), s.opts.MaxContentBytes))
		return
	}
	if req.Agent == "" && req.Sender != "" {
		writeError(w, http.StatusBadRequest, "missing_field", "missing parameter: agent (a sender names a conversation only with its agent)")
		return
	}
	if req.Agent != "" {
		if _, err := s.svc.Agent(req.Agent); err != nil {
			fail(w, err)
			return
		}
	}
	if req.Sender != "" {
		if err := conversation.CheckName("sender", req.Sender); err != nil {
			fail(w, err)
			return
		}
	}
	if v := qs.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > conversation.MaxSearchLimit {
			writeError(w, http.StatusBadRequest, "bad_parameter", fmt.Sprintf("limit %q: want a number from 1 to %d", v, conversation.MaxSearchLimit))
			return
		}
		req.Limit = n
	}
	if v := qs.Get("archives"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_parameter", fmt.Sprintf("archives %q: want true or false", v))
			return
		}
		req.Archives = b
	}
	res, err := s.svc.Store().Search(r.Context(), req)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
