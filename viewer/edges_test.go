package viewer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/inspect"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/provider"
	"github.com/lllm-go/lllm/tactics"
)

// edgeModel answers from a list: a reply text, or "ERR" for a network failure.
type edgeModel struct {
	mu      sync.Mutex
	replies []string
}

func (s *edgeModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.replies) == 0 {
		return nil, errors.New("edgeModel: no more replies")
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	if r == "ERR" {
		return nil, &provider.Error{Kind: provider.ErrNetwork, Provider: "edge", Err: errors.New("dial tcp 127.0.0.1:9: connection refused")}
	}
	return &provider.Response{Message: dialog.Message{Role: dialog.RoleAssistant, Content: r, Model: "edge/test",
		Usage: dialog.Usage{InputTokens: 10, OutputTokens: len(r)}, USD: 1e-5}}, nil
}

// edgeWalk returns every node of a run's tree through the API, depth first, paging as the page does.
func edgeWalk(t *testing.T, h http.Handler, run string) []nodeJSON {
	t.Helper()
	var out []nodeJSON
	var walk func(parent string)
	walk = func(parent string) {
		for off := 0; ; {
			var p treePage
			get(t, h, fmt.Sprintf("/api/runs/%s/tree?parent=%s&offset=%d&limit=7", run, parent, off), 200, &p)
			for _, n := range p.Nodes {
				out = append(out, n)
				walk(n.ID)
			}
			off += len(p.Nodes)
			if len(p.Nodes) == 0 || off >= p.Total {
				return
			}
		}
	}
	walk("")
	return out
}

// edgeMessages pages through a dialog's transcript with limit and checks each page's bounds.
func edgeMessages(t *testing.T, h http.Handler, run, dlg string, limit int) []messageJSON {
	t.Helper()
	var out []messageJSON
	for off := 0; ; {
		var p messagePage
		get(t, h, fmt.Sprintf("/api/runs/%s/dialogs/%s/messages?offset=%d&limit=%d", run, dlg, off, limit), 200, &p)
		size := 0
		for i, m := range p.Messages {
			if m.Error != "" || m.Index != off+i {
				t.Fatalf("%s: message %d of the page at %d: %+v", dlg, i, off, m)
			}
			size += len(m.Message)
		}
		if len(p.Messages) > 1 && size > maxPageBytes {
			t.Errorf("%s: a page of %d messages holds %d bytes", dlg, len(p.Messages), size)
		}
		out = append(out, p.Messages...)
		if p.Next != off+len(p.Messages) {
			t.Fatalf("%s: page at %d has %d messages but next %d", dlg, off, len(p.Messages), p.Next)
		}
		if p.Next >= p.Total {
			return out
		}
		if p.Next == off {
			t.Fatalf("%s: page at %d did not advance", dlg, off)
		}
		off = p.Next
	}
}

// edgeSameAsRebuild checks that every dialog's transcript through the API is logs.Rebuild's.
func edgeSameAsRebuild(t *testing.T, h http.Handler, root, run string, limit int) {
	t.Helper()
	r, err := logs.Open(root, run)
	if err != nil {
		t.Fatal(err)
	}
	forest, _, err := r.Forest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range forest.IDs() {
		want := forest.Dialog(id).Messages()
		got := edgeMessages(t, h, run, id, limit)
		if len(got) != len(want) {
			t.Fatalf("dialog %s: %d messages, Rebuild has %d", id, len(got), len(want))
		}
		for i := range want {
			var m dialog.Message
			if err := json.Unmarshal(got[i].Message, &m); err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(&m)
			b, _ := json.Marshal(want[i])
			if !bytes.Equal(a, b) {
				t.Fatalf("dialog %s message %d:\n got %.300s\nwant %.300s", id, i, a, b)
			}
		}
	}
}

