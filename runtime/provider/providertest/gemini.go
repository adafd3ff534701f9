package providertest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// NewGeminiServer starts a fake Gemini API server (the Gemini Developer
// API's REST endpoints POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent, as Google's Go client calls them) that answers
// with replies, in order, then with the default reply. Give BaseURL to the
// client as its endpoint (provider.Config.BaseURL for googleai).
//
// A reply becomes one candidate: a text part (if there is text), then a
// functionCall part per tool call, with args as a JSON object (Gemini
// gives calls no id unless ToolCall.ID is set); with Thinking, the first
// call carries a thoughtSignature ([Signature] of the first block's text),
// as Gemini 3 gives them, and when the request's
// generationConfig.thinkingConfig.includeThoughts is true, each block's
// text comes first as a thought part. For a gemini-3 model the server refuses, as
// Gemini 3 does, a current turn whose first function call lost its
// signature. Usage becomes
// usageMetadata: promptTokenCount is Input (Cached among them, as
// cachedContentTokenCount), candidatesTokenCount is Output less
// Reasoning, thoughtsTokenCount is Reasoning. streamGenerateContent
// answers with the responses as the elements of a JSON array ($alt=json,
// what the Go client asks for) or as server-sent events (alt=sse): the
// text in a few responses, each with the running usage, the calls, the
// finish reason and the whole usage in the last. Enums are numbers when
// the request asks for enum-encoding=int, as the Go client does.
//
// The server refuses, as Gemini does: a request without an API key (the
// x-goog-api-key header or the key query parameter) with a 403
// PERMISSION_DENIED; with a 400 INVALID_ARGUMENT, a body that is not JSON,
// no contents, a role other than user and model, inline data that is not
// base64 or has no MIME type, a function call turn not answered by a turn
// with as many function responses, and a function response turn that does
// not follow a function call turn. Errors have Google's shape, {"error":
// {"code", "message", "status", "details"}}; a reply's RetryAfter goes in a
// google.rpc.RetryInfo detail as its retryDelay, which is how Gemini says
// it (without a Retry-After header). The server is closed when the test
// ends.
func NewGeminiServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	return newRoutedServer(t, geminiProtocol{}, replies, geminiRoute, geminiCheck)
}

type geminiProtocol struct{}

func (geminiProtocol) path() string           { return "" }
func (geminiProtocol) base(url string) string { return url }

var geminiPath = regexp.MustCompile(`^/v1(?:beta)?/(?:models|tunedModels)/([^/:]+):(generateContent|streamGenerateContent)$`)

func geminiRoute(r *http.Request) bool {
	return r.Method == http.MethodPost && geminiPath.MatchString(r.URL.Path)
}

// geminiStatus is Google's status name for an HTTP status.
func geminiStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if code >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

func geminiInvalid(msg string) (Reply, bool) {
	return Reply{Status: http.StatusBadRequest, ErrorMessage: msg}, true
}

