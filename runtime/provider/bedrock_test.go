package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

const bedrockModel = "anthropic.claude-3-5-sonnet-20240620-v1:0"

// bedrockEnv gives the AWS SDK test credentials, and a region that
// Config.Region must override, and keeps the machine's AWS configuration
// (profiles, endpoints, CA bundle, retries, instance metadata) out of the
// test.
func bedrockEnv(t *testing.T) {
	t.Helper()
	clearEnv(t)
	providertest.SetBedrockEnv(t, "eu-west-3")
}

// bedrockRequest is one request the fake Bedrock Runtime received.
type bedrockRequest struct {
	Path   string // decoded
	Header http.Header
	Body   map[string]any
}

// bedrockFake is a Bedrock Runtime endpoint for anthropic.* models
// (InvokeModel, and InvokeModelWithResponseStream): it records each
// request, checks its signature and answers with reply.
type bedrockFake struct {
	*httptest.Server
	mu    sync.Mutex
	reqs  []bedrockRequest
	reply func(w http.ResponseWriter)
}

// newBedrockFake starts a fake that answers every request with reply.
func newBedrockFake(t *testing.T, reply func(w http.ResponseWriter)) *bedrockFake {
	t.Helper()
	f := &bedrockFake{reply: reply}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("request body is not JSON: %q", b)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, bedrockRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		reply := f.reply
		f.mu.Unlock()
		if err := providertest.VerifySigV4(r, b); err != nil {
			t.Errorf("%s %s: %v", r.Method, r.URL.Path, err)
			bedrockError(w, http.StatusForbidden, "InvalidSignatureException", "The request signature we calculated does not match the signature you provided.")
			return
		}
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/model/") ||
			!strings.HasSuffix(r.URL.Path, "/invoke") && !strings.HasSuffix(r.URL.Path, "/invoke-with-response-stream") {
			bedrockError(w, http.StatusNotFound, "UnknownOperationException", "no such operation "+r.Method+" "+r.URL.Path)
			return
		}
		reply(w)
	}))
	t.Cleanup(f.Close)
	return f
}

// setReply makes the fake answer the next requests with reply.
func (f *bedrockFake) setReply(reply func(w http.ResponseWriter)) {
	f.mu.Lock()
	f.reply = reply
	f.mu.Unlock()
}

func (f *bedrockFake) requests() []bedrockRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bedrockRequest(nil), f.reqs...)
}

func (f *bedrockFake) last(t *testing.T) bedrockRequest {
	t.Helper()
	reqs := f.requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the fake Bedrock")
	}
	return reqs[len(reqs)-1]
}

// bedrockMessage answers with an Anthropic messages response made of
// blocks, as Bedrock returns it for anthropic.* models.
func bedrockMessage(stop string, in, out int, blocks ...map[string]any) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Requestid", "req-test")
		w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", fmt.Sprint(in))
		w.Header().Set("X-Amzn-Bedrock-Output-Token-Count", fmt.Sprint(out))
		json.NewEncoder(w).Encode(map[string]any{
			"id": "msg_bdrk_01", "type": "message", "role": "assistant", "model": "claude-3-5-sonnet-20240620",
			"content": blocks, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out},
		})
	}
}

// bedrockError writes an AWS JSON error as Bedrock Runtime sends it.
func bedrockError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.Header().Set("X-Amzn-Requestid", "req-test")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// openBedrockFake opens the bedrock model against f.
func openBedrockFake(t *testing.T, f *bedrockFake) Model {
	t.Helper()
	m, err := Open(context.Background(), "bedrock/"+bedrockModel, Config{BaseURL: f.URL, Region: "us-east-1"})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return m
}