// The viewer's outcome badges agree with `lllm tree` when the tactic goes on after a failed turn.
func TestEdgeOutcomesAfterLaterTurns(t *testing.T) {
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "test"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ask := dialog.MustPrompt("ask", "{q} Answer in <answer></answer>.", dialog.WithParser(&dialog.TagParser{XMLTags: []string{"answer"}}))
	a := &tactics.Agent{Name: "coder", System: dialog.MustPrompt("sys", "You add."), ModelName: "edge/test", Log: w,
		Limits: tactics.Limits{MaxExceptionRetry: 1, MaxRetries: -1},
		// turn 1: retried then ok; turn 2: network failure; turn 3: never parses; turn 4: ok.
		Model: &edgeModel{replies: []string{"four", "<answer>4</answer>", "ERR", "six?", "still six?", "<answer>10</answer>"}}}
	if err := a.Open("main", nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"2+2?", "3+3?", "4+4?", "5+5?"} {
		if err := a.ReceivePrompt(ask, map[string]any{"q": q}); err != nil {
			t.Fatal(err)
		}
		_, _, _ = a.Respond(t.Context())
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	h := New(root, Options{})
	nodes := edgeWalk(t, h, run.ID)
	var got []string
	for _, n := range nodes {
		if n.Outcome != "" {
			got = append(got, n.Alias+":"+n.Outcome)
		}
	}
	want := "main#1:retried main#2:ok main#1:error main#1:retried main#2:failed main#1:ok"
	if strings.Join(got, " ") != want {
		t.Errorf("outcomes %q\n     want %q", strings.Join(got, " "), want)
	}
	tree, _, err := inspect.Load(t.Context(), run, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if tn := tree.Node(n.ID); tn == nil || tn.Failed != n.Failed {
			t.Errorf("dialog %s (%s): viewer failed=%v (%s), lllm tree failed=%v (%s)", n.ID[:8], n.Alias, n.Failed, n.Outcome, tn != nil && tn.Failed, tn.FailReason)
		}
	}
}

// edgeRichRun writes a run with every record kind of format 1.3 (see inspect's edges test) and returns the
// network-failed attempt of turn 2.
func edgeRichRun(t *testing.T, root string) (*logs.Run, string) {
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "outer", Task: json.RawMessage(`{"q":"2+2 ✓"}`)}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(r *logs.Record) {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	call := func(dlg string, u dialog.Usage, reply *logs.MessageRef, text string, cerr *logs.CallError) {
		rec(&logs.Record{Kind: logs.KindModelCall, Dialog: dlg, ModelCall: &logs.ModelCall{Agent: "coder", Model: "edge/test", Call: 1, Attempt: 1,
			Alias: "main", Turn: 1, RequestDigest: "sha256:x", Reply: reply, Text: text, Usage: u, USD: 1e-4, Error: cerr}})
	}
	reply := func(wc *dialog.Dialog, m dialog.Message) dialog.Message {
		m.Role, m.Name = dialog.RoleAssistant, "coder"
		must(wc.Append(m))
		call(wc.ID(), m.Usage, &logs.MessageRef{Dialog: wc.ID(), Index: wc.Len() - 1}, "", nil)
		return m
	}
	rec(&logs.Record{Kind: logs.KindTacticStart, TacticStart: &logs.TacticStart{Session: "s1", Tactic: "outer"}})
	main := must(dialog.New("coder", dialog.WithAlias("main"), dialog.WithSink(w)))
	must(main.PutText("You add.", dialog.AsRole(dialog.RoleSystem), dialog.From("system")))
	must(main.PutText("Add 2 and 2 with the tool."))
	w1 := must(main.Fork(0, 0, dialog.WithAlias("main#1")))
	rec(&logs.Record{Kind: logs.KindContext, Dialog: w1.ID(), Context: &logs.ContextAction{Agent: "coder", Manager: "summary", Action: "summary",
		MessagesBefore: 2, MessagesAfter: 2, Archived: 1, Summary: "The user adds."}})
	call(w1.ID(), dialog.Usage{InputTokens: 30, CacheWriteTokens: 10, OutputTokens: 5}, nil, "The user adds.", nil)
	reply(w1, dialog.Message{FunctionCalls: []dialog.FunctionCall{{ID: "c1", Name: "add", Arguments: json.RawMessage(`{"a":2,"b":"two"}`)}}})
	rec(&logs.Record{Kind: logs.KindToolCall, Dialog: w1.ID(), ToolCall: &logs.ToolCall{Agent: "coder", CallID: "c1", Name: "add", Error: "b is not a number"}})
	must(w1.Append(dialog.Message{Role: dialog.RoleTool, Name: "add", ToolCallID: "c1", Content: "Error: b is not a number",
		FunctionCalls: []dialog.FunctionCall{{ID: "c1", Name: "add", Error: "b is not a number"}}}))
	must(main.Append(reply(w1, dialog.Message{Content: "<answer>4</answer>", Usage: dialog.Usage{InputTokens: 50, CacheWriteTokens: 5, OutputTokens: 8}})))
	must(main.PutText("And 3+3?"))
	w2 := must(main.Fork(0, 0, dialog.WithAlias("main#1")))
	call(w2.ID(), dialog.Usage{}, nil, "", &logs.CallError{Type: "network", Message: "dial tcp 127.0.0.1:9: connection refused"})
	must(main.PutText("And 4+4?"))
	w3 := must(main.Fork(0, 0, dialog.WithAlias("main#1")))
	reply(w3, dialog.Message{Content: "eight"})
	w3b := must(w3.Fork(0, 0, dialog.WithAlias("main#2")))
	must(w3b.PutText("Your reply could not be parsed. Answer again."))
	for _, typ := range []string{"rate_limit", "context_length", "auth", "timeout", "server", "bad_request", "cancelled", "other"} {
		call(w3b.ID(), dialog.Usage{}, nil, "", &logs.CallError{Type: typ, Message: typ + " failure"})
	}
	must(main.Append(reply(w3b, dialog.Message{Content: "<answer>8</answer>", Usage: dialog.Usage{InputTokens: 70, OutputTokens: 8}})))
	rec(&logs.Record{Kind: logs.KindTacticStart, TacticStart: &logs.TacticStart{Session: "s2", Parent: "s1", Tactic: "inner"}})
	hd := must(dialog.New("helper", dialog.WithAlias("main"), dialog.WithSink(w)))
	must(hd.PutText("Check 8."))
	hw := must(hd.Fork(0, 0, dialog.WithAlias("main#1")))
	must(hd.Append(reply(hw, dialog.Message{Content: "fine"})))
	rec(&logs.Record{Kind: logs.KindTacticEnd, TacticEnd: &logs.TacticEnd{Session: "s2", Tactic: "inner", Status: logs.StatusOK}})
	must(dialog.New("idle", dialog.WithAlias("main"), dialog.WithSink(w)))
	rec(&logs.Record{Kind: logs.KindTacticEnd, TacticEnd: &logs.TacticEnd{Session: "s1", Tactic: "outer", Status: logs.StatusOK}})
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK, Result: json.RawMessage(`8`)}); err != nil {
		t.Fatal(err)
	}
	return run, w2.ID()
}

