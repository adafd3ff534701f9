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
// network, a file, a person) gives what it gave, and its side effects do
// not happen again. Each recorded call its tool ran serves once, to the
// first call of the same agent, tool and arguments, in log order. A call
// the recording does not hold (the tactic or a --set changed what the
// tools are asked) runs its tool. Under Options.RunTools every tool runs
// but those the tactic marked with [ServeRecorded], which are still
// served.
type toolServer struct {
	runTools bool // Options.RunTools

	mu       sync.Mutex
	calls    []*logs.ToolCall // in log order; nil once served
	recorded map[*dialog.Function]bool
	served   int
	ran      int
}

func newToolServer(rec *Recording, runTools bool) *toolServer {
	var calls []*logs.ToolCall
	for _, c := range rec.ToolCalls() {
		if !c.Repeated && ranTool(c) {
			calls = append(calls, c)
		}
	}
	return &toolServer{runTools: runTools, calls: calls}
}

type toolServerKey struct{}

// ServeRecorded has the replay that ctx belongs to answer the calls of
// fns from the recording even under Options.RunTools (lllm replay
// --run-tools): they are tools that cannot run again, as ask_user, which
// would ask a person. A call of one that the recording does not hold runs
// it, as any tool. A tactic calls it from its Call, with the context it
// was given; outside a replay it does nothing.
func ServeRecorded(ctx context.Context, fns ...*dialog.Function) {
	t, _ := ctx.Value(toolServerKey{}).(*toolServer)
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.recorded == nil {
		t.recorded = map[*dialog.Function]bool{}
	}
	for _, f := range fns {
		t.recorded[f] = true
	}
}

// call is tactics.Agent.CallTool.
func (t *toolServer) call(ctx context.Context, agent string, f *dialog.Function, fc dialog.FunctionCall) dialog.FunctionCall {
	t.mu.Lock()
	if !t.runTools || t.recorded[f] {
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
	}
	t.ran++
	t.mu.Unlock()
	return f.Call(ctx, fc)
}

// counts returns how many tool calls were served from the recording and
// how many ran their tool.
func (t *toolServer) counts() (served, ran int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.served, t.ran
}

// ranTool reports whether c records a call its tool ran, rather than one
// the call loop answered itself (tools withdrawn, an unknown tool).
func ranTool(c *logs.ToolCall) bool {
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
