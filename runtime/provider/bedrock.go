package provider

// Bedrock: the model over the AWS SDK, the SDK middlewares that edit its
// requests before they are signed and keep its replies whole, and the tap
// that reads its streams.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/bedrock"
)

func openBedrock(_ context.Context, model string, cfg Config) (Model, error) {
	base := baseURL(cfg)
	if base != "" {
		if err := checkURL(base, "base URL"); err != nil {
			return nil, err
		}
	}
	build := func(ctx context.Context) (llms.Model, error) {
		opts := []func(*config.LoadOptions) error{
			config.WithRetryMaxAttempts(1), // the agent retries, not the SDK
			// The SDK's warnings (falling back to IMDSv1, ...) would go
			// to stderr between the CLI's lines; failures come back as errors.
			config.WithLogger(logging.Nop{}),
		}
		if cfg.Region != "" {
			opts = append(opts, config.WithRegion(cfg.Region))
		}
		awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("loading the AWS config: %w", err)
		}
		// The SDK builds its own client, with what the AWS config asks
		// of it (a CA bundle from AWS_CA_BUNDLE, which it cannot add to
		// any other client); ours goes over its transport.
		hc := cfg.HTTPClient
		if bc, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok && hc == nil {
			hc = &http.Client{Transport: bc.GetTransport(), Timeout: bc.GetTimeout()}
		}
		awsCfg.HTTPClient = wrapClient(hc, &transport{signed: true})
		rt := bedrockruntime.NewFromConfig(awsCfg, func(o *bedrockruntime.Options) {
			if base != "" {
				o.BaseEndpoint = &base
			}
			o.APIOptions = append(o.APIOptions, bedrockEdits, bedrockStopReason)
		})
		return bedrock.New(bedrock.WithClient(rt), bedrock.WithModel(model))
	}
	return NewAdapter(&lazyLLM{build: build}, AdapterConfig{Provider: "bedrock", Model: model, Prices: cfg.Prices,
		KeyHint: "the AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE) and the region"}), nil
}

