package inspect_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lllm-go/lllm/inspect"
)

// Two changes far apart in one long message both show in its divergence:
// the unchanged lines between them are counted, not listed, so they do not
// use up the diff's lines.
func TestDivergenceDiffShowsDistantChanges(t *testing.T) {
	lines := make([]string, 60)
	for i := range lines {
		lines[i] = fmt.Sprintf("rule %d: be careful", i)
	}
	sysA := strings.Join(lines, "\n")
	lines[5], lines[55] = "rule 5: be bold", "rule 55: be bold"
	sysB := strings.Join(lines, "\n")
	replies := []string{"<answer>4</answer>", "<answer>6</answer>", "<answer>8</answer>", "ok"}
	a := load(t, agentRun(t, sysA, replies...), inspect.Options{Messages: true})
	b := load(t, agentRun(t, sysB, replies...), inspect.Options{Messages: true})
	d, err := inspect.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	v := d.First()
	if v == nil || v.Index != 0 {
		t.Fatalf("first divergence %+v, want the system prompt", v)
	}
	for _, want := range []string{
		"  rule 3: be careful\n  rule 4: be careful\n- rule 5: be careful\n+ rule 5: be bold\n  rule 6: be careful\n  rule 7: be careful\n",
		"\n… 45 unchanged lines\n",
		"\n  rule 53: be careful\n  rule 54: be careful\n- rule 55: be careful\n+ rule 55: be bold\n  rule 56: be careful\n  rule 57: be careful",
	} {
		if !strings.Contains(v.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, v.Diff)
		}
	}
	if strings.Contains(v.Diff, "rule 30") || strings.Contains(v.Diff, "more lines") {
		t.Errorf("diff lists unchanged lines or is cut:\n%s", v.Diff)
	}
}
