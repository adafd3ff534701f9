package provider

// Ollama's native tools, which langchaingo's ollama client lacks: the
// request's tools and its history with tool calls and results are sent
// by body edits, and the reply's tool calls are read on the wire.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/lllm-go/lllm/dialog"
)

// ollamaToolEdits are the edits that give Ollama's chat API the tools fns
// ("tools") and the messages msgs as it takes them ("messages", replacing
// langchaingo's, which tell tool calls and results as text): an
// assistant's calls as "tool_calls" with arguments as an object, with the
// thinking Ollama gave with them, and each result as a "tool" message
// naming its tool.
func (a *Adapter) ollamaToolEdits(msgs []*dialog.Message, fns []*dialog.Function) ([]edit, error) {
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type tool struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	tools := make([]tool, 0, len(fns))
	for i, f := range fns {
		if f == nil {
			return nil, fmt.Errorf("tool %d is nil", i)
		}
		params := f.Parameters
		if len(params) == 0 {
			params = emptySchema
		}
		if !json.Valid(params) {
			return nil, fmt.Errorf("tool %s: parameter schema is not valid JSON", f.Name)
		}
		tools = append(tools, tool{Type: "function", Function: fn{Name: f.Name, Description: f.Description, Parameters: params}})
	}

	type call struct {
		ID       string `json:"id,omitempty"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	type message struct {
		Role      string   `json:"role"`
		Content   string   `json:"content"`
		Images    [][]byte `json:"images,omitempty"` // base64
		Thinking  string   `json:"thinking,omitempty"`
		ToolCalls []call   `json:"tool_calls,omitempty"`
		ToolName  string   `json:"tool_name,omitempty"`
	}
	out := make([]message, 0, len(msgs))
	names := map[string]string{} // tool call id -> function name
	for i, m := range msgs {
		if m == nil {
			return nil, fmt.Errorf("message %d is nil", i)
		}
		switch m.Role {
		case dialog.RoleSystem:
			out = append(out, message{Role: "system", Content: m.Text()})
		case dialog.RoleUser, "":
			um := message{Role: "user", Content: m.Content}
			if len(m.Parts) > 0 {
				var texts []string
				for _, p := range m.Parts {
					switch {
					case p.Type == dialog.PartText:
						texts = append(texts, p.Text)
					case p.Type == dialog.PartImage && p.Image != nil:
						part, err := a.imagePart(p.Image)
						if err != nil {
							return nil, fmt.Errorf("message %d: %w", i, err)
						}
						if b, ok := part.(llms.BinaryContent); ok {
							um.Images = append(um.Images, b.Data)
						}
					}
				}
				if len(texts) > 0 {
					um.Content = strings.Join(texts, "\n")
				}
			}
			out = append(out, um)
		case dialog.RoleAssistant, dialog.RoleToolCall:
			am := message{Role: "assistant", Content: m.Text()}
			if len(m.FunctionCalls) > 0 && strings.HasPrefix(m.Model, a.prefix) {
				// A tool round's thinking, as Ollama's own examples send
				// the reply back (gpt-oss's template renders it there).
				am.Thinking = m.ReasoningText()
			}
			for _, fc := range m.FunctionCalls {
				var c call
				c.ID, c.Function.Name = fc.ID, fc.Name
				c.Function.Arguments = json.RawMessage("{}")
				if args := bytes.TrimSpace(fc.Arguments); len(args) > 0 && args[0] == '{' && json.Valid(args) {
					c.Function.Arguments = args
				}
				am.ToolCalls = append(am.ToolCalls, c)
				if fc.ID != "" {
					names[fc.ID] = fc.Name
				}
			}
			out = append(out, am)
		case dialog.RoleTool:
			switch {
			case m.ToolCallID != "":
				name := m.Name
				if n := names[m.ToolCallID]; n != "" {
					name = n
				}
				out = append(out, message{Role: "tool", Content: m.Text(), ToolName: name})
			case len(m.FunctionCalls) > 0:
				for _, fc := range m.FunctionCalls {
					text := fc.Result
					if text == "" && len(m.FunctionCalls) == 1 {
						text = m.Text()
					}
					out = append(out, message{Role: "tool", Content: text, ToolName: fc.Name})
				}
			default:
				out = append(out, message{Role: "tool", Content: m.Text()})
			}
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	tb, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	mb, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return []edit{{path: []string{"tools"}, value: tb}, {path: []string{"messages"}, value: mb}}, nil
}

// ollamaTap notes, line by line as langchaingo reads them, the tool calls,
// thinking and done_reason of an Ollama chat reply (the client reads none):
// newline-delimited JSON objects when streamed, one object otherwise. A
// stream's text and thinking are queued for the streaming function (see
// callState.tapped).
type ollamaTap struct {
	io.ReadCloser
	st   *callState
	line []byte
	once sync.Once
	done bool // the reply's last line, "done": true, was read
	// stream is set for a streamed reply, whose text and thinking are
	// queued for the streaming function.
	stream bool
}

func (o *ollamaTap) Read(p []byte) (int, error) {
	n, err := o.ReadCloser.Read(p)
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			o.line = append(o.line, b...)
			break
		}
		o.note(append(o.line, b[:i]...))
		o.line, b = o.line[:0], b[i+1:]
	}
	if err == io.EOF {
		o.once.Do(func() {
			o.note(o.line)
			if !o.done {
				o.st.unfinished(errNoDone)
			}
		})
	}
	return n, err
}

func (o *ollamaTap) Close() error {
	o.once.Do(func() { o.note(o.line) })
	return o.ReadCloser.Close()
}

func (o *ollamaTap) note(line []byte) {
	o.done = o.done || memberStarts(line, `"done"`, "true")
	if !o.stream && memberStarts(line, `"done"`, "false") {
		// A stream whose content type is not ndjson (a proxy's, or
		// another server's): its first line is not its last.
		o.stream = true
		o.st.tap()
	}
	if !o.stream && !bytes.Contains(line, []byte(`"tool_calls"`)) && !bytes.Contains(line, []byte(`"thinking"`)) && !bytes.Contains(line, []byte(`"done_reason"`)) {
		return
	}
	var r struct {
		DoneReason string `json:"done_reason"`
		Message    struct {
			Content   string `json:"content"`
			Thinking  string `json:"thinking"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &r) != nil {
		return
	}
	o.st.setWire(func(w *wireReply) {
		if r.DoneReason != "" {
			w.finish = r.DoneReason
		}
		w.thinking = append(w.thinking, r.Message.Thinking...)
		if o.stream {
			o.st.queue(Chunk{Reasoning: r.Message.Thinking})
			o.st.queue(Chunk{Text: r.Message.Content})
		}
		for _, tc := range r.Message.ToolCalls {
			w.calls = append(w.calls, functionCall(tc.ID, &llms.FunctionCall{Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)}, len(w.calls)))
		}
	})
}
