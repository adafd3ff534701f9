package export

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/jsontext"
	"github.com/lllm-go/lllm/logs"
)

// emptySchema is the parameters of a tool declared without any, as the
// provider adapter sends it.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// tools are the tools of decls, each name once (the first declaration of
// it), in order.
func tools(decls []*logs.Declarations) []logs.Tool {
	var out []logs.Tool
	seen := map[string]bool{}
	for _, d := range decls {
		for _, t := range d.Tools {
			if !seen[t.Name] {
				seen[t.Name] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// arguments are a tool call's arguments as the text the model wrote: the
// JSON object, or the text a model sent that was not JSON (the log keeps
// it as a JSON string).
func arguments(fc dialog.FunctionCall) string {
	if len(fc.Arguments) == 0 {
		return "{}"
	}
	var raw string
	if json.Unmarshal(fc.Arguments, &raw) == nil {
		return raw
	}
	return string(fc.Arguments)
}

// imageURL is the URL of an image: the one the log keeps, or a data URL
// of its bytes.
func imageURL(img *dialog.Image) (string, error) {
	switch {
	case len(img.Data) > 0:
		mime := img.MIME
		if mime == "" {
			mime, _ = dialog.SniffImage(img.Data)
		}
		if mime == "" {
			return "", unexportable("an image of unknown type (neither its MIME type nor its bytes say)")
		}
		return (&dialog.Image{MIME: mime, Data: img.Data}).DataURL(), nil
	case img.URL != "":
		return img.URL, nil
	}
	return "", unexportable("an image whose bytes and URL the log does not hold")
}

// The OpenAI chat fine-tuning line.
type (
	openAI struct {
		Messages []openAIMessage `json:"messages"`
		Tools    []openAITool    `json:"tools,omitempty"`
		Metadata *Metadata       `json:"metadata,omitempty"`
	}
	openAIMessage struct {
		Role string `json:"role"`
		// Content is a string, or []openAIPart for a message with images;
		// nil for an assistant turn that only calls tools.
		Content          any              `json:"content,omitempty"`
		ReasoningContent string           `json:"reasoning_content,omitempty"`
		ToolCalls        []openAIToolCall `json:"tool_calls,omitempty"`
		ToolCallID       string           `json:"tool_call_id,omitempty"`
	}
	openAIPart struct {
		Type     string          `json:"type"` // text or image_url
		Text     *string         `json:"text,omitempty"`
		ImageURL *openAIImageURL `json:"image_url,omitempty"`
	}
	openAIImageURL struct {
		URL string `json:"url"`
	}
	openAIToolCall struct {
		ID       string         `json:"id"`
		Type     string         `json:"type"` // function
		Function openAIFunction `json:"function"`
	}
	openAIFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"` // the JSON object, as a string
	}
	openAITool struct {
		Type     string            `json:"type"` // function
		Function openAIDeclaration `json:"function"`
	}
	openAIDeclaration struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      bool            `json:"strict,omitempty"`
	}
)

func openAILine(d *Dialog, o Options) (*openAI, error) {
	line := &openAI{Messages: make([]openAIMessage, 0, len(d.Messages)), Metadata: d.Metadata}
	ids := toolCallIDs(d.Messages)
	for i, m := range d.Messages {
		om, err := openAIMessageOf(m, ids[i])
		if err != nil {
			return nil, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
		}
		if o.Reasoning && om.Role == "assistant" {
			om.ReasoningContent = m.ReasoningText()
		}
		line.Messages = append(line.Messages, om)
	}
	for _, t := range tools(d.Declarations) {
		params := t.Parameters
		if len(params) == 0 {
			params = emptySchema
		}
		line.Tools = append(line.Tools, openAITool{Type: "function",
			Function: openAIDeclaration{Name: t.Name, Description: t.Description, Parameters: params, Strict: t.Strict}})
	}
	return line, nil
}

// openAIMessageOf is m in the OpenAI format, with ids the ids of its tool
// calls or, for a tool result, the id of the call it answers (ids[0]).
func openAIMessageOf(m *dialog.Message, ids []string) (openAIMessage, error) {
	if err := onlyUserImages(m); err != nil {
		return openAIMessage{}, err
	}
	switch m.Role {
	case dialog.RoleSystem:
		return openAIMessage{Role: "system", Content: m.Text()}, nil
	case dialog.RoleUser, "":
		content, err := openAIContent(m)
		return openAIMessage{Role: "user", Content: content}, err
	case dialog.RoleAssistant, dialog.RoleToolCall:
		om := openAIMessage{Role: "assistant"}
		if text := m.Text(); text != "" || len(m.FunctionCalls) == 0 {
			om.Content = text
		}
		for j, fc := range m.FunctionCalls {
			om.ToolCalls = append(om.ToolCalls, openAIToolCall{ID: ids[j], Type: "function",
				Function: openAIFunction{Name: fc.Name, Arguments: arguments(fc)}})
		}
		return om, nil
	case dialog.RoleTool:
		return openAIMessage{Role: "tool", Content: m.Text(), ToolCallID: ids[0]}, nil
	}
	return openAIMessage{}, unexportable("the role %q, which no format knows", m.Role)
}

// toolCallIDs are the ids of the tool calls of msgs, and of the tool
// results answering them, for a format that pairs them by id: by message,
// the ids of an assistant message's calls, or the one id of a tool
// result. Some providers give calls no id (Gemini through langchaingo,
// Ollama), and so their logs keep none; the OpenAI format needs one on
// every call and on the result that answers it. A call keeps the id the
// log has, unless it has none or an earlier call of the dialog has the
// same one: it then gets "call_N", N its position among the dialog's calls
// from 1 (or the next number no call of the dialog has). A tool result
// answers a call of the last assistant message before it: the one with
// its id, or for a result without one, the first call without an id that
// no earlier result answered (the call loop sends the results in the
// order of the calls), else the first call not answered. A result that
// answers none keeps its id, or gets a new one. The ids depend on the
// dialog alone: the same dialog gets the same ids on every export.
func toolCallIDs(msgs []*dialog.Message) [][]string {
	calls := func(m *dialog.Message) bool {
		return m.Role == dialog.RoleAssistant || m.Role == dialog.RoleToolCall
	}
	taken := map[string]bool{} // every id the dialog has, and every id given
	for _, m := range msgs {
		switch {
		case calls(m):
			for _, fc := range m.FunctionCalls {
				taken[fc.ID] = true
			}
		case m.Role == dialog.RoleTool:
			taken[m.ToolCallID] = true
		}
	}
	delete(taken, "")
	n := 0 // the calls so far
	fresh := func() string {
		for k := n; ; k++ {
			if id := "call_" + strconv.Itoa(k); !taken[id] {
				taken[id] = true
				return id
			}
		}
	}
	type call struct {
		logged, id string // the id the log has, and the one given
		answered   bool
	}
	var pending []call        // the calls of the last assistant message
	used := map[string]bool{} // the ids given to calls so far
	ids := make([][]string, len(msgs))
	for i, m := range msgs {
		switch {
		case calls(m):
			pending = pending[:0]
			for _, fc := range m.FunctionCalls {
				n++
				id := fc.ID
				if id == "" || used[id] {
					id = fresh()
				}
				used[id] = true
				ids[i] = append(ids[i], id)
				pending = append(pending, call{logged: fc.ID, id: id})
			}
		case m.Role == dialog.RoleTool:
			at := -1
			for j, c := range pending {
				if !c.answered && c.logged == m.ToolCallID {
					at = j
					break
				}
			}
			if at < 0 && m.ToolCallID == "" {
				at = slices.IndexFunc(pending, func(c call) bool { return !c.answered })
			}
			switch {
			case at >= 0:
				pending[at].answered = true
				ids[i] = []string{pending[at].id}
			case m.ToolCallID != "":
				ids[i] = []string{m.ToolCallID}
			default:
				ids[i] = []string{fresh()}
			}
		}
	}
	return ids
}

// openAIContent is a user message's content: its text, or its parts when
// it has an image.
func openAIContent(m *dialog.Message) (any, error) {
	if !hasImage(m) {
		return m.Text(), nil
	}
	parts := make([]openAIPart, 0, len(m.Parts))
	for _, p := range m.Parts {
		switch {
		case p.Type == dialog.PartText && p.Text != "":
			parts = append(parts, openAIPart{Type: "text", Text: &p.Text})
		case p.Type == dialog.PartImage && p.Image != nil:
			url, err := imageURL(p.Image)
			if err != nil {
				return nil, err
			}
			parts = append(parts, openAIPart{Type: "image_url", ImageURL: &openAIImageURL{URL: url}})
		}
	}
	return parts, nil
}

func hasImage(m *dialog.Message) bool {
	for _, p := range m.Parts {
		if p.Type == dialog.PartImage && p.Image != nil {
			return true
		}
	}
	return false
}

// onlyUserImages refuses an image in a message of another role than the
// user's: chat formats take images from users only.
func onlyUserImages(m *dialog.Message) error {
	if m.Role != dialog.RoleUser && m.Role != "" && hasImage(m) {
		return unexportable("an image in a %s message (chat formats take images from the user only)", m.Role)
	}
	return nil
}

// The ShareGPT line.
type (
	shareGPT struct {
		Conversations []shareGPTTurn `json:"conversations"`
		// Tools is the JSON text of the tools' declarations, as
		// LLaMA-Factory's ShareGPT reader takes them.
		Tools string `json:"tools,omitempty"`
		// Images are the URLs of the images the "<image>" marks in the
		// human turns stand for, in order.
		Images   []string  `json:"images,omitempty"`
		Metadata *Metadata `json:"metadata,omitempty"`
	}
	shareGPTTurn struct {
		From  string `json:"from"` // system, human, gpt, function_call or observation
		Value string `json:"value"`
	}
	shareGPTCall struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	shareGPTTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
)

// imageMark stands for an image in a ShareGPT human turn.
const imageMark = "<image>"

func shareGPTLine(d *Dialog, o Options) (*shareGPT, error) {
	line := &shareGPT{Conversations: make([]shareGPTTurn, 0, len(d.Messages)), Metadata: d.Metadata}
	add := func(from, value string) { line.Conversations = append(line.Conversations, shareGPTTurn{from, value}) }
	for i, m := range d.Messages {
		if err := onlyUserImages(m); err != nil {
			return nil, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
		}
		switch m.Role {
		case dialog.RoleSystem:
			add("system", m.Text())
		case dialog.RoleUser, "":
			if !hasImage(m) {
				add("human", m.Text())
				continue
			}
			var value string
			for _, p := range m.Parts {
				var s string
				switch {
				case p.Type == dialog.PartText:
					s = p.Text
				case p.Type == dialog.PartImage && p.Image != nil:
					url, err := imageURL(p.Image)
					if err != nil {
						return nil, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
					}
					line.Images = append(line.Images, url)
					s = imageMark
				}
				if s != "" && value != "" {
					value += "\n"
				}
				value += s
			}
			add("human", value)
		case dialog.RoleAssistant, dialog.RoleToolCall:
			text := m.Text()
			if r := m.ReasoningText(); o.Reasoning && r != "" {
				text = "<think>\n" + r + "\n</think>\n\n" + text
			}
			if len(m.FunctionCalls) == 0 {
				add("gpt", text)
				continue
			}
			if text != "" {
				add("gpt", text) // what the model said besides calling tools
			}
			calls := make([]shareGPTCall, len(m.FunctionCalls))
			for j, fc := range m.FunctionCalls {
				args := fc.Arguments
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				calls[j] = shareGPTCall{Name: fc.Name, Arguments: args}
			}
			var v any = calls
			if len(calls) == 1 {
				v = calls[0]
			}
			b, err := marshal(v)
			if err != nil {
				return nil, fmt.Errorf("message %d (%s): encoding its tool calls: %w", i, m.Role, err)
			}
			add("function_call", b)
		case dialog.RoleTool:
			add("observation", m.Text())
		default:
			return nil, fmt.Errorf("message %d: %w", i, unexportable("the role %q, which no format knows", m.Role))
		}
	}
	if ts := tools(d.Declarations); len(ts) > 0 {
		decls := make([]shareGPTTool, len(ts))
		for i, t := range ts {
			params := t.Parameters
			if len(params) == 0 {
				params = emptySchema
			}
			decls[i] = shareGPTTool{Name: t.Name, Description: t.Description, Parameters: params}
		}
		b, err := marshal(decls)
		if err != nil {
			return nil, fmt.Errorf("encoding the tools: %w", err)
		}
		line.Tools = b
	}
	return line, nil
}

// marshal is v as compact JSON text, without escaping <, > and &.
func marshal(v any) (string, error) {
	b, err := jsontext.Marshal(v)
	return string(b), err
}

// The lllm line: the log's own records.
type lllmLineT struct {
	Messages     []*dialog.Message    `json:"messages"`
	Declarations []*logs.Declarations `json:"declarations,omitempty"`
	Metadata     *Metadata            `json:"metadata,omitempty"`
}

func lllmLine(d *Dialog) *lllmLineT {
	msgs := d.Messages
	if msgs == nil {
		msgs = []*dialog.Message{}
	}
	return &lllmLineT{Messages: msgs, Declarations: d.Declarations, Metadata: d.Metadata}
}
