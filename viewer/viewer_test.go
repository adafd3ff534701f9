package viewer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lllm-go/lllm/dialog"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

// get serves one request and decodes its JSON body into out (if not nil).
func get(t *testing.T, h http.Handler, path string, wantStatus int, out any) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1:7777"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != wantStatus {
		t.Fatalf("GET %s: status %d, want %d: %s", path, rec.Code, wantStatus, body)
	}
	if ct := rec.Header().Get("Content-Type"); strings.HasPrefix(path, "/api/") && !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
	return body
}

type errBody struct {
	Error string `json:"error"`
}

func TestRunsList(t *testing.T) {
	f := newFixture(t)
	h := New(f.root, Options{})
	var got struct {
		Root string         `json:"root"`
		Runs []logs.RunInfo `json:"runs"`
	}
	get(t, h, "/api/runs", 200, &got)
	if got.Root != f.root || len(got.Runs) != 3 {
		t.Fatalf("runs = %+v", got)
	}
	byID := map[string]logs.RunInfo{}
	for _, r := range got.Runs {
		byID[r.RunID] = r
	}
	if r := byID[f.bestOfN]; r.Tactic != "best_of_n" || r.Status != "ok" || r.Totals == nil || r.Totals.Dialogs != 9 {
		t.Fatalf("best_of_n run = %+v", r)
	}
	if r := byID[f.images]; r.Status != "failed" || r.Error != "the judge was not reached" {
		t.Fatalf("images run = %+v", r)
	}
}

func TestPageAndAssets(t *testing.T) {
	h := New(t.TempDir(), Options{})
	page := get(t, h, "/", 200, nil)
	if !strings.Contains(page, `<script src="assets/app.js">`) {
		t.Fatalf("index page: %s", page)
	}
	for _, a := range []string{"/assets/app.js", "/assets/app.css"} {
		if body := get(t, h, a, 200, nil); len(body) < 1000 {
			t.Fatalf("%s is %d bytes", a, len(body))
		}
	}
	get(t, h, "/assets/nope.js", 404, nil)
	var runs struct{ Runs []logs.RunInfo }
	get(t, h, "/api/runs", 200, &runs)
	if runs.Runs == nil || len(runs.Runs) != 0 {
		t.Fatalf("an empty root lists %+v, want []", runs.Runs)
	}
}

