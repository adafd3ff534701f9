package provider

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/tmc/langchaingo/llms"

	"github.com/lllm-go/lllm/dialog"
)

// AdapterConfig describes the langchaingo model an Adapter wraps.
type AdapterConfig struct {
	// Provider names the provider: "openai", "anthropic", "googleai",
	// "ollama", "mistral", "bedrock", "mock" or a name of your own. It
	// prefixes Message.Model, names the provider in errors, and selects
	// the provider's quirks (see [Adapter]); an unknown name gets the
	// OpenAI ones.
	Provider string
	// Model is the provider's name of the model the langchaingo model was
	// built for, without the "provider/" prefix.
	Model string
	// Prices override the built-in price table when filling Message.USD.
	Prices map[string]Price
	// LegacyMaxTokens sends Params.MaxTokens to an OpenAI-style API as
	// "max_tokens" rather than "max_completion_tokens". OpenAI-compatible
	// servers (vLLM, llama.cpp, Ollama's /v1, Mistral) want it; Open sets
	// it for them.
	LegacyMaxTokens bool
	// KeyHint says where the API key came from, for an ErrAuth error to
	// name ("the key in OPENAI_API_KEY"); empty adds nothing.
	KeyHint string
}

// Adapter is a [Model] over any langchaingo llms.Model. It converts
// dialog messages, tools, format and params to langchaingo's types, and
// the reply back to a dialog.Message with usage, cost, model and latency.
// It never retries: a failure comes back as an *[Error] for the caller to
// retry.
//
// Params are sent only when set. For the clients [Open] builds, an HTTP
// transport of this package also edits the request body where langchaingo
// would otherwise send what the caller did not ask for, or drop what it
// did:
//
//   - openai, mistral: langchaingo always sends "temperature" (0 when
//     unset, and never for gpt-5/o1-/o3 models even when set) and drops
//     top_p and top_k. The transport removes temperature when unset, sends
//     it when set, and adds top_p, top_k and seed (also a seed of 0) when
//     set. Format is sent as response_format {"type": "json_schema"}.
//     For mistral it renames seed to random_seed and removes
//     stream_options, which Mistral rejects.
//   - anthropic: temperature is removed when unset; top_p and top_k are
//     sent when set (langchaingo drops a 0). max_tokens is required by
//     the API: unset, langchaingo sends 2048. There is no seed, and Format
//     is not sent (an agent still checks the reply against it).
//     Extended thinking: a reply's thinking blocks, redacted ones
//     included, are read on the wire into Message.Reasoning with their
//     signatures (the client drops a stream's and fails on a redacted
//     block), and an earlier reply's blocks go back at the start of its
//     assistant turn, which the API requires within a tool round.
//   - ollama (native API): options.temperature is removed when unset (it
//     would be 0); Format is sent as the "format" JSON schema. langchaingo's
//     client has no tools: with tools, the transport sends them as the
//     request's "tools" and the history as Ollama takes it (an assistant's
//     "tool_calls", a "tool" message per result), and reads the reply's
//     message.tool_calls, which the client drops (ids "call_1", ... when
//     Ollama gives none). Without tools, tool calls and results in the
//     history are sent as text.
//   - googleai: unset temperature, topP, topK and maxOutputTokens are
//     removed from generationConfig (langchaingo fills in 0.5, 0.95, 3 and
//     2048), and a seed, which the client drops, is sent as
//     generationConfig.seed; Format is sent as responseJsonSchema with
//     application/json.
//     Tool calls get ids "call_1", ... as Gemini gives none. Usage is read
//     from the last response of a reply Gemini sends in parts (Google's
//     client keeps the first one's), with thoughtsTokenCount (which it
//     drops) counted as reasoning and output tokens; a 400 saying the API
//     key is not valid is an ErrAuth. Gemini 3's thought signatures, on a
//     reply's function calls and text, which the client drops, are read on
//     the wire into Message.Reasoning and go back on their parts, as
//     Gemini 3 requires for the calls of the current turn; the results of
//     a turn's parallel calls go in one content, as Gemini requires.
//     Thought summaries (thinkingConfig.includeThoughts in extra_body),
//     which the client joins to the text, are the reply's reasoning; a
//     streamed reply's Stream still gets them with the text, as the client
//     hands them over alike.
//   - bedrock: the body of an Anthropic model gets anthropic's edits, made
//     before the AWS SDK signs it; other model families are sent as
//     langchaingo builds them. A reply that stopped at max_tokens keeps
//     its text and finish reason (langchaingo alone returns an error).
//     Extended thinking as on anthropic, not streamed (Bedrock does not
//     stream a request with tools): the reply's blocks are read from the
//     InvokeModel response, which the client drops, and go back at the
//     start of their assistant turn (a streamed reply's thinking is lost).
//     Format is not sent (an agent checks the reply against it). Cost is
//     looked up by the vendor's model name
//     ("claude-sonnet-4-5" for "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
//     10% more for a Claude 4.5 model through a profile other than
//     "global." (see Cost).
//
// Images are sent as data-URL image parts, except to anthropic, googleai,
// ollama and bedrock, whose langchaingo clients accept only binary parts
// (googleai would download a URL itself).
//
// Streaming: when Request.Stream is set, the reply is streamed and Stream
// gets the text as it arrives. langchaingo corrupts streamed parallel tool
// calls (it appends every argument fragment to the last call) and hands
// its streaming function a delta's tool calls in place of the text the
// delta carries with them, so on the OpenAI and Mistral wire the transport
// reads the calls and the text from the stream itself, and Ollama's calls,
// which its client drops. Anthropic's and Gemini's streamed calls come out
// whole. Bedrock's requests that declare tools are not streamed: Stream
// then gets the whole text in one chunk at the end. A stream that ends
// before its last event (OpenAI's finish_reason or [DONE], Anthropic's
// message_stop, Ollama's "done": true), or whose body breaks off, is an
// ErrNetwork, whatever the client made of what it had.
// A server that ignores "stream": true and answers with the whole reply,
// as JSON (OpenAI's and Anthropic's wire), is read as that reply: Stream
// gets its reasoning, then its text, as a reply that did not stream.
//
// The reply merges all of langchaingo's choices into one message: text
// concatenated, tool calls collected. Anthropic returns one choice per
// content block; the others return one choice, as the adapter never asks
// for more.
type Adapter struct {
	llm    llms.Model
	cfg    AdapterConfig
	d      dialect
	prefix string // "provider/"
	name   string // "provider/model"
}

