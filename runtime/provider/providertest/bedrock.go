package providertest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The AWS credentials the fake Bedrock server checks signatures with;
// SetBedrockEnv gives them to the AWS SDK.
const (
	BedrockAccessKeyID     = "AKIDPROVIDERTEST"
	BedrockSecretAccessKey = "providertest-secret-key"
)

// NewBedrockServer starts a fake Amazon Bedrock Runtime endpoint for
// Anthropic models (POST /model/{modelId}/invoke, and
// /invoke-with-response-stream) that answers with replies, in order, then
// with the default reply. Give its URL to the SDK as the endpoint
// (provider.Config.BaseURL for bedrock), with the credentials
// SetBedrockEnv sets.
//
// Every request must be signed with AWS Signature Version 4 for the
// service "bedrock" with BedrockAccessKeyID and BedrockSecretAccessKey,
// over the body that arrives (a body changed after signing fails, as on
// AWS): else a 403 (MissingAuthenticationTokenException,
// UnrecognizedClientException or InvalidSignatureException). The body
// must be an Anthropic messages request as Bedrock takes it, else a 400
// ValidationException as Bedrock or the model sends it: anthropic_version
// "bedrock-2023-05-31" and a positive max_tokens are required, keys
// Bedrock does not know (such as "model" or "stream") are refused, roles
// are user and assistant, starting with user; images are base64 blocks of
// a supported media type; every tool_use block is answered by a
// tool_result block in the next message and every tool_result answers one
// in the previous message; and the models that take only one of
// temperature and top_p refuse both.
//
// Extended thinking is checked as NewAnthropicServer checks it: a reply's
// Thinking comes first, each block sealed with [Signature]; a block sent
// back must carry its seal, and with thinking enabled the assistant turn
// before a final tool result must start with a thinking block.
//
// A reply becomes an Anthropic message: its thinking blocks, a text block
// (if there is text), then a tool_use block per tool call (ids
// "toolu_bdrk_..." unless given);
// usage as in NewAnthropicServer, and the token counts in Bedrock's
// X-Amzn-Bedrock-Input-Token-Count and -Output-Token-Count headers. The
// streaming operation answers with the messages API's events, each in a
// Bedrock "chunk" event of an application/vnd.amazon.eventstream body,
// the last carrying amazon-bedrock-invocationMetrics. Errors have Bedrock's
// shape: the X-Amzn-Errortype header names the exception (from the status,
// or Reply.ErrorType) and the body is {"message": ...}. The server is
// closed when the test ends.
func NewBedrockServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	return newRoutedServer(t, bedrockProtocol{}, replies, bedrockRoute, bedrockCheck)
}

// SetBedrockEnv points the AWS SDK's default configuration at the fake's
// credentials and region for the rest of the test, and keeps the
// machine's AWS configuration (profiles, SSO, endpoints, instance
// metadata, retry settings) out of it.
func SetBedrockEnv(t testing.TB, region string) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":                      BedrockAccessKeyID,
		"AWS_SECRET_ACCESS_KEY":                  BedrockSecretAccessKey,
		"AWS_REGION":                             region,
		"AWS_CONFIG_FILE":                        filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE":            filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":              "true",
		"AWS_SESSION_TOKEN":                      "",
		"AWS_PROFILE":                            "",
		"AWS_DEFAULT_PROFILE":                    "",
		"AWS_DEFAULT_REGION":                     "",
		"AWS_CA_BUNDLE":                          "",
		"AWS_ENDPOINT_URL":                       "",
		"AWS_ENDPOINT_URL_BEDROCK_RUNTIME":       "",
		"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS":    "",
		"AWS_USE_FIPS_ENDPOINT":                  "",
		"AWS_USE_DUALSTACK_ENDPOINT":             "",
		"AWS_MAX_ATTEMPTS":                       "",
		"AWS_RETRY_MODE":                         "",
		"AWS_DEFAULTS_MODE":                      "",
		"AWS_ROLE_ARN":                           "",
		"AWS_WEB_IDENTITY_TOKEN_FILE":            "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI":     "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_REQUEST_CHECKSUM_CALCULATION":       "",
		"AWS_RESPONSE_CHECKSUM_VALIDATION":       "",
	} {
		t.Setenv(k, v)
	}
}

