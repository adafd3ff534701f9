package conversation

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// A model call retried after a stream cut short is marked by a retry
// event between the failed attempt's pieces and the new attempt's, so a
// client knows to drop what it showed; the stored reply is the new
// attempt's alone.
func TestRetryEventAfterPartialStream(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(field, s string) {
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{%q:%q}}]}\n\n", field, s)
			w.(http.Flusher).Flush()
		}
		chunk("reasoning_content", fmt.Sprintf("Thinking %d. ", i))
		if i == 1 {
			chunk("content", "Par")
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		chunk("content", "Paris.")
		fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	t.Setenv("RETRY_EVENT_KEY", "k")
	m, err := provider.Open(t.Context(), "openai/m", provider.Config{BaseURL: srv.URL + "/v1", APIKeyEnv: "RETRY_EVENT_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	lim := tactics.Limits{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}
	svc, err := NewService(quietStore(t, t.TempDir()), []*AgentSpec{{Name: "assistant", System: prompt(t, "assistant", "You help."), Model: m, ModelName: "openai/m", Limits: lim}}, ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, ev := run(t, svc, RunRequest{Agent: "assistant", Sender: "alice", Content: "Capital?"})
	var got []string
	for _, x := range ev.evs {
		s := x.Type
		if x.Text != "" {
			s += " " + x.Text
		}
		if x.Type == "retry" && x.Error == "" {
			t.Errorf("retry event without the error")
		}
		got = append(got, s)
	}
	want := "start|reasoning Thinking 1. |text Par|retry|reasoning Thinking 2. |text Paris.|end"
	if strings.Join(got, "|") != want {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	if e.Message.Content != "Paris." || e.Message.ReasoningText() != "Thinking 2. " {
		t.Errorf("stored %q reasoning %q", e.Message.Content, e.Message.ReasoningText())
	}
}