// NewAdapter returns an Adapter over llm.
func NewAdapter(llm llms.Model, cfg AdapterConfig) *Adapter {
	cfg.Provider = strings.ToLower(strings.TrimSpace(cfg.Provider))
	d := dialectFor(cfg.Provider)
	d.legacyMaxTokens = cfg.LegacyMaxTokens
	return &Adapter{llm: llm, cfg: cfg, d: d, prefix: cfg.Provider + "/", name: cfg.Provider + "/" + cfg.Model}
}

// Name is the adapter's model as "provider/model".
func (a *Adapter) Name() string { return a.name }

// qualified is model, a model of the adapter's provider, as
// "provider/model".
func (a *Adapter) qualified(model string) string {
	if model == a.cfg.Model {
		return a.name
	}
	return a.prefix + model
}

// Close releases what the wrapped model holds (googleai keeps
// connections), if it can be closed.
func (a *Adapter) Close() error {
	if c, ok := a.llm.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// Generate sends req and returns the model's reply, or an *Error.
// req.Model may be empty (the adapter's model), the adapter's model with
// or without its "provider/" prefix, or another model of the same
// provider.
func (a *Adapter) Generate(ctx context.Context, req *Request) (*Response, error) {
	if req == nil {
		return nil, a.badRequest(errors.New("nil request"))
	}
	if a.llm == nil {
		return nil, a.badRequest(errors.New("no langchaingo model to call"))
	}
	model := a.modelFor(req.Model)
	msgs, back, err := a.messages(req.Messages, model)
	if err != nil {
		return nil, a.badRequest(err)
	}
	opts, err := a.options(req, model)
	if err != nil {
		return nil, a.badRequest(err)
	}
	st := &callState{edits: a.d.edits(req.Params, req.Format), format: req.Format, thinking: back}
	if a.d.wire == wireOllama && len(req.Tools) > 0 {
		es, err := a.ollamaToolEdits(req.Messages, req.Tools)
		if err != nil {
			return nil, a.badRequest(err)
		}
		st.edits = append(st.edits, es...)
	}
	if len(req.Params.ExtraBody) > 0 {
		if a.cfg.Provider == "bedrock" && !bedrockEditable(model) {
			return nil, a.badRequest(errBedrockExtraBody(model))
		}
		es, err := extraEdits(req.Params.ExtraBody) // last: they win
		if err != nil {
			return nil, a.badRequest(err)
		}
		st.edits = append(st.edits, es...)
	}

	streaming := req.Stream != nil && (len(req.Tools) == 0 || a.d.streamTools)
	st.stream = streaming
	var stream streamGuard
	if streaming {
		opts = append(opts, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			// The text and reasoning as the transport read them, where
			// it reads them (see callState.tapped).
			if tapped, err := streamTapped(ctx, st, req.Stream, &stream); tapped {
				return err
			}
			return stream.send(ctx, req.Stream, Chunk{Text: string(chunk)})
		}))
		if !a.d.tapsStreams() {
			// anthropic's thinking, and the mock's reasoning.
			opts = append(opts, llms.WithStreamingReasoningFunc(func(ctx context.Context, reasoning, _ []byte) error {
				st.mu.Lock()
				r := st.spaced(string(reasoning))
				st.mu.Unlock()
				return stream.send(ctx, req.Stream, Chunk{Reasoning: r})
			}))
		}
	}

	start := time.Now()
	resp, err := a.generateContent(withCallState(ctx, st), msgs, opts)
	latency := time.Since(start)
	if err != nil {
		e := classify(ctx, a.cfg.Provider, err, st, stream.get())
		if e.Kind == ErrAuth && a.cfg.KeyHint != "" {
			e.Err = fmt.Errorf("%w (check %s)", e.Err, a.cfg.KeyHint)
		}
		return nil, e
	}
	if streaming && stream.get() == nil {
		// What the transport read after the client's last call of the
		// streaming function.
		_, _ = streamTapped(ctx, st, req.Stream, &stream)
	}
	if err := stream.get(); err != nil {
		// Some clients (googleai) stop reading when Stream fails but
		// return what they had without an error.
		return nil, &Error{Kind: ErrCancelled, Provider: a.cfg.Provider, Err: fmt.Errorf("stream: %w", err)}
	}
	if cut := st.cutShort(); cut != nil {
		// Some clients (ollama) make a reply of what they read before the
		// body broke off or ended early.
		return nil, classify(ctx, a.cfg.Provider, fmt.Errorf("the reply is incomplete: %w", cut), st, nil)
	}
	out, err := a.reply(resp, model, latency)
	if err != nil {
		return nil, &Error{Kind: ErrOther, Provider: a.cfg.Provider, Err: err}
	}
	w := st.wireReply()
	if w.streamErr != "" {
		return nil, classify(ctx, a.cfg.Provider, fmt.Errorf("error event in the stream: %s", w.streamErr), nil, nil)
	}
	a.fromWire(out, w, model)
	if req.Stream != nil && !streaming {
		if err := StreamWhole(ctx, req.Stream, &out.Message); err != nil {
			return nil, &Error{Kind: ErrCancelled, Provider: a.cfg.Provider, Err: fmt.Errorf("stream: %w", err)}
		}
	}
	return out, nil
}

