package provider

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// edit is one change to a JSON request body: it sets the member at path
// to value, or deletes it when value is nil. Deleting a member that is not
// there does nothing; setting one whose parent objects are missing creates
// them. A merge edit (of an empty object) leaves a member that is an
// object as it is, as a JSON merge patch does.
type edit struct {
	path  []string
	value []byte // raw JSON; nil deletes
	merge bool
}

var errJSONEnd = errors.New("unexpected end of JSON")

// editJSON applies edits to doc, which must be a JSON object, and returns
// the edited object in new memory.
func editJSON(doc []byte, edits []edit) ([]byte, error) {
	segs, n, err := editSegments(doc, edits)
	if err != nil {
		return nil, err
	}
	return join(segs, n), nil
}

// join copies segs, n bytes in all, into new memory.
func join(segs []segment, n int) []byte {
	out := make([]byte, 0, n)
	for _, s := range segs {
		out = append(out, s.b...)
	}
	return out
}

// editInPlace is editJSON reusing doc's memory when the edited object fits
// in it without overwriting bytes still to be copied, as it does when the
// edits delete members or keep their lengths: doc then holds the edited
// object followed by spaces, still one JSON document, and the result is its
// start. Otherwise doc is left as it was and the result is new memory.
func editInPlace(doc []byte, edits []edit) ([]byte, error) {
	if len(edits) == 1 && edits[0].value == nil && len(edits[0].path) == 1 {
		if out, ok := deleteLastNumber(doc, edits[0].path[0]); ok {
			return out, nil
		}
	}
	segs, n, err := editSegments(doc, edits)
	if err != nil {
		return nil, err
	}
	obj := doc[skipSpace(doc, 0):]
	if !fitsInPlace(segs, n, len(obj)) {
		return join(segs, n), nil
	}
	w := 0
	for _, s := range segs {
		w += copy(obj[w:], s.b)
	}
	for i := w; i < len(obj); i++ {
		obj[i] = ' '
	}
	return obj[:w], nil
}

// deleteLastNumber deletes doc's top-level member key in place when it is
// the object's last member and its value a number, as langchaingo's
// OpenAI client writes temperature: a look at the body's end instead of a
// scan of it. Those bytes can only be that member in a valid document (the
// last byte closes the object, a number ends no string or nested value, and
// the comma or brace before the key is not inside a string), which must
// not have the key twice: Go's encoder never writes a key twice. ok is
// false when doc does not end so, and then doc is unchanged.
func deleteLastNumber(doc []byte, key string) (out []byte, ok bool) {
	i := skipSpaceBack(doc, len(doc))
	if i == 0 || doc[i-1] != '}' {
		return nil, false
	}
	end := i - 1 // the closing brace
	i = skipSpaceBack(doc, end)
	num := i
	for i > 0 && strings.IndexByte("0123456789+-.eE", doc[i-1]) >= 0 {
		i--
	}
	if i == num {
		return nil, false
	}
	i = skipSpaceBack(doc, i)
	if i == 0 || doc[i-1] != ':' {
		return nil, false
	}
	i = skipSpaceBack(doc, i-1)
	quoted := len(key) + 2
	if i < quoted || doc[i-1] != '"' || doc[i-quoted] != '"' || string(doc[i-quoted+1:i-1]) != key {
		return nil, false
	}
	i = skipSpaceBack(doc, i-quoted)
	if i == 0 || doc[i-1] != ',' && doc[i-1] != '{' {
		return nil, false
	}
	if doc[i-1] == ',' {
		i = skipSpaceBack(doc, i-1)
	}
	start := skipSpace(doc, 0)
	doc[i] = '}'
	for j := i + 1; j <= end; j++ {
		doc[j] = ' '
	}
	return doc[start : i+1], true
}

// skipSpaceBack returns the offset just past the last byte of b[:i] that
// is not JSON whitespace.
func skipSpaceBack(b []byte, i int) int {
	for i > 0 && (b[i-1] == ' ' || b[i-1] == '\t' || b[i-1] == '\n' || b[i-1] == '\r') {
		i--
	}
	return i
}

