package provider

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// bedrockClaude is a Claude model on Bedrock, with its "bedrock/" prefix.
const bedrockClaude = "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// openBedrockThinking opens bedrockClaude on the fake Bedrock server srv,
// through the AWS SDK and langchaingo's Bedrock client.
func openBedrockThinking(t *testing.T, srv *providertest.Server) Model {
	t.Helper()
	bedrockEnv(t)
	m, err := Open(context.Background(), bedrockClaude, Config{BaseURL: srv.BaseURL(), Region: "us-east-1"})
	if err != nil {
		t.Fatalf("Open(%q): %v", bedrockClaude, err)
	}
	return m
}

// sealed is the reasoning the adapter should read of th: each block with
// the fake's signature, or redacted.
func sealed(th ...providertest.Thinking) []dialog.Reasoning {
	out := make([]dialog.Reasoning, len(th))
	for i, b := range th {
		if b.Redacted != "" {
			out[i] = dialog.Reasoning{Redacted: b.Redacted}
		} else {
			out[i] = dialog.Reasoning{Text: b.Text, Signature: providertest.Signature(b.Text)}
		}
	}
	return out
}

// sentBlocks is how th goes back on the wire, as JSON values.
func sentBlocks(t *testing.T, th ...providertest.Thinking) []any {
	t.Helper()
	var out []any
	for _, b := range th {
		v := map[string]any{"type": "thinking", "thinking": b.Text, "signature": providertest.Signature(b.Text)}
		if b.Redacted != "" {
			v = map[string]any{"type": "redacted_thinking", "data": b.Redacted}
		}
		out = append(out, v)
	}
	return out
}

// wireMessage is message i of a request's body, failing if there is none.
func wireMessage(t *testing.T, req providertest.Request, i int) (role string, content []any) {
	t.Helper()
	msgs, _ := req.JSON()["messages"].([]any)
	if i >= len(msgs) {
		t.Fatalf("the request has %d messages, want message %d: %s", len(msgs), i, req.Body)
	}
	m, _ := msgs[i].(map[string]any)
	role, _ = m["role"].(string)
	content, _ = m["content"].([]any)
	return role, content
}

// toolResults answers each call of m with "sunny", a tool message each.
func toolResults(m *dialog.Message) []*dialog.Message {
	var out []*dialog.Message
	for _, fc := range m.FunctionCalls {
		out = append(out, &dialog.Message{Role: dialog.RoleTool, Name: fc.Name, ToolCallID: fc.ID, Content: "sunny in " + string(fc.Arguments)})
	}
	return out
}