// StreamWhole hands stream a reply that did not stream, at once: its
// reasoning's text, a block at a time, then its text. The pieces of
// reasoning add up to m.ReasoningText(), as a streamed reply's do.
func StreamWhole(ctx context.Context, stream func(context.Context, Chunk) error, m *dialog.Message) error {
	sep := ""
	for _, r := range m.Reasoning {
		if r.Text != "" {
			if err := stream(ctx, Chunk{Reasoning: sep + r.Text}); err != nil {
				return err
			}
			sep = "\n\n"
		}
	}
	if text := m.Text(); text != "" {
		return stream(ctx, Chunk{Text: text})
	}
	return nil
}

// reasoningFieldKey is the Metadata key of a reply whose reasoning came
// under "reasoning" rather than "reasoning_content" (vLLM, OpenRouter,
// Groq, Cerebras): on a tool round it goes back under that name, which
// vLLM reads (it drops a reasoning_content) and Groq and Cerebras accept,
// where they refuse a reasoning_content; see reasoningContent.
const reasoningFieldKey = "reasoning_field"

// fromWire completes out with what the transport read of the reply on
// the wire because the client loses it (see wireReply).
func (a *Adapter) fromWire(out *Response, w wireReply, model string) {
	if w.finish != "" {
		out.FinishReason = w.finish
	}
	if w.reasoning != nil {
		// With the signatures and redacted blocks the client loses.
		out.Message.Reasoning = w.reasoning
	}
	if len(w.thinking) > 0 {
		out.Message.Reasoning = []dialog.Reasoning{{Text: string(w.thinking)}}
	}
	if w.namedReasoning && len(out.Message.Reasoning) > 0 {
		if out.Message.Metadata == nil {
			out.Message.Metadata = map[string]string{}
		}
		out.Message.Metadata[reasoningFieldKey] = "reasoning"
	}
	if w.thoughts != "" {
		out.Message.Content = w.answer
		out.Message.Reasoning = append(out.Message.Reasoning, dialog.Reasoning{Text: w.thoughts})
		if out.Message.Content == "" && len(out.Message.FunctionCalls) > 0 {
			out.Message.Role = dialog.RoleToolCall
		}
	}
	for i, sig := range w.callSignatures {
		if sig != "" && i < len(out.Message.FunctionCalls) {
			out.Message.Reasoning = append(out.Message.Reasoning, dialog.Reasoning{Signature: sig, Call: out.Message.FunctionCalls[i].ID})
		}
	}
	if w.textSignature != "" {
		out.Message.Reasoning = append(out.Message.Reasoning, dialog.Reasoning{Signature: w.textSignature})
	}
	if w.refusal != "" {
		out.FinishReason = "refusal"
		if out.Message.Metadata == nil {
			out.Message.Metadata = map[string]string{}
		}
		out.Message.Metadata["refusal"] = w.refusal
	}
	if len(w.streamed) > 0 {
		// The stream's own calls, in place of langchaingo's mix of them.
		w.calls = make([]dialog.FunctionCall, 0, len(w.streamed))
		for _, c := range w.streamed {
			if c.name != "" {
				w.calls = append(w.calls, functionCall(c.id, &llms.FunctionCall{Name: c.name, Arguments: string(c.args)}, len(w.calls)))
			}
		}
		out.Message.FunctionCalls = nil
	}
	if len(w.calls) > 0 && len(out.Message.FunctionCalls) == 0 {
		out.Message.FunctionCalls = w.calls
		if out.Message.Content == "" {
			out.Message.Role = dialog.RoleToolCall
		}
	}
	if w.usage != nil {
		out.Message.Usage = *w.usage
		out.Message.USD = Cost(a.qualified(model), *w.usage, a.cfg.Prices)
	}
}