// A run with every record kind shows run_end's totals, every dialog once, and the right badges.
func TestEdgeRichRunMatchesRunEnd(t *testing.T) {
	root := t.TempDir()
	run, netFailed := edgeRichRun(t, root)
	h := New(root, Options{})
	var rd runDetail
	get(t, h, "/api/runs/"+run.ID, 200, &rd)
	if rd.Totals == nil || rd.Status != "ok" || string(rd.Result) != "8" {
		t.Fatalf("run: %+v", rd)
	}
	tot := *rd.Totals
	data := must(os.ReadFile(run.Path()))
	if rd.Dialogs != tot.Dialogs || rd.Messages != tot.Messages || rd.Records != bytes.Count(data, []byte("\n")) ||
		rd.Bytes != int64(len(data)) || rd.IndexedBytes != int64(len(data)) || len(rd.Warnings) != 0 {
		t.Errorf("run detail %+v; run_end totals %+v, %d lines", rd, tot, bytes.Count(data, []byte("\n")))
	}
	nodes := edgeWalk(t, h, run.ID)
	seen := map[string]bool{}
	calls := 0
	for _, n := range nodes {
		if seen[n.ID] {
			t.Errorf("dialog %s listed twice", n.ID)
		}
		seen[n.ID] = true
		calls += n.ModelCalls
	}
	if len(nodes) != tot.Dialogs || calls != tot.ModelCalls {
		t.Errorf("tree: %d dialogs, %d model calls; run_end: %d, %d", len(nodes), calls, tot.Dialogs, tot.ModelCalls)
	}
	var got []string
	for _, n := range nodes {
		got = append(got, fmt.Sprintf("%s/%s:%s:%d", n.Owner, n.Alias, n.Outcome, n.Errors))
	}
	want := "coder/main::0 coder/main#1:ok:0 coder/main#1:error:1 coder/main#1:retried:0 coder/main#2:ok:8 helper/main::0 helper/main#1:ok:0 idle/main::0"
	if strings.Join(got, " ") != want {
		t.Errorf("dialogs %q\n    want %q", strings.Join(got, " "), want)
	}
	var info dialogInfo
	get(t, h, "/api/runs/"+run.ID+"/dialogs/"+netFailed, 200, &info)
	if !info.Node.Failed || !strings.HasPrefix(info.Node.LastError, "network: dial tcp") {
		t.Errorf("the network failure: %+v", info.Node)
	}
	edgeSameAsRebuild(t, h, root, run.ID, 3)
}

