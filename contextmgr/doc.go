// Package contextmgr shapes what a model sees. Before every model call an
// agent passes a working copy of its dialog through its context manager,
// which returns the messages to send; the canonical dialog and its messages
// are never changed. The working copy holds the dialog and this Respond's
// own tool rounds: the tool rounds of earlier Responds stayed in their
// working copies, and only their final replies are in the dialog.
//
// A [Manager] is built by name from an agent's configuration with [New]:
//
//	context_manager: {type: default, max_tokens: 128000}
//
// The built-in managers are:
//
//   - "default": a token budget. The budget is max_tokens, or else the
//     model's context window ([ContextWindow]); the limit is the budget less
//     a safety buffer (buffer, default 5000), or half the budget when the
//     buffer would leave less, and less what the request's tool
//     declarations cost ([Tokenizer.CountTools]). If the messages fit they
//     are sent unchanged. Otherwise the first (system) message is kept,
//     then whole messages from the newest backwards while they fit; the
//     first one that does not fit is kept cut from the front, after
//     [TruncationMarker], if more than 50 tokens of the limit remain. The
//     newest message (with its tool call or results) is always sent,
//     whole when it cannot be cut, even over the limit: the model is never
//     sent the first message alone.
//   - "window": the first message and the last n (default 20).
//   - "summary": over the same limit as "default", the oldest messages are
//     replaced by a summary that [Input].Summarize writes, in parts that
//     each fit the limit. The manager keeps the summary and sends it again
//     on later calls while it fits, so a long loop summarises once per
//     half a limit of new messages, not on every call.
//   - "none" (also "null", or no configuration at all): no change.
//
// No manager separates a tool call from its results: a message that
// requests tool calls and the tool messages that answer it are kept or
// dropped together, and never cut. A message that is cut is a new message;
// the input is left as it was. Other managers can be added with [Register];
// their factories read their keys with [DecodeConfig].
//
// # Differences from the reference
//
// The Python reference took the context window from the model's output
// limit, fell back to 4096 tokens for unknown models (below its own
// 5000-token buffer, so everything was cut), counted images as base64 text,
// could split a tool call from its results, and re-counted every message on
// every call. Here the window comes from a table of input context windows
// with a 128000-token fallback, images cost what OpenAI charges for them
// ([ImageTokens]), tool calls stay whole, and counts are memoised.
//
// # Counting tokens
//
// A [Tokenizer] counts with tiktoken, offline (the BPE files are embedded),
// and builds each encoding once per process. [EncodingFor] picks the
// encoding for a model; models that are not OpenAI's are counted with
// o200k_base as an approximation. Because messages are immutable and shared
// between a dialog and its forks, a Tokenizer remembers each message's count
// by pointer, holding the message weakly: a long agent loop that counts its
// whole dialog before every call tokenizes each message once. Share one
// Tokenizer per agent (or per process) through [Input].Tokens.
package contextmgr