// generateContent calls the langchaingo model, turning a panic of its
// client (openai's on finish_reason "function_call" without a
// function_call) into an error.
func (a *Adapter) generateContent(ctx context.Context, msgs []llms.MessageContent, opts []llms.CallOption) (resp *llms.ContentResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("the %s client panicked: %v", a.cfg.Provider, p)
		}
	}()
	return a.llm.GenerateContent(ctx, msgs, opts...)
}

func (a *Adapter) badRequest(err error) *Error {
	return &Error{Kind: ErrBadRequest, Provider: a.cfg.Provider, Err: err}
}

// modelFor is the model a request names.
func (a *Adapter) modelFor(m string) string {
	m = strings.TrimSpace(m)
	switch {
	case m == "", m == a.cfg.Model:
		return a.cfg.Model
	case len(m) > len(a.prefix) && strings.EqualFold(m[:len(a.prefix)], a.prefix):
		return m[len(a.prefix):]
	}
	return m
}

// streamTapped hands stream, in order, each piece the transport read of a
// tapped stream (see callState.tapped) that it has not had yet, and
// reports whether the stream is tapped: it is not under a client [Open]
// did not build, nor on the other wires. An error of stream is kept in g
// and returned.
func streamTapped(ctx context.Context, st *callState, stream func(context.Context, Chunk) error, g *streamGuard) (bool, error) {
	for {
		c, ok, tapped := st.streamed()
		if !ok {
			return tapped, nil
		}
		if err := g.send(ctx, stream, c); err != nil {
			return true, err
		}
	}
}

// streamGuard holds the error the caller's Stream returned; langchaingo
// may call the streaming function from another goroutine.
type streamGuard struct {
	mu  sync.Mutex
	err error
}

// send hands c to stream unless it is empty, keeping stream's error.
func (g *streamGuard) send(ctx context.Context, stream func(context.Context, Chunk) error, c Chunk) error {
	if c.Text == "" && c.Reasoning == "" {
		return nil
	}
	if err := stream(ctx, c); err != nil {
		g.set(err)
		return err
	}
	return nil
}

func (g *streamGuard) set(err error) {
	g.mu.Lock()
	g.err = err
	g.mu.Unlock()
}

