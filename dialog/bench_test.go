package dialog

import (
	"fmt"
	"strings"
	"testing"
)

// benchDialog is a dialog of n messages of about 200 bytes each, one in ten
// with a small image, as agent loops produce.
func benchDialog(b *testing.B, n int) *Dialog {
	b.Helper()
	d, err := New("bench")
	if err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("lorem ipsum ", 16)
	img := &Image{MIME: "image/png", Data: make([]byte, 4<<10)}
	for i := range n {
		m := Message{Role: RoleUser, Content: fmt.Sprintf("%d %s", i, body), Metadata: map[string]string{"turn": fmt.Sprint(i)}}
		if i%10 == 0 {
			m.Parts = []Part{{Type: PartText, Text: "see"}, {Type: PartImage, Image: img}}
		}
		if _, err := d.Append(m); err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// deepCopy is what the reference framework did on every fork.
func deepCopy(d *Dialog) []*Message {
	ms := d.Messages()
	out := make([]*Message, len(ms))
	for i, m := range ms {
		out[i] = m.Clone()
	}
	return out
}

// BenchmarkFork compares a full fork with a deep copy of the same dialog.
func BenchmarkFork(b *testing.B) {
	for _, n := range []int{10, 1_000, 100_000} {
		d := benchDialog(b, n)
		b.Run(fmt.Sprintf("fork/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Fork(0, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("deepcopy/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = deepCopy(d)
			}
		})
	}
}

// BenchmarkForkAppend is the agent-loop pattern: fork a working copy of a
// long dialog and add a message to it.
func BenchmarkForkAppend(b *testing.B) {
	d := benchDialog(b, 100_000)
	b.ReportAllocs()
	for b.Loop() {
		w, _ := d.Fork(0, 0)
		if _, err := w.PutText("retry"); err != nil {
			b.Fatal(err)
		}
	}
}
