// Package dialog is the vocabulary of lllm-go: messages and their content
// parts, dialogs and the fork tree they grow into, and the prompts that govern
// each model turn (templates, parsers, handlers and tool declarations).
//
// The package does no I/O. Every change to a dialog tree is reported to a
// [Sink] as an [Event]; the logs package turns those events into a durable run
// log, and [Forest.Apply] turns them back into dialogs.
package dialog

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Role is who speaks a message.
type Role string

// The roles a message can have.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"      // the result of a tool call
	RoleToolCall  Role = "tool_call" // an assistant turn that only requests tool calls
)

// Modality is the kind of content a message carries.
type Modality string

// The modalities a message can have.
const (
	ModalityText  Modality = "text"
	ModalityImage Modality = "image"
)

// APIType names the provider API a reply came from.
type APIType string

// The provider API styles a reply can come from.
const (
	APICompletion APIType = "completion" // chat-completions style
	APIResponse   APIType = "response"   // responses style
)

// PartType is the type of one content part.
type PartType string

// The content part types.
const (
	PartText  PartType = "text"
	PartImage PartType = "image"
)

// Part is one piece of a multi-part message: text or an image.
type Part struct {
	Type  PartType `json:"type"`
	Text  string   `json:"text,omitempty"`
	Image *Image   `json:"image,omitempty"`
}

// Image is image content: validated bytes with their MIME type, or a URL.
// Data is base64 in JSON.
type Image struct {
	MIME string `json:"mime,omitempty"`
	Data []byte `json:"data,omitempty"`
	URL  string `json:"url,omitempty"`
}

// FunctionCall is a tool call requested by the model and, once run, its result.
type FunctionCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // a JSON object; broken JSON a model wrote, as a JSON string of its text
	Result    string          `json:"result,omitempty"`    // the text sent back to the model
	Error     string          `json:"error,omitempty"`     // set when the call failed
}

// Reasoning is one block of the reasoning a model did before it replied, as
// its provider returned it. A block with a Signature or Redacted goes back to
// the provider that made it, verbatim, in the requests that follow: Anthropic
// requires the thinking blocks of a tool round, Gemini 3 the thought
// signatures of its function calls.
type Reasoning struct {
	Text string `json:"text,omitempty"`
	// Signature is the provider's seal on Text (Anthropic's thinking
	// signature).
	Signature string `json:"signature,omitempty"`
	// Redacted is reasoning the provider returned encrypted (Anthropic's
	// redacted_thinking data).
	Redacted string `json:"redacted,omitempty"`
	// Call is the id of the message's tool call the block was given with:
	// Gemini puts its thought signatures on a reply's parts, a call's
	// (Call set) or its text.
	Call string `json:"call,omitempty"`
}

// TokenLogprob is the log probability of one generated token.
type TokenLogprob struct {
	Token       string         `json:"token"`
	Logprob     float64        `json:"logprob"`
	Bytes       []int          `json:"bytes,omitempty"`
	TopLogprobs []TokenLogprob `json:"top_logprobs,omitempty"`
}

// Usage counts the tokens of one or more model calls.
type Usage struct {
	InputTokens       int `json:"input_tokens,omitzero"`
	CachedInputTokens int `json:"cached_input_tokens,omitzero"` // part of InputTokens served from a cache
	CacheWriteTokens  int `json:"cache_write_tokens,omitzero"`  // part of InputTokens written to a cache (Anthropic)
	OutputTokens      int `json:"output_tokens,omitzero"`
	ReasoningTokens   int `json:"reasoning_tokens,omitzero"` // part of OutputTokens spent reasoning
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		CacheWriteTokens:  u.CacheWriteTokens + v.CacheWriteTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		ReasoningTokens:   u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Total is input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Cost is what one or more model calls cost: their tokens and dollars.
type Cost struct {
	Usage
	USD float64 `json:"usd,omitzero"`
}

// Add returns the sum of c and d.
func (c Cost) Add(d Cost) Cost {
	return Cost{Usage: c.Usage.Add(d.Usage), USD: c.USD + d.USD}
}

// Message is one turn of a dialog. Messages in a dialog are immutable: forks
// share them, so never modify a message you got from a dialog; use Clone.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"` // the text; for multi-part content, see Parts
	Parts   []Part `json:"parts,omitempty"`   // multi-part content (text and images)
	// Name is the sender: "user", an agent name or a tool name.
	Name string `json:"name,omitempty"`
	// Agent attributes an assistant turn to a guest agent; empty means the
	// dialog's own agent.
	Agent string `json:"agent,omitempty"`
	// Modality is what the message carries (text, image, ...).
	Modality Modality `json:"modality,omitempty"`
	// FunctionCalls are, on a model's reply (RoleToolCall or
	// RoleAssistant), the tool calls it requests; on a RoleTool message,
	// the one call it answers (ToolCallID), with its Result or Error. To
	// count the tool calls of a dialog, count those of the replies
	// (IsFunctionCall), not of every message.
	FunctionCalls []FunctionCall    `json:"function_calls,omitempty"`
	Reasoning     []Reasoning       `json:"reasoning,omitempty"`    // the model's reasoning before this reply, when its provider returned it
	ToolCallID    string            `json:"tool_call_id,omitempty"` // for RoleTool: the call this answers
	Parsed        json.RawMessage   `json:"parsed,omitempty"`       // the governing prompt's parser output
	Usage         Usage             `json:"usage,omitzero"`         // the tokens of the call that made this reply
	USD           float64           `json:"usd,omitzero"`           // dollars the call that made this message cost
	Model         string            `json:"model,omitempty"`        // the "provider/model" that made this reply
	Logprobs      []TokenLogprob    `json:"logprobs,omitempty"`     // token log-probabilities, for a tactic that sets them
	Metadata      map[string]string `json:"metadata,omitempty"`     // free annotations: an image's caption, a reply's refusal or reasoning_field, a tactic's own
	APIType       APIType           `json:"api_type,omitempty"`     // the provider API style the reply came from
	Vectors       []float64         `json:"vectors,omitempty"`      // an embedding, for a tactic that sets one; kept in the log
}

