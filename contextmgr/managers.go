package contextmgr

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/lllm-go/lllm/dialog"
)

func init() {
	Register("default", newDefault)
	Register("none", newNull)
	Register("window", newWindow)
	Register("summary", newSummary)
}

// TruncationMarker starts the text of a message that the default manager
// cut from the front to fit the budget.
const TruncationMarker = "[...earlier content truncated...]\n"

// DefaultBuffer is the default safety buffer, in tokens, that the default
// and summary managers keep free below the budget.
const DefaultBuffer = 5000

// minTruncateTokens is the budget that must remain, beyond the messages
// kept whole, for the default manager to keep a truncated message.
const minTruncateTokens = 50

// ErrNoSummarizer is the problem of the summary manager's [FitError] when
// Input.Summarize is nil.
var ErrNoSummarizer = errors.New("no summarizer (Input.Summarize is nil)")

// budget is the token budget of the default and summary managers.
type budget struct {
	maxTokens int // 0: the model's context window
	buffer    int
}

func parseBudget(cfg map[string]any) (budget, error) {
	c := struct {
		MaxTokens int `json:"max_tokens"`
		Buffer    int `json:"buffer"`
	}{Buffer: DefaultBuffer}
	if err := DecodeConfig(cfg, &c); err != nil {
		return budget{}, err
	}
	if err := cmp.Or(atLeast("max_tokens", c.MaxTokens, 0), atLeast("buffer", c.Buffer, 0)); err != nil {
		return budget{}, err
	}
	return budget{maxTokens: c.MaxTokens, buffer: c.Buffer}, nil
}

// limit returns the number of tokens the messages may use for model when
// the request's tool declarations take tools tokens, and a description of
// where it comes from. The budget is max_tokens if set, else the model's
// context window; the limit is the budget less the buffer, or half the
// budget when that is more, so that a larger budget never gives a smaller
// limit, and less the tool declarations.
func (b budget) limit(model string, tools int) (int, string) {
	size, src := b.maxTokens, "max_tokens"
	if size <= 0 {
		var known bool
		size, known = ContextWindow(model)
		src = fmt.Sprintf("context window of %q", model)
		if !known {
			src = fmt.Sprintf("default context window (%q is not a known model)", model)
		}
	}
	n, why := size-b.buffer, fmt.Sprintf("%s %d - buffer %d", src, size, b.buffer)
	if n < size/2 {
		n, why = size/2, fmt.Sprintf("half the %s %d, as the buffer %d would leave less", src, size, b.buffer)
	}
	if tools > 0 {
		n -= tools
		why += fmt.Sprintf(" - tool declarations %d", tools)
	}
	return n, fmt.Sprintf("%d tokens (%s)", n, why)
}

// prepared is what every manager needs: a tokenizer, the encoding and the
// count of each message.
type prepared struct {
	tok    *Tokenizer
	enc    string
	counts []int
	total  int
	tools  int // of the tool declarations
}

// prepare counts the messages of in for the manager of type typ; an
// error is a *[FitError].
func prepare(ctx context.Context, typ string, in Input) (prepared, error) {
	if err := ctx.Err(); err != nil {
		return prepared{}, &FitError{Type: typ, Err: err}
	}
	p := prepared{tok: in.Tokens, enc: EncodingFor(in.Model), counts: make([]int, len(in.Messages))}
	if p.tok == nil {
		p.tok = NewTokenizer()
	}
	for i, m := range in.Messages {
		if m == nil {
			return prepared{}, &FitError{Type: typ, Err: fmt.Errorf("message %d is nil", i)}
		}
		p.counts[i] = p.tok.countMessage(p.enc, m)
		p.total += p.counts[i]
	}
	p.tools = p.tok.countTools(p.enc, in.Tools)
	return p, nil
}

func (p prepared) sum(s span) int {
	n := 0
	for _, c := range p.counts[s.lo:s.hi] {
		n += c
	}
	return n
}

// span is the messages [lo, hi) of a dialog that are kept or dropped
// together.
type span struct{ lo, hi int }

// units splits msgs[from:] into the units a manager keeps or drops whole:
// a message that requests tool calls together with everything up to the
// last tool message answering them (results come right after their call
// on the wire, but a dialog may hold others in between); every other
// message alone.
func units(msgs []*dialog.Message, from int) []span {
	var out []span
	for i := from; i < len(msgs); {
		hi := i + 1
		for j := i; j < hi; j++ {
			for _, fc := range msgs[j].FunctionCalls {
				hi = max(hi, resultOf(msgs, j, fc.ID)+1)
			}
		}
		out = append(out, span{i, hi})
		i = hi
	}
	return out
}

// resultOf returns the index of the tool message answering the call id
// of msgs[call], or call when there is none before the model's next turn.
func resultOf(msgs []*dialog.Message, call int, id string) int {
	for k := call + 1; k < len(msgs); k++ {
		switch m := msgs[k]; {
		case m.Role == dialog.RoleTool && m.ToolCallID == id:
			return k
		case m.Role == dialog.RoleAssistant || m.Role == dialog.RoleToolCall:
			return call
		}
	}
	return call
}

// nullManager passes the messages through unchanged.
type nullManager struct{}

func newNull(cfg map[string]any) (Manager, error) {
	if err := DecodeConfig(cfg, &struct{}{}); err != nil {
		return nil, err
	}
	return nullManager{}, nil
}

// Fit returns the messages unchanged, with Action "none". It counts no
// tokens.
func (nullManager) Fit(ctx context.Context, in Input) (Result, error) {
	return Result{Messages: in.Messages, Action: "none"}, nil
}

// defaultManager keeps the newest messages that fit a token budget.
type defaultManager struct{ budget }

