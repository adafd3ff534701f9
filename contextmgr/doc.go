// Package contextmgr shapes what a model sees: before every model call an
// agent passes a working copy of its dialog through its context manager
// (a token budget, a window, compaction), and the canonical dialog is never
// changed. It also holds the shared tokenizer that counts each message once.
//
// The package is being built; see the project's issues.
package contextmgr
