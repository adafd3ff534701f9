// Package runtime is the home of what wires a run together. Its
// sub-packages: config (YAML tactic configs), prompts (prompt files by
// path) and provider (model providers: langchaingo adapters and the mock).
// The tactics and context-manager registries live with their packages
// (tactics, contextmgr).
package runtime