// The fake Bedrock server refuses what Claude on Bedrock refuses: a tool
// round whose assistant turn lost its thinking, and a thinking block whose
// signature does not match its text. Without these checks the tests below
// would prove nothing.
func TestBedrockFakeChecksThinking(t *testing.T) {
	srv := providertest.NewBedrockServer(t)
	m := openBedrockThinking(t, srv)
	call := dialog.FunctionCall{ID: "toolu_bdrk_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}
	lost := dialog.Message{Role: dialog.RoleToolCall, FunctionCalls: []dialog.FunctionCall{call}, Model: bedrockClaude}
	e := generateErr(t, context.Background(), m, toolRound(t, lost, nil))
	if e.Kind != ErrBadRequest || !strings.Contains(e.Error(), "Expected `thinking` or `redacted_thinking`, but found `tool_use`") {
		t.Errorf("a tool round without its thinking: %v, want Bedrock's 400", e)
	}
	forged := lost
	forged.Reasoning = []dialog.Reasoning{{Text: "edited", Signature: providertest.Signature("original")}}
	e = generateErr(t, context.Background(), m, toolRound(t, forged, nil))
	if e.Kind != ErrBadRequest || !strings.Contains(e.Error(), "Invalid `signature`") {
		t.Errorf("a thinking block with another's signature: %v, want Bedrock's 400", e)
	}
}

// Claude's thinking through Bedrock, with tools: the reply's blocks,
// redacted ones included, come back on the message with their signatures,
// and go back at the start of its assistant turn in the next tool round,
// which the fake (as the API) requires. The two user messages, which
// langchaingo's client joins into one wire message, and the system
// prompt, which goes to "system", put the assistant turn at index 1 of
// the wire's messages, not at the dialog's 3.
func TestBedrockThinkingToolRound(t *testing.T) {
	thinking := []providertest.Thinking{
		{Text: "The user wants the weather. "},
		{Redacted: "redacted-EmwKAhgBEgy3va3pzix"},
		{Text: "I will call get_weather."},
	}
	srv := providertest.NewBedrockServer(t,
		providertest.Reply{Thinking: thinking, ToolCalls: []providertest.ToolCall{{ID: "toolu_bdrk_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		providertest.Reply{Thinking: []providertest.Thinking{{Text: "It is sunny."}}, Text: "Sunny in Paris."})
	m := openBedrockThinking(t, srv)
	dlg := []*dialog.Message{
		{Role: dialog.RoleSystem, Content: "Be brief."},
		userMsg("Hello."),
		userMsg("Weather in Paris?"),
	}
	tools := []*dialog.Function{weatherTool(t)}
	first := generate(t, m, &Request{Messages: dlg, Tools: tools, Params: thinkingOn}).Message
	if want := sealed(thinking...); !jsonEqual(t, first.Reasoning, want) {
		t.Errorf("reasoning = %+v\nwant %+v", first.Reasoning, want)
	}
	if first.Content != "" || len(first.FunctionCalls) != 1 || first.FunctionCalls[0].ID != "toolu_bdrk_1" {
		t.Errorf("first reply: text %q, calls %+v; want the call alone", first.Content, first.FunctionCalls)
	}
	if got := first.ReasoningText(); got != thinking[0].Text+"\n\n"+thinking[2].Text {
		t.Errorf("ReasoningText = %q", got)
	}

	dlg = append(dlg, &first)
	dlg = append(dlg, toolResults(&first)...)
	second := generate(t, m, &Request{Messages: dlg, Tools: tools, Params: thinkingOn}).Message
	if second.Content != "Sunny in Paris." || !jsonEqual(t, second.Reasoning, sealed(providertest.Thinking{Text: "It is sunny."})) {
		t.Errorf("second reply = %q, reasoning %+v", second.Content, second.Reasoning)
	}
	req := srv.LastRequest()
	if sys := req.JSON()["system"]; sys != "Be brief." {
		t.Errorf("system = %v", sys)
	}
	if role, content := wireMessage(t, req, 0); role != "user" || len(content) != 2 {
		t.Errorf("messages[0] = %s %v, want the two user messages joined", role, content)
	}
	role, content := wireMessage(t, req, 1)
	want := append(sentBlocks(t, thinking...), map[string]any{"type": "tool_use", "id": "toolu_bdrk_1", "name": "get_weather", "input": map[string]any{"city": "Paris"}})
	if role != "assistant" || !jsonEqual(t, content, want) {
		t.Errorf("messages[1] = %s %v\nwant the thinking blocks, then the call: %v", role, content, want)
	}
	if strings.Count(string(req.Body), `"signature"`) != 2 || strings.Count(string(req.Body), "redacted_thinking") != 1 {
		t.Errorf("the blocks went elsewhere too: %s", req.Body)
	}
}

// A reply with text and parallel tool calls: the blocks go before the
// text, in the one assistant message that holds it and the calls, and the
// results, a tool message each, go in the next.
func TestBedrockThinkingParallelCalls(t *testing.T) {
	thinking := []providertest.Thinking{{Text: "Two cities, two calls."}, {Redacted: "redacted-Qm9vaw"}}
	srv := providertest.NewBedrockServer(t,
		providertest.Reply{Thinking: thinking, Text: "Checking both.", ToolCalls: []providertest.ToolCall{
			{ID: "toolu_bdrk_p", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "toolu_bdrk_r", Name: "get_weather", Arguments: `{"city":"Rome"}`},
		}},
		providertest.Reply{Text: "Sunny in both."})
	m := openBedrockThinking(t, srv)
	tools := []*dialog.Function{weatherTool(t)}
	dlg := []*dialog.Message{userMsg("Weather in Paris and Rome?")}
	first := generate(t, m, &Request{Messages: dlg, Tools: tools, Params: thinkingOn}).Message
	if !jsonEqual(t, first.Reasoning, sealed(thinking...)) || len(first.FunctionCalls) != 2 || first.Content != "Checking both." {
		t.Fatalf("first reply: %q, calls %+v, reasoning %+v", first.Content, first.FunctionCalls, first.Reasoning)
	}
	dlg = append(append(dlg, &first), toolResults(&first)...)
	if got := generate(t, m, &Request{Messages: dlg, Tools: tools, Params: thinkingOn}).Message.Content; got != "Sunny in both." {
		t.Errorf("second reply = %q", got)
	}
	req := srv.LastRequest()
	role, content := wireMessage(t, req, 1)
	want := append(sentBlocks(t, thinking...),
		map[string]any{"type": "text", "text": "Checking both."},
		map[string]any{"type": "tool_use", "id": "toolu_bdrk_p", "name": "get_weather", "input": map[string]any{"city": "Paris"}},
		map[string]any{"type": "tool_use", "id": "toolu_bdrk_r", "name": "get_weather", "input": map[string]any{"city": "Rome"}})
	if role != "assistant" || !jsonEqual(t, content, want) {
		t.Errorf("messages[1] = %s %v\nwant %v", role, content, want)
	}
	if role, content := wireMessage(t, req, 2); role != "user" || len(content) != 2 {
		t.Errorf("messages[2] = %s %v, want both results", role, content)
	}
}

// A dialog of two tool rounds: the third request carries each round's
// blocks at the start of its own assistant turn.
func TestBedrockThinkingTwoRounds(t *testing.T) {
	th1 := []providertest.Thinking{{Text: "First Paris."}}
	th2 := []providertest.Thinking{{Redacted: "redacted-c2Vjb25k"}, {Text: "Now Rome."}}
	srv := providertest.NewBedrockServer(t,
		providertest.Reply{Thinking: th1, ToolCalls: []providertest.ToolCall{{ID: "toolu_bdrk_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		providertest.Reply{Thinking: th2, ToolCalls: []providertest.ToolCall{{ID: "toolu_bdrk_2", Name: "get_weather", Arguments: `{"city":"Rome"}`}}},
		providertest.Reply{Thinking: []providertest.Thinking{{Text: "Done."}}, Text: "Sunny in both."})
	m := openBedrockThinking(t, srv)
	tools := []*dialog.Function{weatherTool(t)}
	dlg := []*dialog.Message{userMsg("Weather in Paris, then Rome?")}
	for round := range 2 {
		reply := generate(t, m, &Request{Messages: dlg, Tools: tools, Params: thinkingOn}).Message
		if len(reply.FunctionCalls) != 1 {
			t.Fatalf("round %d: reply %q without a call", round, reply.Content)
		}
		dlg = append(append(dlg, &reply), toolResults(&reply)...)
	}
	last := generate(t, m, &Request{Messages: dlg, Tools: tools, Params: thinkingOn}).Message
	if last.Content != "Sunny in both." {
		t.Errorf("last reply = %q", last.Content)
	}
	req := srv.LastRequest()
	for i, th := range map[int][]providertest.Thinking{1: th1, 3: th2} {
		role, content := wireMessage(t, req, i)
		want := sentBlocks(t, th...)
		var call map[string]any
		if len(content) == len(want)+1 {
			call, _ = content[len(want)].(map[string]any)
		}
		if role != "assistant" || call["type"] != "tool_use" || !jsonEqual(t, content[:len(want)], want) {
			t.Errorf("messages[%d] = %s %v\nwant %v, then the call", i, role, content, want)
		}
	}
}

// A streamed reply with thinking (Bedrock streams requests without tools)
// keeps its blocks, signatures and redacted data (langchaingo's client
// drops them), streams its thinking and then its text to Stream, and the
// next call goes with the blocks back.
func TestBedrockThinkingStreamed(t *testing.T) {
	srv := providertest.NewBedrockServer(t,
		providertest.Reply{Thinking: []providertest.Thinking{{Text: "Say hi."}, {Redacted: "redacted-aGk"}}, Text: "Hi there."},
		providertest.Reply{Text: "Bye."})
	m := openBedrockThinking(t, srv)
	var r recorder
	dlg := []*dialog.Message{userMsg("Hi")}
	first := generate(t, m, &Request{Messages: dlg, Params: thinkingOn, Stream: r.stream}).Message
	want := []dialog.Reasoning{{Text: "Say hi.", Signature: providertest.Signature("Say hi.")}, {Redacted: "redacted-aGk"}}
	if first.Content != "Hi there." || !reflect.DeepEqual(first.Reasoning, want) {
		t.Errorf("reply %q with reasoning %+v, want %+v", first.Content, first.Reasoning, want)
	}
	r.check(t, &first, 2)
	if !strings.HasSuffix(srv.LastRequest().Path, "/invoke-with-response-stream") {
		t.Errorf("path %s, want the streaming operation", srv.LastRequest().Path)
	}
	dlg = append(dlg, &first, userMsg("Bye"))
	if got := generate(t, m, &Request{Messages: dlg, Params: thinkingOn}).Message.Content; got != "Bye." {
		t.Errorf("next reply = %q", got)
	}
}

// Without reasoning to send back, the body is sent as langchaingo builds
// it, with the edits alone: no thinking block goes, and a reply without
// thinking has no reasoning.
func TestBedrockNoThinkingBack(t *testing.T) {
	srv := providertest.NewBedrockServer(t,
		providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "toolu_bdrk_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}})
	m := openBedrockThinking(t, srv)
	tools := []*dialog.Function{weatherTool(t)}
	dlg := []*dialog.Message{userMsg("Weather in Paris?")}
	first := generate(t, m, &Request{Messages: dlg, Tools: tools}).Message
	if first.Reasoning != nil {
		t.Errorf("reasoning %+v of a reply without thinking", first.Reasoning)
	}
	// Unsealed reasoning, or another provider's, does not go.
	first.Reasoning = []dialog.Reasoning{{Text: "unsealed"}}
	other := dialog.Message{Role: dialog.RoleAssistant, Content: "Earlier.", Model: "anthropic/claude-sonnet-4-5",
		Reasoning: []dialog.Reasoning{{Text: "t", Signature: providertest.Signature("t")}}}
	dlg = []*dialog.Message{userMsg("Hi"), &other, userMsg("Weather in Paris?"), &first}
	dlg = append(dlg, toolResults(&first)...)
	generate(t, m, &Request{Messages: dlg, Tools: tools})
	if body := string(srv.LastRequest().Body); strings.Contains(body, "thinking") {
		t.Errorf("reasoning sent back: %s", body)
	}
}

// bedrockPlaces follows langchaingo's Bedrock client: parts of
// consecutive messages of a role join one wire message, the system
// message leaves the wire's messages, messages without parts send nothing, and a
// tool result and a user message are messages of their own though both
// "user" on the wire.
func TestBedrockPlaces(t *testing.T) {
	text := func(role llms.ChatMessageType, n int) llms.MessageContent {
		m := llms.MessageContent{Role: role}
		for range n {
			m.Parts = append(m.Parts, llms.TextContent{Text: "x"})
		}
		return m
	}
	const (
		sys  = llms.ChatMessageTypeSystem
		hum  = llms.ChatMessageTypeHuman
		ai   = llms.ChatMessageTypeAI
		tool = llms.ChatMessageTypeTool
	)
	msgs := []llms.MessageContent{
		text(sys, 1),  // 0: system
		text(hum, 1),  // 1: wire 0
		text(hum, 2),  // 2: wire 0
		text(ai, 3),   // 3: wire 1, part 0
		text(tool, 1), // 4: wire 2
		text(hum, 1),  // 5: wire 3
		text(ai, 1),   // 6: wire 4, part 0
		text(ai, 0),   // 7: nothing
		text(ai, 2),   // 8: wire 4, part 1
		text(tool, 1), // 9: wire 5
		text(ai, 1),   // 10: wire 6, part 0
	}
	back := []thinkingBack{{at: 3}, {at: 6}, {at: 7}, {at: 8}, {at: 10}}
	bedrockPlaces(msgs, back)
	want := [][2]int{{1, 0}, {4, 0}, {-1, 0}, {4, 1}, {6, 0}}
	for i, b := range back {
		if got := [2]int{b.at, b.part}; got != want[i] {
			t.Errorf("back %d: message %d, part %d; want %v", i, b.at, b.part, want[i])
		}
	}
}

// insertBedrockThinking puts the sealed blocks at their place in the
// assistant message's content, and refuses a place that is not in an
// assistant message rather than send the blocks elsewhere.
func TestInsertBedrockThinking(t *testing.T) {
	body := []byte(`{"anthropic_version":"bedrock-2023-05-31","messages":[{"role":"user","content":[{"type":"text","text":"q"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"f","input":{}}]}],"max_tokens":5}`)
	blocks := []dialog.Reasoning{{Text: "x", Signature: "sig-x"}, {Text: "unsealed"}, {Redacted: "redacted-r"}}
	got, err := insertBedrockThinking(body, []thinkingBack{{at: 1, part: 1, blocks: blocks}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"anthropic_version":"bedrock-2023-05-31","messages":[{"role":"user","content":[{"type":"text","text":"q"}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"x","signature":"sig-x"},` +
		`{"type":"redacted_thinking","data":"redacted-r"},{"type":"tool_use","id":"t1","name":"f","input":{}}]}],"max_tokens":5}`
	var g, w any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal([]byte(want), &w) != nil || !jsonEqual(t, g, w) {
		t.Errorf("body = %s\nwant %s", got, want)
	}
	for _, b := range []thinkingBack{{at: 0}, {at: -1}, {at: 2}, {at: 1, part: 3}} {
		b.blocks = blocks
		if _, err := insertBedrockThinking(body, []thinkingBack{b}); err == nil {
			t.Errorf("blocks at message %d, part %d: no error", b.at, b.part)
		}
	}
}