// bedrockEdits applies the call's body edits to the JSON body of an
// InvokeModel request for an Anthropic model, and puts back the thinking
// blocks of earlier replies, before the SDK signs it. Other model families
// have other bodies, and are sent as langchaingo builds them.
func bedrockEdits(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("lllmBodyEdits",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			st := callStateFrom(ctx)
			if st == nil || len(st.edits) == 0 && len(st.thinking) == 0 {
				return next.HandleInitialize(ctx, in)
			}
			edit := func(model *string, body []byte) ([]byte, error) {
				if model == nil || !bedrockEditable(*model) {
					return body, nil
				}
				body, err := editJSON(body, st.edits)
				if err != nil || len(st.thinking) == 0 {
					return body, err
				}
				if body, err = insertBedrockThinking(body, st.thinking); err != nil {
					return nil, fmt.Errorf("sending the thinking blocks back: %w", err)
				}
				return body, nil
			}
			var err error
			switch p := in.Parameters.(type) {
			case *bedrockruntime.InvokeModelInput:
				c := *p
				c.Body, err = edit(c.ModelId, c.Body)
				in.Parameters = &c
			case *bedrockruntime.InvokeModelWithResponseStreamInput:
				c := *p
				c.Body, err = edit(c.ModelId, c.Body)
				in.Parameters = &c
			}
			if err != nil {
				return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("provider: editing the request body: %w", err)
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// bedrockEditable reports whether the body of a request to the Bedrock
// model is edited: an Anthropic model's, which has Anthropic's shape.
func bedrockEditable(model string) bool { return strings.Contains(model, "anthropic") }

// bedrockStopReason keeps what langchaingo drops of an Anthropic model's
// reply. Given a reply that stopped for any reason but the end of its
// turn, a stop sequence or a tool call (max_tokens, for one), langchaingo
// returns an error and loses the text: this reads the reason into the
// call's state, for the adapter's FinishReason, and hands langchaingo the
// reply as if the turn had ended. And it reads the reply's thinking
// blocks, which langchaingo skips, into the call's state.
func bedrockStopReason(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("lllmStopReason",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			res, ok := out.Result.(*bedrockruntime.InvokeModelOutput)
			st := callStateFrom(ctx)
			if err != nil || !ok || st == nil {
				return out, md, err
			}
			var reply struct {
				Type       string `json:"type"`
				StopReason string `json:"stop_reason"`
			}
			if json.Unmarshal(res.Body, &reply) != nil || reply.Type != "message" {
				return out, md, nil // not an Anthropic model's reply
			}
			if bytes.Contains(res.Body, []byte(`thinking"`)) {
				var r struct {
					Content []json.RawMessage `json:"content"`
				}
				if json.Unmarshal(res.Body, &r) == nil {
					if reasoning := thinkingOf(r.Content); reasoning != nil {
						st.setWire(func(w *wireReply) { w.reasoning = reasoning })
					}
				}
			}
			switch reply.StopReason {
			case "", "end_turn", "stop_sequence", "tool_use":
				return out, md, nil
			}
			body, err := editJSON(res.Body, []edit{{path: []string{"stop_reason"}, value: []byte(`"end_turn"`)}})
			if err != nil {
				return out, md, nil
			}
			c := *res
			c.Body = body
			out.Result = &c
			st.setWire(func(w *wireReply) { w.finish = reply.StopReason })
			return out, md, nil
		}), middleware.Before) // outermost: the result is decoded by then
}

// bedrockStreamTap reads a Bedrock response stream, AWS event stream
// frames, as the SDK reads it. An Anthropic model's "chunk" events carry
// the messages API's events: their thinking blocks are noted as an
// Anthropic stream's are (see thinkingTap), which langchaingo's Bedrock
// client drops, and their text and thinking are queued for the streaming
// function in order (see callState.tapped), as the client hands it the
// text alone. (langchaingo streams Anthropic models only; another's
// stream, without message_start, would be left to the client.)
type bedrockStreamTap struct {
	io.ReadCloser
	events thinkingTap
	frame  []byte // the frame being read
	dec    *eventstream.Decoder
	once   sync.Once
	// started is set by an Anthropic model's first event, message_start.
	started bool
}

func newBedrockStreamTap(rc io.ReadCloser, st *callState) *bedrockStreamTap {
	return &bedrockStreamTap{ReadCloser: rc, events: thinkingTap{st: st, queue: true}, dec: eventstream.NewDecoder()}
}

func (t *bedrockStreamTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.frame = append(t.frame, p[:n]...)
	for len(t.frame) >= 4 {
		size := int(binary.BigEndian.Uint32(t.frame))
		if size < 16 || len(t.frame) < size {
			break // a frame's prelude and checksums take 16 bytes
		}
		t.note(t.frame[:size])
		t.frame = t.frame[:copy(t.frame, t.frame[size:])]
	}
	if err != nil {
		t.once.Do(t.events.flush)
	}
	return n, err
}

func (t *bedrockStreamTap) Close() error {
	t.once.Do(t.events.flush)
	return t.ReadCloser.Close()
}

// note notes one frame of the stream.
func (t *bedrockStreamTap) note(frame []byte) {
	msg, err := t.dec.Decode(bytes.NewReader(frame), nil)
	if err != nil {
		return
	}
	if h := msg.Headers.Get(":event-type"); h == nil || h.String() != "chunk" {
		return
	}
	var chunk struct {
		Bytes []byte `json:"bytes"` // base64 on the wire
	}
	if json.Unmarshal(msg.Payload, &chunk) != nil {
		return
	}
	if bytes.Contains(chunk.Bytes, []byte(`"message_start"`)) && !t.started {
		t.started = true
		t.events.st.tap() // an Anthropic model's stream
	}
	if t.started {
		t.events.event(chunk.Bytes)
	}
}
