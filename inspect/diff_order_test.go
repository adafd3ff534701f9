package inspect_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/inspect"
)

// List items come in their order, by index as a number: a result's
// candidates.2 before candidates.10, so that the first ten the text shows
// are the first ten items.
func TestDiffResultChangesInListOrder(t *testing.T) {
	var xa, xb []string
	for i := range 12 {
		xa, xb = append(xa, fmt.Sprintf("%q", fmt.Sprint("a", i))), append(xb, fmt.Sprintf("%q", fmt.Sprint("b", i)))
	}
	a := resultRun(t, `{"candidates": [`+strings.Join(xa, ", ")+`], "answer": "a0"}`)
	b := resultRun(t, `{"candidates": [`+strings.Join(xb, ", ")+`], "answer": "b0"}`)
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"answer"}
	for i := range 12 {
		want = append(want, fmt.Sprint("candidates.", i))
	}
	var got []string
	for _, c := range d.ResultChanges {
		got = append(got, c.Path)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paths %v, want %v", got, want)
	}
	text := compareText(t, d, inspect.TextOptions{})
	if !strings.Contains(text, "  candidates.8: \"a8\" → \"b8\"\n  … and 3 more") {
		t.Errorf("text:\n%s", text)
	}
}
