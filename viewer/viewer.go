// Package viewer is the local web viewer of run logs: an http.Handler that
// serves a single-page application and a small read-only JSON API over a
// log root (the directory holding one directory per run, see package logs).
//
// The page lists the runs, shows a run's dialog forest as a collapsible
// tree with failed attempts marked, and the transcript of any dialog, and
// follows a run that is still being written. Its assets are embedded: it
// needs no network.
//
// The handler never loads a whole log. For each run it keeps an index (the
// dialog tree and the byte offset of every message record, built by one
// pass that reads only the first bytes of most records and extended as the
// file grows) and serves bounded pages of messages by reading just their
// records. See docs/viewer.md for the API.
package viewer

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/logs"
)

//go:embed assets
var assets embed.FS

// Options adjust a Handler. The zero value is ready to use.
type Options struct {
	// AllowAnyHost turns off the check that requests name a loopback host
	// (localhost, 127.0.0.1, ::1) in their Host header. The check keeps a
	// web page on another site from reading the logs through DNS
	// rebinding; turn it off only when serving on another interface on
	// purpose.
	AllowAnyHost bool
	// MaxCachedRuns is how many run indexes are kept in memory; zero means
	// 8. The least recently used is dropped first.
	MaxCachedRuns int
}

// Handler serves the viewer for the runs under one log root. It is safe
// for concurrent use.
type Handler struct {
	root string
	opts Options
	mux  *http.ServeMux

	mu      sync.Mutex
	indexes map[string]*cachedIndex
	clock   int64

	runs runCache // the finished runs GET /api/runs listed
}

type cachedIndex struct {
	ix   *index
	used int64
}

// New returns a Handler for the runs under root (logs.DefaultRoot if
// empty).
func New(root string, opts Options) *Handler {
	if root == "" {
		root = logs.DefaultRoot
	}
	if opts.MaxCachedRuns <= 0 {
		opts.MaxCachedRuns = 8
	}
	h := &Handler{root: root, opts: opts, indexes: map[string]*cachedIndex{}}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		serveAsset(w, r, static, "index.html")
	})
	mux.HandleFunc("GET /assets/{file}", func(w http.ResponseWriter, r *http.Request) {
		serveAsset(w, r, static, r.PathValue("file"))
	})
	mux.HandleFunc("GET /api/runs", h.listRuns)
	mux.HandleFunc("GET /api/runs/{run}", h.getRun)
	mux.HandleFunc("GET /api/runs/{run}/tree", h.getTree)
	mux.HandleFunc("GET /api/runs/{run}/dialogs/{dialog}", h.getDialog)
	mux.HandleFunc("GET /api/runs/{run}/dialogs/{dialog}/messages", h.getMessages)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, http.StatusMethodNotAllowed, "the viewer is read-only: %s is not allowed", r.Method)
			return
		}
		writeError(w, http.StatusNotFound, "no API route %s (see docs/viewer.md)", r.URL.Path)
	})
	h.mux = mux
	return h
}

// Root is the log root the handler serves.
func (h *Handler) Root() string { return h.root }

// ServeHTTP serves the page, its assets and the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.opts.AllowAnyHost && !loopbackHost(r.Host) {
		writeError(w, http.StatusForbidden, "host %q refused: the viewer answers only requests to localhost", r.Host)
		return
	}
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob: http: https:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	h.mux.ServeHTTP(w, r)
}

// loopbackHost reports whether a Host header names this machine.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func serveAsset(w http.ResponseWriter, r *http.Request, static fs.FS, name string) {
	data, err := fs.ReadFile(static, name)
	if err != nil {
		writeError(w, http.StatusNotFound, "no asset %q", name)
		return
	}
	switch filepath.Ext(name) {
	case ".html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".svg":
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	w.Header().Set("Cache-Control", "no-cache")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(data)
}

// apiError is an error with the HTTP status it is served with.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) error {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}

