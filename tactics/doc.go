// Package tactics runs agents: the [Agent] with its aliased dialogs and
// model-call loop, the [Tactic] interface and its registry, and the runner
// that builds a tactic and its agents from a YAML config and logs the run.
//
// An Agent opens dialogs under aliases ([Agent.Open], [Agent.Fork],
// [Agent.Switch]), puts prompts, text and images into them
// ([Agent.ReceivePrompt], [Agent.Receive], [Agent.ReceiveImage]) and asks
// its model ([Agent.Respond], [Agent.RespondTo]). Respond answers on a
// working fork per attempt, passes it through the agent's context manager,
// retries parse errors with the exception prompt, runs tool rounds up to
// Limits.MaxInterruptSteps (each tool call within Limits.ToolTimeout), and
// retries rate limits and transient errors with backoff ([Limits]); every
// call, retry, tool call and context-manager action goes to the agent's
// [Log].
//
// A tactic is a Go type that drives agents ([Tactic]); register a factory
// with [Register] and name it in a config's tactic_type. [Run] and [Batch]
// load the config's agents and run a tactic on one task or many, each run
// with its own log; [Session] is what a tactic's Call gets: its agents,
// its calls and cost, the config's prompt files ([Session.Prompt]), and
// [Session.Sub] to call another tactic. [DecodeParams] reads a factory's
// params. Tools are
// registered by name with [RegisterTool] for prompts and configs to offer.
//
// The built-in tactics (chat, react, best_of_n, debate, self_refine) live
// in package tactics/builtin; sweeps over configs and datasets in package
// sweep.
package tactics
