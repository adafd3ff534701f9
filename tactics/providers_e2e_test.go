package tactics

// Agent-level end-to-end tests for the providers e2e_test.go does not
// cover: googleai (the Gemini API), bedrock (Anthropic models on Bedrock,
// SigV4-signed by the AWS SDK), native ollama (/api/chat), mistral, and an
// OpenAI-compatible server (vLLM, llama.cpp) reached through
// OPENAI_BASE_URL or base_url. Each builds an agent with provider.Open
// against the provider's wire fake from providertest, sends an image and a
// prompt that offers a tool, runs a tool round, meets one failed call that
// it retries, fails a parse once and answers; then it rebuilds the run
// from its log and checks the tree, every attempt, its usage and its cost,
// and what went over the wire.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lllm-go/lllm/contextmgr"
	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/runtime/provider/providertest"
)

// e2ePNG is a 1x1 PNG, the image every run sends.
var e2ePNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

const (
	e2eSystem  = "You measure shapes."
	e2eCaption = "the rectangle"
	e2eAsk     = "What is the area of a 3 by 4 rectangle? Answer in <answer></answer>."
	e2eAnswer  = "<answer>12</answer>"
	e2eNoTags  = "The area is 12."
	e2eArgs    = `{"w":3,"h":4}`
)

// e2eCase is one provider's run: what to open, what the fake reports, and
// what the agent must make of it.
type e2eCase struct {
	model  string // "provider/model"
	cfg    provider.Config
	params provider.Params
	srv    *providertest.Server
	// tools says whether the prompt offers the area tool (and the model
	// calls it).
	tools bool
	// wireID is the id the fake gives the tool call ("" for none, as
	// Gemini), callID the id the agent's tool call must carry; toolText
	// is the text the model writes with its call, if any.
	wireID, callID, toolText string
	// fail is the failed reply the retried request meets; failKind what
	// the agent must take it for, and minWait the least it must wait
	// before the retry (the provider's Retry-After).
	fail     providertest.Reply
	failKind provider.ErrorKind
	minWait  time.Duration
	// usage is what the fake reports for the tool call, the reply that
	// fails to parse, and the answer.
	usage [3]providertest.Usage
	// price is what the model costs: the built-in list price, or the one
	// cfg.Prices sets.
	price provider.Price
}

// e2eResult is what a run did and what its log rebuilds into.
type e2eResult struct {
	session *CallSession
	reqs    []providertest.Request
	// first is the request that offered the tool and the image, retried
	// the request that failed and its retry, answered the one after the
	// tool round (with tools) or the exception prompt.
	first         providertest.Request
	failed, retry providertest.Request
	afterTool     providertest.Request // zero without tools
	exception     providertest.Request
}

func wantUsage(u providertest.Usage) dialog.Usage {
	return dialog.Usage{InputTokens: u.Input, CachedInputTokens: u.Cached, OutputTokens: u.Output, ReasoningTokens: u.Reasoning}
}

// listCost is what usage costs at p, as provider.Price documents it:
// cached input at the cached price (the input price when it has none),
// the rest of the input at the input price, output (reasoning included)
// at the output price, per million tokens.
func listCost(p provider.Price, u dialog.Usage) float64 {
	cached := p.CachedInput
	if cached == 0 {
		cached = p.Input
	}
	return (float64(u.InputTokens-u.CachedInputTokens)*p.Input + float64(u.CachedInputTokens)*cached +
		float64(u.OutputTokens)*p.Output) / 1e6
}

func sameUSD(a, b float64) bool { return math.Abs(a-b) <= 1e-12+1e-9*math.Abs(b) }

