package tactics

import (
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/internal/registry"
)

// tools holds the tools that configs may name, by name: in a prompt file's
// front matter and in tactic params (react's tools).
var tools = registry.New[*dialog.Function]("tool", "tools", nil)

// RegisterTool makes f available under f.Name to prompt files (their
// front matter's tools list) and to tactics that look tools up by name.
// It panics when f is nil or its name is taken, which are programming
// errors of init code.
func RegisterTool(f *dialog.Function) {
	if f == nil {
		panic("tactics: RegisterTool with a nil function")
	}
	tools.MustRegister(f.Name, f)
}

// ToolNames lists the registered tools, sorted.
func ToolNames() []string { return tools.Names() }

// LookupTool returns the tool registered under name. An unknown name is an
// error listing the registered tools, with a suggestion when one is close.
func LookupTool(name string) (*dialog.Function, error) {
	f, _, err := tools.Lookup(name)
	return f, err
}