func geminiCheck(r *http.Request, body []byte) (Reply, bool) {
	if r.Header.Get("X-Goog-Api-Key") == "" && r.URL.Query().Get("key") == "" {
		return Reply{Status: http.StatusForbidden, ErrorMessage: "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."}, true
	}
	req := jsonObject(body)
	if req == nil {
		return geminiInvalid("Invalid JSON payload received.")
	}
	contents := objects(req["contents"])
	if len(contents) == 0 {
		return geminiInvalid("* GenerateContentRequest.contents: contents is not specified")
	}
	prevCalls := 0 // function calls of the previous turn
	for i, c := range contents {
		role, _ := c["role"].(string)
		if role != "user" && role != "model" && !(role == "" && len(contents) == 1) {
			return geminiInvalid(fmt.Sprintf("Please use a valid role: user, model. (contents[%d].role is %q)", i, role))
		}
		calls, responses := 0, 0
		for j, p := range objects(c["parts"]) {
			if d, ok := p["inlineData"].(map[string]any); ok {
				data, _ := d["data"].(string)
				mime, _ := d["mimeType"].(string)
				if _, err := base64.StdEncoding.DecodeString(data); err != nil || data == "" {
					return geminiInvalid(fmt.Sprintf("Invalid value at 'contents[%d].parts[%d].inline_data.data' (TYPE_BYTES), Base64 decoding failed", i, j))
				}
				if mime == "" {
					return geminiInvalid(fmt.Sprintf("* GenerateContentRequest.contents[%d].parts[%d].inline_data.mime_type: mime_type is not specified", i, j))
				}
			}
			if _, ok := p["functionCall"]; ok {
				calls++
			}
			if _, ok := p["functionResponse"]; ok {
				responses++
			}
		}
		switch {
		case responses > 0 && prevCalls == 0:
			return geminiInvalid("Please ensure that function response turn comes immediately after a function call turn.")
		case prevCalls > 0 && responses != prevCalls:
			return geminiInvalid("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
		}
		prevCalls = calls
	}
	if m := geminiPath.FindStringSubmatch(r.URL.Path); m != nil && strings.HasPrefix(m[1], "gemini-3") {
		return geminiSignatures(contents)
	}
	return Reply{}, false
}

// geminiSignatures refuses, as Gemini 3 does, a request whose current turn
// (the contents after the last user text) has a function call turn whose
// first call has lost its thought signature, or carries one the server did
// not make other than the placeholders Google documents for calls Gemini did
// not make.
func geminiSignatures(contents []map[string]any) (Reply, bool) {
	current := 0
	for i, c := range contents {
		if c["role"] == "user" {
			for _, p := range objects(c["parts"]) {
				if _, ok := p["text"]; ok {
					current = i + 1
				}
			}
		}
	}
	for i, c := range contents[current:] {
		for _, p := range objects(c["parts"]) {
			fc, ok := p["functionCall"].(map[string]any)
			if !ok {
				continue
			}
			switch sig, _ := p["thoughtSignature"].(string); {
			case sig == "":
				return geminiInvalid(fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, "+
					"and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%v`, position %d. "+
					"Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", fc["name"], current+i+1))
			case sig == "skip_thought_signature_validator" || sig == "context_engineering_is_the_way_to_go":
				// Google's placeholders for a call Gemini did not make.
			case !strings.HasPrefix(sig, "sig-"):
				return geminiInvalid("Corrupted thought signature.")
			}
			break // only a turn's first call carries one
		}
	}
	return Reply{}, false
}

func (geminiProtocol) writeError(w http.ResponseWriter, r Reply) {
	status := r.Status
	name := r.ErrorType
	if name == "" {
		name = geminiStatus(status)
	}
	msg := r.ErrorMessage
	if msg == "" {
		switch status {
		case 429:
			msg = "Resource has been exhausted (e.g. check quota)."
		case 503:
			msg = "The model is overloaded. Please try again later."
		default:
			msg = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
		}
	}
	e := map[string]any{"code": status, "message": msg, "status": name}
	if r.RetryAfter != "" {
		// Gemini says when to retry in the body, not in a header.
		w.Header().Del("Retry-After")
		e["details"] = []any{map[string]any{
			"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": strings.TrimSuffix(r.RetryAfter, "s") + "s",
		}}
	}
	writeJSON(w, status, map[string]any{"error": e})
}

// geminiFinish is a finish reason as the request asks for enums.
func geminiFinish(r Reply, ints bool) any {
	name := strings.ToUpper(r.FinishReason)
	if name == "" {
		name = "STOP"
	}
	if !ints {
		return name
	}
	for i, n := range []string{"FINISH_REASON_UNSPECIFIED", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "MALFORMED_FUNCTION_CALL"} {
		if n == name {
			return i
		}
	}
	return 5 // OTHER
}

func geminiUsage(u Usage, output int) map[string]any {
	m := map[string]any{
		"promptTokenCount":     u.Input,
		"candidatesTokenCount": output,
		"totalTokenCount":      u.Input + output,
	}
	if u.Cached > 0 {
		m["cachedContentTokenCount"] = u.Cached
	}
	return m
}

