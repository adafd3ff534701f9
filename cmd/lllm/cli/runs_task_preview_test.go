package cli

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/logs"
)

// wholeTaskPreview is the TASK cell's task as taskPreview must give it:
// from the whole task decoded, as lllm runs made it before it read long
// tasks from their start only.
func wholeTaskPreview(task json.RawMessage) string {
	text := string(task)
	var s string
	if json.Unmarshal(task, &s) == nil {
		text = s
	}
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > 40 {
		return string(r[:39]) + "…"
	}
	return text
}

// taskPreview reads a long task from its start only, and previews it as
// the whole task decoded would: tasks of every length around the prefix
// sizes, with runs of white space, escapes, multi-byte and invalid UTF-8,
// surrogate pairs, wide spaces, and tasks that are not strings.
func TestTaskPreviewAsWholeTask(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "word ", " ", "\n", "\t\t", "é", "😀", "\u3000", "\\", "\"", "<&>", "\u2028", "\x00", "\xff", "\xe2\x82", "z"}
	var tasks []json.RawMessage
	for range 400 {
		var b strings.Builder
		// Lengths around the prefixes read: 4 KB, 16 KB, 64 KB.
		size := []int{10, 60, 4 << 10, 16 << 10, 64 << 10, 70 << 10}[rng.IntN(6)] + rng.IntN(64) - 32
		spaces := rng.IntN(3) == 0 // mostly white space, then text
		for b.Len() < size {
			p := pieces[rng.IntN(len(pieces))]
			if spaces && b.Len() < size-200 {
				p = []string{" ", "\n", "\u3000"}[rng.IntN(3)]
			}
			b.WriteString(p)
		}
		raw, _ := json.Marshal(b.String())
		tasks = append(tasks, raw)
		// The same text with its invalid bytes left raw in the string, as
		// a log may hold it.
		tasks = append(tasks, json.RawMessage(`"`+strings.NewReplacer(`\"`, `\"`, `\\`, `\\`, `\ufffd`, "\xff").Replace(string(raw[1:len(raw)-1]))+`"`))
	}
	long := strings.Repeat("x ", 40<<10)
	tasks = append(tasks,
		json.RawMessage(`null`), json.RawMessage(`42`), json.RawMessage(`{"q": "`+long+`"}`),
		json.RawMessage(`["`+long+`"]`), json.RawMessage(` "`+long+`"`), json.RawMessage(`"\ud83d\ude00`+long+`"`),
		json.RawMessage(`"`+strings.Repeat(`\u0020`, 5000)+"tail"+`"`), nil)
	for i, task := range tasks {
		if got, want := taskPreview(task), wholeTaskPreview(task); got != want {
			t.Fatalf("task %d (%d bytes, starting %.60q): preview %q, want %q", i, len(task), task, got, want)
		}
	}
	// And the cell as lllm runs shows it.
	st := &logs.RunStart{Labels: map[string]string{"b": "2", "a": "1"}, Task: tasks[4]}
	if got, want := taskCell(st), "a=1 b=2 "+wholeTaskPreview(tasks[4]); got != want || !strings.HasPrefix(got, "a=1 b=2 ") {
		t.Errorf("cell %q, want %q", got, want)
	}
	if got := taskCell(&logs.RunStart{}); got != "-" {
		t.Errorf("cell of nothing: %q", got)
	}
}