// runE2E runs c's agent against its fake and checks everything that does
// not depend on the provider's wire format; it returns the requests for
// the caller to check that.
func runE2E(t *testing.T, c e2eCase) e2eResult {
	t.Helper()
	toolReply := providertest.Reply{Text: c.toolText, ToolCalls: []providertest.ToolCall{{ID: c.wireID, Name: "area", Arguments: e2eArgs}}, Usage: c.usage[0]}
	if c.tools {
		c.srv.Enqueue(toolReply)
	}
	c.srv.Enqueue(c.fail,
		providertest.Reply{Text: e2eNoTags, Usage: c.usage[1]},
		providertest.Reply{Text: e2eAnswer, Usage: c.usage[2]})

	model, err := provider.Open(t.Context(), c.model, c.cfg)
	if err != nil {
		t.Fatalf("provider.Open(%q): %v", c.model, err)
	}
	if cl, ok := model.(interface{ Close() error }); ok {
		t.Cleanup(func() { cl.Close() })
	}
	cm, err := contextmgr.New(map[string]any{"type": "default", "max_tokens": 100000})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "providers-e2e"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		waits   []time.Duration
		retries []Retry
	)
	lim := DefaultLimits()
	lim.BackoffBase, lim.BackoffMax = time.Millisecond, 5*time.Millisecond
	a := &Agent{Name: "geometer", System: dialog.MustPrompt("sys", e2eSystem),
		Model: model, ModelName: c.model, Params: c.params, Limits: lim,
		Context: cm, ContextName: "default", Log: w,
		// The waits are recorded, not slept: the test checks them.
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			mu.Unlock()
			return ctx.Err()
		},
		Retrying: func(r Retry) {
			mu.Lock()
			retries = append(retries, r)
			mu.Unlock()
		},
	}
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.ReceiveImage(dialog.ImageBytes(e2ePNG), e2eCaption); err != nil {
		t.Fatal(err)
	}
	opts := []dialog.PromptOption{dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}})}
	if c.tools {
		opts = append(opts, dialog.WithFunctions(areaTool(t)))
	}
	if err := a.ReceivePrompt(dialog.MustPrompt("ask", e2eAsk, opts...), nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	reply, s, err := a.Respond(ctx)
	if err != nil {
		w.Finish(logs.RunEnd{Status: logs.StatusFailed, Error: err.Error()})
		for i, r := range c.srv.Requests() {
			t.Logf("request %d: %s %s\n%s", i, r.Method, r.Path, r.Body)
		}
		t.Fatalf("Respond: %v", err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}

	// The calls: the tool call, the failure and its retry, the reply that
	// fails to parse, the answer.
	type call struct {
		usage   providertest.Usage
		attempt int
		failed  bool
		work    int // 0: the first working copy, 1: the second
	}
	var calls []call
	if c.tools {
		calls = append(calls, call{usage: c.usage[0], attempt: 1})
	}
	calls = append(calls, call{attempt: 1, failed: true}, call{usage: c.usage[1], attempt: 2}, call{usage: c.usage[2], attempt: 1, work: 1})
	failAt := len(calls) - 3

	if reply.Content != e2eAnswer || s.State != "ok" || len(s.Attempts) != 2 || len(s.Calls) != len(calls) {
		t.Fatalf("reply %q, session state %q, %d attempts, %d calls; want %q, ok, 2 attempts, %d calls",
			reply.Content, s.State, len(s.Attempts), len(s.Calls), e2eAnswer, len(calls))
	}
	var total dialog.Cost
	for i, want := range calls {
		got := s.Calls[i]
		if (got.Err != nil) != want.failed || got.Attempt != want.attempt || got.Dialog != s.Attempts[want.work] {
			t.Errorf("call %d: err %v, attempt %d, dialog %s; want failed %v, attempt %d, dialog %s",
				i, got.Err, got.Attempt, got.Dialog, want.failed, want.attempt, s.Attempts[want.work])
		}
		u := wantUsage(want.usage)
		usd := listCost(c.price, u)
		if got.Usage != u || !sameUSD(got.USD, usd) {
			t.Errorf("call %d: usage %+v, $%g; want %+v (what the server reported), $%g (the list price)", i, got.Usage, got.USD, u, usd)
		}
		total = total.Add(dialog.Cost{Usage: u, USD: usd})
	}
	if s.Cost.Usage != total.Usage || !sameUSD(s.Cost.USD, total.USD) {
		t.Errorf("session cost %+v, want %+v", s.Cost, total)
	}
	result := "" // the tool's result, as Function.Call words it
	if len(s.ToolCalls) == 1 {
		result = s.ToolCalls[0].Result
	}
	if c.tools {
		if len(s.ToolCalls) != 1 || s.ToolCalls[0].ID != c.callID || s.ToolCalls[0].Name != "area" || !strings.HasSuffix(s.ToolCalls[0].Result, "12") {
			t.Errorf("tool calls %+v, want area(%s) = 12 with id %q", s.ToolCalls, e2eArgs, c.callID)
		}
	} else if len(s.ToolCalls) != 0 {
		t.Errorf("tool calls %+v, want none", s.ToolCalls)
	}

	// The retry: told once, of the right kind, after the provider's wait.
	mu.Lock()
	if len(retries) != 1 || retries[0].Err == nil || retries[0].Err.Kind != c.failKind || retries[0].Err.Status != c.fail.Status {
		t.Errorf("retries %+v, want one %s (HTTP %d)", retries, c.failKind, c.fail.Status)
	}
	if len(waits) != 1 || waits[0] < c.minWait {
		t.Errorf("waits before retries %v, want one of at least %v (the provider's retry delay)", waits, c.minWait)
	}
	mu.Unlock()

	// What the server saw: every call, the retry resending the request
	// that failed.
	res := e2eResult{session: s, reqs: c.srv.Requests()}
	if len(res.reqs) != len(calls) {
		for i, r := range res.reqs {
			t.Logf("request %d: %s %s\n%s", i, r.Method, r.Path, r.Body)
		}
		t.Fatalf("the server saw %d requests, want %d", len(res.reqs), len(calls))
	}
	res.first, res.failed, res.retry = res.reqs[0], res.reqs[failAt], res.reqs[failAt+1]
	res.exception = res.reqs[len(res.reqs)-1]
	if c.tools {
		res.afterTool = res.reqs[1]
	}
	if string(res.failed.Body) != string(res.retry.Body) {
		t.Errorf("the retry sent another request:\nfailed: %s\nretry:  %s", res.failed.Body, res.retry.Body)
	}
	if !strings.Contains(string(res.exception.Body), "Error: ") || !strings.Contains(string(res.exception.Body), e2eNoTags) {
		t.Errorf("the last request lacks the failed reply and the exception prompt: %s", res.exception.Body)
	}

	// The log rebuilds into the tree: main, its first working copy (the
	// tool round, the failed call and its retry, a reply that fails to
	// parse), and the second (the exception prompt and the answer), forked
	// from the first.
	f, warnings, err := run.Forest(t.Context())
	if err != nil || len(warnings) != 0 {
		t.Fatalf("rebuild: %v %v", err, warnings)
	}
	if len(f.Roots()) != 1 {
		t.Fatalf("roots %v, want main alone", f.Roots())
	}
	main := f.Dialog(f.Roots()[0])
	if ids := f.SubtreeIDs(main.ID()); !slices.Equal(ids, []string{main.ID(), s.Attempts[0], s.Attempts[1]}) {
		t.Fatalf("tree %v, want main and the attempts %v", ids, s.Attempts)
	}
	att1, att2 := f.Dialog(s.Attempts[0]), f.Dialog(s.Attempts[1])
	if att1.Node().ParentID != main.ID() || att2.Node().ParentID != att1.ID() {
		t.Errorf("attempt 1's parent %s, attempt 2's %s; want main %s and attempt 1", att1.Node().ParentID, att2.Node().ParentID, main.ID())
	}
	msgs := main.Messages()
	if len(msgs) != 4 || msgs[0].Text() != e2eSystem || msgs[2].Text() != e2eAsk || main.Tail().Content != e2eAnswer || len(main.Tail().Parsed) == 0 {
		t.Fatalf("main dialog:\n%s", main.Overview(80))
	}
	if img := msgs[1]; len(img.Parts) != 2 || img.Parts[1].Image == nil || string(img.Parts[1].Image.Data) != string(e2ePNG) {
		t.Errorf("the image message rebuilt as %+v", img)
	}
	own := att1.Messages()[att1.Node().SplitPoint:]
	want := []dialog.Role{dialog.RoleAssistant}
	if c.tools {
		// A reply that only calls tools is a tool_call turn; one that also
		// says something is an assistant turn with calls.
		callRole := dialog.RoleToolCall
		if c.toolText != "" {
			callRole = dialog.RoleAssistant
		}
		want = []dialog.Role{callRole, dialog.RoleTool, dialog.RoleAssistant}
	}
	var roles []dialog.Role
	for _, m := range own {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, want) {
		t.Fatalf("attempt 1 added %v, want %v:\n%s", roles, want, att1.Overview(80))
	}
	if c.tools {
		tc, tr := own[0], own[1]
		if len(tc.FunctionCalls) != 1 || tc.FunctionCalls[0].ID != c.callID || tc.FunctionCalls[0].Name != "area" ||
			!jsonSame(tc.FunctionCalls[0].Arguments, e2eArgs) || tc.Content != c.toolText {
			t.Errorf("the tool call rebuilt as %q %+v, want %q and area%s with id %q", tc.Content, tc.FunctionCalls, c.toolText, e2eArgs, c.callID)
		}
		if tr.ToolCallID != c.callID || tr.Text() != result || len(tr.FunctionCalls) != 1 || tr.FunctionCalls[0].Result != result {
			t.Errorf("the tool result rebuilt as %q for %q (%+v), want 12 for %q", tr.Text(), tr.ToolCallID, tr.FunctionCalls, c.callID)
		}
		if tc.Usage != wantUsage(c.usage[0]) || !sameUSD(tc.USD, listCost(c.price, tc.Usage)) {
			t.Errorf("the tool call's usage rebuilt as %+v $%g, want %+v", tc.Usage, tc.USD, wantUsage(c.usage[0]))
		}
	}
	if last := own[len(own)-1]; last.Content != e2eNoTags || last.Usage != wantUsage(c.usage[1]) || !sameUSD(last.USD, listCost(c.price, last.Usage)) {
		t.Errorf("attempt 1's reply rebuilt as %q %+v $%g", last.Content, last.Usage, last.USD)
	}
	own2 := att2.Messages()[att2.Node().SplitPoint:]
	if len(own2) != 2 || own2[0].Role != dialog.RoleUser || !strings.HasPrefix(own2[0].Text(), "Error:") ||
		own2[1].Content != e2eAnswer || own2[1].Usage != wantUsage(c.usage[2]) || !sameUSD(own2[1].USD, listCost(c.price, own2[1].Usage)) {
		t.Errorf("attempt 2:\n%s", att2.Overview(80))
	}
	if got := main.Tail(); got.Usage != wantUsage(c.usage[2]) || got.Model != c.model {
		t.Errorf("main's answer: usage %+v, model %q", got.Usage, got.Model)
	}

	// The records: every model call with its attempt, usage, cost or
	// error, and the tool call with its id.
	rd, err := run.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var mcs []*logs.ModelCall
	var tcs []*logs.ToolCall
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		switch rec.Kind {
		case logs.KindModelCall:
			mcs = append(mcs, rec.ModelCall)
		case logs.KindToolCall:
			tcs = append(tcs, rec.ToolCall)
		}
	}
	if len(mcs) != len(calls) {
		t.Fatalf("%d model_call records, want %d", len(mcs), len(calls))
	}
	for i, want := range calls {
		mc := mcs[i]
		u := wantUsage(want.usage)
		if mc.Attempt != want.attempt || mc.Usage != u || !sameUSD(mc.USD, listCost(c.price, u)) ||
			mc.Model != c.model || mc.Provider != strings.Split(c.model, "/")[0] {
			t.Errorf("model_call %d: attempt %d, usage %+v, $%g, %s (%s); want attempt %d, %+v", i, mc.Attempt, mc.Usage, mc.USD, mc.Model, mc.Provider, want.attempt, u)
		}
		if want.failed != (mc.Error != nil) {
			t.Errorf("model_call %d: error %+v, want failed %v", i, mc.Error, want.failed)
		}
		if !want.failed && mc.FinishReason == "" {
			t.Errorf("model_call %d: no finish_reason, though every provider's wire has one", i)
		}
	}
	if e := mcs[failAt].Error; e != nil && (e.Type != string(c.failKind) || e.Status != c.fail.Status ||
		time.Duration(e.RetryAfterMS*float64(time.Millisecond)) < c.minWait) {
		t.Errorf("the failed call's error %+v, want %s, HTTP %d, retry after at least %v", e, c.failKind, c.fail.Status, c.minWait)
	}
	if c.tools && (len(tcs) != 1 || tcs[0].CallID != c.callID || tcs[0].Name != "area" || tcs[0].Result != result || !jsonSame(tcs[0].Arguments, e2eArgs)) {
		t.Errorf("tool_call records %+v, want area%s = 12 with id %q", tcs, e2eArgs, c.callID)
	}

	// The inspected tree: attempt 1 failed (its reply did not parse), with
	// its calls and their cost; attempt 2 kept its answer.
	tree, _, err := inspect.Load(t.Context(), run, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := tree.Node(s.Attempts[0]), tree.Node(s.Attempts[1])
	if n1 == nil || n2 == nil {
		t.Fatalf("inspect lost the attempts %v", s.Attempts)
	}
	if n1.Calls != len(calls)-1 || n1.CallErrors != 1 || !n1.Failed || n2.Calls != 1 || n2.CallErrors != 0 || n2.Failed {
		t.Errorf("inspected attempts: 1: %d calls, %d errors, failed %v; 2: %d calls, %d errors, failed %v",
			n1.Calls, n1.CallErrors, n1.Failed, n2.Calls, n2.CallErrors, n2.Failed)
	}
	if got := tree.Total(); got.Usage != total.Usage || !sameUSD(got.USD, total.USD) {
		t.Errorf("inspected total %+v, want %+v", got, total)
	}
	list, err := logs.List(root)
	if err != nil || len(list) != 1 || list[0].End == nil {
		t.Fatalf("runs %+v, %v", list, err)
	}
	if tot := list[0].End.Totals; tot.ModelCalls != len(calls) || tot.Cost.Usage != total.Usage || (c.tools && tot.ToolCalls != 1) {
		t.Errorf("run totals %+v, want %d model calls costing %+v", tot, len(calls), total)
	}
	return res
}

// jsonSame reports whether a and b (JSON text, raw JSON or decoded
// values) are the same JSON value.
func jsonSame(a, b any) bool {
	norm := func(v any) any {
		var raw []byte
		switch v := v.(type) {
		case string:
			raw = []byte(v)
		case json.RawMessage:
			raw = v
		case []byte:
			raw = v
		default:
			raw, _ = json.Marshal(v)
		}
		var x any
		if json.Unmarshal(raw, &x) != nil {
			return nil
		}
		return x
	}
	x, y := norm(a), norm(b)
	return x != nil && reflect.DeepEqual(x, y)
}

// at walks v through object keys (string) and array indexes (int).
func at(v any, steps ...any) any {
	for _, s := range steps {
		switch s := s.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[s]
		case int:
			a, _ := v.([]any)
			if s < 0 || s >= len(a) {
				return nil
			}
			v = a[s]
		}
	}
	return v
}

