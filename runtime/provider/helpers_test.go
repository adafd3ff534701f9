package provider

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

func ptr[T any](v T) *T { return &v }

func userMsg(text string) *dialog.Message {
	return &dialog.Message{Role: dialog.RoleUser, Content: text, Name: "user"}
}

func systemMsg(text string) *dialog.Message {
	return &dialog.Message{Role: dialog.RoleSystem, Content: text}
}

// openFake opens name against srv with a test key.
func openFake(t *testing.T, name string, srv *providertest.Server) Model {
	t.Helper()
	m, err := Open(context.Background(), name, Config{BaseURL: srv.BaseURL(), APIKey: "sk-test"})
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	return m
}

func generate(t *testing.T, m Model, req *Request) *Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := m.Generate(ctx, req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resp
}

// generateErr calls m and returns its *Error, failing if there is none.
func generateErr(t *testing.T, ctx context.Context, m Model, req *Request) *Error {
	t.Helper()
	resp, err := m.Generate(ctx, req)
	if err == nil {
		t.Fatalf("Generate succeeded (%q), want an error", resp.Message.Content)
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("Generate error %T %v is not a *provider.Error", err, err)
	}
	return pe
}

func weatherTool(t *testing.T) *dialog.Function {
	t.Helper()
	f, err := dialog.NewFunctionSchema("get_weather", "Weather in a city.",
		json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		func(ctx context.Context, args json.RawMessage) (any, error) { return "18C", nil })
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	norm := func(v any) string {
		var raw []byte
		switch v := v.(type) {
		case string:
			raw = []byte(v)
		case json.RawMessage:
			raw = v
		default:
			var err error
			if raw, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			t.Fatalf("not JSON: %s", raw)
		}
		out, _ := json.Marshal(x)
		return string(out)
	}
	return norm(a) == norm(b)
}

// mockTokens counts text as the mock does for a model name that is not an
// OpenAI model's.
func mockTokens(text string) int { return mockTokenizer.Count("mock", text) }

// mockMessageOverhead is what each message adds to the mock's input count.
const mockMessageOverhead = contextmgr.MessageOverhead
