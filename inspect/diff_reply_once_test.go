package inspect_test

import (
	"testing"

	"github.com/lllm-go/lllm/inspect"
)

// A reply kept after a retry is one divergence, where the retry made it
// (main#2, a fork of the failed main#1), not again where main kept it.
func TestDivergenceOfAReplyKeptAfterARetryIsOnce(t *testing.T) {
	a := load(t, agentRun(t, "You add.", "four", "<answer>4</answer>", "<answer>6</answer>", "<answer>8</answer>", "ok"), inspect.Options{Messages: true})
	b := load(t, agentRun(t, "You add.", "four", "<answer>5</answer>", "<answer>6</answer>", "<answer>8</answer>", "ok"), inspect.Options{Messages: true})
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	checkDivergences(t, d.Divergences, []wantDivergence{
		{key: inspect.Key{Owner: "coder", Alias: "main#2", Turn: 1}, index: 4, roleA: "assistant", roleB: "assistant",
			diff: "  [assistant coder]\n- <answer>4</answer>\n+ <answer>5</answer>"},
	})
	for _, dd := range d.Dialogs {
		if dd.Key == (inspect.Key{Owner: "coder", Alias: "main", Turn: 1}) && dd.FirstDiff != 2 {
			t.Errorf("main: first diff %d, want 2, the kept reply", dd.FirstDiff)
		}
	}
}
