package provider

import (
	"bytes"
	"errors"
	"fmt"
)

// edit is one change to a JSON request body: it sets the member at path
// to value, or deletes it when value is nil. Deleting a member that is not
// there does nothing; setting one whose parent objects are missing creates
// them.
type edit struct {
	path  []string
	value []byte // raw JSON; nil deletes
}

var errJSONEnd = errors.New("unexpected end of JSON")

// editJSON applies edits to doc, which must be a JSON object, and returns
// the edited object. Members it does not touch are copied byte for byte;
// it never decodes the values it passes through, so editing a large body
// costs one scan of its top level.
func editJSON(doc []byte, edits []edit) ([]byte, error) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, errors.New("request body is not a JSON object")
	}
	end, err := skipValue(doc, i)
	if err != nil {
		return nil, err
	}
	if j := skipSpace(doc, end); j != len(doc) {
		return nil, fmt.Errorf("unexpected data after the JSON object at offset %d", j)
	}
	return editObject(make([]byte, 0, len(doc)+64), doc[i:end], edits)
}

// member is one member of a JSON object: its raw key (without quotes) and
// its raw value.
type member struct {
	key, value []byte
}

// editObject appends obj, a complete JSON object, with edits applied, to dst.
func editObject(dst, obj []byte, edits []edit) ([]byte, error) {
	members, err := objectMembers(obj)
	if err != nil {
		return nil, err
	}
	dst = append(dst, '{')
	n := 0 // members written
	write := func(key string, value []byte) {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, '"')
		dst = append(dst, key...)
		dst = append(dst, '"', ':')
		dst = append(dst, value...)
	}
	used := make([]bool, len(edits))
	for _, m := range members {
		value, keep, nested := m.value, true, false
		for k, e := range edits {
			if len(e.path) == 0 || e.path[0] != string(m.key) {
				continue
			}
			used[k] = true
			if len(e.path) == 1 {
				value, keep = e.value, e.value != nil
			} else {
				nested = true
			}
		}
		if !keep {
			continue
		}
		if nested {
			sub := subEdits(edits, string(m.key))
			i := skipSpace(value, 0)
			if i < len(value) && value[i] == '{' {
				edited, err := editObject(nil, value[i:], sub)
				if err != nil {
					return nil, err
				}
				value = edited
			} else if hasSet(sub) {
				// Replace a non-object by an object holding the sets.
				edited, err := editObject(nil, []byte("{}"), sub)
				if err != nil {
					return nil, err
				}
				value = edited
			}
		}
		write(string(m.key), value)
	}
	// Members that were not there: add the sets, in the order given.
	for k, e := range edits {
		if used[k] || len(e.path) == 0 {
			continue
		}
		key := e.path[0]
		var value []byte
		for j := k; j < len(edits); j++ {
			if len(edits[j].path) == 0 || edits[j].path[0] != key {
				continue
			}
			used[j] = true
			if len(edits[j].path) == 1 {
				value = edits[j].value
			}
		}
		if sub := subEdits(edits, key); hasSet(sub) {
			base := value
			if j := skipSpace(base, 0); j >= len(base) || base[j] != '{' {
				base = []byte("{}")
			}
			edited, err := editObject(nil, base, sub)
			if err != nil {
				return nil, err
			}
			value = edited
		}
		if value != nil {
			write(key, value)
		}
	}
	return append(dst, '}'), nil
}

// subEdits returns the edits below key, with key removed from their paths.
func subEdits(edits []edit, key string) []edit {
	var sub []edit
	for _, e := range edits {
		if len(e.path) > 1 && e.path[0] == key {
			sub = append(sub, edit{path: e.path[1:], value: e.value})
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

// objectMembers splits obj, a complete JSON object, into its members.
func objectMembers(obj []byte) ([]member, error) {
	if len(obj) == 0 || obj[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var members []member
	i := 1
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) {
			return nil, errJSONEnd
		}
		if obj[i] == '}' {
			return members, nil
		}
		if len(members) > 0 {
			if obj[i] != ',' {
				return nil, fmt.Errorf("expected ',' or '}' at offset %d", i)
			}
			i = skipSpace(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			return nil, fmt.Errorf("expected a member name at offset %d", i)
		}
		ke, err := skipString(obj, i)
		if err != nil {
			return nil, err
		}
		key := obj[i+1 : ke-1]
		i = skipSpace(obj, ke)
		if i >= len(obj) || obj[i] != ':' {
			return nil, fmt.Errorf("expected ':' at offset %d", i)
		}
		vs := skipSpace(obj, i+1)
		ve, err := skipValue(obj, vs)
		if err != nil {
			return nil, err
		}
		members = append(members, member{key: key, value: obj[vs:ve]})
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
			if !structural[b[i]] {
				i++
				continue
			}
			switch b[i] {
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
