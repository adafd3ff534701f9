package viewer

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// head is what the index needs from a record: its kind, dialog and index,
// and where its payload starts.
type head struct {
	kind    []byte
	dialog  []byte
	index   int
	payload int // offset of the payload value in the line; -1 if not seen
}

var errSlow = errors.New("viewer: record needs a full decode")

// scanHead reads the top-level keys of one record line up to its payload,
// without decoding the payload. The Writer puts seq, ts, kind, dialog,
// index and prompt before the payload, so for its records this reads only
// the first hundred bytes or so of a line, whatever the size of the
// message. Anything unusual (escaped keys, a payload before the kind,
// unknown top-level keys) returns errSlow and the caller decodes the line
// with encoding/json.
func scanHead(line []byte) (head, error) {
	h := head{payload: -1}
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return h, errSlow
	}
	i++
	for {
		i = skipWS(line, i)
		if i >= len(line) {
			return h, errSlow
		}
		if line[i] == '}' {
			return h, nil
		}
		if line[i] == ',' {
			i = skipWS(line, i+1)
		}
		key, next, ok := plainString(line, i)
		if !ok {
			return h, errSlow
		}
		i = skipWS(line, next)
		if i >= len(line) || line[i] != ':' {
			return h, errSlow
		}
		i = skipWS(line, i+1)
		switch string(key) {
		case "kind":
			v, next, ok := plainString(line, i)
			if !ok {
				return h, errSlow
			}
			h.kind, i = v, next
		case "dialog":
			v, next, ok := plainString(line, i)
			if !ok {
				return h, errSlow
			}
			h.dialog, i = v, next
		case "index":
			j := i
			for j < len(line) && (line[j] == '-' || line[j] >= '0' && line[j] <= '9') {
				j++
			}
			n, err := strconv.Atoi(string(line[i:j]))
			if err != nil {
				return h, errSlow
			}
			h.index, i = n, j
		case "seq", "ts", "prompt":
			next, ok := skipScalar(line, i)
			if !ok {
				return h, errSlow
			}
			i = next
		default:
			if h.kind == nil || string(key) != string(h.kind) {
				return h, errSlow
			}
			h.payload = i
			return h, nil
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// plainString reads a JSON string without escapes starting at b[i] and
// returns its contents and the offset after its closing quote.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	j := bytes.IndexByte(b[i+1:], '"')
	if j < 0 {
		return nil, 0, false
	}
	s := b[i+1 : i+1+j]
	if bytes.IndexByte(s, '\\') >= 0 {
		return nil, 0, false
	}
	return s, i + 2 + j, true
}

// skipScalar skips a string, number, true, false or null at b[i].
func skipScalar(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	if b[i] == '"' {
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, true
			}
		}
		return 0, false
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ' ' {
		j++
	}
	if j == i || !json.Valid(b[i:j]) {
		return 0, false
	}
	return j, true
}

// slowHead decodes the top level of a record with encoding/json, for the
// lines scanHead cannot read.
func slowHead(line []byte) (head, json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		return head{}, nil, err
	}
	var h head
	var kind, dlg string
	if err := json.Unmarshal(top["kind"], &kind); err != nil || kind == "" {
		return head{}, nil, errors.New("record without a kind")
	}
	if raw, ok := top["dialog"]; ok {
		if err := json.Unmarshal(raw, &dlg); err != nil {
			return head{}, nil, errors.New("record with a malformed dialog")
		}
	}
	if raw, ok := top["index"]; ok {
		if err := json.Unmarshal(raw, &h.index); err != nil {
			return head{}, nil, errors.New("record with a malformed index")
		}
	}
	h.kind, h.dialog, h.payload = []byte(kind), []byte(dlg), -1
	return h, top[kind], nil
}