// A live log written in pieces (a record split inside a UTF-8 rune, a newline alone) is followed exactly.
func TestEdgeLiveAppendsInPieces(t *testing.T) {
	root := t.TempDir()
	_, run, d := liveRun(t, root, "first")
	h := New(root, Options{})
	base := "/api/runs/" + run.ID
	path := run.Path()
	line := func(seq, index int, content string) string {
		return fmt.Sprintf(`{"seq":%d,"ts":"2026-01-01T00:00:00Z","kind":"message","dialog":"%s","index":%d,"message":{"role":"user","content":%q}}`+"\n", seq, d.ID(), index, content)
	}
	r1, r2 := line(4, 1, "héllo 世界 🖋"), line(5, 2, "second")
	fork := `{"seq":6,"ts":"2026-01-01T00:00:00Z","kind":"fork","dialog":"f1","fork":{"id":"f1","owner":"coder","alias":"side","parent_id":"` + d.ID() + `","split_point":3,"parent_len":3,"depth":1}}` + "\n"
	cut := strings.Index(r1, "世") + 1 // inside the rune
	steps := []struct {
		piece         string
		msgs, dialogs int
		pending       bool
	}{
		{r1[:cut], 1, 1, true},
		{r1[cut:] + r2[:len(r2)-1], 2, 1, true}, // r2 lacks only its newline
		{"\n", 3, 1, false},
		{fork[:30], 3, 1, true},
		{fork[30:], 3, 2, false},
	}
	for i, s := range steps {
		appendLine(t, root, run.ID, s.piece)
		size := must(os.Stat(path)).Size()
		var rd runDetail
		get(t, h, base, 200, &rd)
		whole := int64(bytes.LastIndexByte(must(os.ReadFile(path)), '\n') + 1)
		if rd.Messages != s.msgs || rd.Dialogs != s.dialogs || rd.IndexedBytes != whole || rd.Bytes != size ||
			(len(rd.Warnings) == 1) != s.pending || rd.Status != "running" {
			t.Fatalf("step %d: %+v", i, rd)
		}
	}
	msgs := edgeMessages(t, h, run.ID, "f1", 1)
	if len(msgs) != 3 || contentOf(t, msgs[1].Message) != "héllo 世界 🖋" || !msgs[2].Inherited || contentOf(t, msgs[2].Message) != "second" {
		t.Errorf("the fork's transcript: %+v", msgs)
	}
}

