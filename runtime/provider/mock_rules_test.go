package provider

import (
	"strings"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/dialog"
)

// A rule's system condition tells apart two agents that receive the same
// message, and holds together with match.
func TestMockRuleSystem(t *testing.T) {
	m := openMockModel(t, MockConfig{Rules: []MockRule{
		{System: "argue for", Match: "motion", Reply: MockReply{Text: "pro on the motion"}},
		{System: "argue for", Reply: MockReply{Text: "pro"}},
		{System: "argue against", Reply: MockReply{Text: "con"}},
	}})
	for _, tc := range []struct {
		system, user, want string // want "" is the default reply
	}{
		{"You argue for the motion.", "The motion: tea.", "pro on the motion"},
		{"You argue for the motion.", "Your turn.", "pro"},
		{"You argue against the motion.", "Your turn.", "con"},
		{"You judge.", "Your turn.", ""},
		{"", "You argue for it", ""}, // the user message is not the system's
	} {
		msgs := []*dialog.Message{userMsg(tc.user)}
		if tc.system != "" {
			msgs = append([]*dialog.Message{systemMsg(tc.system)}, msgs...)
		}
		got := generate(t, m, &Request{Messages: msgs}).Message.Content
		if tc.want == "" && !strings.HasPrefix(got, "mock reply to: ") || tc.want != "" && got != tc.want {
			t.Errorf("system %q, user %q: got %q, want %q", tc.system, tc.user, got, cmpOr(tc.want, "the default reply"))
		}
	}
}

// A rule with times answers that many calls, then the next rule does:
// a rate limit once, then the answer, is a retry scripted in YAML.
func TestMockRuleTimes(t *testing.T) {
	m := openMockModel(t, MockConfig{Rules: []MockRule{
		{Match: "flaky", Times: 1, Reply: MockReply{Error: "server"}},
		{Match: "flaky", Times: 2, Reply: MockReply{Text: "second"}},
		{Match: "flaky", Reply: MockReply{Text: "then always"}},
	}})
	req := &Request{Messages: []*dialog.Message{userMsg("a flaky question")}}
	if e := generateErr(t, t.Context(), m, req); e.Kind != ErrServer {
		t.Fatalf("first call: %v, want the scripted server error", e)
	}
	for i, want := range []string{"second", "second", "then always", "then always"} {
		if got := generate(t, m, req).Message.Content; got != want {
			t.Errorf("call %d: %q, want %q", i+2, got, want)
		}
	}
	// A call that another condition rules out does not use up a rule.
	n := openMockModel(t, MockConfig{Rules: []MockRule{
		{Match: "x", System: "judge", Times: 1, Reply: MockReply{Text: "once"}},
	}})
	generate(t, n, &Request{Messages: []*dialog.Message{systemMsg("solver"), userMsg("x")}})
	if got := generate(t, n, &Request{Messages: []*dialog.Message{systemMsg("judge"), userMsg("x")}}).Message.Content; got != "once" {
		t.Errorf("after a call the rule did not match: %q, want %q", got, "once")
	}
}

// Concurrent calls share a rule's times: exactly that many get its reply.
func TestMockRuleTimesConcurrent(t *testing.T) {
	m := openMockModel(t, MockConfig{Rules: []MockRule{
		{Match: "q", Times: 5, Reply: MockReply{Text: "ruled"}},
	}})
	var (
		mu    sync.Mutex
		ruled int
		wg    sync.WaitGroup
	)
	for range 40 {
		wg.Go(func() {
			resp, err := m.Generate(t.Context(), &Request{Messages: []*dialog.Message{userMsg("q")}})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if resp.Message.Content == "ruled" {
				ruled++
			}
		})
	}
	wg.Wait()
	if ruled != 5 {
		t.Errorf("%d of 40 concurrent calls got the rule's reply, want its times, 5", ruled)
	}
}

// A rule with times and no condition answers the first calls, whatever
// they are: the plainest scripted retry. A rule with neither is refused.
func TestMockRuleTimesAlone(t *testing.T) {
	m := openMockModel(t, MockConfig{Rules: []MockRule{
		{Times: 1, Reply: MockReply{Error: "server"}},
		{Match: "q", Reply: MockReply{Text: "answer"}},
	}})
	req := &Request{Messages: []*dialog.Message{systemMsg("You answer."), userMsg("q")}}
	if e := generateErr(t, t.Context(), m, req); e.Kind != ErrServer {
		t.Fatalf("first call: %v, want the scripted server error", e)
	}
	if got := generate(t, m, req).Message.Content; got != "answer" {
		t.Errorf("second call: %q, want the next rule's answer", got)
	}
	if _, err := NewMock(MockConfig{Rules: []MockRule{{Reply: MockReply{Text: "x"}}}}); err == nil || !strings.Contains(err.Error(), "mock.rules.0: set match, regex or system, or times") {
		t.Errorf("a rule with no condition and no times: %v", err)
	}
}
