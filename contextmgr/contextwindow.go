package contextmgr

import "strings"

// DefaultContextWindow is the context window assumed for a model that
// [ContextWindow] does not know. It is a common size for current models and
// well above the default safety buffer. (The reference fell back to 4096,
// below its own 5000-token buffer, so every message was cut.)
const DefaultContextWindow = 128000

// contextWindows maps model name prefixes to context windows in tokens: the
// input a model accepts, not its output limit. The longest matching prefix
// wins.
var contextWindows = []struct {
	prefix string
	tokens int
}{
	// GPT-5's 400k window holds its output too: it takes at most 272k
	// tokens of input and refuses more ("Input tokens exceed the
	// configured limit of 272,000 tokens"). gpt-5-chat takes 128k.
	{"gpt-5", 272000},
	{"gpt-5-chat", 128000},
	{"gpt-4.1", 1047576},
	{"gpt-4.5", 128000},
	{"gpt-4o", 128000},
	{"chatgpt-4o", 128000},
	{"gpt-4-turbo", 128000},
	{"gpt-4-1106", 128000},
	{"gpt-4-0125", 128000},
	{"gpt-4-32k", 32768},
	{"gpt-4", 8192},
	{"gpt-3.5-turbo", 16385},
	{"gpt-35-turbo", 16385},
	{"gpt-oss", 131072},
	{"o1-mini", 128000},
	{"o1-preview", 128000},
	{"claude", 200000},
	{"gemini-1.5", 1048576},
	{"gemini-2", 1048576},
}

// openWindows maps open-model families, found anywhere in the name (as in
// "meta-llama/Llama-3.1-8B-Instruct" or "llama3.1:8b"), to context windows.
var openWindows = []struct {
	family string
	tokens int
}{
	{"llama3.1", 131072}, {"llama-3.1", 131072},
	{"llama3.2", 131072}, {"llama-3.2", 131072},
	{"llama3.3", 131072}, {"llama-3.3", 131072},
	{"mistral", 32768},
}

// ContextWindow returns the context window of model ("provider/model" or a
// bare name) in tokens, and whether the model is known. Known models:
//
//	gpt-5* (not gpt-5-chat, 128000)      272000 (of 400000, less its 128000 output)
//	gpt-4.1*                            1047576
//	gpt-4o*, gpt-4.5*, gpt-4-turbo       128000
//	gpt-4 (8k), gpt-4-32k, gpt-3.5-turbo 8192, 32768, 16385
//	o-series (o1, o3, o4-mini, ...)      200000 (o1-mini, o1-preview 128000)
//	claude-*                             200000
//	gemini-1.5*, gemini-2*              1048576
//	gpt-oss, llama 3.1 / 3.2 / 3.3       131072
//	mistral*                              32768
//
// For any other model it returns [DefaultContextWindow] and false.
func ContextWindow(model string) (tokens int, known bool) {
	name := modelName(model)
	if i := strings.Index(name, "anthropic."); i >= 0 { // Bedrock: "[region.]anthropic.claude-..."
		name = name[i+len("anthropic."):]
	}
	best := 0
	for _, w := range contextWindows {
		if strings.HasPrefix(name, w.prefix) && len(w.prefix) > best {
			best, tokens = len(w.prefix), w.tokens
		}
	}
	if best > 0 {
		return tokens, true
	}
	if isOSeries(name) {
		return 200000, true
	}
	for _, w := range openWindows {
		if strings.Contains(name, w.family) {
			return w.tokens, true
		}
	}
	return DefaultContextWindow, false
}