// fitsInPlace reports whether segs, n bytes in all, can be copied in order
// over the object they were cut from, size bytes long: every piece of the
// object must still be there when its turn comes.
func fitsInPlace(segs []segment, n, size int) bool {
	if n > size {
		return false
	}
	w := 0
	for _, s := range segs {
		if s.off >= 0 && w > s.off {
			return false
		}
		w += len(s.b)
	}
	return true
}

// editSegments applies edits to doc, which must be a JSON object, and
// returns the edited object as segments to be sent in order, and their
// total length. Members the edits do not touch are not copied: the
// segments are runs of doc between the edited members, so editing a large
// body costs one scan of it and a few small allocations.
func editSegments(doc []byte, edits []edit) ([]segment, int, error) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, 0, errors.New("request body is not a JSON object")
	}
	obj := doc[i:]
	var buf [16]member
	members, end, err := objectMembers(buf[:0], obj)
	if err != nil {
		return nil, 0, err
	}
	if j := skipSpace(obj, end); j != len(obj) {
		return nil, 0, fmt.Errorf("unexpected data after the JSON object at offset %d", i+j)
	}
	// Braces, and a run of kept members, a comma and a value per edit.
	w := segWriter{doc: obj, segs: make([]segment, 0, 3*len(edits)+2)}
	if err := w.object(members, edits); err != nil {
		return nil, 0, err
	}
	return w.segs, w.n, nil
}

// segment is a piece of an edited object: a run of the original object
// starting at off, or new bytes (off < 0).
type segment struct {
	b   []byte
	off int
}

// member is one member of a JSON object: its raw key (without quotes),
// its span in the object (from the key's opening quote to the value's
// end), and where its value starts.
type member struct {
	key        []byte
	start, end int
	value      int
}

var (
	openBrace  = []byte("{")
	closeBrace = []byte("}")
	comma      = []byte(",")
)

// segWriter builds an edited object as segments, coalescing runs of
// members that are kept as they are into single slices of doc.
type segWriter struct {
	doc    []byte
	segs   []segment
	n      int
	wrote  bool // a member was written
	inRun  bool
	rs, re int // the pending run of kept members in doc
}

// add writes new bytes.
func (w *segWriter) add(b []byte) {
	w.segs = append(w.segs, segment{b: b, off: -1})
	w.n += len(b)
}

// keep writes member m unchanged.
func (w *segWriter) keep(m member) {
	if w.inRun {
		w.re = m.end
		return
	}
	if w.wrote {
		w.add(comma)
	}
	w.wrote, w.inRun, w.rs, w.re = true, true, m.start, m.end
}

func (w *segWriter) flush() {
	if w.inRun {
		w.segs = append(w.segs, segment{b: w.doc[w.rs:w.re], off: w.rs})
		w.n += w.re - w.rs
		w.inRun = false
	}
}

// put writes the member key with value.
func (w *segWriter) put(key string, value []byte) {
	w.flush()
	if w.wrote {
		w.add(comma)
	}
	w.wrote = true
	b := make([]byte, 0, len(key)+3+len(value))
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	w.add(append(b, value...))
}