// Every dialog of every run, paged through the API, has exactly the
// messages logs.Rebuild gives it.
func TestMessagesMatchRebuild(t *testing.T) {
	f := newFixture(t)
	h := New(f.root, Options{})
	for _, id := range []string{f.bestOfN, f.retries, f.images} {
		run, err := logs.Open(f.root, id)
		if err != nil {
			t.Fatal(err)
		}
		forest, _, err := run.Forest(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, did := range forest.IDs() {
			d := forest.Dialog(did)
			var got []json.RawMessage
			for off := 0; ; {
				var p messagePage
				get(t, h, fmt.Sprintf("/api/runs/%s/dialogs/%s/messages?offset=%d&limit=2", id, did, off), 200, &p)
				if p.Total != d.Len() {
					t.Fatalf("%s: total %d, want %d", did, p.Total, d.Len())
				}
				for _, m := range p.Messages {
					if m.Error != "" || m.Index != len(got) {
						t.Fatalf("%s: message %+v at %d", did, m, len(got))
					}
					got = append(got, m.Message)
				}
				if p.Next >= p.Total {
					break
				}
				if p.Next <= off {
					t.Fatalf("%s: page at %d did not advance", did, off)
				}
				off = p.Next
			}
			want := d.Messages()
			if len(got) != len(want) {
				t.Fatalf("run %s dialog %s: %d messages, want %d", id, did, len(got), len(want))
			}
			for i := range want {
				var m dialog.Message
				if err := json.Unmarshal(got[i], &m); err != nil {
					t.Fatal(err)
				}
				a, _ := json.Marshal(&m)
				b, _ := json.Marshal(want[i])
				if !bytes.Equal(a, b) {
					t.Fatalf("run %s dialog %s message %d:\n got %s\nwant %s", id, did, i, a, b)
				}
			}
		}
	}
}

func TestTreeAndForks(t *testing.T) {
	f := newFixture(t)
	h := New(f.root, Options{})
	var roots treePage
	get(t, h, "/api/runs/"+f.bestOfN+"/tree", 200, &roots)
	if roots.Total != 2 || len(roots.Nodes) != 2 || roots.Nodes[0].Owner != "solver" || roots.Nodes[1].Owner != "judge" {
		t.Fatalf("roots = %+v", roots)
	}
	var kids treePage
	get(t, h, "/api/runs/"+f.bestOfN+"/tree?parent="+roots.Nodes[0].ID, 200, &kids)
	if kids.Total != 3 || kids.Nodes[1].Alias != "try2" || kids.Nodes[1].ID != f.try2 || kids.Nodes[1].SplitPoint != 2 || kids.Nodes[1].Children != 1 {
		t.Fatalf("solver's forks = %+v", kids)
	}
	// Paging the children.
	var page2 treePage
	get(t, h, "/api/runs/"+f.bestOfN+"/tree?parent="+roots.Nodes[0].ID+"&offset=1&limit=1", 200, &page2)
	if page2.Total != 3 || len(page2.Nodes) != 1 || page2.Nodes[0].ID != f.try2 {
		t.Fatalf("second page = %+v", page2)
	}
	var msgs messagePage
	get(t, h, "/api/runs/"+f.bestOfN+"/dialogs/"+f.try2+"/messages", 200, &msgs)
	if msgs.Total != 3 || !msgs.Messages[0].Inherited || msgs.Messages[2].Inherited ||
		!strings.Contains(string(msgs.Messages[2].Message), "13: it has no divisor") {
		t.Fatalf("try2 messages = %+v", msgs)
	}
	var info dialogInfo
	get(t, h, "/api/runs/"+f.bestOfN+"/dialogs/"+f.try2, 200, &info)
	if len(info.Ancestors) != 1 || info.Ancestors[0].ID != roots.Nodes[0].ID || info.RunStatus != "ok" {
		t.Fatalf("try2 info = %+v", info)
	}
	// The working copy under try2 reached it.
	var wc treePage
	get(t, h, "/api/runs/"+f.bestOfN+"/tree?parent="+f.try2, 200, &wc)
	if len(wc.Nodes) != 1 || wc.Nodes[0].Alias != "try2#1" || wc.Nodes[0].Outcome != "ok" || wc.Nodes[0].Failed || wc.Nodes[0].ModelCalls != 1 {
		t.Fatalf("try2's working copy = %+v", wc)
	}
}

func TestFailedAttemptsMarked(t *testing.T) {
	f := newFixture(t)
	h := New(f.root, Options{})
	var d1, d2, guest dialogInfo
	get(t, h, "/api/runs/"+f.retries+"/dialogs/"+f.parseFailed, 200, &d1)
	if d1.Node.Outcome != "retried" || !d1.Node.Failed || d1.Node.Errors != 0 || d1.Node.MaxTokensCut != 1 {
		t.Fatalf("the unparsable attempt: %+v", d1.Node)
	}
	get(t, h, "/api/runs/"+f.retries+"/dialogs/"+f.callFailed, 200, &d2)
	if d2.Node.Outcome != "ok" || d2.Node.Failed || d2.Node.Errors != 1 || d2.Node.ModelCalls != 2 || d2.Node.MaxTokensCut != 0 ||
		!strings.Contains(d2.Node.LastError, "server: mock: internal server error") || len(d2.Ancestors) != 2 {
		t.Fatalf("the retried attempt: %+v", d2)
	}
	// A last_n/first_k fork: the parent's first message and last one, then
	// its own, with the guest agent named.
	get(t, h, "/api/runs/"+f.retries+"/dialogs/"+f.guest, 200, &guest)
	if n := guest.Node; n.LastN != 1 || n.FirstK != 1 || n.SplitPoint != 2 || n.Messages != 4 || n.Outcome != "" {
		t.Fatalf("notes fork: %+v", n)
	}
	var msgs messagePage
	get(t, h, "/api/runs/"+f.retries+"/dialogs/"+f.guest+"/messages", 200, &msgs)
	var texts []string
	for _, m := range msgs.Messages {
		var dm dialog.Message
		_ = json.Unmarshal(m.Message, &dm)
		texts = append(texts, string(dm.Role)+":"+dm.Agent+":"+dm.Content)
	}
	want := []string{"system::You answer in <answer></answer> tags.", "assistant::<answer>4</answer>", "user::Critic, what do you think?", "assistant:critic:Correct, and well formatted."}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("notes transcript = %q", texts)
	}
}

