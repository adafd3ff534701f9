package provider

import (
	"encoding/json"
	"strconv"
)

// dialect is what differs between langchaingo's providers, for the
// adapter: how to send images, tools and formats, and which request body
// edits the transport makes.
type dialect struct {
	binaryImages    bool // images as llms.BinaryContent; the client rejects data URLs
	splitAssistant  bool // one part per assistant message; the client sends only the first
	noTools         bool // the client has no tools: calls and results go to it as text (ollama: the transport sends them)
	singleText      bool // one text part per message
	mapSchemas      bool // tool schemas as map[string]any
	legacyMaxTokens bool // "max_tokens", not "max_completion_tokens" (OpenAI style)
	// streamTools: requests that declare tools may stream, their calls
	// coming out whole (the transport assembles OpenAI's and Mistral's
	// and reads Ollama's; langchaingo assembles Anthropic's by block;
	// Gemini sends each call whole).
	streamTools bool
	// thinking: the reasoning of earlier replies goes back with the
	// messages, as Anthropic's thinking blocks or Gemini's thought
	// signatures (see thinking.go).
	thinking bool
	// joinsRoles: the client joins the parts of consecutive messages of
	// a role into one wire message (bedrock).
	joinsRoles bool
	format     formatStyle
	wire       wireStyle
}

// chatCompletions reports whether replies come in OpenAI's chat-completions
// shape (openai, and mistral through the same client), whose streamed
// text the transport reads off the wire.
func (d dialect) chatCompletions() bool { return d.wire == wireOpenAI || d.wire == wireMistral }

// tapsStreams reports whether the transport reads a stream's text and
// reasoning itself (see callState.tapped) rather than taking them from
// the client's streaming functions.
func (d dialect) tapsStreams() bool {
	return d.chatCompletions() || d.wire == wireGoogle || d.wire == wireOllama
}

// formatStyle is how a request's Format reaches the provider through
// langchaingo.
type formatStyle int

const (
	formatNone     formatStyle = iota // not sent
	formatJSONMode                    // llms.WithJSONMode
	formatMIME                        // llms.WithResponseMIMEType("application/json")
)

// wireStyle selects the request body edits of a provider's wire format.
type wireStyle int

const (
	wireNone wireStyle = iota
	wireOpenAI
	wireMistral
	wireAnthropic
	wireOllama
	wireGoogle
)

func dialectFor(provider string) dialect {
	switch provider {
	case "anthropic":
		return dialect{binaryImages: true, splitAssistant: true, streamTools: true, thinking: true, wire: wireAnthropic}
	case "googleai":
		return dialect{binaryImages: true, mapSchemas: true, streamTools: true, thinking: true, format: formatMIME, wire: wireGoogle}
	case "ollama":
		return dialect{binaryImages: true, noTools: true, singleText: true, streamTools: true, format: formatJSONMode, wire: wireOllama}
	case "bedrock":
		// Anthropic's body, on anthropic models (see bedrockEdits).
		return dialect{binaryImages: true, thinking: true, joinsRoles: true, wire: wireAnthropic}
	case "mistral":
		return dialect{format: formatJSONMode, streamTools: true, wire: wireMistral}
	case "mock":
		return dialect{}
	}
	return dialect{format: formatJSONMode, streamTools: true, wire: wireOpenAI}
}

// edits are the request body edits that make the wire carry exactly the
// set params (and the format) for the dialect's provider.
func (d dialect) edits(p Params, format json.RawMessage) []edit {
	switch d.wire {
	case wireOpenAI, wireMistral:
		es := []edit{{path: temperaturePath, value: floatJSON(p.Temperature)}}
		if p.TopP != nil {
			es = append(es, edit{path: []string{"top_p"}, value: floatJSON(p.TopP)})
		}
		if p.TopK != nil {
			es = append(es, edit{path: []string{"top_k"}, value: intJSON(p.TopK)})
		}
		if p.Seed != nil {
			if d.wire == wireMistral {
				es = append(es, edit{path: []string{"seed"}}, edit{path: []string{"random_seed"}, value: intJSON(p.Seed)})
			} else {
				es = append(es, edit{path: []string{"seed"}, value: intJSON(p.Seed)})
			}
		}
		if len(format) > 0 {
			es = append(es, edit{path: []string{"response_format"}, value: jsonSchemaFormat(format)})
		}
		if d.wire == wireMistral {
			es = append(es, edit{path: []string{"stream_options"}})
		}
		return es
	case wireAnthropic:
		es := []edit{{path: temperaturePath, value: floatJSON(p.Temperature)}}
		if p.TopP != nil {
			es = append(es, edit{path: []string{"top_p"}, value: floatJSON(p.TopP)})
		}
		if p.TopK != nil {
			es = append(es, edit{path: []string{"top_k"}, value: intJSON(p.TopK)})
		}
		return es
	case wireOllama:
		es := []edit{{path: []string{"options", "temperature"}, value: floatJSON(p.Temperature)}}
		if p.Seed != nil {
			es = append(es, edit{path: []string{"options", "seed"}, value: intJSON(p.Seed)})
		}
		if len(format) > 0 {
			es = append(es, edit{path: []string{"format"}, value: format})
		}
		return es
	case wireGoogle:
		es := []edit{
			{path: []string{"generationConfig", "temperature"}, value: floatJSON(p.Temperature)},
			{path: []string{"generationConfig", "topP"}, value: floatJSON(p.TopP)},
			{path: []string{"generationConfig", "topK"}, value: intJSON(p.TopK)},
			{path: []string{"generationConfig", "maxOutputTokens"}, value: intJSON(p.MaxTokens)},
		}
		if p.Seed != nil {
			es = append(es, edit{path: []string{"generationConfig", "seed"}, value: intJSON(p.Seed)})
		}
		if len(format) > 0 {
			es = append(es, edit{path: []string{"generationConfig", "responseJsonSchema"}, value: format})
		}
		return es
	}
	return nil
}

// temperaturePath is the path of the edit every call to a top-level
// temperature makes, shared so that it costs no allocation.
var temperaturePath = []string{"temperature"}

// floatJSON is *v as JSON, or nil (delete) when v is nil.
func floatJSON(v *float64) []byte {
	if v == nil {
		return nil
	}
	return strconv.AppendFloat(nil, *v, 'g', -1, 64)
}

// intJSON is *v as JSON, or nil (delete) when v is nil.
func intJSON(v *int) []byte {
	if v == nil {
		return nil
	}
	return strconv.AppendInt(nil, int64(*v), 10)
}

// jsonSchemaFormat is OpenAI's response_format for a JSON schema.
func jsonSchemaFormat(schema json.RawMessage) []byte {
	b := make([]byte, 0, len(schema)+64)
	b = append(b, `{"type":"json_schema","json_schema":{"name":"response","schema":`...)
	b = append(b, schema...)
	return append(b, "}}"...)
}
