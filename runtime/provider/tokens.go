package provider

import "github.com/lllm-go/lllm/contextmgr"

// mockTokenizer counts the mock's usage. It is shared and safe for
// concurrent use; each tiktoken encoding is built once.
var mockTokenizer = contextmgr.NewTokenizer()

// mockMessageOverhead is what each message adds beyond its content.
const mockMessageOverhead = contextmgr.MessageOverhead

// mockTokens counts text's tokens as the mock reports them, with the
// fallback encoding that contextmgr uses for models it does not know.
func mockTokens(text string) int {
	if text == "" {
		return 0
	}
	return mockTokenizer.Count("mock", text)
}
