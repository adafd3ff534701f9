// Package runtime wires a run together: the registries of prompts, tactics,
// context managers, tools and providers; YAML config loading; the model
// providers (langchaingo adapters, mock, replay); and the conversation
// service.
//
// The package is being built; see the project's issues.
package runtime