// A log truncated in place (same file, shorter) is indexed again.
func TestEdgeTruncatedInPlace(t *testing.T) {
	root := t.TempDir()
	run, _ := edgeRichRun(t, root)
	h := New(root, Options{})
	var rd runDetail
	get(t, h, "/api/runs/"+run.ID, 200, &rd)
	data := must(os.ReadFile(run.Path()))
	if err := os.Truncate(run.Path(), int64(bytes.IndexByte(data, '\n')+1)); err != nil {
		t.Fatal(err)
	}
	rd = runDetail{} // fields the new answer omits must not stay from the old one
	get(t, h, "/api/runs/"+run.ID, 200, &rd)
	var tp treePage
	get(t, h, "/api/runs/"+run.ID+"/tree", 200, &tp)
	if rd.Dialogs != 0 || rd.Messages != 0 || rd.Status != "interrupted" || rd.Totals != nil || tp.Total != 0 || len(tp.Nodes) != 0 {
		t.Errorf("after truncation: %+v, tree %+v", rd, tp)
	}
}

// A log overwritten in place by a longer one (cp onto it: same inode) is indexed again, not extended.
func TestEdgeRewrittenInPlaceByLongerLog(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	_, small, _ := liveRun(t, root, "the small run")
	big, _ := edgeRichRun(t, other)
	h := New(root, Options{})
	var rd runDetail
	get(t, h, "/api/runs/"+small.ID, 200, &rd)
	data := must(os.ReadFile(big.Path()))
	if err := os.WriteFile(small.Path(), data, 0o644); err != nil { // O_TRUNC: the same file
		t.Fatal(err)
	}
	rd = runDetail{}
	get(t, h, "/api/runs/"+small.ID, 200, &rd)
	if rd.Tactic != "outer" || rd.Status != "ok" || rd.Totals == nil || rd.Dialogs != rd.Totals.Dialogs ||
		rd.Messages != rd.Totals.Messages || len(rd.Warnings) != 0 {
		t.Errorf("after the log was overwritten: %+v", rd)
	}
}

