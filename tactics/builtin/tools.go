package builtin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lllm-go/lllm/dialog"
)

// toolset holds the tools the react tactic may offer, by name.
var toolset = struct {
	sync.RWMutex
	m map[string]*dialog.Function
}{m: map[string]*dialog.Function{}}

// RegisterTool makes f available to the react tactic under f.Name. It
// panics when f is nil or its name is taken, which are programming errors
// of init code.
func RegisterTool(f *dialog.Function) {
	toolset.Lock()
	defer toolset.Unlock()
	switch {
	case f == nil:
		panic("builtin: RegisterTool with a nil function")
	case toolset.m[f.Name] != nil:
		panic("builtin: RegisterTool called twice for " + f.Name)
	}
	toolset.m[f.Name] = f
}

// ToolNames lists the registered tools, sorted.
func ToolNames() []string {
	toolset.RLock()
	defer toolset.RUnlock()
	return toolNamesLocked()
}

// toolNamesLocked is ToolNames for a caller holding toolset's lock.
func toolNamesLocked() []string {
	names := make([]string, 0, len(toolset.m))
	for n := range toolset.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// lookupTools returns the registered tools named, in order; an unknown
// name is an error listing the registered ones.
func lookupTools(names []string) ([]*dialog.Function, error) {
	toolset.RLock()
	defer toolset.RUnlock()
	fns := make([]*dialog.Function, 0, len(names))
	for _, n := range names {
		f := toolset.m[n]
		if f == nil {
			return nil, fmt.Errorf("unknown tool %q (available: %s)", n, strings.Join(toolNamesLocked(), ", "))
		}
		fns = append(fns, f)
	}
	return fns, nil
}

type calculatorArgs struct {
	Expression string `json:"expression" jsonschema:"an arithmetic expression with numbers, + - * / and parentheses, such as (2+3)*4"`
}

type textArgs struct {
	Text string `json:"text" jsonschema:"the text"`
}

func init() {
	calc, err := dialog.NewFunction("calculator", "Evaluates an arithmetic expression with + - * / and parentheses.",
		func(_ context.Context, in calculatorArgs) (string, error) {
			v, err := calculate(in.Expression)
			if err != nil {
				return "", err
			}
			return strconv.FormatFloat(v, 'g', -1, 64), nil
		})
	must(calc, err)
	wc, err := dialog.NewFunction("word_count", "Counts the words of a text (runs of non-space characters).",
		func(_ context.Context, in textArgs) (int, error) { return len(strings.Fields(in.Text)), nil })
	must(wc, err)
	echo, err := dialog.NewFunction("echo", "Returns the text it is given.",
		func(_ context.Context, in textArgs) (string, error) { return in.Text, nil })
	must(echo, err)
}

func must(f *dialog.Function, err error) {
	if err != nil {
		panic(err)
	}
	RegisterTool(f)
}