func (g *streamGuard) get() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// options turns the request's params, tools and format into call options.
func (a *Adapter) options(req *Request, model string) ([]llms.CallOption, error) {
	p := req.Params
	if err := p.check(); err != nil {
		return nil, err
	}
	opts := make([]llms.CallOption, 0, 8)
	if model != a.cfg.Model {
		opts = append(opts, llms.WithModel(model))
	}
	if p.Temperature != nil {
		opts = append(opts, llms.WithTemperature(*p.Temperature))
	}
	if p.TopP != nil {
		opts = append(opts, llms.WithTopP(*p.TopP))
	}
	if p.TopK != nil {
		opts = append(opts, llms.WithTopK(*p.TopK))
	}
	if p.MaxTokens != nil {
		opts = append(opts, llms.WithMaxTokens(*p.MaxTokens))
		if a.d.legacyMaxTokens {
			opts = append(opts, llms.WithMetadata(map[string]any{"openai:use_legacy_max_tokens": true}))
		}
	}
	if len(p.Stop) > 0 {
		opts = append(opts, llms.WithStopWords(p.Stop))
	}
	if p.Seed != nil {
		opts = append(opts, llms.WithSeed(*p.Seed))
	}
	if len(req.Tools) > 0 && !a.d.noTools { // else the transport sends them (ollamaToolEdits)
		tools, err := a.tools(req.Tools)
		if err != nil {
			return nil, err
		}
		opts = append(opts, llms.WithTools(tools))
	}
	if len(req.Format) > 0 {
		if !json.Valid(req.Format) {
			return nil, errors.New("format is not valid JSON")
		}
		switch a.d.format {
		case formatJSONMode:
			opts = append(opts, llms.WithJSONMode())
		case formatMIME:
			opts = append(opts, llms.WithResponseMIMEType("application/json"))
		}
	}
	return opts, nil
}

// check reports params no provider accepts.
func (p Params) check() error {
	bad := func(v *float64) bool { return v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) }
	if bad(p.Temperature) {
		return fmt.Errorf("temperature is %v", *p.Temperature)
	}
	if bad(p.TopP) {
		return fmt.Errorf("top_p is %v", *p.TopP)
	}
	if p.MaxTokens != nil && *p.MaxTokens < 0 {
		return fmt.Errorf("max_tokens is negative (%d)", *p.MaxTokens)
	}
	return nil
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// tools declares fns to the model.
func (a *Adapter) tools(fns []*dialog.Function) ([]llms.Tool, error) {
	tools := make([]llms.Tool, 0, len(fns))
	for i, f := range fns {
		if f == nil {
			return nil, fmt.Errorf("tool %d is nil", i)
		}
		params := f.Parameters
		if len(params) == 0 {
			params = emptySchema
		}
		var schema any = params
		if a.d.mapSchemas {
			var m map[string]any
			if err := json.Unmarshal(params, &m); err != nil {
				return nil, fmt.Errorf("tool %s: parameter schema: %w", f.Name, err)
			}
			schema = m
		} else if !json.Valid(params) {
			return nil, fmt.Errorf("tool %s: parameter schema is not valid JSON", f.Name)
		}
		tools = append(tools, llms.Tool{
			Type: "function",
			Function: &llms.FunctionDefinition{
				Name:        f.Name,
				Description: f.Description,
				Parameters:  schema,
				Strict:      f.Strict,
			},
		})
	}
	return tools, nil
}

