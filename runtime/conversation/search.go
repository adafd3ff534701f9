package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lllm-go/lllm/dialog"
)

// Search limits.
const (
	// DefaultSearchLimit is the limit of a search that sets none.
	DefaultSearchLimit = 20
	// MaxSearchLimit is the largest limit a search takes.
	MaxSearchLimit = 200
	// snippetContext is how many bytes of text a snippet shows on each
	// side of a match.
	snippetContext = 40
)

// ErrEmptyQuery is returned for a search without a query.
var ErrEmptyQuery = errors.New("the search query is empty")

// SearchRequest is a search over the messages of conversations.
type SearchRequest struct {
	// Query is looked for as a substring, ignoring case (Unicode simple
	// case folding).
	Query string
	// Agent names the conversations searched; Sender, when set, narrows
	// them to one. Empty Agent searches every conversation.
	Agent, Sender string
	// Limit is the most matches returned: 0 means DefaultSearchLimit; at
	// most MaxSearchLimit.
	Limit int
	// Archives searches the conversations' archive files too, after
	// their live histories.
	Archives bool
}

// Match is a message that matches a search.
type Match struct {
	Agent  string `json:"agent"`
	Sender string `json:"sender"`
	// Archive is the archive holding the message; 0 (left out) for the
	// live history.
	Archive int `json:"archive,omitempty"`
	// Index is the message's place in the live history, as GET
	// .../messages lists it (or in the archive's messages), from 0.
	Index int       `json:"index"`
	Seq   int64     `json:"seq"`
	Time  time.Time `json:"ts"`
	// Field is what matched: "content" (the message), or the "question"
	// or "answer" of one of its asks.
	Field string      `json:"field"`
	Role  dialog.Role `json:"role"`
	Name  string      `json:"name,omitempty"`
	// Snippet is the match with up to 40 bytes of text on each side, on
	// one line; "…" marks a cut.
	Snippet string `json:"snippet"`
}

// SearchResult is the answer of a search.
type SearchResult struct {
	Query   string  `json:"query"`
	Matches []Match `json:"matches"`
	// Truncated is set when there are more matches than the limit.
	Truncated bool `json:"truncated"`
}

// Search looks for req.Query in the conversations req names: in the
// conversations' listing order (most recently active first), each one's
// live history from oldest to newest, then, with req.Archives, its
// archives from newest to oldest, each read from its file one message at
// a time. It stops as soon as it has one match more than the limit, or
// when ctx ends. A missing or unreadable archive file is skipped.
func (s *Store) Search(ctx context.Context, req SearchRequest) (*SearchResult, error) {
	q := strings.TrimSpace(req.Query)
	if q == "" {
		return nil, ErrEmptyQuery
	}
	limit := req.Limit
	if limit == 0 {
		limit = DefaultSearchLimit
	}
	if limit < 0 || limit > MaxSearchLimit {
		return nil, fmt.Errorf("search limit %d: want 1 to %d", limit, MaxSearchLimit)
	}
	res := &SearchResult{Query: req.Query, Matches: []Match{}}
	sr := searcher{needle: foldString(q), limit: limit, res: res}
	for _, sum := range s.List() {
		if (req.Agent != "" && sum.Agent != req.Agent) || (req.Sender != "" && sum.Sender != req.Sender) {
			continue
		}
		c, ok := s.Lookup(sum.Agent, sum.Sender)
		if !ok {
			continue // deleted meanwhile
		}
		for i, e := range c.Messages() {
			if sr.entry(c, 0, i, e) {
				return res, nil
			}
		}
		if !req.Archives {
			continue
		}
		as := c.Archives()
		for i := len(as) - 1; i >= 0; i-- {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if sr.archive(c, as[i]) {
				return res, nil
			}
		}
	}
	return res, ctx.Err()
}

// searcher collects the matches of one search.
type searcher struct {
	needle string // folded
	limit  int
	res    *SearchResult
}

// entry adds e's matches; true once the limit is passed.
func (sr *searcher) entry(c *Conversation, archive, index int, e Entry) bool {
	if e.Message == nil {
		return false
	}
	m := Match{Agent: c.agent, Sender: c.sender, Archive: archive, Index: index, Seq: e.Seq, Time: e.Time}
	// try adds a match of text, written by name in role, if it has one.
	try := func(field string, role dialog.Role, name, text string) bool {
		snip, ok := matchSnippet(text, sr.needle)
		if !ok {
			return false
		}
		if len(sr.res.Matches) == sr.limit {
			sr.res.Truncated = true
			return true
		}
		m.Field, m.Role, m.Name, m.Snippet = field, role, name, snip
		sr.res.Matches = append(sr.res.Matches, m)
		return false
	}
	if try("content", e.Message.Role, e.Message.Name, e.Message.Text()) {
		return true
	}
	for _, a := range e.Asks {
		// The question is the asking agent's, the answer the sender's.
		if try("question", dialog.RoleAssistant, a.Agent, a.Question) || try("answer", dialog.RoleUser, c.sender, a.Answer) {
			return true
		}
	}
	return false
}

// archive streams the messages of a's file through entry; true once the
// limit is passed.
func (sr *searcher) archive(c *Conversation, a Archive) bool {
	f, err := os.Open(filepath.Join(c.dir, filepath.FromSlash(a.File)))
	if err != nil {
		return false
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		if t != "messages" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return false
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return false
		}
		for i := 0; dec.More(); i++ {
			var e Entry
			if dec.Decode(&e) != nil {
				return false
			}
			if sr.entry(c, a.ID, i, e) {
				return true
			}
		}
		return false
	}
	return false
}

// foldString case-folds s as terms does.
func foldString(s string) string { return strings.Map(foldRune, s) }

// matchSnippet finds needle (folded) in text ignoring case and returns the
// match with some text around it, on one line.
func matchSnippet(text, needle string) (string, bool) {
	folded := foldString(text)
	at := strings.Index(folded, needle)
	if at < 0 {
		return "", false
	}
	// Folding may change a rune's length (K, the Kelvin sign, is k), so
	// map the folded text's offsets back to text's.
	offs := make([]int, 0, len(folded)+1)
	var buf [utf8.UTFMax]byte
	for i, r := range text {
		for range utf8.EncodeRune(buf[:], foldRune(r)) {
			offs = append(offs, i)
		}
	}
	offs = append(offs, len(text))
	start, end := offs[at], offs[at+len(needle)]
	from, to := max(0, start-snippetContext), min(len(text), end+snippetContext)
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	snip := strings.Join(strings.Fields(text[from:to]), " ")
	if from > 0 {
		snip = "…" + snip
	}
	if to < len(text) {
		snip += "…"
	}
	return snip, true
}
