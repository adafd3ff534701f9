package replay

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
)

// toolServer answers a replay's tool calls with the results the recording
// holds, so that a tool whose result depends on the world (the time, the
// network, a file) gives what it gave, and its side effects do not happen
// again. Each recorded call its tool ran serves once, to the first call
// of the same agent, tool and arguments, in log order. A call the
// recording does not hold (the tactic or a --set changed what the tools
// are asked) runs its tool.
type toolServer struct {
	mu     sync.Mutex
	calls  []*logs.ToolCall // in log order; nil once served
	served int
	ran    int
}

func newToolServer(rec *Recording) *toolServer {
	var calls []*logs.ToolCall
	for _, c := range rec.ToolCalls() {
		if !c.Repeated && RanTool(c) {
			calls = append(calls, c)
		}
	}
	return &toolServer{calls: calls}
}

// callTool returns t's tactics.Agent.CallTool; nil (the tools run) for a
// nil t.
func (t *toolServer) callTool() func(context.Context, string, *dialog.Function, dialog.FunctionCall) dialog.FunctionCall {
	if t == nil {
		return nil
	}
	return t.call
}

// call is tactics.Agent.CallTool.
func (t *toolServer) call(ctx context.Context, agent string, f *dialog.Function, fc dialog.FunctionCall) dialog.FunctionCall {
	t.mu.Lock()
	for i, c := range t.calls {
		if c == nil || c.Agent != agent || c.Name != fc.Name || !sameArguments(c.Arguments, fc.Arguments) {
			continue
		}
		t.calls[i] = nil
		t.served++
		t.mu.Unlock()
		fc.Result, fc.Error = c.Result, c.Error
		return fc
	}
	t.ran++
	t.mu.Unlock()
	return f.Call(ctx, fc)
}

// counts returns how many tool calls were served from the recording and
// how many ran their tool.
func (t *toolServer) counts() (served, ran int) {
	if t == nil {
		return 0, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.served, t.ran
}

// RanTool reports whether c records a call its tool ran, rather than one
// the call loop answered itself (tools withdrawn, an unknown tool).
func RanTool(c *logs.ToolCall) bool {
	return c.Error != "no tools are available now" && !strings.HasPrefix(c.Error, "unknown function ")
}

// sameArguments reports whether a and b are the same JSON arguments,
// whatever their spacing and key order.
func sameArguments(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(va, vb)
}