// bedrockBlocks returns the content blocks of a wire message.
func bedrockBlocks(msg map[string]any) []map[string]any {
	var out []map[string]any
	list, _ := msg["content"].([]any)
	for _, b := range list {
		if m, ok := b.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// A text reply: the reply text, usage, cost and model come back; the
// request is an InvokeModel of the model, signed for Config.Region,
// carrying anthropic_version, the system prompt and the history in order,
// with max_tokens and no sampling params the caller did not set.
func TestBedrockTextReply(t *testing.T) {
	bedrockEnv(t)
	f := newBedrockFake(t, bedrockMessage("end_turn", 25, 7, map[string]any{"type": "text", "text": "Hello from Bedrock."}))
	m, err := Open(context.Background(), "bedrock/"+bedrockModel, Config{
		BaseURL: f.URL, Region: "us-east-1", Prices: map[string]Price{bedrockModel: {Input: 3, Output: 15}},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp := generate(t, m, &Request{Messages: []*dialog.Message{
		systemMsg("You are terse."), userMsg("Hi"),
		{Role: dialog.RoleAssistant, Content: "Hello."}, userMsg("Say it again"),
	}})
	msg := resp.Message
	if msg.Role != dialog.RoleAssistant || msg.Content != "Hello from Bedrock." || len(msg.FunctionCalls) != 0 {
		t.Errorf("message = %s %q %v", msg.Role, msg.Content, msg.FunctionCalls)
	}
	if want := (dialog.Usage{InputTokens: 25, OutputTokens: 7}); msg.Usage != want {
		t.Errorf("usage = %+v, want %+v", msg.Usage, want)
	}
	if msg.Model != "bedrock/"+bedrockModel || resp.FinishReason != "end_turn" {
		t.Errorf("model %q, finish %q", msg.Model, resp.FinishReason)
	}
	if want := (25*3.0 + 7*15.0) / 1e6; math.Abs(msg.USD-want) > 1e-12 {
		t.Errorf("USD = %v, want %v (Config.Prices)", msg.USD, want)
	}

	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	req := reqs[0]
	if req.Path != "/model/"+bedrockModel+"/invoke" {
		t.Errorf("path = %q", req.Path)
	}
	// Signed with the test credentials for the configured region.
	if auth := req.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential="+providertest.BedrockAccessKeyID+"/") ||
		!strings.Contains(auth, "/us-east-1/bedrock/aws4_request") {
		t.Errorf("Authorization = %q", auth)
	}
	body := req.Body
	if body["anthropic_version"] != "bedrock-2023-05-31" || body["system"] != "You are terse." {
		t.Errorf("anthropic_version %v, system %v", body["anthropic_version"], body["system"])
	}
	if n, ok := body["max_tokens"].(float64); !ok || n <= 0 {
		t.Errorf("max_tokens = %v, want the positive value the API requires", body["max_tokens"])
	}
	for _, k := range []string{"temperature", "top_p", "top_k", "stop_sequences", "tools"} {
		if v, ok := body[k]; ok {
			t.Errorf("%s = %v sent, but not set", k, v)
		}
	}
	var turns []string
	for _, wm := range providertest.Messages(body) {
		for _, b := range bedrockBlocks(wm) {
			turns = append(turns, fmt.Sprintf("%v:%v:%v", wm["role"], b["type"], b["text"]))
		}
	}
	if got := strings.Join(turns, "|"); got != "user:text:Hi|assistant:text:Hello.|user:text:Say it again" {
		t.Errorf("messages = %s", got)
	}
}

// Params reach the wire exactly when set, with their values: unset ones
// are absent, set ones present (a temperature of 0 included).
func TestBedrockParams(t *testing.T) {
	bedrockEnv(t)
	f := newBedrockFake(t, bedrockMessage("end_turn", 3, 1, map[string]any{"type": "text", "text": "ok"}))
	m := openBedrockFake(t, f)
	for _, tc := range []struct {
		name   string
		params Params
		want   map[string]any // nil: absent
	}{
		{"unset", Params{}, map[string]any{"temperature": nil, "top_p": nil, "top_k": nil, "stop_sequences": nil}},
		{"temperature", Params{Temperature: ptr(0.3)}, map[string]any{"temperature": 0.3, "top_p": nil, "top_k": nil}},
		{"all", Params{Temperature: ptr(0.7), TopP: ptr(0.9), TopK: ptr(40), MaxTokens: ptr(256), Stop: []string{"END"}},
			map[string]any{"temperature": 0.7, "top_p": 0.9, "top_k": 40.0, "max_tokens": 256.0, "stop_sequences": []any{"END"}}},
		{"zero temperature", Params{Temperature: ptr(0.0)}, map[string]any{"temperature": 0.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			generate(t, m, &Request{Messages: []*dialog.Message{userMsg("hi")}, Params: tc.params})
			body := f.last(t).Body
			for k, want := range tc.want {
				got, ok := body[k]
				switch {
				case want == nil && ok:
					t.Errorf("%s = %v sent, want it absent", k, got)
				case want != nil && (!ok || !jsonEqual(t, got, want)):
					t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
				}
			}
		})
	}
}

// A tool round: the tools are declared as Anthropic tools, a tool_use
// block comes back as a function call, and the call and its result go
// back as tool_use and tool_result blocks with the same id.
func TestBedrockToolRound(t *testing.T) {
	bedrockEnv(t)
	f := newBedrockFake(t, bedrockMessage("tool_use", 40, 12, map[string]any{
		"type": "tool_use", "id": "toolu_bdrk_01", "name": "get_weather", "input": map[string]any{"city": "Paris"},
	}))
	m := openBedrockFake(t, f)
	tool := weatherTool(t)
	question := userMsg("Weather in Paris?")
	resp := generate(t, m, &Request{Messages: []*dialog.Message{question}, Tools: []*dialog.Function{tool}})
	msg := resp.Message
	if len(msg.FunctionCalls) != 1 || msg.FunctionCalls[0].ID != "toolu_bdrk_01" || msg.FunctionCalls[0].Name != "get_weather" ||
		!jsonEqual(t, msg.FunctionCalls[0].Arguments, `{"city":"Paris"}`) {
		t.Fatalf("calls = %+v", msg.FunctionCalls)
	}
	if msg.Role != dialog.RoleToolCall || msg.Content != "" || resp.FinishReason != "tool_use" {
		t.Errorf("message = %s %q, finish %q", msg.Role, msg.Content, resp.FinishReason)
	}
	tools, _ := f.last(t).Body["tools"].([]any)
	if len(tools) != 1 || !jsonEqual(t, tools[0], map[string]any{
		"name": "get_weather", "description": "Weather in a city.", "input_schema": json.RawMessage(tool.Parameters),
	}) {
		t.Errorf("tools = %v", f.last(t).Body["tools"])
	}

	f.setReply(bedrockMessage("end_turn", 60, 5, map[string]any{"type": "text", "text": "18C in Paris."}))
	resp = generate(t, m, &Request{
		Messages: []*dialog.Message{
			question,
			{Role: dialog.RoleToolCall, FunctionCalls: msg.FunctionCalls},
			{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "toolu_bdrk_01", Content: "18C"},
		},
		Tools: []*dialog.Function{tool},
	})
	if resp.Message.Content != "18C in Paris." {
		t.Errorf("reply = %q", resp.Message.Content)
	}
	var wire []string
	for _, wm := range providertest.Messages(f.last(t).Body) {
		for _, b := range bedrockBlocks(wm) {
			switch b["type"] {
			case "text":
				wire = append(wire, fmt.Sprintf("%v:text:%v", wm["role"], b["text"]))
			case "tool_use":
				in, _ := json.Marshal(b["input"])
				wire = append(wire, fmt.Sprintf("%v:tool_use:%v:%v:%s", wm["role"], b["id"], b["name"], in))
			case "tool_result":
				wire = append(wire, fmt.Sprintf("%v:tool_result:%v:%v", wm["role"], b["tool_use_id"], b["content"]))
			default:
				wire = append(wire, fmt.Sprintf("%v:%v", wm["role"], b["type"]))
			}
		}
	}
	want := `user:text:Weather in Paris?|assistant:tool_use:toolu_bdrk_01:get_weather:{"city":"Paris"}|user:tool_result:toolu_bdrk_01:18C`
	if got := strings.Join(wire, "|"); got != want {
		t.Errorf("messages =\n %s\nwant\n %s", got, want)
	}
}

// An image goes as a base64 image block with its media type, after the
// text of the same user turn; an image URL, which langchaingo's bedrock
// client cannot send, is a bad request.
func TestBedrockImage(t *testing.T) {
	bedrockEnv(t)
	f := newBedrockFake(t, bedrockMessage("end_turn", 90, 4, map[string]any{"type": "text", "text": "A dot."}))
	m := openBedrockFake(t, f)
	data := []byte("\x89PNG\r\n\x1a\n\x00\x01\x02")
	img, err := dialog.ImageBytes(data).Load()
	if err != nil {
		t.Fatal(err)
	}
	generate(t, m, &Request{Messages: []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{
		{Type: dialog.PartText, Text: "What is it?"}, {Type: dialog.PartImage, Image: img},
	}}}})
	msgs := providertest.Messages(f.last(t).Body)
	if len(msgs) != 1 || len(bedrockBlocks(msgs[0])) != 2 {
		t.Fatalf("messages = %v", msgs)
	}
	bs := bedrockBlocks(msgs[0])
	if bs[0]["type"] != "text" || bs[0]["text"] != "What is it?" {
		t.Errorf("text block = %v", bs[0])
	}
	src, _ := bs[1]["source"].(map[string]any)
	if bs[1]["type"] != "image" || src["type"] != "base64" || src["media_type"] != "image/png" ||
		src["data"] != base64.StdEncoding.EncodeToString(data) {
		t.Errorf("image block = %v", bs[1])
	}

	n := len(f.requests())
	pe := generateErr(t, context.Background(), m, &Request{Messages: []*dialog.Message{{Role: dialog.RoleUser, Parts: []dialog.Part{
		{Type: dialog.PartImage, Image: &dialog.Image{URL: "https://example.com/cat.png"}},
	}}}})
	if pe.Kind != ErrBadRequest || len(f.requests()) != n {
		t.Errorf("URL image: %v (kind %s), %d requests sent", pe, pe.Kind, len(f.requests())-n)
	}
}

// Bedrock's errors, told by X-Amzn-ErrorType and status, map to our
// kinds, and each costs exactly one request: the SDK does not retry.
func TestBedrockErrors(t *testing.T) {
	bedrockEnv(t)
	for _, tc := range []struct {
		name, code, msg string
		status          int
		kind            ErrorKind
	}{
		{"throttled", "ThrottlingException", "Too many requests, please wait before trying again.", 429, ErrRateLimit},
		{"internal", "InternalServerException", "The server encountered an internal error.", 500, ErrServer},
		{"unavailable", "ServiceUnavailableException", "Bedrock is unable to process your request.", 503, ErrServer},
		{"access denied", "AccessDeniedException", "You don't have access to the model with the specified model ID.", 403, ErrAuth},
		{"input too long", "ValidationException", "Input is too long for requested model.", 400, ErrContextLength},
		{"validation", "ValidationException", "messages: roles must alternate between \"user\" and \"assistant\"", 400, ErrBadRequest},
		{"model timeout", "ModelTimeoutException", "Model has timed out in processing the request.", 408, ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newBedrockFake(t, func(w http.ResponseWriter) { bedrockError(w, tc.status, tc.code, tc.msg) })
			m := openBedrockFake(t, f)
			pe := generateErr(t, context.Background(), m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
			if pe.Kind != tc.kind || pe.Status != tc.status || pe.Provider != "bedrock" {
				t.Errorf("error = %v (kind %s, status %d, provider %q), want %s %d", pe, pe.Kind, pe.Status, pe.Provider, tc.kind, tc.status)
			}
			if !strings.Contains(pe.Error(), tc.code) {
				t.Errorf("error %q does not name %s", pe.Error(), tc.code)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("%d requests, want exactly 1 (no SDK retries)", n)
			}
		})
	}
}

// Without credentials the SDK signs nothing and sends nothing: the call
// fails as an auth error that says so and what to set, not as "other".
func TestBedrockNoCredentials(t *testing.T) {
	bedrockEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	f := newBedrockFake(t, bedrockMessage("end_turn", 1, 1, map[string]any{"type": "text", "text": "unreachable"}))
	m := openBedrockFake(t, f)
	pe := generateErr(t, context.Background(), m, &Request{Messages: []*dialog.Message{userMsg("hi")}})
	if pe.Kind != ErrAuth || pe.Retryable() {
		t.Errorf("error = %v (kind %s), want a final auth error", pe, pe.Kind)
	}
	if msg := pe.Error(); !strings.Contains(msg, "no AWS credentials found") || !strings.Contains(msg, "AWS_ACCESS_KEY_ID") {
		t.Errorf("error %q does not say that no credentials were found and what to set", msg)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests reached the endpoint, want none", n)
	}
}

// A reply with text and two tool_use blocks is one message with both
// calls; sent back with their results, it is one assistant turn (text and
// both tool_use blocks) and one user turn answering both, so the roles
// alternate as the API requires.
func TestBedrockParallelToolCalls(t *testing.T) {
	bedrockEnv(t)
	f := newBedrockFake(t, bedrockMessage("tool_use", 50, 30,
		map[string]any{"type": "text", "text": "Checking both."},
		map[string]any{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{"city": "Paris"}},
		map[string]any{"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": map[string]any{"city": "Rome"}},
	))
	m := openBedrockFake(t, f)
	tools := []*dialog.Function{weatherTool(t)}
	question := userMsg("Paris and Rome?")
	msg := generate(t, m, &Request{Messages: []*dialog.Message{question}, Tools: tools}).Message
	if msg.Role != dialog.RoleAssistant || msg.Content != "Checking both." || len(msg.FunctionCalls) != 2 ||
		msg.FunctionCalls[0].ID != "toolu_1" || !jsonEqual(t, msg.FunctionCalls[0].Arguments, `{"city":"Paris"}`) ||
		msg.FunctionCalls[1].ID != "toolu_2" || !jsonEqual(t, msg.FunctionCalls[1].Arguments, `{"city":"Rome"}`) {
		t.Fatalf("message = %s %q %+v", msg.Role, msg.Content, msg.FunctionCalls)
	}

	f.setReply(bedrockMessage("end_turn", 80, 6, map[string]any{"type": "text", "text": "18C and 21C."}))
	generate(t, m, &Request{
		Messages: []*dialog.Message{
			question, &msg,
			{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "toolu_1", Content: "18C"},
			{Role: dialog.RoleTool, Name: "get_weather", ToolCallID: "toolu_2", Content: "21C"},
		},
		Tools: tools,
	})
	var turns []string
	for _, wm := range providertest.Messages(f.last(t).Body) {
		var parts []string
		for _, b := range bedrockBlocks(wm) {
			switch b["type"] {
			case "text":
				parts = append(parts, "text:"+fmt.Sprint(b["text"]))
			case "tool_use":
				parts = append(parts, "tool_use:"+fmt.Sprint(b["id"]))
			case "tool_result":
				parts = append(parts, fmt.Sprintf("tool_result:%v=%v", b["tool_use_id"], b["content"]))
			}
		}
		turns = append(turns, fmt.Sprintf("%v[%s]", wm["role"], strings.Join(parts, " ")))
	}
	want := "user[text:Paris and Rome?] assistant[text:Checking both. tool_use:toolu_1 tool_use:toolu_2] user[tool_result:toolu_1=18C tool_result:toolu_2=21C]"
	if got := strings.Join(turns, " "); got != want {
		t.Errorf("turns =\n %s\nwant\n %s", got, want)
	}
}

// A reply cut at max_tokens comes back, with its text and the finish
// reason, where langchaingo alone returns an error and drops the text.
func TestBedrockMaxTokensKeepsTheReply(t *testing.T) {
	bedrockEnv(t)
	f := newBedrockFake(t, bedrockMessage("max_tokens", 12, 5, map[string]any{"type": "text", "text": "The answer is"}))
	m := openBedrockFake(t, f)
	resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Explain.")}, Params: Params{MaxTokens: ptr(5)}})
	if resp.Message.Content != "The answer is" || resp.FinishReason != "max_tokens" || resp.Message.Usage.OutputTokens != 5 {
		t.Errorf("reply %q, finish %q, usage %+v", resp.Message.Content, resp.FinishReason, resp.Message.Usage)
	}
	// The next reply, ended as usual, keeps its own reason.
	f.setReply(bedrockMessage("end_turn", 12, 3, map[string]any{"type": "text", "text": "Done."}))
	if resp := generate(t, m, &Request{Messages: []*dialog.Message{userMsg("Again.")}}); resp.FinishReason != "end_turn" {
		t.Errorf("next finish %q", resp.FinishReason)
	}
}