func newDefault(cfg map[string]any) (Manager, error) {
	b, err := parseBudget(cfg)
	if err != nil {
		return nil, err
	}
	return defaultManager{b}, nil
}

// Fit keeps the first message, then whole units from the newest backwards
// while they fit the limit; the first one that does not fit is kept cut
// from the front if it is a single message and more than 50 tokens of the
// limit remain. The newest unit is always kept, whole when it cannot be
// cut, even over the limit.
func (d defaultManager) Fit(ctx context.Context, in Input) (Result, error) {
	p, err := prepare(ctx, "default", in)
	if err != nil {
		return Result{}, err
	}
	msgs := in.Messages
	res := Result{Messages: msgs, Action: "none", TokensBefore: p.total, TokensAfter: p.total}
	limit, desc := d.limit(in.Model, p.tools)
	if len(msgs) == 0 || p.total <= limit {
		return res, nil
	}
	if len(msgs) == 1 {
		res.Note = fmt.Sprintf("over the limit %s, but the only message cannot be dropped", desc)
		return res, nil
	}
	used, start := p.counts[0], len(msgs)
	var cut *dialog.Message
	cutTokens, whole := 0, 0
	spans := units(msgs, 1)
	for i := len(spans) - 1; i >= 0; i-- {
		s := spans[i]
		c := p.sum(s)
		if used+c <= limit {
			used += c
			start = s.lo
			continue
		}
		if rem := limit - used; rem > minTruncateTokens && s.hi-s.lo == 1 {
			if m, n, ok := truncate(p.tok, p.enc, msgs[s.lo], rem); ok {
				cut, cutTokens = m, n
				used += n
			}
		}
		if cut == nil && i == len(spans)-1 {
			// The newest unit is always sent, whole when it cannot be
			// cut: without it the model would get the first message
			// alone, with nothing to answer.
			used, start, whole = used+c, s.lo, c
		}
		break
	}
	out := make([]*dialog.Message, 0, 2+len(msgs)-start)
	out = append(out, msgs[0])
	if cut != nil {
		out = append(out, cut)
	}
	out = append(out, msgs[start:]...)
	res.Messages, res.Action, res.TokensAfter = out, "truncate", used
	note := fmt.Sprintf("kept the first message and the last %d of %d messages", len(msgs)-start, len(msgs)-1)
	if cut != nil {
		note += fmt.Sprintf(", and 1 more cut to %d tokens", cutTokens)
	}
	res.Note = note + "; limit " + desc
	if p.counts[0] > limit {
		res.Note += fmt.Sprintf("; the first message alone (%d tokens) is over the limit", p.counts[0])
	}
	if whole > 0 {
		res.Note += fmt.Sprintf("; the newest messages (%d tokens) are kept whole over the limit, as they cannot be cut", whole)
	}
	return res, nil
}

// truncate returns a copy of m whose text is cut from the front and marked
// with [TruncationMarker] so that the copy costs at most avail tokens, and
// what it costs. Image parts are dropped. It fails for a message that
// requests tool calls or has no text, and when nothing of the text fits.
func truncate(tok *Tokenizer, enc string, m *dialog.Message, avail int) (*dialog.Message, int, bool) {
	text := m.Text()
	if len(m.FunctionCalls) > 0 || text == "" {
		return nil, 0, false
	}
	n := avail - MessageOverhead - tok.count(enc, TruncationMarker)
	// The marker and the kept text may tokenize together a little
	// differently than apart; count the result and retry a few times.
	for try := 0; try < 4 && n > 0; try++ {
		kept := tok.tail(enc, text, n)
		if kept == "" {
			break
		}
		c := *m // never modify the input: it is shared with the dialog
		c.Content = TruncationMarker + kept
		c.Parts = nil
		if c.Modality == dialog.ModalityImage {
			c.Modality = dialog.ModalityText
		}
		got := tok.measure(enc, &c)
		if got <= avail {
			return &c, got, true
		}
		n -= got - avail
	}
	return nil, 0, false
}

// windowManager keeps the first message and the last n.
type windowManager struct{ n int }

func newWindow(cfg map[string]any) (Manager, error) {
	c := struct {
		N int `json:"n"`
	}{N: 20}
	if err := DecodeConfig(cfg, &c); err != nil {
		return nil, err
	}
	if err := atLeast("n", c.N, 1); err != nil {
		return nil, err
	}
	return windowManager{n: c.N}, nil
}

// Fit keeps the first message and the last n messages, reaching further back
// when the window would otherwise separate tool results from their call.
func (w windowManager) Fit(ctx context.Context, in Input) (Result, error) {
	p, err := prepare(ctx, "window", in)
	if err != nil {
		return Result{}, err
	}
	msgs := in.Messages
	res := Result{Messages: msgs, Action: "none", TokensBefore: p.total, TokensAfter: p.total}
	if len(msgs) <= w.n+1 {
		return res, nil
	}
	start := len(msgs) - w.n
	for _, s := range units(msgs, 1) {
		if s.lo <= start && start < s.hi {
			start = s.lo
			break
		}
	}
	out := make([]*dialog.Message, 0, 1+len(msgs)-start)
	out = append(append(out, msgs[0]), msgs[start:]...)
	res.Messages, res.Action = out, "window"
	res.TokensAfter = p.counts[0] + p.sum(span{start, len(msgs)})
	res.Note = fmt.Sprintf("kept the first message and the last %d of %d messages (n=%d", len(msgs)-start, len(msgs)-1, w.n)
	if extra := len(msgs) - start - w.n; extra > 0 {
		res.Note += fmt.Sprintf(", %d more to keep a tool call with its results", extra)
	}
	res.Note += ")"
	return res, nil
}