func (geminiProtocol) write(w http.ResponseWriter, req map[string]any, r Reply) {
	hr := requestOf(w)
	m := geminiPath.FindStringSubmatch(hr.URL.Path)
	model, method := "", "generateContent"
	if m != nil {
		model, method = m[1], m[2]
	}
	alt := hr.URL.Query().Get("$alt") + ";" + hr.URL.Query().Get("alt")
	ints := strings.Contains(alt, "enum-encoding=int")

	candidate := func(parts []any, last bool) map[string]any {
		c := map[string]any{"content": map[string]any{"parts": parts, "role": "model"}, "index": 0}
		if last {
			c["finishReason"] = geminiFinish(r, ints)
		}
		return c
	}
	calls := make([]any, 0, len(r.ToolCalls))
	for i, tc := range r.ToolCalls {
		fc := map[string]any{"name": tc.Name, "args": toolArgs(tc.Arguments)}
		if tc.ID != "" {
			fc["id"] = tc.ID
		}
		part := map[string]any{"functionCall": fc}
		if i == 0 && len(r.Thinking) > 0 {
			part["thoughtSignature"] = Signature(r.Thinking[0].Text)
		}
		calls = append(calls, part)
	}
	final := geminiUsage(r.Usage, max(r.Usage.Output-r.Usage.Reasoning, 0))
	if r.Usage.Reasoning > 0 {
		final["thoughtsTokenCount"] = r.Usage.Reasoning
		final["totalTokenCount"] = r.Usage.Input + r.Usage.Output
	}
	response := func(parts []any, last bool, usage map[string]any) map[string]any {
		return map[string]any{"candidates": []any{candidate(parts, last)}, "usageMetadata": usage,
			"modelVersion": model, "responseId": "fake-gemini-response"}
	}

	// Thought summaries, when the request asks for them.
	var thoughts []any
	gen, _ := req["generationConfig"].(map[string]any)
	if tc, _ := gen["thinkingConfig"].(map[string]any); tc["includeThoughts"] == true {
		for _, th := range r.Thinking {
			thoughts = append(thoughts, map[string]any{"text": th.Text, "thought": true})
		}
	}

	if method == "generateContent" {
		parts := thoughts
		if r.Text != "" || len(calls) == 0 {
			parts = append(parts, map[string]any{"text": r.Text})
		}
		writeJSON(w, http.StatusOK, response(append(parts, calls...), true, final))
		return
	}

	// streamGenerateContent: the thoughts, then the text in pieces, each
	// with the running usage, then the calls, the finish reason and the
	// whole usage.
	var resps []map[string]any
	for _, th := range thoughts {
		resps = append(resps, response([]any{th}, false, geminiUsage(r.Usage, 0)))
	}
	texts := pieces(r.Text, 3)
	for i, p := range texts {
		if i == len(texts)-1 && len(calls) == 0 {
			resps = append(resps, response([]any{map[string]any{"text": p}}, true, final))
			break
		}
		resps = append(resps, response([]any{map[string]any{"text": p}}, false, geminiUsage(r.Usage, min(i+1, r.Usage.Output))))
	}
	if len(calls) > 0 || len(texts) == 0 {
		parts := calls
		if len(parts) == 0 {
			parts = []any{map[string]any{"text": ""}}
		}
		resps = append(resps, response(parts, true, final))
	}
	if strings.Contains(alt, "sse") {
		s := newSSE(w)
		for _, resp := range resps {
			s.event("", resp)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	io.WriteString(w, "[")
	for i, resp := range resps {
		if i > 0 {
			io.WriteString(w, ",\r\n")
		}
		b, _ := json.Marshal(resp)
		w.Write(b)
		if f != nil {
			f.Flush()
		}
	}
	io.WriteString(w, "]")
}

// GeminiContents returns the "contents" of a Gemini request body, each as
// a map, for assertions.
func GeminiContents(body map[string]any) []map[string]any { return objects(body["contents"]) }

// GeminiParts returns the parts of a Gemini content, each as a map.
func GeminiParts(content map[string]any) []map[string]any { return objects(content["parts"]) }
