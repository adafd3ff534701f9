package dialog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// A Parser turns the text of a model's reply into structured data. The
// caller JSON-encodes the result into [Message.Parsed]. A reply that does not
// have the expected shape yields a [*ParseError], on which an agent asks the
// model to fix its reply; any other error is not retried.
//
// A Parser must be safe for concurrent use.
type Parser interface {
	Parse(text string) (any, error)
}

// ParseError reports a reply that does not have the expected shape.
type ParseError struct {
	Missing []string // the required parts the reply lacks, if that is the problem
	Msg     string   // what is wrong, for the model to read
	Err     error    // the underlying error, if any
}

// Error describes what is wrong with the reply, for the model to read.
func (e *ParseError) Error() string {
	msg := e.Msg
	if len(e.Missing) > 0 {
		if msg == "" {
			msg = "missing required tags"
		}
		msg += ": " + strings.Join(e.Missing, ", ")
	}
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if msg == "" {
		msg = "malformed reply"
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// TagParser is the default parser: it extracts the contents of XML-like tags
// and fenced Markdown blocks, and detects signal tags.
//
//   - For each tag in XMLTags it collects every <tag>...</tag> in the reply
//     (shortest matches, across lines), each with its surrounding white space
//     trimmed.
//   - For each tag in MDTags it collects every fenced block whose info string
//     starts with the tag: "```python3\nx\n```" matches "python" and yields
//     "x", the lines between the fences.
//   - For each tag in SignalTags it reports whether the literal <tag> occurs.
//
// Every XML and Markdown tag must occur at least once unless it is listed in
// Optional; if some do not, Parse returns a [*ParseError] listing them all.
//
// Tag names are matched literally. Use a TagParser by pointer, and do not
// change its fields after its first Parse: it compiles its expressions once.
type TagParser struct {
	XMLTags    []string
	MDTags     []string
	SignalTags []string
	Optional   []string

	once sync.Once
	c    *tagMatchers
	err  error
}

// tagMatchers are the compiled expressions of a TagParser.
type tagMatchers struct {
	xml, md  []tagMatcher
	signals  []string
	optional map[string]bool
}

type tagMatcher struct {
	tag string
	re  *regexp.Regexp
}

// TagResult is the result of [TagParser.Parse]. XML and MD have an entry,
// possibly empty, for every configured tag; Signals has one for every signal
// tag.
type TagResult struct {
	Raw     string              `json:"raw"`
	XML     map[string][]string `json:"xml_tags,omitempty"`
	MD      map[string][]string `json:"md_tags,omitempty"`
	Signals map[string]bool     `json:"signal_tags,omitempty"`
}

// Parse returns the reply's tags as a [*TagResult]. If required tags are
// missing, it returns a [*ParseError] together with the partial result.
func (p *TagParser) Parse(text string) (any, error) {
	if p == nil {
		return nil, errors.New("dialog: Parse of a nil *TagParser")
	}
	p.once.Do(p.compile)
	if p.err != nil {
		return nil, p.err
	}
	c := p.c
	res := &TagResult{Raw: text}
	var missing []string
	collect := func(ms []tagMatcher, label string, trim bool) map[string][]string {
		if len(ms) == 0 {
			return nil
		}
		out := make(map[string][]string, len(ms))
		for _, m := range ms {
			found := []string{}
			for _, sub := range m.re.FindAllStringSubmatch(text, -1) {
				s := sub[1]
				if trim {
					s = strings.TrimSpace(s)
				}
				found = append(found, s)
			}
			out[m.tag] = found
			if len(found) == 0 && !c.optional[m.tag] {
				missing = append(missing, fmt.Sprintf(label, m.tag))
			}
		}
		return out
	}
	res.XML = collect(c.xml, "<%s>", true)
	res.MD = collect(c.md, "```%s", false)
	if len(c.signals) > 0 {
		res.Signals = make(map[string]bool, len(c.signals))
		for _, s := range c.signals {
			res.Signals[s] = strings.Contains(text, "<"+s+">")
		}
	}
	if missing != nil {
		return res, &ParseError{Missing: missing}
	}
	return res, nil
}

func (p *TagParser) compile() {
	c := &tagMatchers{optional: map[string]bool{}}
	for _, t := range p.Optional {
		c.optional[t] = true
	}
	build := func(tags []string, kind string, pattern func(q string) string) ([]tagMatcher, error) {
		var ms []tagMatcher
		seen := map[string]bool{}
		for _, t := range tags {
			if t == "" {
				return nil, fmt.Errorf("dialog: TagParser: empty %s tag name", kind)
			}
			if seen[t] {
				continue
			}
			seen[t] = true
			ms = append(ms, tagMatcher{tag: t, re: regexp.MustCompile(pattern(regexp.QuoteMeta(t)))})
		}
		return ms, nil
	}
	var err error
	c.xml, err = build(p.XMLTags, "XML", func(q string) string {
		return `(?s)<` + q + `>(.*?)</` + q + `>`
	})
	if err == nil {
		c.md, err = build(p.MDTags, "Markdown", func(q string) string {
			// The info string runs to the end of the line and has no backticks;
			// the closing fence starts a line; a CRLF before it is dropped.
			return "(?ms)```" + q + "[^\\n`]*\\n(.*?)\\r?\\n?^[ \\t]*```"
		})
	}
	if err != nil {
		p.err = err
		return
	}
	seen := map[string]bool{}
	for _, s := range p.SignalTags {
		if s == "" {
			p.err = errors.New("dialog: TagParser: empty signal tag name")
			return
		}
		if !seen[s] {
			seen[s] = true
			c.signals = append(c.signals, s)
		}
	}
	p.c = c
}

// JSONParser parses a reply that is a JSON object, as structured output is.
// It tolerates the object being wrapped in a fenced block (```json ... ```),
// alone or within other text. It returns the object as a json.RawMessage,
// and a [*ParseError] if the reply holds no valid JSON object.
type JSONParser struct{}

var jsonFence = regexp.MustCompile("(?s)```(?:json|JSON)?[ \\t]*\\n?(.*?)```")

// Parse returns the JSON object in text.
func (JSONParser) Parse(text string) (any, error) {
	obj, err := jsonObject(text)
	if err == nil {
		return obj, nil
	}
	for _, m := range jsonFence.FindAllStringSubmatch(text, -1) {
		if obj, ferr := jsonObject(m[1]); ferr == nil {
			return obj, nil
		}
	}
	return nil, &ParseError{Msg: "the reply is not a valid JSON object: " + err.Error(), Err: err}
}

// jsonObject returns s, trimmed and compacted, if it is a JSON object.
func jsonObject(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty reply")
	}
	if s[0] != '{' {
		return nil, errors.New("it does not start with '{'")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return nil, err
	}
	return json.RawMessage(buf.Bytes()), nil
}
