package dialog

// A dialog's messages live in a persistent sequence of chunks that forks
// share. A chunk is a fixed-size array of message pointers that continues a
// prefix (the first prevLen messages of the chain ending at prev). Only the
// dialog that made a chunk appends to it, and it only ever writes past every
// index another dialog can see, so sharing needs no copying and no locks:
// a full fork is a copy of the two-word view, whatever the dialog's length.

const (
	minChunk = 8
	maxChunk = 1 << 14
)

type chunk struct {
	prev    *chunk
	prevLen int
	owner   uint64 // serial of the dialog that may append in place
	msgs    []*Message
}

// seq is one dialog's view: the first n messages of tail, after its prefix.
type seq struct {
	tail *chunk
	n    int
}

func (s seq) len() int {
	if s.tail == nil {
		return 0
	}
	return s.tail.prevLen + s.n
}

// append adds m for the dialog with serial owner and returns the new view.
func (s seq) append(owner uint64, m *Message) seq {
	if c := s.tail; c != nil && c.owner == owner && s.n < len(c.msgs) {
		c.msgs[s.n] = m
		return seq{c, s.n + 1}
	}
	size := minChunk
	if c := s.tail; c != nil && c.owner == owner {
		size = min(2*len(c.msgs), maxChunk)
	}
	c := &chunk{prev: s.tail, prevLen: s.len(), owner: owner, msgs: make([]*Message, size)}
	c.msgs[0] = m
	return seq{c, 1}
}

// fromSlice builds a fresh view owned by owner holding ms.
func fromSlice(owner uint64, ms []*Message) seq {
	if len(ms) == 0 {
		return seq{}
	}
	c := &chunk{owner: owner, msgs: make([]*Message, max(len(ms), minChunk))}
	copy(c.msgs, ms)
	return seq{c, len(ms)}
}

// at returns message i, which must be in range.
func (s seq) at(i int) *Message {
	c := s.tail
	for i < c.prevLen {
		c = c.prev
	}
	return c.msgs[i-c.prevLen]
}

// appendTo appends messages [from, to) of s to dst.
func (s seq) appendTo(dst []*Message, from, to int) []*Message {
	if from >= to {
		return dst
	}
	// Collect the chunks from the tail back to the one holding from.
	var stack [64]*chunk
	chain := stack[:0]
	for c := s.tail; c != nil; c = c.prev {
		chain = append(chain, c)
		if c.prevLen <= from {
			break
		}
	}
	end := s.len()
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		// This chunk holds global indexes [c.prevLen, hi).
		hi := end
		if i > 0 {
			hi = chain[i-1].prevLen
		}
		lo := max(from, c.prevLen)
		hi = min(hi, to)
		if lo < hi {
			dst = append(dst, c.msgs[lo-c.prevLen:hi-c.prevLen]...)
		}
	}
	return dst
}

// prefix returns the view of s's first n messages.
func (s seq) prefix(n int) seq {
	if n >= s.len() {
		return s
	}
	if n == 0 {
		return seq{}
	}
	c := s.tail
	for n <= c.prevLen {
		c = c.prev
	}
	return seq{c, n - c.prevLen}
}
