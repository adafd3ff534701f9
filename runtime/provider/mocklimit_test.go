package provider

import (
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// The mock cuts a reply over max_tokens at the longest prefix of whole
// words within the limit, as counting word by word would, for every
// limit; and it counts a few prefixes to find it, not one per word.
func TestMockLimitLongestPrefix(t *testing.T) {
	m, err := NewMock(MockConfig{})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("the quick brown fox jumps over the lazy dog; ", 30)
	words := strings.SplitAfter(text, " ")
	for _, limit := range []int{1, 2, 7, 50, 133, mockTokens(text) - 1} {
		want := ""
		for _, w := range words {
			if mockTokens(want+w) > limit {
				break
			}
			want += w
		}
		before := mockTokenizer.Stats().Calls
		got, why := m.limit(text, llms.CallOptions{MaxTokens: limit})
		if got != want || why != "length" {
			t.Errorf("max_tokens %d: cut at %d bytes (%q), want %d (%q)", limit, len(got), why, len(want), "length")
		}
		if calls := mockTokenizer.Stats().Calls - before; calls > 20 {
			t.Errorf("max_tokens %d: %d counts for a reply of %d words", limit, calls, len(words))
		}
	}
}
