package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// A Gemini stream (a JSON array of responses) that ends cleanly before
// its last response, the one with a finishReason, is a retryable network
// error, as on the other wires, not a reply made of the text that came. A
// whole one, and a blocked prompt's, are not.
func TestGeminiUnfinishedStreams(t *testing.T) {
	el := func(text, finish string) string {
		return `{"candidates":[{"content":{"role":"model","parts":[{"text":"` + text + `"}]},"index":0` + finish +
			`}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4}}`
	}
	first, last := el("The capital ", ""), el("is Paris.", `,"finishReason":1`)
	for _, tc := range []struct {
		name, body, want string // want: the reply's text, "" for an unfinished stream
	}{
		{"whole", "[" + first + ",\r\n" + last + "]", "The capital is Paris."},
		{"blocked", `[{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3}}]`, "blocked"},
		{"no closing bracket", "[" + first + ",\r\n", ""},
		{"cut in a response", "[" + first + ",\r\n" + last[:40], ""},
		{"no finishReason", "[" + first + "]", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := streamServer(t, "application/json; charset=UTF-8", tc.body, false)
			m, err := Open(context.Background(), "googleai/gemini-2.5-flash", Config{BaseURL: srv.URL, APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Generate(context.Background(), &Request{
				Messages: []*dialog.Message{userMsg("Capital of France?")},
				Stream:   func(context.Context, Chunk) error { return nil },
			})
			var pe *Error
			switch {
			case tc.want == "":
				if !errors.As(err, &pe) || pe.Kind != ErrNetwork || !pe.Retryable() || !strings.Contains(err.Error(), "finishReason") {
					t.Fatalf("an unfinished stream: %v (reply %+v), want a retryable network error naming the finishReason", err, resp)
				}
			case tc.want == "blocked":
				if errors.As(err, &pe) && pe.Kind == ErrNetwork {
					t.Fatalf("a blocked prompt taken for an unfinished stream: %v", err)
				}
			case err != nil:
				t.Fatalf("a whole stream: %v", err)
			case resp.Message.Text() != tc.want:
				t.Fatalf("reply %q, want %q", resp.Message.Text(), tc.want)
			}
		})
	}
}