// messages converts a dialog to langchaingo's messages for model, and
// returns the reasoning that goes back with them, which the client cannot
// send.
func (a *Adapter) messages(in []*dialog.Message, model string) ([]llms.MessageContent, []thinkingBack, error) {
	out := make([]llms.MessageContent, 0, len(in))
	// Messages of plain text, most of any dialog, take their one part from
	// a single array.
	texts := make([]llms.ContentPart, 0, len(in))
	text := func(role llms.ChatMessageType, s string) llms.MessageContent {
		texts = append(texts, llms.TextContent{Text: s})
		n := len(texts)
		return llms.MessageContent{Role: role, Parts: texts[n-1 : n : n]}
	}
	var (
		callNames map[string]string // tool call id -> function name
		back      []thinkingBack
	)
	systems := 0
	rounds := 0 // the messages with tool calls so far
	// Gemini 3 refuses a function call of the current turn (after the
	// last user message) without its thought signature: one another
	// model made gets the placeholder Google documents.
	current := -1
	if a.d.wire == wireGoogle && signsCalls(model) {
		current = 0
		for i, m := range in {
			if m != nil && (m.Role == dialog.RoleUser || m.Role == "") {
				current = i + 1
			}
		}
	}
	for i, m := range in {
		if m == nil {
			return nil, nil, fmt.Errorf("message %d is nil", i)
		}
		switch m.Role {
		case dialog.RoleSystem:
			s := m.Text()
			if systems > 0 && a.d.wire == wireAnthropic {
				// langchaingo joins system messages with nothing between.
				s = "\n\n" + s
			}
			systems++
			out = append(out, text(llms.ChatMessageTypeSystem, s))
		case dialog.RoleUser, "":
			if len(m.Parts) == 0 {
				out = append(out, text(llms.ChatMessageTypeHuman, m.Content))
				continue
			}
			parts, err := a.userParts(m)
			if err != nil {
				return nil, nil, fmt.Errorf("message %d: %w", i, err)
			}
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: parts})
		case dialog.RoleAssistant, dialog.RoleToolCall:
			if a.returnable(m) {
				// System messages go to the request's "system"
				// (systemInstruction); Bedrock's client joins
				// messages, see bedrockPlaces.
				b := thinkingBack{at: len(out) - systems, blocks: m.Reasoning}
				if a.d.joinsRoles {
					b.at = len(out)
				}
				if a.d.wire == wireGoogle {
					b.parts = geminiParts(m)
				}
				back = append(back, b)
			}
			if current >= 0 && i >= current && len(m.FunctionCalls) > 0 {
				back = signFirstCall(back, m, len(out)-systems)
			}
			if b, ok := a.reasoningContent(m, model); ok {
				b.at = rounds
				back = append(back, b)
			}
			if len(m.FunctionCalls) == 0 {
				out = append(out, text(llms.ChatMessageTypeAI, m.Text()))
				continue
			}
			for _, fc := range m.FunctionCalls {
				if fc.ID != "" {
					if callNames == nil {
						callNames = map[string]string{}
					}
					callNames[fc.ID] = fc.Name
				}
			}
			rounds++
			out = a.appendAssistant(out, m)
		case dialog.RoleTool:
			out = a.appendToolResults(out, m, callNames)
		default:
			return nil, nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	if a.d.joinsRoles && back != nil {
		bedrockPlaces(out, back)
	}
	return out, back, nil
}

// userParts are a user message's text and images.
func (a *Adapter) userParts(m *dialog.Message) ([]llms.ContentPart, error) {
	parts := make([]llms.ContentPart, 0, len(m.Parts))
	var texts []string
	for _, p := range m.Parts {
		switch p.Type {
		case dialog.PartText:
			if a.d.singleText {
				texts = append(texts, p.Text)
			} else {
				parts = append(parts, llms.TextContent{Text: p.Text})
			}
		case dialog.PartImage:
			if p.Image == nil {
				continue
			}
			part, err := a.imagePart(p.Image)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part)
		}
	}
	if a.d.singleText {
		parts = append([]llms.ContentPart{llms.TextContent{Text: strings.Join(texts, "\n")}}, parts...)
	}
	if len(parts) == 0 {
		parts = append(parts, llms.TextContent{Text: m.Content})
	}
	return parts, nil
}

// imagePart is an image as the provider's client takes it.
func (a *Adapter) imagePart(img *dialog.Image) (llms.ContentPart, error) {
	if !a.d.binaryImages {
		return llms.ImageURLContent{URL: img.DataURL()}, nil
	}
	if len(img.Data) > 0 {
		mime := img.MIME
		if mime == "" {
			mime, _ = dialog.SniffImage(img.Data)
		}
		return llms.BinaryContent{MIMEType: mime, Data: img.Data}, nil
	}
	if mime, data, ok := decodeDataURL(img.URL); ok {
		return llms.BinaryContent{MIMEType: mime, Data: data}, nil
	}
	return nil, fmt.Errorf("%s takes image bytes, not an image URL (%.40q): load the image (dialog.ImageFile, dialog.ImageBytes)", a.cfg.Provider, img.URL)
}

// decodeDataURL splits a base64 data URL into its MIME type and bytes.
func decodeDataURL(u string) (mime string, data []byte, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", nil, false
	}
	meta, b64, found := strings.Cut(rest, ",")
	if !found {
		return "", nil, false
	}
	mime, found = strings.CutSuffix(meta, ";base64")
	if !found {
		return "", nil, false
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", nil, false
	}
	return mime, data, true
}

