package provider

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// fakeGemini is a minimal Gemini REST server: it answers generateContent
// with status and body, and records the last request.
type fakeGemini struct {
	mu     sync.Mutex
	status int
	body   string
	last   map[string]any
	header http.Header
	path   string
	calls  int
}

func (f *fakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last, f.header, f.path = nil, r.Header.Clone(), r.URL.Path
	_ = json.Unmarshal(b, &f.last)
	f.calls++
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.status)
	if f.status == http.StatusOK && strings.Contains(r.URL.Path, ":streamGenerateContent") {
		// The chat session streams; REST streams are a JSON array.
		io.WriteString(w, "["+f.body+"]")
		return
	}
	io.WriteString(w, f.body)
}

func TestGoogleAIThroughTransport(t *testing.T) {
	clearEnv(t)
	fake := &fakeGemini{status: 200, body: `{"candidates":[{"content":{"parts":[{"text":"Bonjour."}],"role":"model"},
		"finishReason":1,"index":0}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":3,"totalTokenCount":15}}`}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	m, err := Open(context.Background(), "googleai/gemini-2.0-flash", Config{APIKey: "g-key", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer m.(*Adapter).Close()

	resp := generate(t, m, &Request{
		Messages: []*dialog.Message{systemMsg("Answer in French."), userMsg("Hello"), {Role: dialog.RoleAssistant, Content: "Salut"}, userMsg("Again")},
		Params:   Params{Temperature: ptr(0.3)},
	})
	if resp.Message.Content != "Bonjour." || resp.Message.Usage.InputTokens != 12 || resp.Message.Usage.OutputTokens != 3 ||
		resp.Message.Model != "googleai/gemini-2.0-flash" {
		t.Errorf("message = %+v", resp.Message)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.header.Get("X-Goog-Api-Key") != "g-key" || !strings.Contains(fake.path, "models/gemini-2.0-flash:") {
		t.Errorf("key header %q, path %q", fake.header.Get("X-Goog-Api-Key"), fake.path)
	}
	gen, _ := fake.last["generationConfig"].(map[string]any)
	if gen["temperature"] != 0.3 {
		t.Errorf("generationConfig = %v, want temperature 0.3", gen)
	}
	for _, k := range []string{"topP", "topK", "maxOutputTokens"} {
		if v, ok := gen[k]; ok {
			t.Errorf("generationConfig.%s = %v, want it unset", k, v)
		}
	}
}

func TestGoogleAIServiceUnavailableIsNotRetried(t *testing.T) {
	clearEnv(t)
	fake := &fakeGemini{status: 503, body: `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	m, err := Open(context.Background(), "googleai/gemini-2.0-flash", Config{APIKey: "g-key", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pe := generateErr(t, ctx, m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if pe.Kind != ErrServer || pe.Status != 503 {
		t.Errorf("error = %v (kind %s, status %d)", pe, pe.Kind, pe.Status)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.calls != 1 {
		t.Errorf("%d requests, want 1 (no retries)", fake.calls)
	}
}
