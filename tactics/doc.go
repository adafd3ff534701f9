// Package tactics holds the Tactic interface and registry, the Agent with its
// aliased dialogs and model-call loop, the built-in tactics, and the sweep
// runner.
//
// The package is being built; see the project's issues.
package tactics
