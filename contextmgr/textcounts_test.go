package contextmgr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// TestCopiesCountedOnce checks that a copy of a counted message (a new
// pointer, as a conversation's rebuilt history holds) is counted the same
// without being tokenized again.
func TestCopiesCountedOnce(t *testing.T) {
	tok := NewTokenizer()
	var msgs []*dialog.Message
	for i := range 50 {
		msgs = append(msgs, &dialog.Message{Role: dialog.RoleUser, Content: fmt.Sprintf("message %d: %s", i, strings.Repeat("some words ", i))})
	}
	want := make([]int, len(msgs))
	for i, m := range msgs {
		want[i] = tok.CountMessage("openai/gpt-4o", m)
	}
	texts := tok.Stats().Texts
	for i, m := range msgs {
		c := *m
		if got := tok.CountMessage("openai/gpt-4o", &c); got != want[i] {
			t.Fatalf("copy of message %d counts %d, want %d", i, got, want[i])
		}
	}
	if n := tok.Stats().Texts - texts; n != 0 {
		t.Errorf("%d texts tokenized again for copies", n)
	}
	// Another encoding is counted afresh, and right.
	fresh := NewTokenizer()
	for i, m := range msgs {
		c := *m
		if got, want := tok.CountMessage("openai/gpt-4", &c), fresh.CountMessage("openai/gpt-4", msgs[i]); got != want {
			t.Fatalf("message %d in cl100k: %d, want %d", i, got, want)
		}
	}
}

// TestTextCountsBounded checks that the texts remembered stay within two
// generations of maxTextBytes, the newest found and the oldest dropped.
func TestTextCountsBounded(t *testing.T) {
	var c textCounts
	text := strings.Repeat("x", 1<<20)
	key := func(i int) textKey { return textKey{EncodingO200k, fmt.Sprintf("%d%s", i, text)} }
	for i := range 60 {
		c.put(key(i), i)
		if n, ok := c.get(key(i)); !ok || n != i {
			t.Fatalf("text %d: got %d, %v", i, n, ok)
		}
		held := 0
		for k := range c.cur {
			held += len(k.text)
		}
		for k := range c.old {
			held += len(k.text)
		}
		if held > 2*maxTextBytes {
			t.Fatalf("after %d texts: %d bytes held, more than %d", i+1, held, 2*maxTextBytes)
		}
	}
	if _, ok := c.get(key(0)); ok {
		t.Error("the oldest text is still held")
	}
	big := textKey{EncodingO200k, strings.Repeat("y", maxTextBytes+1)}
	c.put(big, 1)
	if _, ok := c.get(big); ok {
		t.Error("a text larger than a generation is held")
	}
}