// appendAssistant adds an assistant turn that calls tools: its text, if
// any, and the calls.
func (a *Adapter) appendAssistant(out []llms.MessageContent, m *dialog.Message) []llms.MessageContent {
	text := m.Text()
	parts := make([]llms.ContentPart, 0, 1+len(m.FunctionCalls))
	if a.d.noTools {
		// Without tools, calls are told as text.
		var b strings.Builder
		b.WriteString(text)
		for _, fc := range m.FunctionCalls {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "[tool call %s(%s)]", fc.Name, a.argsString(fc.Arguments))
		}
		return append(out, llms.MessageContent{
			Role:  llms.ChatMessageTypeAI,
			Parts: []llms.ContentPart{llms.TextContent{Text: b.String()}},
		})
	}
	if text != "" {
		parts = append(parts, llms.TextContent{Text: text})
	}
	for _, fc := range m.FunctionCalls {
		parts = append(parts, llms.ToolCall{
			ID:   fc.ID,
			Type: "function",
			FunctionCall: &llms.FunctionCall{
				Name:      fc.Name,
				Arguments: a.argsString(fc.Arguments),
			},
		})
	}
	if !a.d.splitAssistant || len(parts) == 1 {
		return append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts})
	}
	// langchaingo's anthropic client sends only an assistant message's
	// first part; the API joins consecutive assistant messages into one
	// turn, so send one part per message.
	for _, p := range parts {
		out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{p}})
	}
	return out
}

// argsString is a call's arguments as the JSON text providers expect.
// Broken arguments a model wrote, kept as a JSON string of its text, go back
// as that text where the wire carries arguments as text (OpenAI's), and as {}
// where it takes an object (Anthropic's, Gemini's), which they are not: the
// call's result already says what was wrong with them.
func (a *Adapter) argsString(args json.RawMessage) string {
	args = bytes.TrimSpace(args)
	switch {
	case len(args) == 0:
		return "{}"
	case args[0] != '"':
		return string(args)
	case a.d.wire == wireAnthropic || a.d.wire == wireGoogle:
		return "{}"
	}
	var text string
	if json.Unmarshal(args, &text) != nil {
		return "{}"
	}
	return text
}

// appendToolResults adds a tool message: the result of one call (with
// ToolCallID), or of each call it carries.
func (a *Adapter) appendToolResults(out []llms.MessageContent, m *dialog.Message, callNames map[string]string) []llms.MessageContent {
	type result struct{ id, name, text string }
	var results []result
	switch {
	case m.ToolCallID != "":
		results = append(results, result{m.ToolCallID, m.Name, m.Text()})
	case len(m.FunctionCalls) > 0:
		for _, fc := range m.FunctionCalls {
			text := fc.Result
			if text == "" && len(m.FunctionCalls) == 1 {
				text = m.Text()
			}
			results = append(results, result{fc.ID, fc.Name, text})
		}
	}
	if len(results) == 0 || a.d.noTools {
		// No call to answer (or no tools): plain text from the tool.
		return append(out, llms.MessageContent{
			Role:  llms.ChatMessageTypeTool,
			Parts: []llms.ContentPart{llms.TextContent{Text: m.Text()}},
		})
	}
	for _, r := range results {
		if r.id == "" {
			out = append(out, llms.MessageContent{
				Role:  llms.ChatMessageTypeHuman,
				Parts: []llms.ContentPart{llms.TextContent{Text: r.text}},
			})
			continue
		}
		if name := callNames[r.id]; name != "" {
			r.name = name
		}
		part := llms.ToolCallResponse{ToolCallID: r.id, Name: r.name, Content: r.text}
		if n := len(out); a.d.wire == wireGoogle && n > 0 && toolResponses(out[n-1]) {
			// Gemini takes the responses to a turn's calls in one content.
			out[n-1].Parts = append(out[n-1].Parts, part)
			continue
		}
		out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{part}})
	}
	return out
}

// toolResponses reports whether mc holds tool results alone.
func toolResponses(mc llms.MessageContent) bool {
	if mc.Role != llms.ChatMessageTypeTool || len(mc.Parts) == 0 {
		return false
	}
	for _, p := range mc.Parts {
		if _, ok := p.(llms.ToolCallResponse); !ok {
			return false
		}
	}
	return true
}