// Cost is the message's usage and dollars.
func (m *Message) Cost() Cost { return Cost{Usage: m.Usage, USD: m.USD} }

// ReasoningText is the text of the message's reasoning blocks, joined by
// blank lines; redacted blocks have none.
func (m *Message) ReasoningText() string {
	var b strings.Builder
	for _, r := range m.Reasoning {
		if r.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(r.Text)
	}
	return b.String()
}

// IsFunctionCall reports whether the message requests tool calls: false for
// a RoleTool message, whose FunctionCalls hold the call it answers.
func (m *Message) IsFunctionCall() bool { return m.Role != RoleTool && len(m.FunctionCalls) > 0 }

// Text is the message's text: Content, or its text parts joined by newlines.
func (m *Message) Text() string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var s string
	for _, p := range m.Parts {
		if p.Type == PartText && p.Text != "" {
			if s != "" {
				s += "\n"
			}
			s += p.Text
		}
	}
	return s
}

var unsafeNameChars = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// SanitizedName is Name as providers accept it: every character outside
// [a-zA-Z0-9_-] replaced by '_', at most 64 characters.
func (m *Message) SanitizedName() string {
	s := unsafeNameChars.ReplaceAllString(m.Name, "_")
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// ParsedInto decodes the parser output into v.
func (m *Message) ParsedInto(v any) error { return json.Unmarshal(m.Parsed, v) }

// Tag returns the last <name>...</name> of a reply parsed by a [TagParser]
// that has name among its XMLTags, trimmed as Parse trims it, and whether
// there is one. It is false for a message that was not parsed, or not by a
// TagParser.
//
//	// the prompt has dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}})
//	reply, _, err := agent.Respond(ctx)
//	answer, ok := reply.Tag("answer")
func (m *Message) Tag(name string) (string, bool) {
	if len(m.Parsed) == 0 {
		return "", false
	}
	var r TagResult
	if err := m.ParsedInto(&r); err != nil {
		return "", false
	}
	vs := r.XML[name]
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

// Clone returns a deep copy of m that shares no memory with it.
func (m *Message) Clone() *Message {
	c := *m
	c.Parts = clonePartsDeep(m.Parts)
	if m.FunctionCalls != nil {
		c.FunctionCalls = make([]FunctionCall, len(m.FunctionCalls))
		for i, fc := range m.FunctionCalls {
			fc.Arguments = cloneBytes(fc.Arguments)
			c.FunctionCalls[i] = fc
		}
	}
	c.Reasoning = slices.Clone(m.Reasoning)
	c.Parsed = cloneBytes(m.Parsed)
	c.Logprobs = cloneLogprobs(m.Logprobs)
	if m.Metadata != nil {
		c.Metadata = make(map[string]string, len(m.Metadata))
		for k, v := range m.Metadata {
			c.Metadata[k] = v
		}
	}
	if m.Vectors != nil {
		c.Vectors = append([]float64(nil), m.Vectors...)
	}
	return &c
}

func clonePartsDeep(ps []Part) []Part {
	if ps == nil {
		return nil
	}
	out := make([]Part, len(ps))
	for i, p := range ps {
		if p.Image != nil {
			img := *p.Image
			img.Data = cloneBytes(img.Data)
			p.Image = &img
		}
		out[i] = p
	}
	return out
}

func cloneLogprobs(ls []TokenLogprob) []TokenLogprob {
	if ls == nil {
		return nil
	}
	out := make([]TokenLogprob, len(ls))
	for i, l := range ls {
		if l.Bytes != nil {
			l.Bytes = append([]int(nil), l.Bytes...)
		}
		l.TopLogprobs = cloneLogprobs(l.TopLogprobs)
		out[i] = l
	}
	return out
}

func cloneBytes[T ~[]byte](b T) T {
	if b == nil {
		return nil
	}
	return append(T(nil), b...)
}
