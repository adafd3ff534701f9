package tactics

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
)

// A call the tool timeout ended is not remembered: the model's identical
// call runs the tool again (a hang may be transient), and what that one
// returns is what a later repeat quotes; also when max_tool_output is
// smaller than the timeout's error, which is not cut.
func TestTimedOutCallRunsAgain(t *testing.T) {
	for _, max := range []int{0, 20} {
		t.Run(fmt.Sprint("max_tool_output=", max), func(t *testing.T) { timedOutRunsAgain(t, max) })
	}
}

func timedOutRunsAgain(t *testing.T, maxOutput int) {
	var runs atomic.Int32 // the timed-out call's goroutine is left running
	flaky, err := dialog.NewFunction("flaky", "Slow the first time.", func(ctx context.Context, _ struct{}) (string, error) {
		if runs.Add(1) == 1 {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "fine", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p := dialog.MustPrompt("p", "Go.", dialog.WithFunctions(flaky))
	m := &script{replies: []any{toolCall("c1", "flaky", `{}`), toolCall("c2", "flaky", `{}`), toolCall("c3", "flaky", `{}`), text("done")}}
	a, run := newAgent(t, m, nil)
	a.Limits.ToolTimeout = 50 * time.Millisecond
	a.Limits.MaxToolOutput = maxOutput
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, recs := run.forest(t)
	var got []string
	for _, c := range toolCallRecords(recs) {
		got = append(got, fmt.Sprintf("%s repeated=%v %s", c.CallID, c.Repeated, strings.ReplaceAll(c.Result, "\n", " ")))
	}
	// The second call's result, as the model got it.
	fine := strings.ReplaceAll(cutOutput("Return of calling function flaky with arguments {}:\nfine", maxOutput), "\n", " ")
	want := []string{
		"c1 repeated=false Error: tool flaky did not return within the tool timeout of 50ms (tool_timeout)",
		"c2 repeated=false " + fine,
		"c3 repeated=true You already called flaky with these arguments. The result was: " + fine,
	}
	if runs.Load() != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the tool ran %d times (want 2); tool calls:\n%q\nwant\n%q", runs.Load(), got, want)
	}
}
