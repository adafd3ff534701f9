package provider

import (
	"encoding/json"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// OpenAI's replies are indented, with a space after each colon: a refusal
// there is read as in a compact reply.
func TestOpenAIRefusalSpaced(t *testing.T) {
	const spaced = `{
  "id": "chatcmpl-1",
  "object": "chat.completion",
  "model": "gpt-4o-2024-08-06",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "refusal": "I'm sorry, I cannot help with that.",
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
}`
	var v any
	if err := json.Unmarshal([]byte(spaced), &v); err != nil {
		t.Fatal(err)
	}
	compact, _ := json.Marshal(v)
	for _, body := range []string{spaced, string(compact)} {
		s := newRawServer(t, 200, body)
		resp := generate(t, openRaw(t, "openai/gpt-4o", s), &Request{Messages: []*dialog.Message{userMsg("Hi")},
			Format: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)})
		if resp.FinishReason != "refusal" || resp.Message.Metadata["refusal"] != "I'm sorry, I cannot help with that." {
			t.Errorf("finish %q, metadata %v; want the refusal", resp.FinishReason, resp.Message.Metadata)
		}
	}
}