// A reply the mock cut at max_tokens counts on the working copy its call
// was made on, in the tree page and in the dialog's node; every node has
// the key.
func TestMaxTokensCutCounted(t *testing.T) {
	const cutConfig = `tactic_type: chat
global:
  model_name: mock/demo
  model_args: {max_tokens: 3}
agent_configs:
  - name: assistant
    system_prompt: You are concise.
mock:
  replies:
    - text: "Paris is the capital of France, on the Seine."
`
	path := filepath.Join(t.TempDir(), "cut.yaml")
	if err := os.WriteFile(path, []byte(cutConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	res, err := tactics.Run(t.Context(), cfg, "Capital of France?", tactics.RunOptions{LogDir: root})
	if err != nil || res.Status != logs.StatusOK {
		t.Fatalf("run: %v %+v", err, res)
	}
	h := New(root, Options{})
	var roots treePage
	body := get(t, h, "/api/runs/"+res.RunID+"/tree", 200, &roots)
	if len(roots.Nodes) != 1 || roots.Nodes[0].MaxTokensCut != 0 || !strings.Contains(body, `"max_tokens_cut":0`) {
		t.Fatalf("roots: %s", body)
	}
	var kids treePage
	body = get(t, h, "/api/runs/"+res.RunID+"/tree?parent="+roots.Nodes[0].ID, 200, &kids)
	if len(kids.Nodes) != 1 || kids.Nodes[0].ModelCalls != 1 || kids.Nodes[0].MaxTokensCut != 1 || !strings.Contains(body, `"max_tokens_cut":1`) {
		t.Fatalf("the working copy: %s", body)
	}
	var info dialogInfo
	get(t, h, "/api/runs/"+res.RunID+"/dialogs/"+kids.Nodes[0].ID, 200, &info)
	if info.Node.MaxTokensCut != 1 || len(info.Ancestors) != 1 || info.Ancestors[0].MaxTokensCut != 0 {
		t.Fatalf("the working copy's dialog: %+v", info)
	}
}

func TestImageMessage(t *testing.T) {
	f := newFixture(t)
	h := New(f.root, Options{})
	var msgs messagePage
	get(t, h, "/api/runs/"+f.images+"/dialogs/"+f.imageDlg+"/messages", 200, &msgs)
	var m dialog.Message
	if err := json.Unmarshal(msgs.Messages[0].Message, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Parts) == 0 {
		t.Fatalf("first message has no parts: %s", msgs.Messages[0].Message)
	}
	var img *dialog.Image
	for _, p := range m.Parts {
		if p.Image != nil {
			img = p.Image
		}
	}
	if img == nil || img.MIME != "image/png" || !bytes.Equal(img.Data, onePixelPNG) {
		t.Fatalf("image part = %+v", m.Parts)
	}
	if !strings.Contains(string(msgs.Messages[0].Message), base64.StdEncoding.EncodeToString(onePixelPNG)) {
		t.Fatal("the image is not base64 in the JSON")
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(filepath.Dir(f.root), "secret")
	if err := os.MkdirAll(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, logs.EventsFile), []byte("top secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := New(f.root, Options{})
	var e errBody
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/api/runs/nope", 404, `no run "nope"`},
		{"/api/runs/..%2Fsecret", 400, "invalid run id"},
		{"/api/runs/..%2Fsecret/dialogs/x/messages", 400, "invalid run id"},
		{"/api/runs/%2Fetc%2Fpasswd", 400, "invalid run id"},
		{"/api/runs/.hidden", 400, "invalid run id"},
		{"/api/runs/" + f.bestOfN + "/dialogs/nope", 404, `no dialog "nope"`},
		{"/api/runs/" + f.bestOfN + "/tree?parent=nope", 404, `no dialog "nope"`},
		{"/api/runs/" + f.bestOfN + "/tree?offset=-1", 400, "offset"},
		{"/api/runs/" + f.bestOfN + "/dialogs/" + f.try2 + "/messages?limit=x", 400, "limit"},
		{"/api/nothing", 404, "no API route"},
	} {
		e = errBody{}
		get(t, h, tc.path, tc.status, &e)
		if !strings.Contains(e.Error, tc.want) {
			t.Errorf("GET %s: error %q, want it to contain %q", tc.path, e.Error, tc.want)
		}
	}

	// A symbolic link out of the root is not followed.
	if err := os.Symlink(secret, filepath.Join(f.root, "link")); err != nil {
		t.Fatal(err)
	}
	get(t, h, "/api/runs/link", 404, &e)
	get(t, h, "/api/runs/link/tree", 404, &e)

	// A path with ".." is cleaned by the mux and never reaches outside.
	req := httptest.NewRequest(http.MethodGet, "/api/runs/../../secret", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if strings.Contains(rec.Body.String(), "top secret") || rec.Code == 200 {
		t.Fatalf("traversal: %d %s", rec.Code, rec.Body.String())
	}

	// Read-only, loopback only.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://127.0.0.1/api/runs", strings.NewReader("{}")))
	if rec.Code != http.StatusMethodNotAllowed || !strings.Contains(rec.Body.String(), "read-only") {
		t.Fatalf("POST: %d %s", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://evil.example/api/runs", nil))
	if rec.Code != http.StatusForbidden {
		t.Fatalf("a foreign Host header got %d", rec.Code)
	}

	// Page sizes are capped by the server.
	var p messagePage
	get(t, h, "/api/runs/"+f.bestOfN+"/dialogs/"+f.try2+"/messages?limit=100000&offset=1", 200, &p)
	if p.Offset != 1 || len(p.Messages) != 2 || p.Next != 3 {
		t.Fatalf("page = %+v", p)
	}
	get(t, h, "/api/runs/"+f.bestOfN+"/dialogs/"+f.try2+"/messages?offset=99", 200, &p)
	if len(p.Messages) != 0 || p.Total != 3 {
		t.Fatalf("page past the end = %+v", p)
	}
}

func TestBrokenLogs(t *testing.T) {
	root := t.TempDir()
	write := func(id, data string) {
		if err := os.MkdirAll(filepath.Join(root, id), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, id, logs.EventsFile), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("newer", `{"seq":1,"ts":"2030-01-01T00:00:00Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"2.0","run_id":"newer","tactic":"chat"}}`+"\n")
	write("empty", "")
	write("notalog", "hello\n")
	write("corrupt", `{"seq":1,"ts":"2030-01-01T00:00:00Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.1","run_id":"corrupt"}}`+"\n"+
		`{"seq":2,"ts":"2030-01-01T00:00:00Z","kind":"dialog_open","dialog":"d1","dialog_open":{"id":"d1","owner":"a","split_point":0,"depth":0}}`+"\n"+
		"this is not json\n"+
		`{"seq":4,"ts":"2030-01-01T00:00:00Z","kind":"message","dialog":"d1","message":{"role":"user","content":"hi"}}`+"\n")
	h := New(root, Options{})

	var runs struct{ Runs []logs.RunInfo }
	get(t, h, "/api/runs", 200, &runs)
	status := map[string]logs.RunInfo{}
	for _, r := range runs.Runs {
		status[r.RunID] = r
	}
	if r := status["newer"]; r.Status != "unreadable" || !strings.Contains(r.Error, "2.0") {
		t.Fatalf("newer run in the list: %+v", r)
	}

	var e errBody
	get(t, h, "/api/runs/newer", http.StatusUnprocessableEntity, &e)
	if !strings.Contains(e.Error, "log format version 2.0 is not readable by this lllm, which reads 1.x") {
		t.Fatalf("newer version error: %q", e.Error)
	}
	get(t, h, "/api/runs/newer/tree", http.StatusUnprocessableEntity, &e)
	get(t, h, "/api/runs/empty", http.StatusUnprocessableEntity, &e)
	if !strings.Contains(e.Error, "empty log") {
		t.Fatalf("empty log error: %q", e.Error)
	}
	get(t, h, "/api/runs/notalog", http.StatusUnprocessableEntity, &e)
	if !strings.Contains(e.Error, "not an lllm-go run log") {
		t.Fatalf("not a log error: %q", e.Error)
	}
	// A bad line in the middle is skipped with a warning; the rest shows.
	var d runDetail
	get(t, h, "/api/runs/corrupt", 200, &d)
	if d.Messages != 1 || len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "line 3") {
		t.Fatalf("corrupt run: %+v", d)
	}
	// A message record cut short (its head reads, its end does not) shows
	// as an error naming the file and where the record starts.
	start := `{"seq":1,"ts":"2030-01-01T00:00:00Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.1","run_id":"cut"}}` + "\n" +
		`{"seq":2,"ts":"2030-01-01T00:00:00Z","kind":"dialog_open","dialog":"d1","dialog_open":{"id":"d1","owner":"a","split_point":0,"depth":0}}` + "\n"
	write("cut", start+`{"seq":3,"ts":"2030-01-01T00:00:00Z","kind":"message","dialog":"d1","message":{"role":"user","content":"hi"}`+"\n")
	var page struct{ Messages []messageJSON }
	get(t, h, "/api/runs/cut/dialogs/d1/messages", 200, &page)
	if len(page.Messages) != 1 || !strings.Contains(page.Messages[0].Error, fmt.Sprintf("at byte %d of %s", len(start), filepath.Join(root, "cut", logs.EventsFile))) {
		t.Fatalf("cut message: %+v", page.Messages)
	}
}

// A run still being written: the index follows the file as it grows, and
// a torn last line is left out until it is whole.
func TestLiveRunAndTornLine(t *testing.T) {
	root := t.TempDir()
	w, run, d := liveRun(t, root, "first")
	h := New(root, Options{})
	base := "/api/runs/" + run.ID

	var rd runDetail
	get(t, h, base, 200, &rd)
	if rd.Status != "running" || rd.Messages != 1 || rd.Dialogs != 1 || len(rd.Warnings) != 0 {
		t.Fatalf("running run: %+v", rd)
	}
	v1 := rd.IndexedBytes

	// Half a record, as a reader sees a write in progress.
	rec := `{"seq":4,"ts":"2026-01-01T00:00:00Z","kind":"message","dialog":"` + d.ID() + `","index":1,"message":{"role":"user","content":"second"}}` + "\n"
	appendLine(t, root, run.ID, rec[:40])
	get(t, h, base, 200, &rd)
	if rd.Messages != 1 || rd.IndexedBytes != v1 || len(rd.Warnings) != 1 || !strings.Contains(rd.Warnings[0], "incomplete") {
		t.Fatalf("with a torn last line: %+v", rd)
	}
	var p messagePage
	get(t, h, base+"/dialogs/"+d.ID()+"/messages", 200, &p)
	if p.Total != 1 {
		t.Fatalf("torn line counted: %+v", p)
	}
	appendLine(t, root, run.ID, rec[40:])
	get(t, h, base, 200, &rd)
	if rd.Messages != 2 || rd.IndexedBytes <= v1 || len(rd.Warnings) != 0 {
		t.Fatalf("after the line was finished: %+v", rd)
	}
	get(t, h, base+"/dialogs/"+d.ID()+"/messages?offset=1", 200, &p)
	if p.Total != 2 || len(p.Messages) != 1 || !strings.Contains(string(p.Messages[0].Message), "second") {
		t.Fatalf("the finished line: %+v", p)
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	get(t, h, base, 200, &rd)
	if rd.Status != "ok" || rd.Totals == nil {
		t.Fatalf("after run_end: %+v", rd)
	}

	// A file replaced by a shorter one is indexed again from scratch.
	path := filepath.Join(root, run.ID, logs.EventsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	if err := os.WriteFile(path+".new", append(first, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	get(t, h, base, 200, &rd)
	// No process writes the new file: without a run_end, the run was
	// interrupted.
	if rd.Status != "interrupted" || rd.Messages != 0 || rd.Dialogs != 0 {
		t.Fatalf("after the file was replaced: %+v", rd)
	}
}

// scanHead agrees with encoding/json on every record it reads.
func TestScanHeadMatchesJSON(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{f.bestOfN, f.retries, f.images} {
		data, err := os.ReadFile(filepath.Join(f.root, id, logs.EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			checkHead(t, line)
		}
	}
	for _, line := range []string{
		`{"kind":"message","dialog":"x","index":3,"message":{}}`,
		`{ "seq" : 1 , "kind" : "message" , "dialog" : "a\"b", "message":{}}`,
		`{"message":{},"kind":"message","dialog":"x"}`,
		`{"seq":1,"extra":[1,2],"kind":"fork","fork":{"id":"q"}}`,
	} {
		checkHead(t, []byte(line))
	}
}

func checkHead(t *testing.T, line []byte) {
	t.Helper()
	h, err := scanHead(line)
	if err != nil {
		h, _, err = slowHead(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	var rec struct {
		Kind   string `json:"kind"`
		Dialog string `json:"dialog"`
		Index  int    `json:"index"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatal(err)
	}
	if string(h.kind) != rec.Kind || string(h.dialog) != rec.Dialog || h.index != rec.Index {
		t.Fatalf("%s: head %q %q %d, want %+v", line, h.kind, h.dialog, h.index, rec)
	}
	if h.payload >= 0 {
		var payload json.RawMessage
		if err := json.NewDecoder(bytes.NewReader(line[h.payload:])).Decode(&payload); err != nil {
			t.Fatalf("%s: payload at %d: %v", line, h.payload, err)
		}
	}
}

func FuzzScanHead(f *testing.F) {
	f.Add([]byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","kind":"message","dialog":"d","index":2,"message":{"role":"user"}}`))
	f.Add([]byte(`{"kind":"fork","fork":{"id":"x","parent_id":"y"}}`))
	f.Add([]byte(`{"seq":1,"index":-0,"kind":"x","x":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		h, err := scanHead(line)
		if err != nil || !json.Valid(line) {
			return
		}
		// What scanHead read is the record up to its payload: compare it
		// with encoding/json's reading of that prefix.
		prefix := line
		if h.payload >= 0 {
			prefix = append(append([]byte{}, line[:h.payload]...), "null}"...)
		}
		var rec struct {
			Kind   *string `json:"kind"`
			Dialog *string `json:"dialog"`
			Index  *int    `json:"index"`
		}
		if err := json.Unmarshal(prefix, &rec); err != nil {
			if h.payload >= 0 {
				t.Fatalf("%s: the prefix scanHead read is not JSON: %v", line, err)
			}
			return // e.g. a value of the wrong type after the fields read
		}
		str := func(p *string) string {
			if p == nil {
				return ""
			}
			return *p
		}
		idx := 0
		if rec.Index != nil {
			idx = *rec.Index
		}
		if str(rec.Kind) != string(h.kind) || str(rec.Dialog) != string(h.dialog) || idx != h.index {
			t.Fatalf("%s: head %q %q %d; json %q %q %d", line, h.kind, h.dialog, h.index, str(rec.Kind), str(rec.Dialog), idx)
		}
	})
}

// Records longer than the index's read buffer, and pages capped by bytes.
func TestLongRecords(t *testing.T) {
	root := t.TempDir()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "chat"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := must(dialog.New("coder", dialog.WithSink(w)))
	big := strings.Repeat("x", 5<<20) // each record beyond the 4 MB read buffer
	for i := range 3 {
		must(d.PutText(fmt.Sprintf("%d%s", i, big)))
	}
	must(d.PutText("short"))
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	h := New(root, Options{})
	var p messagePage
	get(t, h, "/api/runs/"+run.ID+"/dialogs/"+d.ID()+"/messages", 200, &p)
	// 8 MB a page: the first 5 MB record, not the second.
	if p.Total != 4 || len(p.Messages) != 1 || p.Next != 1 || !strings.HasPrefix(contentOf(t, p.Messages[0].Message), "0xxx") {
		t.Fatalf("first page: total %d, %d messages, next %d", p.Total, len(p.Messages), p.Next)
	}
	get(t, h, "/api/runs/"+run.ID+"/dialogs/"+d.ID()+"/messages?offset=2", 200, &p)
	// 5 MB and a short one fit.
	if len(p.Messages) != 2 || p.Next != 4 || !strings.HasPrefix(contentOf(t, p.Messages[0].Message), "2xxx") ||
		contentOf(t, p.Messages[1].Message) != "short" {
		t.Fatalf("third page: %d messages, next %d", len(p.Messages), p.Next)
	}
}

func contentOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var m dialog.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m.Content
}

// A working copy whose reply never came is pending while the run is being
// written, and failed once its process stopped without finishing the log.
func TestAttemptOfInterruptedRun(t *testing.T) {
	root := t.TempDir()
	w, run, d := liveRun(t, root, "question")
	work := must(d.Fork(0, 0, dialog.WithAlias("main#1")))
	flush(t, w)
	h := New(root, Options{})
	url := "/api/runs/" + run.ID + "/dialogs/" + work.ID()

	var info dialogInfo
	get(t, h, url, 200, &info)
	if info.RunStatus != "running" || info.Node.Outcome != "pending" || info.Node.Failed {
		t.Fatalf("while written: run %s, attempt %+v", info.RunStatus, info.Node)
	}
	if err := w.Close(); err != nil { // the process stops without a run_end
		t.Fatal(err)
	}
	get(t, h, url, 200, &info)
	if info.RunStatus != "interrupted" || info.Node.Outcome != "failed" || !info.Node.Failed {
		t.Fatalf("after the writer stopped: run %s, attempt %+v", info.RunStatus, info.Node)
	}
}

// liveRun starts a run under root whose dialog "main" of agent coder holds
// first; its writer stays open (the run is being written) until the test
// closes it, or the test ends.
func liveRun(t *testing.T, root, first string) (*logs.Writer, *logs.Run, *dialog.Dialog) {
	t.Helper()
	w, run, err := logs.Create(root, logs.RunStart{Tactic: "chat"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	d := must(dialog.New("coder", dialog.WithAlias("main"), dialog.WithSink(w)))
	must(d.PutText(first))
	flush(t, w)
	return w, run, d
}

// flush hands w's records to the file, as its background flush soon does.
func flush(t *testing.T, w *logs.Writer) {
	t.Helper()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// A run is named in the API as on the command line: "latest", or a unique prefix or suffix of its id; the answer names the run by its id.
func TestRunRefsAsTheCLI(t *testing.T) {
	f := newFixture(t)
	h := New(f.root, Options{})
	ids, err := logs.List(f.root)
	if err != nil || len(ids) < 2 {
		t.Fatalf("runs %v, %v", ids, err)
	}
	latest := ids[len(ids)-1].ID
	suffix := f.bestOfN[len(f.bestOfN)-6:]
	for ref, want := range map[string]string{"latest": latest, suffix: f.bestOfN, f.bestOfN: f.bestOfN} {
		var d struct {
			RunID string `json:"run_id"`
			Dir   string `json:"dir"`
		}
		get(t, h, "/api/runs/"+ref, 200, &d)
		if d.RunID != want || filepath.Base(d.Dir) != want {
			t.Errorf("GET /api/runs/%s: run_id %q dir %q, want %q", ref, d.RunID, d.Dir, want)
		}
	}
	get(t, h, "/api/runs/latest/tree", 200, nil)
	var e errBody
	get(t, h, "/api/runs/2", 400, &e) // a prefix of every run
	if !strings.Contains(e.Error, "give more of the id") {
		t.Errorf("ambiguous prefix: %q", e.Error)
	}
}

// A dialog is named in the API as lllm show names it: by its id or a
// unique prefix of one, such as the eight characters lllm tree prints. A
// prefix of several dialogs is a 400 that lists them; a name no dialog
// has is a 404 that says how dialogs are named.
func TestDialogByPrefix(t *testing.T) {
	f := newFixture(t)
	h := New(f.root, Options{})
	var byID, byPrefix dialogInfo
	get(t, h, "/api/runs/"+f.bestOfN+"/dialogs/"+f.try2, 200, &byID)
	get(t, h, "/api/runs/"+f.bestOfN+"/dialogs/"+f.try2[:8], 200, &byPrefix)
	if byPrefix.Node.ID != f.try2 || byPrefix.Node.Alias != "try2" || len(byPrefix.Ancestors) != len(byID.Ancestors) {
		t.Fatalf("by prefix %+v; by id %+v", byPrefix, byID)
	}
	var msgs messagePage
	get(t, h, "/api/runs/"+f.bestOfN+"/dialogs/"+f.try2[:8]+"/messages", 200, &msgs)
	if msgs.Dialog != f.try2 || msgs.Total != 3 {
		t.Fatalf("messages by prefix: dialog %q, %d messages; want %s's 3", msgs.Dialog, msgs.Total, f.try2)
	}
	var kids treePage
	get(t, h, "/api/runs/"+f.bestOfN+"/tree?parent="+f.try2[:8], 200, &kids)
	if kids.Parent != f.try2 || len(kids.Nodes) != 1 || kids.Nodes[0].Alias != "try2#1" {
		t.Fatalf("tree by prefix: %+v", kids)
	}

	// Seventeen dialogs: two of them share their first hex digit.
	w, run, err := logs.Create(f.root, logs.RunStart{Tactic: "many"}, logs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[byte]string{}
	var shared, other string
	for range 17 {
		d, err := dialog.New("agent", dialog.WithSink(w), dialog.WithAlias("main"))
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[d.ID()[0]]; ok && shared == "" {
			shared, other = d.ID(), prev
		}
		seen[d.ID()[0]] = d.ID()
	}
	if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
		t.Fatal(err)
	}
	var amb errBody
	get(t, h, "/api/runs/"+run.ID+"/dialogs/"+shared[:1], 400, &amb)
	if !strings.Contains(amb.Error, "give more of an id") || !strings.Contains(amb.Error, shared) || !strings.Contains(amb.Error, other) {
		t.Errorf("a prefix of several dialogs: %q", amb.Error)
	}
	var none errBody
	get(t, h, "/api/runs/"+run.ID[:20]+"/dialogs/zz", 404, &none)
	if want := "run " + run.ID + ` has no dialog "zz": name a dialog by its id, or a unique prefix of one`; none.Error != want {
		t.Errorf("no such dialog: %q, want %q", none.Error, want)
	}
}

// A dialog at the end of a chain of 8,000 forks: its ancestors come root
// first, every one of them, in time linear in the depth (prepending them
// one by one took half a minute here under -race). Timed as a ratio, the
// dialog 8,000 deep against one 2,000 deep, taking turns (the fastest of
// three each), so that a busy machine slows both alike: linear is 4x,
// quadratic 16x.
func TestDeepAncestorsRootFirstAndLinear(t *testing.T) {
	const depth = 8000
	root := t.TempDir()
	id := "20261120T100010.000000Z-deep08"
	var b strings.Builder
	seq := 0
	line := func(kind, dlg, payload string) {
		seq++
		fmt.Fprintf(&b, `{"seq":%d,"ts":"2026-11-20T10:00:10Z","kind":%q,"dialog":%q,%q:%s}`+"\n", seq, kind, dlg, kind, payload)
	}
	seq++
	fmt.Fprintf(&b, `{"seq":1,"ts":"2026-11-20T10:00:10Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"1.5","run_id":%q,"tactic":"deep"}}`+"\n", id)
	line("dialog_open", "d0", `{"id":"d0","owner":"a","alias":"main","split_point":0,"last_n":0,"first_k":0,"parent_len":0,"depth":0}`)
	for i := 1; i <= depth; i++ {
		line("fork", fmt.Sprintf("d%d", i), fmt.Sprintf(`{"id":"d%d","owner":"a","alias":"main","parent_id":"d%d","split_point":0,"last_n":0,"first_k":0,"parent_len":0,"depth":%d}`, i, i-1, i))
	}
	if err := os.MkdirAll(filepath.Join(root, id), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, id, logs.EventsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	h := New(root, Options{})
	var tp treePage
	get(t, h, "/api/runs/"+id+"/tree", 200, &tp) // index it first

	var info dialogInfo
	timed := func(d int) time.Duration {
		start := time.Now()
		get(t, h, fmt.Sprintf("/api/runs/%s/dialogs/d%d", id, d), 200, &info)
		return time.Since(start)
	}
	quarter, whole := time.Duration(1<<63-1), time.Duration(1<<63-1)
	for range 3 {
		quarter = min(quarter, timed(depth/4))
		whole = min(whole, timed(depth))
	}
	if info.Node.ID != fmt.Sprintf("d%d", depth) || len(info.Ancestors) != depth {
		t.Fatalf("node %s with %d ancestors, want d%d with %d", info.Node.ID, len(info.Ancestors), depth, depth)
	}
	for i, a := range info.Ancestors {
		if want := fmt.Sprintf("d%d", i); a.ID != want || a.Depth != i {
			t.Fatalf("ancestor %d is %s at depth %d, want %s (root first)", i, a.ID, a.Depth, want)
		}
	}
	if whole > 10*quarter && whole > time.Second {
		t.Errorf("the ancestors of a dialog %d forks deep took %v, %d deep %v: not linear", depth, whole, depth/4, quarter)
	}
}

// A run named by a prefix or suffix, as the CLI names it: a log that
// cannot be read says why (422, as for its full id), a prefix of several
// runs says so (400), and only a name no run has is "no run" (404).
func TestRunRefErrors(t *testing.T) {
	root := t.TempDir()
	for range 2 {
		w, _, err := logs.Create(root, logs.RunStart{Tactic: "idle"}, logs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Finish(logs.RunEnd{Status: logs.StatusOK}); err != nil {
			t.Fatal(err)
		}
	}
	major := "20261120T100006.000000Z-major2"
	if err := os.MkdirAll(filepath.Join(root, major), 0o755); err != nil {
		t.Fatal(err)
	}
	start := `{"seq":1,"ts":"2026-11-20T10:00:06Z","kind":"run_start","run_start":{"format":"lllm-go/run-log","version":"2.0","run_id":"` + major + `","tactic":"future"}}` + "\n"
	if err := os.WriteFile(filepath.Join(root, major, logs.EventsFile), []byte(start), 0o644); err != nil {
		t.Fatal(err)
	}
	h := New(root, Options{})

	var full, suffix errBody
	get(t, h, "/api/runs/"+major, 422, &full)
	get(t, h, "/api/runs/major2", 422, &suffix)
	if !strings.Contains(full.Error, "2.0") || suffix.Error != full.Error {
		t.Errorf("by suffix: %q; by full id: %q; want the same, naming version 2.0", suffix.Error, full.Error)
	}

	var amb errBody
	get(t, h, "/api/runs/20", 400, &amb)
	if !strings.Contains(amb.Error, `"20" matches 3 runs`) {
		t.Errorf("a prefix of three runs: %q", amb.Error)
	}

	var none errBody
	get(t, h, "/api/runs/nosuch", 404, &none)
	if !strings.Contains(none.Error, `no run "nosuch"`) {
		t.Errorf("no such run: %q", none.Error)
	}
}

// The index decodes a model call for its finish reason only when the
// reason may be a cut, not whenever the record mentions max_tokens.
func TestMayBeCut(t *testing.T) {
	for rec, want := range map[string]bool{
		`{"finish_reason":"length","usage":{}}`:                true,
		`{"finish_reason": "max_tokens"}`:                      true,
		`{"finish_reason":"MAX_TOKENS"}`:                       true,
		`{"params":{"max_tokens":5},"finish_reason":"stop"}`:   false,
		`{"params":{"max_tokens":5},"text":"length"}`:          false,
		`{"finish_reason":"end_turn","text":"\"max_tokens\""}`: false,
	} {
		if got := mayBeCut([]byte(rec)); got != want {
			t.Errorf("%s: %v, want %v", rec, got, want)
		}
	}
}