// absent fails for each key of obj that is there.
func absent(t *testing.T, what string, obj map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if v, ok := obj[k]; ok {
			t.Errorf("%s: %s = %v was sent, but the agent did not set it", what, k, v)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// areaSchemaOK reports whether a tool's parameter schema, as a provider
// received it, declares the integer properties w and h.
func areaSchemaOK(schema any) bool {
	typ := func(v any) string {
		switch v := v.(type) {
		case string:
			return strings.ToLower(v)
		case float64: // Gemini's enum numbers
			return map[float64]string{3: "integer", 6: "object"}[v]
		}
		return ""
	}
	return typ(at(schema, "type")) == "object" && typ(at(schema, "properties", "w", "type")) == "integer" &&
		typ(at(schema, "properties", "h", "type")) == "integer"
}

// e2eUsage are the three replies' usages most cases report.
var e2eUsage = [3]providertest.Usage{{Input: 1000, Output: 20}, {Input: 1100, Output: 8}, {Input: 1200, Output: 6}}

// An agent on Gemini (googleai/gemini-2.5-flash) through Google's client:
// the image goes as inlineData, the tool as a function declaration and the
// system prompt as systemInstruction; the functionCall (which has no id)
// gets call_1, and its functionResponse follows it; a 429 with a
// RetryInfo delay is waited out; usage comes from the last response of
// each streamed reply, thinking tokens counted as output, and costs the
// list price.
func TestAgentOnGeminiWireEndToEnd(t *testing.T) {
	srv := providertest.NewGeminiServer(t)
	res := runE2E(t, e2eCase{
		model:  "googleai/gemini-2.5-flash",
		cfg:    provider.Config{APIKey: "gemini-test-key", BaseURL: srv.BaseURL()},
		params: provider.Params{MaxTokens: ptrTo(512), TopP: ptrTo(0.9)},
		srv:    srv, tools: true, callID: "call_1", toolText: "Let me compute the area.",
		fail:     providertest.Reply{Status: 429, RetryAfter: "2"},
		failKind: provider.ErrRateLimit, minWait: 2 * time.Second,
		usage: [3]providertest.Usage{{Input: 1000, Output: 40, Reasoning: 25}, {Input: 1100, Cached: 800, Output: 8}, {Input: 1200, Output: 6}},
		price: provider.DefaultPrices()["gemini-2.5-flash"],
	})
	for i, r := range res.reqs {
		if r.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" && r.Path != "/v1beta/models/gemini-2.5-flash:generateContent" {
			t.Errorf("request %d: path %s", i, r.Path)
		}
		if got := r.Header.Get("X-Goog-Api-Key"); got != "gemini-test-key" {
			t.Errorf("request %d: x-goog-api-key %q", i, got)
		}
	}
	first := res.first.JSON()
	if got := at(first, "systemInstruction", "parts", 0, "text"); got != e2eSystem {
		t.Errorf("systemInstruction = %v", first["systemInstruction"])
	}
	var sawImage, sawAsk bool
	for _, c := range providertest.GeminiContents(first) {
		for _, p := range providertest.GeminiParts(c) {
			if d, ok := p["inlineData"].(map[string]any); ok && c["role"] == "user" &&
				d["mimeType"] == "image/png" && d["data"] == base64.StdEncoding.EncodeToString(e2ePNG) {
				sawImage = true
			}
			if p["text"] == e2eAsk {
				sawAsk = true
			}
		}
	}
	if !sawImage || !sawAsk {
		t.Errorf("the first request lacks the image as inlineData (%v) or the prompt (%v): %s", sawImage, sawAsk, res.first.Body)
	}
	decl := at(first, "tools", 0, "functionDeclarations", 0)
	if at(decl, "name") != "area" || at(decl, "description") != "Area of a rectangle." || !areaSchemaOK(at(decl, "parameters")) {
		t.Errorf("tools = %v", first["tools"])
	}
	gen, _ := first["generationConfig"].(map[string]any)
	if at(gen, "maxOutputTokens") != 512.0 || at(gen, "topP") != 0.9 {
		t.Errorf("generationConfig = %v, want maxOutputTokens 512 and topP 0.9", gen)
	}
	absent(t, "generationConfig", gen, "temperature", "topK")

	// The call and its answer: a model turn with the functionCall, then a
	// turn with its functionResponse.
	contents := providertest.GeminiContents(res.afterTool.JSON())
	var callAt = -1
	for i, c := range contents {
		var texts []any
		var calls []map[string]any
		for _, p := range providertest.GeminiParts(c) {
			if fc, ok := p["functionCall"].(map[string]any); ok {
				calls = append(calls, fc)
			} else if p["text"] != nil {
				texts = append(texts, p["text"])
			}
		}
		if len(calls) > 0 {
			callAt = i
			if c["role"] != "model" || len(calls) != 1 || at(calls[0], "name") != "area" || !jsonSame(at(calls[0], "args"), e2eArgs) ||
				len(texts) != 1 || texts[0] != "Let me compute the area." {
				t.Errorf("the call turn = %v, want the text and the call", c)
			}
		}
	}
	if callAt < 0 || callAt+1 >= len(contents) {
		t.Fatalf("no function call turn followed by an answer: %s", res.afterTool.Body)
	}
	fr := at(contents[callAt+1], "parts", 0, "functionResponse")
	if at(fr, "name") != "area" || !strings.Contains(string(mustJSON(at(fr, "response"))), "12") {
		t.Errorf("the answer turn = %v", contents[callAt+1])
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// An agent on Claude Sonnet 4.5 on Bedrock (its global cross-region
// inference profile) through the AWS SDK: every
// request is signed for the configured region (the fake checks the
// signature over the body that arrived, so the adapter's edits must be
// made before signing); the body is Bedrock's Anthropic one, without keys
// Bedrock refuses; a temperature of 0, which langchaingo drops, is sent
// (and, as this model takes only one of temperature and top_p, no
// top_p); the image is a base64 block; the tool_use id comes back in the
// tool_result; a ThrottlingException is retried; usage and cost are
// Claude Sonnet 4.5's, which Bedrock charges at Anthropic's list price
// through the global profile (see TestBedrockProfileCosts for the others).
func TestAgentOnBedrockWireEndToEnd(t *testing.T) {
	providertest.SetBedrockEnv(t, "eu-west-3") // Config.Region must win
	srv := providertest.NewBedrockServer(t)
	const id = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"
	res := runE2E(t, e2eCase{
		model:  "bedrock/" + id,
		cfg:    provider.Config{BaseURL: srv.BaseURL(), Region: "us-west-2"},
		params: provider.Params{MaxTokens: ptrTo(512), Temperature: ptrTo(0.0)},
		srv:    srv, tools: true, wireID: "toolu_bdrk_01A2b3C4d5", callID: "toolu_bdrk_01A2b3C4d5", toolText: "Let me compute the area.",
		fail:     providertest.Reply{Status: 429, ErrorType: "ThrottlingException", ErrorMessage: "Too many requests, please wait before trying again."},
		failKind: provider.ErrRateLimit,
		usage:    [3]providertest.Usage{{Input: 500, Output: 30}, {Input: 560, Output: 7}, {Input: 600, Output: 5}},
		price:    provider.DefaultPrices()["claude-sonnet-4-5"],
	})
	for i, r := range res.reqs {
		if r.Path != "/model/"+id+"/invoke" {
			t.Errorf("request %d: path %s, want InvokeModel of %s", i, r.Path, id)
		}
		if auth := r.Header.Get("Authorization"); !strings.Contains(auth, "Credential="+providertest.BedrockAccessKeyID+"/") ||
			!strings.Contains(auth, "/us-west-2/bedrock/aws4_request") {
			t.Errorf("request %d: Authorization %q, want a signature for us-west-2", i, auth)
		}
	}
	first := res.first.JSON()
	if temp, ok := first["temperature"]; first["anthropic_version"] != "bedrock-2023-05-31" || first["system"] != e2eSystem ||
		first["max_tokens"] != 512.0 || !ok || temp != 0.0 {
		t.Errorf("anthropic_version %v, system %v, max_tokens %v, temperature %v (sent %v); want bedrock-2023-05-31, the system prompt, 512, 0",
			first["anthropic_version"], first["system"], first["max_tokens"], temp, ok)
	}
	absent(t, "the body", first, "top_p", "top_k", "stop_sequences")
	tool := at(first, "tools", 0)
	if at(tool, "name") != "area" || at(tool, "description") != "Area of a rectangle." || !areaSchemaOK(at(tool, "input_schema")) {
		t.Errorf("tools = %v", first["tools"])
	}
	var sawImage bool
	for _, m := range providertest.Messages(first) {
		for _, b := range providertest.AnthropicBlocks(m) {
			if b["type"] == "image" && m["role"] == "user" && at(b, "source", "type") == "base64" &&
				at(b, "source", "media_type") == "image/png" && at(b, "source", "data") == base64.StdEncoding.EncodeToString(e2ePNG) {
				sawImage = true
			}
		}
	}
	if !sawImage {
		t.Errorf("the first request lacks the image block: %s", res.first.Body)
	}
	var use, result map[string]any
	for _, m := range providertest.Messages(res.afterTool.JSON()) {
		blocks := providertest.AnthropicBlocks(m)
		for i, b := range blocks {
			switch b["type"] {
			case "tool_use":
				use = b
				if m["role"] != "assistant" || i == 0 || blocks[0]["text"] != "Let me compute the area." {
					t.Errorf("the assistant turn with the call = %v, want its text then the tool_use", m)
				}
			case "tool_result":
				result = b
			}
		}
	}
	if at(use, "id") != "toolu_bdrk_01A2b3C4d5" || at(use, "name") != "area" || !jsonSame(at(use, "input"), e2eArgs) ||
		at(result, "tool_use_id") != "toolu_bdrk_01A2b3C4d5" || !strings.Contains(string(mustJSON(at(result, "content"))), "12") {
		t.Errorf("tool_use %v, tool_result %v", use, result)
	}
}

// An agent on Ollama's native chat API (/api/chat), which has tools (the
// request's "tools", the reply's message.tool_calls, the answer a "tool"
// message) and images (base64 in the message's "images"): the model is a
// local one, priced by Config.Prices; a 500 is retried; usage is
// prompt_eval_count and eval_count; options carry num_predict, top_p and
// seed and no temperature.
func TestAgentOnOllamaWireEndToEnd(t *testing.T) {
	res := runOllamaE2E(t, true)
	checkOllamaFirst(t, res.first)
	first := res.first.JSON()
	tool := at(first, "tools", 0)
	if at(tool, "type") != "function" || at(tool, "function", "name") != "area" || !areaSchemaOK(at(tool, "function", "parameters")) {
		t.Errorf("tools = %v", first["tools"])
	}
	msgs := providertest.Messages(res.afterTool.JSON())
	var call, answer map[string]any
	for i, m := range msgs {
		if m["role"] == "assistant" && m["tool_calls"] != nil {
			call = m
			if i+1 < len(msgs) {
				answer = msgs[i+1]
			}
		}
	}
	if at(call, "tool_calls", 0, "function", "name") != "area" || !jsonSame(at(call, "tool_calls", 0, "function", "arguments"), e2eArgs) ||
		at(answer, "role") != "tool" || !strings.HasSuffix(fmt.Sprint(at(answer, "content")), "\n12") {
		t.Errorf("the tool round on the wire: call %v, answer %v\n%s", call, answer, res.afterTool.Body)
	}
}

// runOllamaE2E is runE2E on a local Ollama server, its model priced by
// Config.Prices, a 500 retried, with the area tool when tools is set.
func runOllamaE2E(t *testing.T, tools bool) e2eResult {
	t.Setenv("OLLAMA_HOST", "")
	srv := providertest.NewOllamaServer(t)
	price := provider.Price{Input: 0.05, Output: 0.25}
	c := e2eCase{
		model:  "ollama/mistral-small3.2",
		cfg:    provider.Config{BaseURL: srv.BaseURL(), Prices: map[string]provider.Price{"mistral-small3.2": price}},
		params: provider.Params{MaxTokens: ptrTo(512), TopP: ptrTo(0.9), Seed: ptrTo(7)},
		srv:    srv, tools: tools,
		fail:     providertest.Reply{Status: 500},
		failKind: provider.ErrServer,
		usage:    e2eUsage,
		price:    price,
	}
	if tools {
		c.callID = "call_1"
	}
	return runE2E(t, c)
}

// checkOllamaFirst checks the first request of an Ollama run: the system
// prompt, the image as base64 in the user's images, the prompt, and the
// options set.
func checkOllamaFirst(t *testing.T, r providertest.Request) {
	t.Helper()
	if r.Path != "/api/chat" {
		t.Errorf("path %s", r.Path)
	}
	body := r.JSON()
	if body["model"] != "mistral-small3.2" {
		t.Errorf("model %v", body["model"])
	}
	msgs := providertest.Messages(body)
	var sawImage, sawAsk bool
	for _, m := range msgs {
		if m["role"] == "user" && jsonSame(m["images"], []string{base64.StdEncoding.EncodeToString(e2ePNG)}) {
			sawImage = true
		}
		if m["role"] == "user" && strings.Contains(at(m, "content").(string), e2eAsk) {
			sawAsk = true
		}
	}
	if len(msgs) == 0 || msgs[0]["role"] != "system" || msgs[0]["content"] != e2eSystem || !sawImage || !sawAsk {
		t.Errorf("messages: system, image %v, prompt %v: %s", sawImage, sawAsk, r.Body)
	}
	opts, _ := body["options"].(map[string]any)
	if opts["num_predict"] != 512.0 || opts["top_p"] != 0.9 || opts["seed"] != 7.0 {
		t.Errorf("options = %v, want num_predict 512, top_p 0.9, seed 7", opts)
	}
	absent(t, "options", opts, "temperature", "top_k")
}

// The same on Ollama without a tool: the image, the retried 500, the
// parse retry, usage and cost (from Config.Prices), and the tree.
func TestAgentOnOllamaWireWithoutTools(t *testing.T) {
	res := runOllamaE2E(t, false)
	checkOllamaFirst(t, res.first)
	absent(t, "the body", res.first.JSON(), "tools")
}

// An agent on Mistral (mistral-small-latest), whose API speaks OpenAI's
// protocol but refuses fields it does not know (422) and tool call ids
// that are not 9 letters and digits: the request carries max_tokens (not
// max_completion_tokens), random_seed (not seed), top_p, no temperature
// and no stream_options; the image is an image_url part, the call id
// comes back in the tool message; a 429 is retried; usage and cost are
// mistral-small-latest's list price.
func TestAgentOnMistralWireEndToEnd(t *testing.T) {
	t.Setenv("MISTRAL_BASE_URL", "")
	srv := providertest.NewMistralServer(t)
	res := runE2E(t, e2eCase{
		model:  "mistral/mistral-small-latest",
		cfg:    provider.Config{APIKey: "mistral-test-key", BaseURL: srv.BaseURL()},
		params: provider.Params{MaxTokens: ptrTo(512), TopP: ptrTo(0.9), Seed: ptrTo(7)},
		srv:    srv, tools: true, wireID: "aB3xK9mP2", callID: "aB3xK9mP2",
		fail:     providertest.Reply{Status: 429},
		failKind: provider.ErrRateLimit,
		usage:    [3]providertest.Usage{{Input: 700, Output: 20}, {Input: 760, Output: 8}, {Input: 800, Output: 6}},
		price:    provider.DefaultPrices()["mistral-small-latest"],
	})
	for i, r := range res.reqs {
		if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer mistral-test-key" {
			t.Errorf("request %d: %s, Authorization %q", i, r.Path, r.Header.Get("Authorization"))
		}
	}
	first := res.first.JSON()
	if first["model"] != "mistral-small-latest" || first["max_tokens"] != 512.0 || first["top_p"] != 0.9 || first["random_seed"] != 7.0 {
		t.Errorf("model %v, max_tokens %v, top_p %v, random_seed %v", first["model"], first["max_tokens"], first["top_p"], first["random_seed"])
	}
	absent(t, "the body", first, "temperature", "seed", "max_completion_tokens", "stream_options")
	checkOpenAIStyleFirst(t, first)
	checkOpenAIStyleToolRound(t, res.afterTool.JSON(), "aB3xK9mP2")
}

// checkOpenAIStyleFirst checks a chat-completions request's system
// message, image part, prompt and tool.
func checkOpenAIStyleFirst(t *testing.T, body map[string]any) {
	t.Helper()
	msgs := providertest.Messages(body)
	var sawImage, sawAsk bool
	for _, m := range msgs {
		if m["role"] != "user" {
			continue
		}
		if m["content"] == e2eAsk {
			sawAsk = true
		}
		for _, p := range objects(m["content"]) {
			url, _ := at(p, "image_url", "url").(string)
			if s, ok := p["image_url"].(string); ok {
				url = s
			}
			if p["type"] == "image_url" && url == "data:image/png;base64,"+base64.StdEncoding.EncodeToString(e2ePNG) {
				sawImage = true
			}
			if p["type"] == "text" && p["text"] == e2eAsk {
				sawAsk = true
			}
		}
	}
	if len(msgs) == 0 || msgs[0]["role"] != "system" || msgs[0]["content"] != e2eSystem || !sawImage || !sawAsk {
		t.Errorf("messages: system first, image %v, prompt %v:\n%v", sawImage, sawAsk, msgs)
	}
	tool := at(body, "tools", 0)
	if at(tool, "type") != "function" || at(tool, "function", "name") != "area" || at(tool, "function", "description") != "Area of a rectangle." ||
		!areaSchemaOK(at(tool, "function", "parameters")) {
		t.Errorf("tools = %v", body["tools"])
	}
}

// checkOpenAIStyleToolRound checks that the request after the tool round
// sends the assistant's call and the tool message answering it, with id.
func checkOpenAIStyleToolRound(t *testing.T, body map[string]any, id string) {
	t.Helper()
	msgs := providertest.Messages(body)
	for i, m := range msgs {
		if m["role"] != "assistant" || m["tool_calls"] == nil {
			continue
		}
		call := at(m, "tool_calls", 0)
		if at(call, "id") != id || at(call, "function", "name") != "area" || !jsonSame(at(call, "function", "arguments"), e2eArgs) {
			t.Errorf("the call on the wire = %v", call)
		}
		if i+1 >= len(msgs) || msgs[i+1]["role"] != "tool" || msgs[i+1]["tool_call_id"] != id || !strings.HasSuffix(fmt.Sprint(msgs[i+1]["content"]), "\n12") {
			t.Errorf("the call is not answered by a tool message with its id: %v", msgs[i+1:])
		}
		return
	}
	t.Errorf("no assistant message with the tool call: %v", msgs)
}

func objects(v any) []map[string]any {
	raw, _ := v.([]any)
	var out []map[string]any
	for _, e := range raw {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// An agent on an OpenAI-compatible server (llama.cpp, vLLM) reached
// through OPENAI_BASE_URL, or through base_url, with no API key: the model
// is priced by Config.Prices; a 503 "Loading model" is retried; the
// request carries max_tokens (what such servers take), top_p and no
// temperature; the image is a data URL and the call id comes back.
func TestAgentOnOpenAICompatibleServerEndToEnd(t *testing.T) {
	for _, via := range []string{"OPENAI_BASE_URL", "base_url"} {
		t.Run(via, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", "")
			t.Setenv("OPENAI_BASE_URL", "")
			t.Setenv("OPENAI_API_BASE", "")
			srv := providertest.NewOpenAIServer(t)
			price := provider.Price{Input: 0.10, Output: 0.40}
			cfg := provider.Config{Prices: map[string]provider.Price{"llama3.1": price}}
			if via == "base_url" {
				cfg.BaseURL = srv.BaseURL()
			} else {
				t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
			}
			res := runE2E(t, e2eCase{
				model:  "openai/llama3.1",
				cfg:    cfg,
				params: provider.Params{MaxTokens: ptrTo(512), TopP: ptrTo(0.9)},
				srv:    srv, tools: true, wireID: "call_llama_0", callID: "call_llama_0",
				fail:     providertest.Reply{Status: 503, ErrorType: "unavailable_error", ErrorMessage: "Loading model"},
				failKind: provider.ErrServer,
				usage:    e2eUsage,
				price:    price,
			})
			for i, r := range res.reqs {
				if r.Path != "/v1/chat/completions" {
					t.Errorf("request %d: path %s", i, r.Path)
				}
			}
			first := res.first.JSON()
			if first["model"] != "llama3.1" || first["max_tokens"] != 512.0 || first["top_p"] != 0.9 {
				t.Errorf("model %v, max_tokens %v, top_p %v", first["model"], first["max_tokens"], first["top_p"])
			}
			absent(t, "the body", first, "temperature", "max_completion_tokens", "seed")
			checkOpenAIStyleFirst(t, first)
			checkOpenAIStyleToolRound(t, res.afterTool.JSON(), "call_llama_0")
		})
	}
}

// What a Bedrock reply costs depends on the inference profile: AWS
// charges Claude Sonnet 4.5 (as Haiku 4.5 and Opus 4.5) at Anthropic's
// list price through the global cross-region profile ("global.") and 10%
// more through a geographic one ("us.", "eu.", ...): Bedrock's user guide
// says global cross-region inference "offers approximately 10% savings on
// input and output token prices compared to geographic cross-region
// inference", and its price list has $3.30/$16.50 per million tokens for
// the latter against $3/$15. Older models cost the same either way.
func TestBedrockProfileCosts(t *testing.T) {
	providertest.SetBedrockEnv(t, "us-east-1")
	u := providertest.Usage{Input: 10000, Output: 1000}
	for _, tc := range []struct {
		id     string
		list   string
		factor float64
	}{
		{"global.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5", 1},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5", 1.1},
		{"eu.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5", 1.1},
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4", 1},
	} {
		t.Run(tc.id, func(t *testing.T) {
			srv := providertest.NewBedrockServer(t, providertest.Reply{Text: "ok", Usage: u})
			m, err := provider.Open(t.Context(), "bedrock/"+tc.id, provider.Config{BaseURL: srv.BaseURL()})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Generate(t.Context(), &provider.Request{Messages: []*dialog.Message{{Role: dialog.RoleUser, Content: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.factor * listCost(provider.DefaultPrices()[tc.list], wantUsage(u))
			if resp.Message.Usage != wantUsage(u) || !sameUSD(resp.Message.USD, want) {
				t.Errorf("usage %+v, $%.6f; want %+v, $%.6f (%.1fx %s's list price)", resp.Message.Usage, resp.Message.USD, wantUsage(u), want, tc.factor, tc.list)
			}
		})
	}
}