// reply converts langchaingo's response to ours.
func (a *Adapter) reply(resp *llms.ContentResponse, model string, latency time.Duration) (*Response, error) {
	if resp == nil || len(resp.Choices) == 0 {
		return nil, errors.New("empty response: no choices")
	}
	var (
		text      strings.Builder
		reasoning []dialog.Reasoning
		calls     []dialog.FunctionCall
		stop      string
		info      map[string]any
	)
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		text.WriteString(c.Content)
		if c.ReasoningContent != "" {
			reasoning = append(reasoning, dialog.Reasoning{Text: c.ReasoningContent})
		} else if c.Content == "" && len(c.ToolCalls) == 0 {
			// An anthropic thinking block.
			th, _ := c.GenerationInfo["ThinkingContent"].(string)
			sig, _ := c.GenerationInfo["ThinkingSignature"].(string)
			if th != "" || sig != "" {
				reasoning = append(reasoning, dialog.Reasoning{Text: th, Signature: sig})
			}
		}
		for _, tc := range c.ToolCalls {
			if tc.FunctionCall != nil {
				calls = append(calls, functionCall(tc.ID, tc.FunctionCall, len(calls)))
			}
		}
		if len(c.ToolCalls) == 0 && c.FuncCall != nil {
			calls = append(calls, functionCall("", c.FuncCall, len(calls)))
		}
		if c.StopReason != "" {
			stop = c.StopReason
		}
		if info == nil && len(c.GenerationInfo) > 0 {
			info = c.GenerationInfo
		}
	}
	msg := dialog.Message{
		Role:          dialog.RoleAssistant,
		Content:       text.String(),
		Modality:      dialog.ModalityText,
		FunctionCalls: calls,
		Reasoning:     reasoning,
		Usage:         usageFrom(info),
		Model:         a.qualified(model),
		APIType:       dialog.APICompletion,
	}
	if msg.Content == "" && len(calls) > 0 {
		msg.Role = dialog.RoleToolCall
	}
	msg.USD = Cost(a.qualified(model), msg.Usage, a.cfg.Prices)
	return &Response{Message: msg, FinishReason: geminiFinishReason(stop), Latency: latency}, nil
}

// geminiFinishReason spells a finish reason of Google's client as the
// Gemini API does (FinishReasonMaxTokens is MAX_TOKENS), and leaves any
// other as it is (one the client does not know is "FinishReason(9)").
func geminiFinishReason(s string) string {
	name, ok := strings.CutPrefix(s, "FinishReason")
	if !ok || name == "" || name[0] == '(' {
		return s
	}
	var b strings.Builder
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// functionCall converts one tool call; the n-th call without an id gets
// "call_n+1".
func functionCall(id string, fc *llms.FunctionCall, n int) dialog.FunctionCall {
	if id == "" {
		id = fmt.Sprintf("call_%d", n+1)
	}
	args := strings.TrimSpace(fc.Arguments)
	var raw json.RawMessage
	switch {
	case args == "":
		raw = json.RawMessage("{}")
	case json.Valid([]byte(args)):
		raw = json.RawMessage(args)
	default:
		// Keep what the model wrote, as a JSON string: the call then fails
		// and the model is told that it is not valid JSON, and why (see
		// dialog.FunctionCall.Arguments).
		raw, _ = json.Marshal(args)
	}
	return dialog.FunctionCall{ID: id, Name: fc.Name, Arguments: raw}
}

// usageFrom reads token usage from a choice's GenerationInfo, whose keys
// differ per provider.
func usageFrom(info map[string]any) dialog.Usage {
	var u dialog.Usage
	if len(info) == 0 {
		return u
	}
	if in, ok := intOf(info["PromptTokens"]); ok {
		// openai, googleai, ollama, mock: the prompt count includes cached
		// tokens.
		u.InputTokens = in
		u.OutputTokens, _ = intOf(info["CompletionTokens"])
		u.ReasoningTokens, _ = intOf(info["ReasoningTokens"])
		if c, ok := intOf(info["PromptCachedTokens"]); ok {
			u.CachedInputTokens = c
		} else if c, ok := intOf(info["CachedTokens"]); ok {
			u.CachedInputTokens = c
		}
		return u
	}
	if in, ok := intOf(info["InputTokens"]); ok {
		// anthropic: input_tokens excludes cache reads and writes.
		read, _ := intOf(info["CacheReadInputTokens"])
		write, _ := intOf(info["CacheCreationInputTokens"])
		u.InputTokens = in + read + write
		u.CachedInputTokens, u.CacheWriteTokens = read, write
		u.OutputTokens, _ = intOf(info["OutputTokens"])
		return u
	}
	if in, ok := intOf(info["input_tokens"]); ok { // bedrock
		u.InputTokens = in
		u.OutputTokens, _ = intOf(info["output_tokens"])
	}
	return u
}

// intOf reads an integer of any of the types langchaingo uses.
func intOf(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int32:
		return int(n), true
	case int64:
		return int(n), true
	case uint32:
		return int(n), true
	case uint64:
		return int(n), true
	case float64:
		return int(n), true
	case float32:
		return int(n), true
	}
	return 0, false
}