type bedrockProtocol struct{}

func (bedrockProtocol) path() string           { return "" }
func (bedrockProtocol) base(url string) string { return url }

var bedrockPath = regexp.MustCompile(`^/model/([^/]+)/(invoke|invoke-with-response-stream)$`)

func bedrockRoute(r *http.Request) bool {
	return r.Method == http.MethodPost && bedrockPath.MatchString(r.URL.Path)
}

// bedrockException names Bedrock's exception for a status.
func bedrockException(status int) string {
	switch status {
	case 400:
		return "ValidationException"
	case 403:
		return "AccessDeniedException"
	case 404:
		return "ResourceNotFoundException"
	case 408:
		return "ModelTimeoutException"
	case 424:
		return "ModelErrorException"
	case 429:
		return "ThrottlingException"
	case 503:
		return "ServiceUnavailableException"
	}
	if status >= 500 {
		return "InternalServerException"
	}
	return "ValidationException"
}

func (bedrockProtocol) writeError(w http.ResponseWriter, r Reply) {
	code := r.ErrorType
	if code == "" || strings.Contains(code, "_") { // not an AWS exception name
		code = bedrockException(r.Status)
	}
	msg := r.ErrorMessage
	if msg == "" {
		switch code {
		case "ThrottlingException":
			msg = "Too many requests, please wait before trying again."
		case "ServiceUnavailableException":
			msg = "Bedrock is unable to process your request."
		default:
			msg = "The server encountered an internal error while processing the request."
		}
	}
	w.Header().Set("X-Amzn-Errortype", code+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.Header().Set("X-Amzn-Requestid", "fake-bedrock-request")
	writeJSON(w, r.Status, map[string]any{"message": msg})
}

func bedrockRefuse(status int, code, msg string) (Reply, bool) {
	return Reply{Status: status, ErrorType: code, ErrorMessage: msg}, true
}

func bedrockCheck(r *http.Request, body []byte) (Reply, bool) {
	if refusal, bad := checkSignature(r, body); bad {
		return refusal, bad
	}
	malformed := func(format string, args ...any) (Reply, bool) {
		return bedrockRefuse(400, "ValidationException", "Malformed input request: "+fmt.Sprintf(format, args...)+", please reformat your input and try again.")
	}
	invalid := func(format string, args ...any) (Reply, bool) {
		return bedrockRefuse(400, "ValidationException", fmt.Sprintf(format, args...))
	}
	req := jsonObject(body)
	if req == nil {
		return malformed("#: expected type: JSONObject")
	}
	known := []string{"anthropic_version", "anthropic_beta", "max_tokens", "system", "messages", "temperature",
		"top_p", "top_k", "stop_sequences", "tools", "tool_choice", "thinking"}
	var extra []string
	for k := range req {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return malformed("#: extraneous key [%s] is not permitted", strings.Join(extra, ", "))
	}
	if v, ok := req["anthropic_version"].(string); !ok {
		return malformed("#: required key [anthropic_version] not found")
	} else if v != "bedrock-2023-05-31" {
		return invalid("invalid anthropic_version %q: use bedrock-2023-05-31", v)
	}
	if n, ok := req["max_tokens"].(float64); !ok {
		return malformed("#: required key [max_tokens] not found")
	} else if n < 1 || n != float64(int(n)) {
		return malformed("#/max_tokens: %v is not greater or equal to 1", n)
	}
	model := bedrockPath.FindStringSubmatch(r.URL.Path)[1]
	_, hasT := req["temperature"]
	_, hasP := req["top_p"]
	if hasT && hasP && onlyOneSampler(model) {
		return invalid("`temperature` and `top_p` cannot both be specified for this model. Please use only one.")
	}
	for i, tool := range objects(req["tools"]) {
		name, _ := tool["name"].(string)
		schema, _ := tool["input_schema"].(map[string]any)
		if name == "" || schema == nil || schema["type"] != "object" {
			return invalid("tools.%d: a custom tool needs a name and an input_schema of type object", i)
		}
	}
	msgs := objects(req["messages"])
	if len(msgs) == 0 {
		return malformed("#/messages: expected minimum item count: 1, found: 0")
	}
	var pending []string // tool_use ids of the previous message
	for i, m := range msgs {
		role, _ := m["role"].(string)
		if role != "user" && role != "assistant" {
			return invalid("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if i == 0 && role != "user" {
			return invalid("messages: the first message must use the \"user\" role")
		}
		var uses, results []string
		blocks := objects(m["content"])
		if s, ok := m["content"].(string); ok {
			blocks = []map[string]any{{"type": "text", "text": s}}
		}
		for j, b := range blocks {
			switch b["type"] {
			case "text":
				if _, ok := b["text"].(string); !ok {
					return invalid("messages.%d.content.%d.text: Field required", i, j)
				}
			case "image":
				src, _ := b["source"].(map[string]any)
				mt, _ := src["media_type"].(string)
				data, _ := src["data"].(string)
				if src["type"] != "base64" {
					return invalid("messages.%d.content.%d.image.source: Bedrock takes base64 image sources", i, j)
				}
				if !slices.Contains([]string{"image/jpeg", "image/png", "image/gif", "image/webp"}, mt) {
					return invalid("messages.%d.content.%d.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", i, j)
				}
				if _, err := base64.StdEncoding.DecodeString(data); err != nil || data == "" {
					return invalid("messages.%d.content.%d.image.source.base64: invalid base64 data", i, j)
				}
			case "tool_use":
				id, _ := b["id"].(string)
				if role != "assistant" || id == "" {
					return invalid("messages.%d.content.%d: a tool_use block needs an id, in an assistant message", i, j)
				}
				uses = append(uses, id)
			case "tool_result":
				id, _ := b["tool_use_id"].(string)
				if !slices.Contains(pending, id) {
					return invalid("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id)
				}
				results = append(results, id)
			case "document", "thinking", "redacted_thinking":
			default:
				return invalid("messages.%d.content.%d.type: Input tag '%v' found using 'type' does not match any of the expected tags", i, j, b["type"])
			}
		}
		var missing []string
		for _, id := range pending {
			if !slices.Contains(results, id) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return invalid("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
		}
		pending = uses
	}
	if len(pending) > 0 {
		return invalid("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(msgs)-1, strings.Join(pending, ", "))
	}
	if msg := checkThinking(req); msg != "" {
		return invalid("%s", msg)
	}
	return Reply{}, false
}

// onlyOneSampler reports whether the model takes temperature or top_p,
// not both (Claude Sonnet 4.5, Haiku 4.5, Opus 4.1 and later).
func onlyOneSampler(model string) bool {
	for _, m := range []string{"claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1", "claude-opus-4-5"} {
		if strings.Contains(model, m) {
			return true
		}
	}
	return false
}

// checkSignature refuses, as AWS does, a request VerifySigV4 refuses.
func checkSignature(r *http.Request, body []byte) (Reply, bool) {
	if err := VerifySigV4(r, body); err != nil {
		se := err.(*SigV4Error)
		return bedrockRefuse(403, se.Code, se.Message)
	}
	return Reply{}, false
}

// SigV4Error is why VerifySigV4 refused a request: the AWS exception
// Bedrock answers with, and its message.
type SigV4Error struct {
	Code    string // "MissingAuthenticationTokenException", "InvalidSignatureException", ...
	Message string
}

func (e *SigV4Error) Error() string { return e.Code + ": " + e.Message }

// VerifySigV4 checks the SigV4 signature of a request to Bedrock as AWS
// does, with the fake's credentials (BedrockAccessKeyID): the headers it
// signed and the body that arrived (an edit made after signing, in an
// HTTP transport, would not be) must give the same signature. Its error
// is a *SigV4Error.
func VerifySigV4(r *http.Request, body []byte) error {
	refuse := func(code, msg string) error { return &SigV4Error{Code: code, Message: msg} }
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") {
		return refuse("MissingAuthenticationTokenException", "Missing Authentication Token")
	}
	fields := map[string]string{}
	for _, f := range strings.Split(strings.TrimPrefix(auth, "AWS4-HMAC-SHA256 "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/") // key/date/region/service/aws4_request
	if len(scope) != 5 || scope[0] != BedrockAccessKeyID {
		return refuse("UnrecognizedClientException", "The security token included in the request is invalid.")
	}
	if scope[3] != "bedrock" || scope[4] != "aws4_request" {
		return refuse("InvalidSignatureException", "Credential should be scoped to correct service: 'bedrock'.")
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || fields["Signature"] == "" || fields["SignedHeaders"] == "" {
		return refuse("InvalidSignatureException", "The request signature is incomplete.")
	}
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	check := &http.Request{Method: r.Method, URL: &u, Host: r.Host, Header: http.Header{}}
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		switch h {
		case "host":
		case "content-length":
			check.ContentLength = r.ContentLength
		default:
			check.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: BedrockAccessKeyID, SecretAccessKey: BedrockSecretAccessKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, check, hex.EncodeToString(sum[:]), scope[3], scope[2], at); err != nil {
		return refuse("InvalidSignatureException", err.Error())
	}
	if check.Header.Get("Authorization") != auth {
		return refuse("InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.")
	}
	return nil
}

// bedrockVendorModel is the Anthropic name of a Bedrock model id:
// "claude-sonnet-4-5-20250929" for
// "us.anthropic.claude-sonnet-4-5-20250929-v1:0".
func bedrockVendorModel(id string) string {
	if i := strings.LastIndex(id, "anthropic."); i >= 0 {
		id = id[i+len("anthropic."):]
	}
	if i := strings.LastIndex(id, "-v"); i > 0 {
		id = id[:i]
	}
	return id
}

func bedrockToolID(tc ToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("toolu_bdrk_fake%02d", i+1)
}

func (bedrockProtocol) write(w http.ResponseWriter, req map[string]any, r Reply) {
	hr := requestOf(w)
	m := bedrockPath.FindStringSubmatch(hr.URL.Path)
	model, op := bedrockVendorModel(m[1]), m[2]
	usage := anthropicUsage(r.Usage)
	w.Header().Set("X-Amzn-Requestid", "fake-bedrock-request")
	if op == "invoke-with-response-stream" {
		writeBedrockStream(w, model, r, usage)
		return
	}
	w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", fmt.Sprint(usage["input_tokens"]))
	w.Header().Set("X-Amzn-Bedrock-Output-Token-Count", fmt.Sprint(r.Usage.Output))
	writeJSON(w, http.StatusOK, anthropicMessage("msg_bdrk_fake", model, r, bedrockToolID))
}

// writeBedrockStream sends the messages API's events of r, each as the
// bytes of a Bedrock "chunk" event, the last with the invocation metrics.
func writeBedrockStream(w http.ResponseWriter, model string, r Reply, usage map[string]any) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Bedrock-Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	enc := eventstream.NewEncoder()
	evs := anthropicEvents("msg_bdrk_fake", model, r, bedrockToolID)
	evs[len(evs)-1]["amazon-bedrock-invocationMetrics"] = map[string]any{
		"inputTokenCount": usage["input_tokens"], "outputTokenCount": r.Usage.Output, "invocationLatency": 420, "firstByteLatency": 180,
	}
	for _, ev := range evs {
		raw, _ := json.Marshal(ev)
		payload, _ := json.Marshal(map[string][]byte{"bytes": raw}) // base64, as Bedrock sends it
		var h eventstream.Headers
		h.Set(":message-type", eventstream.StringValue("event"))
		h.Set(":event-type", eventstream.StringValue("chunk"))
		h.Set(":content-type", eventstream.StringValue("application/json"))
		if enc.Encode(w, eventstream.Message{Headers: h, Payload: payload}) == nil && f != nil {
			f.Flush()
		}
	}
}

// AnthropicBlocks returns the content blocks of an Anthropic (or Bedrock
// Anthropic) wire message, each as a map; a string content is one text
// block.
func AnthropicBlocks(msg map[string]any) []map[string]any {
	if s, ok := msg["content"].(string); ok {
		return []map[string]any{{"type": "text", "text": s}}
	}
	return objects(msg["content"])
}
