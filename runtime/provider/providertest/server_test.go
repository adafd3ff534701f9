package providertest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestQueueDefaultAndRecording(t *testing.T) {
	s := NewOpenAIServer(t, Reply{Text: "first"}, RateLimited("2"))
	url := s.BaseURL() + "/chat/completions"
	_, b := post(t, url, `{"model":"m","messages":[]}`)
	if !bytes.Contains(b, []byte(`"content":"first"`)) {
		t.Errorf("first reply: %s", b)
	}
	resp, b := post(t, url, `{"model":"m"}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || !bytes.Contains(b, []byte(`"code":"rate_limit_exceeded"`)) {
		t.Errorf("second reply: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	_, b = post(t, url, `{"model":"m"}`)
	if !bytes.Contains(b, []byte(`"content":"ok"`)) {
		t.Errorf("default reply: %s", b)
	}
	if n := len(s.Requests()); n != 3 || s.LastRequest().JSON()["model"] != "m" {
		t.Errorf("%d requests recorded, last %v", n, s.LastRequest().JSON())
	}
	if resp, _ := post(t, s.URL+"/v1/embeddings", `{}`); resp.StatusCode != 404 {
		t.Errorf("unknown endpoint: %d", resp.StatusCode)
	}
}

func TestOpenAIStreamInterleavesToolCalls(t *testing.T) {
	s := NewOpenAIServer(t, Reply{ToolCalls: []ToolCall{{Name: "a", Arguments: `{"x":"111111"}`}, {Name: "b", Arguments: `{"y":"222222"}`}}})
	resp, b := post(t, s.BaseURL()+"/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	var order []float64
	args := map[float64]string{}
	sawUsage, done := false, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    float64                    `json:"index"`
						Function struct{ Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
			Usage any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("bad chunk %s: %v", data, err)
		}
		sawUsage = sawUsage || chunk.Usage != nil
		for _, c := range chunk.Choices {
			for _, tc := range c.Delta.ToolCalls {
				if tc.Function.Arguments != "" {
					order = append(order, tc.Index)
					args[tc.Index] += tc.Function.Arguments
				}
			}
		}
	}
	if args[0] != `{"x":"111111"}` || args[1] != `{"y":"222222"}` || !sawUsage || !done {
		t.Errorf("args %v, usage %v, done %v", args, sawUsage, done)
	}
	if len(order) < 4 || order[0] != 0 || order[1] != 1 {
		t.Errorf("fragments not interleaved: %v", order)
	}
}

func TestAnthropicErrorShape(t *testing.T) {
	s := NewAnthropicServer(t, Overloaded())
	resp, b := post(t, s.BaseURL()+"/messages", `{"model":"m"}`)
	var e struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != 529 || e.Type != "error" || e.Error.Type != "overloaded_error" {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}
