package logs

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/jsontext"
)

// This file encodes records by hand, byte for byte as encoding/json's
// Encoder with SetEscapeHTML(false) does, without reflection. The append
// functions below return the buffer they were given plus what they wrote;
// on error what they return is garbage and encodeRecord drops it.

// encodeRecord appends rec as one line of JSON (ending in '\n'), byte for
// byte what encoding/json's Encoder with SetEscapeHTML(false) writes.
// On error it returns b unchanged (same length) and the error.
func encodeRecord(b []byte, rec *Record) ([]byte, error) {
	if rec == nil {
		return append(b, "null\n"...), nil
	}
	out, err := appendRecordJSON(b, rec)
	if err != nil {
		return b, err
	}
	return append(out, '\n'), nil
}

// encodable reports whether rec is sure to encode, so that Write may leave
// its encoding to the flush: it carries only the payloads of dialogs and
// of model, tool and context calls, every float in them finite and every
// raw JSON value valid, the only ways those payloads can fail. The rarer
// records, and any in doubt, are encoded by Write, which refuses them if
// they fail.
func encodable(r *Record) bool {
	if r.RunStart != nil || r.RunEnd != nil || r.TacticStart != nil || r.TacticEnd != nil || r.Declarations != nil {
		return false
	}
	if m := r.Message; m != nil {
		if len(m.Logprobs) > 0 || !finite(m.USD) || !validRaw(m.Parsed) {
			return false
		}
		for i := range m.FunctionCalls {
			if !validRaw(m.FunctionCalls[i].Arguments) {
				return false
			}
		}
		for _, f := range m.Vectors {
			if !finite(f) {
				return false
			}
		}
	}
	if c := r.ModelCall; c != nil {
		if !validRaw(c.Params) || !finite(c.USD) || !finite(c.LatencyMS) || c.Error != nil && !finite(c.Error.RetryAfterMS) {
			return false
		}
	}
	if c := r.ToolCall; c != nil && (!validRaw(c.Arguments) || !finite(c.LatencyMS)) {
		return false
	}
	return true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func validRaw(raw json.RawMessage) bool { return len(raw) == 0 || json.Valid(raw) }

func appendRecordJSON(b []byte, r *Record) (_ []byte, err error) {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"ts":`...)
	if b, err = appendTime(b, r.Time); err != nil {
		return b, err
	}
	b = append(b, `,"kind":`...)
	b = jsontext.AppendString(b, string(r.Kind))
	if r.Dialog != "" {
		b = append(b, `,"dialog":`...)
		b = jsontext.AppendString(b, r.Dialog)
	}
	if r.Index != 0 {
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(r.Index), 10)
	}
	if r.Prompt != "" {
		b = append(b, `,"prompt":`...)
		b = jsontext.AppendString(b, r.Prompt)
	}
	// Every payload that is set is written, whatever the kind, as
	// encoding/json would. The rare kinds go through encoding/json.
	if r.RunStart != nil {
		b = append(b, `,"run_start":`...)
		if b, err = appendEncodingJSON(b, r.RunStart); err != nil {
			return b, err
		}
	}
	if r.RunEnd != nil {
		b = append(b, `,"run_end":`...)
		if b, err = appendEncodingJSON(b, r.RunEnd); err != nil {
			return b, err
		}
	}
	if r.DialogOpen != nil {
		b = append(b, `,"dialog_open":`...)
		b = appendTreeNode(b, r.DialogOpen)
	}
	if r.Fork != nil {
		b = append(b, `,"fork":`...)
		b = appendTreeNode(b, r.Fork)
	}
	if r.Message != nil {
		b = append(b, `,"message":`...)
		if b, err = appendMessage(b, r.Message); err != nil {
			return b, err
		}
	}
	if r.ModelCall != nil {
		b = append(b, `,"model_call":`...)
		if b, err = appendModelCall(b, r.ModelCall); err != nil {
			return b, err
		}
	}
	if r.ToolCall != nil {
		b = append(b, `,"tool_call":`...)
		if b, err = appendToolCall(b, r.ToolCall); err != nil {
			return b, err
		}
	}
	if r.Context != nil {
		b = append(b, `,"context":`...)
		b = appendContextAction(b, r.Context)
	}
	if r.TacticStart != nil {
		b = append(b, `,"tactic_start":`...)
		if b, err = appendEncodingJSON(b, r.TacticStart); err != nil {
			return b, err
		}
	}
	if r.TacticEnd != nil {
		b = append(b, `,"tactic_end":`...)
		if b, err = appendEncodingJSON(b, r.TacticEnd); err != nil {
			return b, err
		}
	}
	if r.Declarations != nil {
		b = append(b, `,"declarations":`...)
		if b, err = appendEncodingJSON(b, r.Declarations); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendEncodingJSON appends v as encoding/json encodes it, for the
// payloads not worth encoding by hand.
func appendEncodingJSON(b []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	out := buf.Bytes()
	if !utf8.Valid(out[len(b):]) { // a raw value's invalid UTF-8
		out = append(out[:len(b):len(b)], bytes.ToValidUTF8(out[len(b):], []byte("\ufffd"))...)
	}
	return out[:len(out)-1], nil // drop Encode's newline
}

func appendTreeNode(b []byte, n *dialog.TreeNode) []byte {
	b = append(b, `{"id":`...)
	b = jsontext.AppendString(b, n.ID)
	b = append(b, `,"owner":`...)
	b = jsontext.AppendString(b, n.Owner)
	if n.Alias != "" {
		b = append(b, `,"alias":`...)
		b = jsontext.AppendString(b, n.Alias)
	}
	if n.ParentID != "" {
		b = append(b, `,"parent_id":`...)
		b = jsontext.AppendString(b, n.ParentID)
	}
	b = append(b, `,"split_point":`...)
	b = strconv.AppendInt(b, int64(n.SplitPoint), 10)
	b = append(b, `,"last_n":`...)
	b = strconv.AppendInt(b, int64(n.LastN), 10)
	b = append(b, `,"first_k":`...)
	b = strconv.AppendInt(b, int64(n.FirstK), 10)
	b = append(b, `,"parent_len":`...)
	b = strconv.AppendInt(b, int64(n.ParentLen), 10)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(n.Depth), 10)
	if len(n.ChildrenIDs) > 0 {
		b = append(b, `,"children_ids":[`...)
		for i, id := range n.ChildrenIDs {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsontext.AppendString(b, id)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendMessage(b []byte, m *dialog.Message) (_ []byte, err error) {
	b = append(b, `{"role":`...)
	b = jsontext.AppendString(b, string(m.Role))
	if m.Content != "" {
		b = append(b, `,"content":`...)
		b = jsontext.AppendString(b, m.Content)
	}
	if len(m.Parts) > 0 {
		b = append(b, `,"parts":[`...)
		for i := range m.Parts {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPart(b, &m.Parts[i])
		}
		b = append(b, ']')
	}
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = jsontext.AppendString(b, m.Name)
	}
	if m.Agent != "" {
		b = append(b, `,"agent":`...)
		b = jsontext.AppendString(b, m.Agent)
	}
	if m.Modality != "" {
		b = append(b, `,"modality":`...)
		b = jsontext.AppendString(b, string(m.Modality))
	}
	if len(m.FunctionCalls) > 0 {
		b = append(b, `,"function_calls":[`...)
		for i := range m.FunctionCalls {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendFunctionCall(b, &m.FunctionCalls[i]); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	if len(m.Reasoning) > 0 {
		b = append(b, `,"reasoning":[`...)
		for i := range m.Reasoning {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendReasoning(b, &m.Reasoning[i])
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = jsontext.AppendString(b, m.ToolCallID)
	}
	if len(m.Parsed) > 0 {
		b = append(b, `,"parsed":`...)
		if b, err = appendRawMessage(b, m.Parsed); err != nil {
			return b, err
		}
	}
	if m.Usage != (dialog.Usage{}) {
		b = append(b, `,"usage":`...)
		b = appendUsage(b, &m.Usage)
	}
	// omitzero omits what reflect.Value.IsZero reports as zero,
	// which for a float is f == 0: -0 too.
	if m.USD != 0 {
		b = append(b, `,"usd":`...)
		if b, err = jsontext.AppendFloat(b, m.USD); err != nil {
			return b, err
		}
	}
	if m.Model != "" {
		b = append(b, `,"model":`...)
		b = jsontext.AppendString(b, m.Model)
	}
	if len(m.Logprobs) > 0 {
		b = append(b, `,"logprobs":`...)
		if b, err = appendLogprobs(b, m.Logprobs, 0); err != nil {
			return b, err
		}
	}
	if len(m.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		b = appendStringMap(b, m.Metadata)
	}
	if m.APIType != "" {
		b = append(b, `,"api_type":`...)
		b = jsontext.AppendString(b, string(m.APIType))
	}
	if len(m.Vectors) > 0 {
		b = append(b, `,"vectors":[`...)
		for i, f := range m.Vectors {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = jsontext.AppendFloat(b, f); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendReasoning appends r, as appendImage an image.
func appendReasoning(b []byte, r *dialog.Reasoning) []byte {
	start := len(b)
	if r.Text != "" {
		b = append(b, `,"text":`...)
		b = jsontext.AppendString(b, r.Text)
	}
	if r.Signature != "" {
		b = append(b, `,"signature":`...)
		b = jsontext.AppendString(b, r.Signature)
	}
	if r.Redacted != "" {
		b = append(b, `,"redacted":`...)
		b = jsontext.AppendString(b, r.Redacted)
	}
	if r.Call != "" {
		b = append(b, `,"call":`...)
		b = jsontext.AppendString(b, r.Call)
	}
	return closeObject(b, start)
}

func appendPart(b []byte, p *dialog.Part) []byte {
	b = append(b, `{"type":`...)
	b = jsontext.AppendString(b, string(p.Type))
	if p.Text != "" {
		b = append(b, `,"text":`...)
		b = jsontext.AppendString(b, p.Text)
	}
	if p.Image != nil {
		b = append(b, `,"image":`...)
		b = appendImage(b, p.Image)
	}
	return append(b, '}')
}

// appendImage appends img. Its fields are all optional: each is written
// with a leading comma, and the first comma becomes the opening brace.
func appendImage(b []byte, img *dialog.Image) []byte {
	start := len(b)
	if img.MIME != "" {
		b = append(b, `,"mime":`...)
		b = jsontext.AppendString(b, img.MIME)
	}
	if len(img.Data) > 0 {
		b = append(b, `,"data":"`...)
		b = base64.StdEncoding.AppendEncode(b, img.Data)
		b = append(b, '"')
	}
	if img.URL != "" {
		b = append(b, `,"url":`...)
		b = jsontext.AppendString(b, img.URL)
	}
	return closeObject(b, start)
}

// closeObject ends an object whose fields were each written with a leading
// comma from b[start:] on.
func closeObject(b []byte, start int) []byte {
	if len(b) == start {
		return append(b, "{}"...)
	}
	b[start] = '{'
	return append(b, '}')
}

func appendFunctionCall(b []byte, fc *dialog.FunctionCall) (_ []byte, err error) {
	b = append(b, `{"id":`...)
	b = jsontext.AppendString(b, fc.ID)
	b = append(b, `,"name":`...)
	b = jsontext.AppendString(b, fc.Name)
	if len(fc.Arguments) > 0 {
		b = append(b, `,"arguments":`...)
		if b, err = appendRawMessage(b, fc.Arguments); err != nil {
			return b, err
		}
	}
	if fc.Result != "" {
		b = append(b, `,"result":`...)
		b = jsontext.AppendString(b, fc.Result)
	}
	if fc.Error != "" {
		b = append(b, `,"error":`...)
		b = jsontext.AppendString(b, fc.Error)
	}
	return append(b, '}'), nil
}

// maxLogprobDepth bounds the recursion of appendLogprobs. Deeper (or
// cyclic) lists go to encoding/json, which detects cycles.
const maxLogprobDepth = 32

func appendLogprobs(b []byte, lps []dialog.TokenLogprob, depth int) (_ []byte, err error) {
	if depth >= maxLogprobDepth {
		return appendEncodingJSON(b, lps)
	}
	b = append(b, '[')
	for i := range lps {
		lp := &lps[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"token":`...)
		b = jsontext.AppendString(b, lp.Token)
		b = append(b, `,"logprob":`...)
		if b, err = jsontext.AppendFloat(b, lp.Logprob); err != nil {
			return b, err
		}
		if len(lp.Bytes) > 0 {
			b = append(b, `,"bytes":[`...)
			for j, n := range lp.Bytes {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(n), 10)
			}
			b = append(b, ']')
		}
		if len(lp.TopLogprobs) > 0 {
			b = append(b, `,"top_logprobs":`...)
			if b, err = appendLogprobs(b, lp.TopLogprobs, depth+1); err != nil {
				return b, err
			}
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// appendUsage appends u, whose fields are all optional, like appendImage.
func appendUsage(b []byte, u *dialog.Usage) []byte {
	start := len(b)
	if u.InputTokens != 0 {
		b = append(b, `,"input_tokens":`...)
		b = strconv.AppendInt(b, int64(u.InputTokens), 10)
	}
	if u.CachedInputTokens != 0 {
		b = append(b, `,"cached_input_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CachedInputTokens), 10)
	}
	if u.CacheWriteTokens != 0 {
		b = append(b, `,"cache_write_tokens":`...)
		b = strconv.AppendInt(b, int64(u.CacheWriteTokens), 10)
	}
	if u.OutputTokens != 0 {
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, int64(u.OutputTokens), 10)
	}
	if u.ReasoningTokens != 0 {
		b = append(b, `,"reasoning_tokens":`...)
		b = strconv.AppendInt(b, int64(u.ReasoningTokens), 10)
	}
	return closeObject(b, start)
}

// appendStringMap appends m with its keys sorted, as encoding/json does.
func appendStringMap(b []byte, m map[string]string) []byte {
	type kv struct{ k, v string }
	var buf [16]kv // enough for most maps without allocating
	kvs := buf[:0]
	for k, v := range m {
		kvs = append(kvs, kv{k, v})
	}
	slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	b = append(b, '{')
	for i := range kvs {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, kvs[i].k)
		b = append(b, ':')
		b = jsontext.AppendString(b, kvs[i].v)
	}
	return append(b, '}')
}

func appendModelCall(b []byte, c *ModelCall) (_ []byte, err error) {
	b = append(b, `{"agent":`...)
	b = jsontext.AppendString(b, c.Agent)
	if c.Provider != "" {
		b = append(b, `,"provider":`...)
		b = jsontext.AppendString(b, c.Provider)
	}
	b = append(b, `,"model":`...)
	b = jsontext.AppendString(b, c.Model)
	b = append(b, `,"call":`...)
	b = strconv.AppendInt(b, int64(c.Call), 10)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(c.Attempt), 10)
	if c.Alias != "" {
		b = append(b, `,"alias":`...)
		b = jsontext.AppendString(b, c.Alias)
	}
	if c.Turn != 0 {
		b = append(b, `,"turn":`...)
		b = strconv.AppendInt(b, int64(c.Turn), 10)
	}
	b = append(b, `,"request_digest":`...)
	b = jsontext.AppendString(b, c.RequestDigest)
	if len(c.Params) > 0 {
		b = append(b, `,"params":`...)
		if b, err = appendRawMessage(b, c.Params); err != nil {
			return b, err
		}
	}
	if len(c.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range c.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsontext.AppendString(b, t)
		}
		b = append(b, ']')
	}
	if c.Declarations != "" {
		b = append(b, `,"declarations":`...)
		b = jsontext.AppendString(b, c.Declarations)
	}
	if c.Reply != nil {
		b = append(b, `,"reply":{"dialog":`...)
		b = jsontext.AppendString(b, c.Reply.Dialog)
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(c.Reply.Index), 10)
		b = append(b, '}')
	}
	if c.Text != "" {
		b = append(b, `,"text":`...)
		b = jsontext.AppendString(b, c.Text)
	}
	if c.FinishReason != "" {
		b = append(b, `,"finish_reason":`...)
		b = jsontext.AppendString(b, c.FinishReason)
	}
	if c.Usage != (dialog.Usage{}) {
		b = append(b, `,"usage":`...)
		b = appendUsage(b, &c.Usage)
	}
	if c.USD != 0 {
		b = append(b, `,"usd":`...)
		if b, err = jsontext.AppendFloat(b, c.USD); err != nil {
			return b, err
		}
	}
	b = append(b, `,"latency_ms":`...)
	if b, err = jsontext.AppendFloat(b, c.LatencyMS); err != nil {
		return b, err
	}
	if e := c.Error; e != nil {
		b = append(b, `,"error":{"type":`...)
		b = jsontext.AppendString(b, e.Type)
		b = append(b, `,"message":`...)
		b = jsontext.AppendString(b, e.Message)
		if e.Status != 0 {
			b = append(b, `,"status":`...)
			b = strconv.AppendInt(b, int64(e.Status), 10)
		}
		if e.RetryAfterMS != 0 {
			b = append(b, `,"retry_after_ms":`...)
			if b, err = jsontext.AppendFloat(b, e.RetryAfterMS); err != nil {
				return b, err
			}
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

func appendToolCall(b []byte, c *ToolCall) (_ []byte, err error) {
	b = append(b, `{"agent":`...)
	b = jsontext.AppendString(b, c.Agent)
	b = append(b, `,"call_id":`...)
	b = jsontext.AppendString(b, c.CallID)
	b = append(b, `,"name":`...)
	b = jsontext.AppendString(b, c.Name)
	if len(c.Arguments) > 0 {
		b = append(b, `,"arguments":`...)
		if b, err = appendRawMessage(b, c.Arguments); err != nil {
			return b, err
		}
	}
	if c.Result != "" {
		b = append(b, `,"result":`...)
		b = jsontext.AppendString(b, c.Result)
	}
	if c.Error != "" {
		b = append(b, `,"error":`...)
		b = jsontext.AppendString(b, c.Error)
	}
	if c.Repeated {
		b = append(b, `,"repeated":true`...)
	}
	b = append(b, `,"latency_ms":`...)
	if b, err = jsontext.AppendFloat(b, c.LatencyMS); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

func appendContextAction(b []byte, a *ContextAction) []byte {
	b = append(b, `{"agent":`...)
	b = jsontext.AppendString(b, a.Agent)
	b = append(b, `,"manager":`...)
	b = jsontext.AppendString(b, a.Manager)
	b = append(b, `,"action":`...)
	b = jsontext.AppendString(b, a.Action)
	b = append(b, `,"messages_before":`...)
	b = strconv.AppendInt(b, int64(a.MessagesBefore), 10)
	b = append(b, `,"messages_after":`...)
	b = strconv.AppendInt(b, int64(a.MessagesAfter), 10)
	b = append(b, `,"tokens_before":`...)
	b = strconv.AppendInt(b, int64(a.TokensBefore), 10)
	b = append(b, `,"tokens_after":`...)
	b = strconv.AppendInt(b, int64(a.TokensAfter), 10)
	if a.Note != "" {
		b = append(b, `,"note":`...)
		b = jsontext.AppendString(b, a.Note)
	}
	if a.Archived != 0 {
		b = append(b, `,"archived":`...)
		b = strconv.AppendInt(b, int64(a.Archived), 10)
	}
	if a.Summary != "" {
		b = append(b, `,"summary":`...)
		b = jsontext.AppendString(b, a.Summary)
	}
	return append(b, '}')
}

// appendRawMessage appends raw compacted, failing when it is not valid
// JSON, as encoding/json does with a non-nil RawMessage.
func appendRawMessage(b []byte, raw json.RawMessage) ([]byte, error) {
	if !utf8.Valid(raw) {
		raw = bytes.ToValidUTF8(raw, []byte("\ufffd"))
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return b, &json.MarshalerError{Type: reflect.TypeFor[json.RawMessage](), Err: err}
	}
	return buf.Bytes(), nil
}

// appendTime appends t as time.Time's MarshalJSON writes it.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		// Report the error encoding/json reports.
		if _, jerr := t.MarshalJSON(); jerr != nil {
			err = jerr
		}
		return b, &json.MarshalerError{Type: reflect.TypeFor[time.Time](), Err: err}
	}
	return append(b, '"'), nil
}
