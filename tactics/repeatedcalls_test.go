package tactics

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// Which repeats are quoted: a call that ran (its tool failing or not) is
// quoted when repeated; a call to an unknown function is answered again,
// not quoted; and once tools are withdrawn, a repeat of a call that ran is
// told there are no tools, not quoted.
func TestRepeatedCallsWhatIsQuoted(t *testing.T) {
	runs := 0
	fail, _ := dialog.NewFunction("fail", "fails", func(context.Context, numIn) (int, error) {
		runs++
		return 0, errors.New("disk on fire")
	})
	p := dialog.MustPrompt("t", "Go.", dialog.WithFunctions(fail))
	m := &script{replies: []any{
		callsReply(fcall("c1", "fail", `{"n":1}`), fcall("c2", "nosuch", `{}`)),
		callsReply(fcall("c3", "fail", `{"n":1}`), fcall("c4", "nosuch", `{}`)),
		callsReply(fcall("c5", "fail", `{"n":1}`)),
		text("done"),
	}}
	a, run := newAgent(t, m, nil)
	a.Limits.MaxInterruptSteps = 2
	a.ReceivePrompt(p, nil)
	if _, _, err := a.Respond(t.Context()); err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Errorf("fail ran %d times, want 1", runs)
	}
	_, recs := run.forest(t)
	var got []string
	for _, c := range toolCallRecords(recs) {
		got = append(got, fmt.Sprintf("%s repeated=%v error=%q result=%q", c.CallID, c.Repeated, c.Error, c.Result))
	}
	want := []string{
		`c1 repeated=false error="disk on fire" result="Error: disk on fire"`,
		`c2 repeated=false error="unknown function nosuch" result="Error: unknown function nosuch"`,
		`c3 repeated=true error="" result="You already called fail with these arguments. The result was:\nError: disk on fire"`,
		`c4 repeated=false error="unknown function nosuch" result="Error: unknown function nosuch"`,
		`c5 repeated=false error="no tools are available now" result="Error: no tools are available now. Give your final answer."`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tool_call records:\n%q\nwant\n%q", got, want)
	}
}
