package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/conversation"
	"github.com/lllm-go/lllm/runtime/server"
)

// servedProcess is an lllm serve process and its address.
type servedProcess struct {
	*crashProc
	url string
}

// startServe starts bin serve on a kernel-chosen loopback port and waits
// for the line that names it.
func startServe(t *testing.T, bin, config, dataDir string) *servedProcess {
	t.Helper()
	p := &servedProcess{crashProc: startCrashLLLM(t, bin, "", "serve", "--addr", "127.0.0.1:0", "--config", config, "--data-dir", dataDir)}
	crashUntil(t, p.crashProc, "lllm serve says where it listens", func() bool {
		m := serveListening.FindStringSubmatch(p.stdout.String())
		if m != nil {
			p.url = m[1]
		}
		return m != nil
	})
	return p
}

// openStream posts content to /v1/stream and returns the response, whose
// body carries the events.
func openStream(t *testing.T, ctx context.Context, url, content string) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"agent": "assistant", "sender": "alice", "content": content})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("stream %q: %s %s", content, resp.Status, b)
	}
	return resp
}

// finishedTurn streams content and returns its events, which must end ok.
func finishedTurn(t *testing.T, url, content string) []conversation.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := openStream(t, ctx, url, content)
	defer resp.Body.Close()
	var evs []conversation.Event
	if err := readEvents(resp.Body, func(ev conversation.Event) bool { evs = append(evs, ev); return true }); err != nil {
		t.Fatal(err)
	}
	if len(evs) < 2 || evs[0].Type != "start" || evs[len(evs)-1].Type != "end" || evs[len(evs)-1].Status != "ok" {
		t.Fatalf("turn %q: events %+v", content, evs)
	}
	return evs
}

func getMessages(t *testing.T, url string) server.MessagesResponse {
	t.Helper()
	resp, err := http.Get(url + "/v1/conversations/assistant/alice/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m server.MessagesResponse
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("messages: %s %s", resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// roles describes stored messages as "role:text" for failure messages
// and comparisons.
func roles(m server.MessagesResponse) []string {
	var out []string
	for _, e := range m.Messages {
		out = append(out, string(e.Message.Role)+":"+e.Message.Text())
	}
	return out
}

// TestServeSIGKILLMidStream kills a real lllm serve process while a reply
// streams, restarts it on the same data dir, and checks that the history
// holds every finished turn and nothing of the unfinished one but the
// sender's message, and that the conversation carries on.
func TestServeSIGKILLMidStream(t *testing.T) {
	bin := buildLLLM(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "serve.yaml")
	// "slow" streams "thinking it over", then waits on ask_user.
	if err := os.WriteFile(config, []byte(cmdConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")

	p := startServe(t, bin, config, dataDir)
	first := finishedTurn(t, p.url, "hello there")
	firstReply := first[len(first)-1].Message.Message.Text()
	if !strings.HasPrefix(firstReply, "mock reply to: hello there") {
		t.Fatalf("first reply %q", firstReply)
	}
	before := getMessages(t, p.url)

	// The slow turn: wait until its text has streamed and the run waits
	// inside ask_user, then SIGKILL the server.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp := openStream(t, ctx, p.url, "please go slow")
	defer resp.Body.Close()
	var seen []string
	var partial strings.Builder
	err := readEvents(resp.Body, func(ev conversation.Event) bool {
		seen = append(seen, ev.Type)
		if ev.Type == "text" {
			partial.WriteString(ev.Text)
		}
		return ev.Type != "ask" && ev.Type != "end"
	})
	if err != nil || seen[len(seen)-1] != "ask" || !strings.Contains(partial.String(), "thinking it over") {
		t.Fatalf("slow stream: events %v, text %q, err %v", seen, partial.String(), err)
	}
	if m := getMessages(t, p.url); !m.Running || !m.Pending {
		t.Fatalf("the slow run is not in flight: running %v pending %v", m.Running, m.Pending)
	}
	p.kill(t)
	// The client sees the stream cut short, without an end event.
	var after []string
	_ = readEvents(resp.Body, func(ev conversation.Event) bool { after = append(after, ev.Type); return true })
	if len(after) != 0 {
		t.Fatalf("events after SIGKILL: %v", after)
	}

	// The log on disk never held the partial reply.
	logData, err := os.ReadFile(filepath.Join(dataDir, "assistant", "alice", conversation.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(logData, []byte("thinking it over")) || bytes.Contains(logData, []byte("Shall I go on?")) {
		t.Fatalf("the unfinished reply reached the log:\n%s", logData)
	}

	q := startServe(t, bin, config, dataDir)
	restored := getMessages(t, q.url)
	got := roles(restored)
	want := append(roles(before), "user:please go slow")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("restored history:\n%q\nwant the finished turn and the unanswered message:\n%q", got, want)
	}
	for i, e := range before.Messages {
		r := restored.Messages[i]
		if r.Seq != e.Seq || !r.Time.Equal(e.Time) || r.Message.Name != e.Message.Name {
			t.Errorf("message %d changed across the restart: %+v, was %+v", i, r, e)
		}
	}
	if restored.Running || restored.Pending || restored.Title != "hello there" {
		t.Fatalf("restored summary %+v running %v pending %v", restored.Summary, restored.Running, restored.Pending)
	}
	if w := q.stderr.String(); strings.Contains(w, "torn") || strings.Contains(strings.ToLower(w), "error") {
		t.Errorf("restart complained:\n%s", w)
	}

	// The conversation carries on where it stopped.
	third := finishedTurn(t, q.url, "hello again")
	if r := third[len(third)-1].Message.Message.Text(); !strings.HasPrefix(r, "mock reply to: hello again") {
		t.Fatalf("third reply %q", r)
	}
	final := getMessages(t, q.url)
	got = roles(final)
	if len(got) != 5 || got[3] != "user:hello again" || final.Messages[4].Message.Role != dialog.RoleAssistant {
		t.Fatalf("history after the new turn: %q", got)
	}
	for i := 1; i < len(final.Messages); i++ {
		if final.Messages[i].Seq <= final.Messages[i-1].Seq {
			t.Fatalf("sequence numbers not increasing: %+v", final.Messages)
		}
	}

	// Ctrl-C stops the restarted server cleanly.
	if code := q.signal(t, os.Interrupt); code != 0 {
		t.Fatalf("serve exited %d after an interrupt:\n%s", code, q.stderr.String())
	}
}
