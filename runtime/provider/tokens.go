package provider

import (
	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
)

// mockTokenizer counts the mock's usage. It is shared and safe for
// concurrent use; each tiktoken encoding is built once.
var mockTokenizer = contextmgr.NewTokenizer()

// tokens counts text's tokens as the mock reports them: with the
// encoding contextmgr uses for the mock's model name ("mock/gpt-4" counts
// as gpt-4 does; other names with the fallback encoding).
func (m *Mock) tokens(text string) int {
	if text == "" {
		return 0
	}
	return mockTokenizer.Count(m.model, text)
}

// imageTokens is what img costs by contextmgr's image rule.
func imageTokens(img *dialog.Image) int {
	return mockTokenizer.CountMessage("mock", &dialog.Message{Parts: []dialog.Part{{Type: dialog.PartImage, Image: img}}}) -
		contextmgr.MessageOverhead
}
