package tactics

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/lllm-go/lllm/dialog"
)

// tools holds the tools that configs may name, by name: in a prompt file's
// front matter and in tactic params (react's tools).
var tools = struct {
	sync.RWMutex
	m map[string]*dialog.Function
}{m: map[string]*dialog.Function{}}

// RegisterTool makes f available under f.Name to prompt files (their
// front matter's tools list) and to tactics that look tools up by name.
// It panics when f is nil or its name is taken, which are programming
// errors of init code.
func RegisterTool(f *dialog.Function) {
	tools.Lock()
	defer tools.Unlock()
	switch {
	case f == nil:
		panic("tactics: RegisterTool with a nil function")
	case tools.m[f.Name] != nil:
		panic("tactics: RegisterTool called twice for " + f.Name)
	}
	tools.m[f.Name] = f
}

// ToolNames lists the registered tools, sorted.
func ToolNames() []string {
	tools.RLock()
	defer tools.RUnlock()
	names := make([]string, 0, len(tools.m))
	for n := range tools.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupTool returns the tool registered under name. An unknown name is an
// error listing the registered tools, with a suggestion when one is close.
func LookupTool(name string) (*dialog.Function, error) {
	tools.RLock()
	f := tools.m[name]
	tools.RUnlock()
	if f != nil {
		return f, nil
	}
	names := ToolNames()
	msg := fmt.Sprintf("unknown tool %q (available: %s)", name, strings.Join(names, ", "))
	if len(names) == 0 {
		msg = fmt.Sprintf("unknown tool %q: no tools are registered (register them with tactics.RegisterTool)", name)
	}
	if s := closest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return nil, fmt.Errorf("%s", msg)
}