// object writes the object of members (from w.doc) with edits applied.
func (w *segWriter) object(members []member, edits []edit) error {
	w.add(openBrace)
	var used []bool
	if len(edits) > 0 {
		used = make([]bool, len(edits))
	}
	for _, m := range members {
		var value []byte
		changed, keep, nested := false, true, false
		for k, e := range edits {
			if len(e.path) == 0 || e.path[0] != string(m.key) {
				continue
			}
			used[k] = true
			if len(e.path) == 1 {
				if e.merge && w.doc[m.value] == '{' {
					continue
				}
				value, keep, changed = e.value, e.value != nil, true
			} else {
				nested = true
			}
		}
		switch {
		case !keep:
			w.flush()
			continue
		case !changed && !nested:
			w.keep(m)
			continue
		}
		if !changed {
			value = w.doc[m.value:m.end]
		}
		if nested {
			edited, err := editNested(value, subEdits(edits, string(m.key)))
			if err != nil {
				return err
			}
			value = edited
		}
		w.put(string(m.key), value)
	}
	// Members that were not there: add the sets, in the order given.
	for k, e := range edits {
		if used[k] || len(e.path) == 0 {
			continue
		}
		key := e.path[0]
		var value []byte
		for j := k; j < len(edits); j++ {
			if len(edits[j].path) > 0 && edits[j].path[0] == key {
				used[j] = true
				if len(edits[j].path) == 1 {
					value = edits[j].value
				}
			}
		}
		if sub := subEdits(edits, key); hasSet(sub) {
			edited, err := editNested(value, sub)
			if err != nil {
				return err
			}
			value = edited
		}
		if value != nil {
			w.put(key, value)
		}
	}
	w.flush()
	w.add(closeBrace)
	return nil
}

// editNested applies edits to value: an object is edited; anything else
// is replaced by an object holding the edits' sets, or kept if they only
// delete.
func editNested(value []byte, edits []edit) ([]byte, error) {
	if i := skipSpace(value, 0); i < len(value) && value[i] == '{' {
		return editJSON(value[i:], edits)
	}
	if !hasSet(edits) {
		return value, nil
	}
	return editJSON([]byte("{}"), edits)
}

// subEdits returns the edits below key, with key removed from their paths.
func subEdits(edits []edit, key string) []edit {
	var sub []edit
	for _, e := range edits {
		if len(e.path) > 1 && e.path[0] == key {
			sub = append(sub, edit{path: e.path[1:], value: e.value, merge: e.merge})
		}
	}
	return sub
}

// hasSet reports whether any of edits sets a value.
func hasSet(edits []edit) bool {
	for _, e := range edits {
		if e.value != nil {
			return true
		}
	}
	return false
}

// objectMembers splits the JSON object at the start of obj into its
// members, appended to dst, and returns the offset just past it.
func objectMembers(dst []member, obj []byte) ([]member, int, error) {
	if len(obj) == 0 || obj[0] != '{' {
		return nil, 0, errors.New("not a JSON object")
	}
	members := dst
	i := 1
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) {
			return nil, 0, errJSONEnd
		}
		if obj[i] == '}' {
			return members, i + 1, nil
		}
		if len(members) > len(dst) {
			if obj[i] != ',' {
				return nil, 0, fmt.Errorf("expected ',' or '}' at offset %d", i)
			}
			i = skipSpace(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			return nil, 0, fmt.Errorf("expected a member name at offset %d", i)
		}
		ks := i
		ke, err := skipString(obj, i)
		if err != nil {
			return nil, 0, err
		}
		i = skipSpace(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return nil, 0, fmt.Errorf("expected ':' at offset %d", i)
		}
		vs := skipSpace(obj, i+1)
		ve, err := skipValue(obj, vs)
		if err != nil {
			return nil, 0, err
		}
		members = append(members, member{key: obj[ks+1 : ke-1], start: ks, end: ve, value: vs})
		i = ve
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset just past the JSON string starting at b[i].
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errJSONEnd
		}
		j += k
		// The quote ends the string unless an odd number of backslashes
		// escapes it.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, nil
		}
		j++
	}
}

// structural marks the bytes skipValue must look at inside an object or
// array.
var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

// skipValue returns the offset just past the JSON value starting at b[i].
// It checks only what it needs to find the value's end.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errJSONEnd
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			c := b[i]
			if !structural[c] {
				i++
				continue
			}
			switch c {
			case '"':
				j, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errJSONEnd
	case '}', ']', ',', ':':
		return 0, fmt.Errorf("expected a value at offset %d", i)
	default: // a number, true, false or null
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '{' || c == '[' || c == ':' {
				break
			}
			j++
		}
		return j, nil
	}
}