// fail writes err as a JSON error: its own status for an *apiError, 422
// for a log that cannot be read, 500 otherwise.
func fail(w http.ResponseWriter, err error) {
	var ae *apiError
	var fe *logs.FormatError
	switch {
	case errors.As(err, &ae):
		writeError(w, ae.status, "%s", ae.msg)
	case errors.As(err, &fe):
		writeError(w, http.StatusUnprocessableEntity, "this run's log cannot be read: %s", strings.TrimPrefix(err.Error(), "viewer: "))
	case errors.Is(err, context.Canceled):
		writeError(w, http.StatusServiceUnavailable, "request cancelled")
	default:
		writeError(w, http.StatusInternalServerError, "%s", strings.TrimPrefix(err.Error(), "viewer: "))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"error":"encoding the response failed"}`)
	}
	// The raw JSON of a log (a message, a task) passes on what bytes it
	// holds: those that are not UTF-8 become U+FFFD, as the CLI writes them.
	if !utf8.Valid(data) {
		data = []byte(jsontext.ValidUTF8(string(data)))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(data)
	_, _ = w.Write([]byte("\n"))
}

// validRunID reports whether id can name a run directory directly under
// the root: no separators, no "..", no hidden names.
func validRunID(id string) bool {
	if id == "" || len(id) > 255 || id[0] == '.' {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// realRunDir reports whether dir is a directory directly under root, not
// a symbolic link.
func realRunDir(root, dir string) bool {
	st, err := os.Lstat(dir)
	return err == nil && st.IsDir() && filepath.Dir(filepath.Clean(dir)) == filepath.Clean(root)
}

// runIndex returns the up-to-date index of the run named id, and the
// run's id ("latest" and a prefix or suffix name one as the CLI does).
func (h *Handler) runIndex(ctx context.Context, id string) (*index, string, error) {
	if !validRunID(id) {
		return nil, "", errorf(http.StatusBadRequest, "invalid run id %q: a run id is a directory name under the log root", id)
	}
	dir := filepath.Join(h.root, id)
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		// As the CLI takes it: "latest", or a unique prefix or suffix of
		// a run id; only ever a run directly under the root.
		run, rerr := logs.Open(h.root, id)
		var fe *logs.FormatError
		var ae *logs.AmbiguousError
		switch {
		case errors.As(rerr, &fe) && realRunDir(h.root, filepath.Dir(fe.Name)):
			// A run under the root whose log cannot be read: say why (422),
			// as for its full id.
			return nil, "", rerr
		case errors.As(rerr, &ae):
			return nil, "", errorf(http.StatusBadRequest, "%s", strings.TrimPrefix(ae.Error(), "logs: "))
		case rerr != nil || filepath.Dir(filepath.Clean(run.Dir)) != filepath.Clean(h.root):
			return nil, "", errorf(http.StatusNotFound, "no run %q under %s (a run id, a unique prefix or suffix of one, or latest)", id, h.root)
		}
		id, dir = run.ID, filepath.Join(h.root, run.ID)
		if st, err = os.Lstat(dir); err != nil || !st.IsDir() {
			return nil, "", errorf(http.StatusNotFound, "no run %q under %s", id, h.root)
		}
	}
	path := filepath.Join(dir, logs.EventsFile)
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
		return nil, "", errorf(http.StatusNotFound, "run %q has no %s (symbolic links are not followed)", id, logs.EventsFile)
	}

	h.mu.Lock()
	h.clock++
	c := h.indexes[path]
	if c == nil {
		c = &cachedIndex{ix: newIndex(path), used: h.clock}
		h.indexes[path] = c
		for len(h.indexes) > h.opts.MaxCachedRuns {
			var oldest string
			for p, e := range h.indexes {
				if oldest == "" || e.used < h.indexes[oldest].used {
					oldest = p
				}
			}
			delete(h.indexes, oldest)
		}
	}
	c.used = h.clock
	h.mu.Unlock()

	if err := c.ix.update(ctx); err != nil {
		return nil, "", err
	}
	return c.ix, id, nil
}