// A crashed run (no run_end, a torn last line, its writer's lock gone) is interrupted everywhere.
func TestEdgeCrashedRunInterrupted(t *testing.T) {
	root := t.TempDir()
	w, run, d := liveRun(t, root, "question")
	work := must(d.Fork(0, 0, dialog.WithAlias("main#1")))
	flush(t, w)
	appendLine(t, root, run.ID, `{"seq":9,"ts":"2026-01-01T00:00:00Z","kind":"message","dialog":"`+work.ID()+`","index":1,"message":{"role":"assi`)
	h := New(root, Options{})
	status := func() (string, runDetail, dialogInfo) {
		var list struct{ Runs []logs.RunInfo }
		var rd runDetail
		var info dialogInfo
		get(t, h, "/api/runs", 200, &list)
		get(t, h, "/api/runs/"+run.ID, 200, &rd)
		get(t, h, "/api/runs/"+run.ID+"/dialogs/"+work.ID(), 200, &info)
		if len(list.Runs) != 1 {
			t.Fatalf("runs: %+v", list.Runs)
		}
		return string(list.Runs[0].Status), rd, info
	}
	if ls, rd, info := status(); ls != "running" || rd.Status != "running" || info.RunStatus != "running" || info.Node.Outcome != "pending" {
		t.Fatalf("while written: list %s, run %s, dialog %s %s", ls, rd.Status, info.RunStatus, info.Node.Outcome)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ls, rd, info := status()
	if ls != "interrupted" || rd.Status != "interrupted" || info.RunStatus != "interrupted" || info.Node.Outcome != "failed" || !info.Node.Failed {
		t.Errorf("after the crash: list %s, run %s, dialog %s %s", ls, rd.Status, info.RunStatus, info.Node.Outcome)
	}
	if rd.Dialogs != 2 || rd.Messages != 1 || len(rd.Warnings) != 1 || !strings.Contains(rd.Warnings[0], "incomplete") {
		t.Errorf("the crashed run: %+v", rd)
	}
}

// A run with 0 model calls whose only dialog is empty, and one with no dialog, give empty arrays, not errors.
func TestEdgeEmptyRuns(t *testing.T) {
	root := t.TempDir()
	w, one, err := logs.Create(root, logs.RunStart{Tactic: "idle"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := must(dialog.New("idle", dialog.WithAlias("main"), dialog.WithSink(w)))
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	w, none, err := logs.Create(root, logs.RunStart{Tactic: "idle"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	h := New(root, Options{})
	var tp treePage
	get(t, h, "/api/runs/"+one.ID+"/tree", 200, &tp)
	if tp.Total != 1 || len(tp.Nodes) != 1 || tp.Nodes[0].Messages != 0 || tp.Nodes[0].ModelCalls != 0 || tp.Nodes[0].Outcome != "" {
		t.Errorf("one empty dialog: %+v", tp)
	}
	var mp messagePage
	body := get(t, h, "/api/runs/"+one.ID+"/dialogs/"+d.ID()+"/messages", 200, &mp)
	if mp.Total != 0 || mp.Next != 0 || !strings.Contains(body, `"messages":[]`) {
		t.Errorf("its transcript: %s", body)
	}
	body = get(t, h, "/api/runs/"+none.ID+"/tree", 200, &tp)
	if tp.Total != 0 || !strings.Contains(body, `"nodes":[]`) {
		t.Errorf("no dialog: %s", body)
	}
	var rd runDetail
	get(t, h, "/api/runs/"+none.ID, 200, &rd)
	if rd.Dialogs != 0 || rd.Roots != 0 || rd.Totals == nil || rd.Totals.ModelCalls != 0 || rd.Status != "ok" {
		t.Errorf("no dialog: %+v", rd)
	}
}

// Huge unicode messages (beyond the 4 MB read buffer, two exceed a page) and images, in a dialog and a fork, page whole.
func TestEdgeHugeUnicodeAndImages(t *testing.T) {
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "vision"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := must(dialog.New("geometer", dialog.WithAlias("main"), dialog.WithSink(w)))
	must(d.PutText("start ✓ \u2028 世界"))
	for i := range 2 {
		must(d.PutText(fmt.Sprint(i, "世界🖋\u2028") + strings.Repeat("x", 4_300_000) + "世界🖋\u2028"))
		must(d.PutImage(dialog.ImageBytes(onePixelPNG), "pixel ✓ "+fmt.Sprint(i)))
	}
	f := must(d.Fork(1, 1, dialog.WithAlias("tail")))
	must(f.PutText("short ✓"))
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	h := New(root, Options{})
	var p messagePage
	get(t, h, "/api/runs/"+run.ID+"/dialogs/"+d.ID()+"/messages?limit=200", 200, &p)
	if p.Total != 5 || len(p.Messages) != 3 || p.Next != 3 {
		t.Errorf("first page: total %d, %d messages, next %d", p.Total, len(p.Messages), p.Next)
	}
	edgeSameAsRebuild(t, h, root, run.ID, 200)
	msgs := edgeMessages(t, h, run.ID, f.ID(), 200)
	if len(msgs) != 3 || msgs[0].Dialog != d.ID() || !msgs[1].Inherited || msgs[2].Inherited || msgs[2].Dialog != f.ID() {
		t.Errorf("the fork: %+v", msgs)
	}
}

// Bad paging parameters, unknown runs and dialogs are 4xx JSON errors, never 500; huge pages are capped.
func TestEdgeBadParams(t *testing.T) {
	root := t.TempDir()
	w, run, d := liveRun(t, root, "first")
	for i := range 250 {
		must(d.PutText(fmt.Sprint("m", i)))
	}
	for range 600 {
		must(dialog.New("crowd", dialog.WithSink(w)))
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	h := New(root, Options{})
	base := "/api/runs/" + run.ID
	msgs := base + "/dialogs/" + d.ID() + "/messages"
	for _, tc := range []struct {
		path   string
		status int
	}{
		{base + "/tree?offset=-1", 400}, {base + "/tree?offset=abc", 400}, {base + "/tree?offset=1e3", 400},
		{base + "/tree?offset=99999999999999999999", 400}, {base + "/tree?limit=0", 400}, {base + "/tree?limit=-5", 400},
		{base + "/tree?limit=%20", 400}, {msgs + "?offset=-1", 400}, {msgs + "?offset=0x10", 400}, {msgs + "?limit=abc", 400},
		{msgs + "?limit=99999999999999999999", 400}, {msgs + "?limit=-1", 400},
		{"/api/runs/nope", 404}, {"/api/runs/nope/tree", 404}, {"/api/runs/nope/dialogs/x", 404}, {"/api/runs/nope/dialogs/x/messages", 404},
		{base + "/dialogs/nope", 404}, {base + "/dialogs/nope/messages", 404}, {base + "/dialogs/" + d.ID() + "x/messages", 404},
		{base + "/tree?parent=nope", 404},
	} {
		var e errBody
		get(t, h, tc.path, tc.status, &e)
		if e.Error == "" {
			t.Errorf("GET %s: no error message", tc.path)
		}
	}
	var tp treePage
	get(t, h, base+"/tree?limit=100000", 200, &tp)
	if tp.Total != 601 || len(tp.Nodes) != maxNodes {
		t.Errorf("tree page: total %d, %d nodes", tp.Total, len(tp.Nodes))
	}
	get(t, h, base+"/tree?offset=9223372036854775807&limit=500", 200, &tp)
	if len(tp.Nodes) != 0 {
		t.Errorf("tree past the end: %d nodes", len(tp.Nodes))
	}
	var mp messagePage
	get(t, h, msgs+"?limit=100000", 200, &mp)
	if mp.Total != 251 || len(mp.Messages) != maxMessages || mp.Next != maxMessages {
		t.Errorf("messages page: total %d, %d messages, next %d", mp.Total, len(mp.Messages), mp.Next)
	}
	get(t, h, msgs+"?offset=9223372036854775807&limit=200", 200, &mp)
	if len(mp.Messages) != 0 || mp.Next < mp.Total {
		t.Errorf("messages past the end: %+v", mp)
	}
}

// No run id, encoded or not, reaches a log outside the root, nor does a symlinked events.jsonl.
func TestEdgePathTraversal(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	secretRoot := filepath.Join(base, "elsewhere")
	w, secret, err := logs.Create(secretRoot, logs.RunStart{Tactic: "secret", Labels: map[string]string{"k": "top-secret-label"}}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sd := must(dialog.New("spy", dialog.WithSink(w)))
	must(sd.PutText("top secret"))
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	_, mine, _ := liveRun(t, root, "mine")
	rel := "../elsewhere/" + secret.ID
	h := New(root, Options{})
	for _, id := range []string{
		"..", "%2e%2e", "%2E%2E%2Felsewhere%2F" + secret.ID, edgeEsc(rel), "..%5Celsewhere%5C" + secret.ID, "%252e%252e%252felsewhere",
		mine.ID + "%2F..%2F" + edgeEsc(rel), mine.ID + "%00", "~", "%2F" + edgeEsc(secretRoot[1:]+"/"+secret.ID), ".tmp-x", "...",
	} {
		for _, suffix := range []string{"", "/tree", "/dialogs/" + sd.ID(), "/dialogs/" + sd.ID() + "/messages"} {
			req := httptest.NewRequest(http.MethodGet, "/api/runs/"+id+suffix, nil)
			req.Host = "127.0.0.1:7777"
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body := rec.Body.String()
			if rec.Code < 300 || rec.Code >= 500 || strings.Contains(body, "top secret") || strings.Contains(body, "top-secret-label") {
				t.Errorf("GET /api/runs/%s%s: %d %.200s", id, suffix, rec.Code, body)
			}
		}
	}
	// A run directory of the root whose events.jsonl links to a log elsewhere is not read, even for the list.
	if err := os.Mkdir(filepath.Join(root, "evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret.Path(), filepath.Join(root, "evil", logs.EventsFile)); err != nil {
		t.Fatal(err)
	}
	get(t, h, "/api/runs/evil", 404, nil)
	if body := get(t, h, "/api/runs", 200, nil); strings.Contains(body, "top-secret-label") || strings.Contains(body, `"tactic":"secret"`) {
		t.Errorf("the runs list read a log through a symbolic link: %s", body)
	}
}

func edgeEsc(p string) string {
	return strings.ReplaceAll(strings.ReplaceAll(p, "/", "%2F"), ".", "%2E")
}

// An empty or broken log is unreadable (422) until its run_start arrives or it is replaced; then it is served.
func TestEdgeEmptyLogThenWritten(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "20260101T000000.000000Z-abcdef")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, logs.EventsFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := New(root, Options{})
	var e errBody
	get(t, h, "/api/runs/"+filepath.Base(dir), http.StatusUnprocessableEntity, &e)
	appendLine(t, root, filepath.Base(dir), `{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.3","run_id":"x","tactic":"late"}}`+"\n"+
		`{"seq":2,"ts":"2026-01-01T00:00:00Z","kind":"dialog_open","dialog":"d1","dialog_open":{"id":"d1","owner":"a","alias":"main","split_point":0,"depth":0}}`+"\n")
	var rd runDetail
	get(t, h, "/api/runs/"+filepath.Base(dir), 200, &rd)
	if rd.Tactic != "late" || rd.Dialogs != 1 {
		t.Errorf("after the log was written: %+v", rd)
	}
	// A file that is not a log, then replaced by one (rename), is read again too.
	path := filepath.Join(dir, logs.EventsFile)
	good := must(os.ReadFile(path))
	if err := os.WriteFile(path, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	get(t, h, "/api/runs/"+filepath.Base(dir), http.StatusUnprocessableEntity, &e)
	if err := os.WriteFile(path+".new", good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	rd = runDetail{}
	get(t, h, "/api/runs/"+filepath.Base(dir), 200, &rd)
	if rd.Tactic != "late" || rd.Dialogs != 1 {
		t.Errorf("after the bad file was replaced: %+v", rd)
	}
}

// Many readers while a run is written: no 5xx, no torn record served, and the final index equals run_end's totals.
func TestEdgeConcurrentReadsWhileWriting(t *testing.T) {
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "chat"}, logs.Options{FlushDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	d := must(dialog.New("coder", dialog.WithAlias("main"), dialog.WithSink(w)))
	must(d.PutText("start"))
	h := New(root, Options{MaxCachedRuns: 1})
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths := []string{"/api/runs", "/api/runs/" + run.ID, "/api/runs/" + run.ID + "/tree", "/api/runs/" + run.ID + "/dialogs/" + d.ID() + "/messages?offset=0&limit=200"}
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				req := httptest.NewRequest(http.MethodGet, paths[(g+i)%len(paths)], nil)
				req.Host = "localhost"
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 || strings.Contains(rec.Body.String(), `"error"`) {
					t.Errorf("GET %s: %d %.200s", req.URL, rec.Code, rec.Body.String())
					return
				}
			}
		}()
	}
	for i := range 300 {
		must(d.PutText(fmt.Sprintf("message %d %s", i, strings.Repeat("é", i*7))))
		if i%50 == 0 {
			must(d.Fork(0, 0, dialog.WithAlias(fmt.Sprintf("side%d", i))))
		}
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	close(done)
	wg.Wait()
	var rd runDetail
	get(t, h, "/api/runs/"+run.ID, 200, &rd)
	if rd.Status != "ok" || rd.Totals == nil || rd.Dialogs != rd.Totals.Dialogs || rd.Messages != rd.Totals.Messages || len(rd.Warnings) != 0 {
		t.Errorf("final: %+v", rd)
	}
	edgeSameAsRebuild(t, h, root, run.ID, 200)
}
