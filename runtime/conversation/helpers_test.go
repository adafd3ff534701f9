package conversation

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider"
)

// recorder is a provider.Model that records every request it is sent and
// answers with next, or with the model it wraps.
type recorder struct {
	mu    sync.Mutex
	inner provider.Model
	next  func(ctx context.Context, n int, req *provider.Request) (*provider.Response, error)
	reqs  [][]dialog.Message
}

func (r *recorder) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	r.mu.Lock()
	msgs := make([]dialog.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = *m.Clone()
	}
	r.reqs = append(r.reqs, msgs)
	n := len(r.reqs)
	r.mu.Unlock()
	if r.next != nil {
		resp, err := r.next(ctx, n, req)
		if err == nil && req.Stream != nil && resp.Message.Content != "" {
			if err := req.Stream(ctx, provider.Chunk{Text: resp.Message.Content}); err != nil {
				return nil, err
			}
		}
		return resp, err
	}
	return r.inner.Generate(ctx, req)
}

func (r *recorder) requests() [][]dialog.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]dialog.Message(nil), r.reqs...)
}

func mockModel(t *testing.T, cfg provider.MockConfig) provider.Model {
	t.Helper()
	m, err := provider.Open(context.Background(), "mock/test", provider.Config{Mock: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func text(s string) *provider.Response {
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: s, Modality: dialog.ModalityText}}
}

func toolCall(name string, args map[string]any) *provider.Response {
	b, _ := json.Marshal(args)
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleToolCall,
		FunctionCalls: []dialog.FunctionCall{{ID: "call_1", Name: name, Arguments: b}}}}
}

// stored lists what dir holds beside the store's lock file.
func stored(dir string) []os.DirEntry {
	ents, _ := os.ReadDir(dir)
	return slices.DeleteFunc(ents, func(e os.DirEntry) bool { return e.Name() == LockFile })
}

func quietStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func prompt(t *testing.T, name, text string) *dialog.Prompt {
	t.Helper()
	p, err := dialog.NewPrompt(name+"/system", text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// events collects a run's events.
type events struct {
	mu  sync.Mutex
	evs []Event
	ask chan string
}

func newEvents() *events { return &events{ask: make(chan string, 4)} }

func (e *events) emit(ev Event) error {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
	if ev.Type == "ask" {
		e.ask <- ev.Text
	}
	return nil
}

func (e *events) types() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.evs {
		out = append(out, ev.Type)
	}
	return out
}

func (e *events) last() Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.evs[len(e.evs)-1]
}

func summarizeWith(s string) Summarizer {
	return func(ctx context.Context, msgs []*dialog.Message) (string, error) { return s, nil }
}

// runAsync runs req on svc in the background, as svc.Run(ctx, req,
// emit); the run's error arrives on the channel it returns.
func runAsync(ctx context.Context, svc *Service, req RunRequest, emit func(Event) error) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := svc.Run(ctx, req, emit)
		done <- err
	}()
	return done
}
