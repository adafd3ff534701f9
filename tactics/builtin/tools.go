package builtin

import (
	"context"
	"strconv"
	"strings"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/tactics"
)

// RegisterTool makes f available to the react tactic, and to prompt files,
// under f.Name; it is [tactics.RegisterTool]. It panics when f is nil or its
// name is taken, which are programming errors of init code.
//
// Deprecated: use [tactics.RegisterTool], the one tool registry.
func RegisterTool(f *dialog.Function) { tactics.RegisterTool(f) }

// ToolNames lists the registered tools, sorted; it is [tactics.ToolNames].
//
// Deprecated: use [tactics.ToolNames].
func ToolNames() []string { return tactics.ToolNames() }

// lookupTools returns the registered tools named, in order; an unknown
// name is an error listing the registered ones.
func lookupTools(names []string) ([]*dialog.Function, error) {
	fns := make([]*dialog.Function, 0, len(names))
	for _, n := range names {
		f, err := tactics.LookupTool(n)
		if err != nil {
			return nil, err
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
	register(calc, err)
	wc, err := dialog.NewFunction("word_count", "Counts the words of a text (runs of non-space characters).",
		func(_ context.Context, in textArgs) (int, error) { return len(strings.Fields(in.Text)), nil })
	register(wc, err)
	echo, err := dialog.NewFunction("echo", "Returns the text it is given.",
		func(_ context.Context, in textArgs) (string, error) { return in.Text, nil })
	register(echo, err)
}

// register registers f, the tool dialog.NewFunction made with err, which
// must be nil.
func register(f *dialog.Function, err error) {
	if err != nil {
		panic(err)
	}
	tactics.RegisterTool(f)
}
