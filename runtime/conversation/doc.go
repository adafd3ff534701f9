// Package conversation keeps persistent agent conversations: one
// conversation per (agent, sender) pair, created on first reference,
// stored append-only under a data directory and restored on restart.
//
// A Store holds the conversations and their files. Each conversation is
// a JSON-lines log (see docs/conversations.md for the format) with the
// durability rules of the run log: whole records written in one write,
// a partial write truncated back, a torn last line tolerated on read,
// and no file created before the first real write. Compaction summarises
// the live history with a model call and moves it into an archive file,
// written and synced before the marker record that points at it; only
// the live part after the last marker is loaded into memory.
//
// A Service runs agents over a Store: the primary agent of a
// conversation answers with its tools (recall, ask_user and its
// configured ones), a guest agent answers text-only with its own system
// prompt, guest replies are wrapped in <from agent="NAME"> tags in the
// requests the model receives, and framing messages are injected for
// the run only. The questions a run asks with ask_user and their answers,
// and how a run that stored no reply ended, are stored too (ask and abort
// records), and every later request shows them in their place (see
// BuildRequest). A Store also deletes conversations, into a trash folder
// of its data directory, and searches their messages. The runtime/server
// package serves a Service over HTTP.
package conversation
