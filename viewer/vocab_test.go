package viewer

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lllm-go/lllm/internal/vocab"
	"github.com/lllm-go/lllm/logs"
	"github.com/lllm-go/lllm/runtime/config"
	"github.com/lllm-go/lllm/tactics"
)

// The viewer's API speaks the run log's vocabulary, as every -o json of the
// CLI does (README, "Every -o json speaks the run log's vocabulary"): a run
// is run_id and its directory dir, spending is the log's cost object,
// durations are *_ms and times RFC 3339. These tests fetch every route on
// recorded runs and walk what they return.
//
// The walk is internal/vocab's, which the CLI's tests use too.

// vocabPricedConfig is a chat config on the mock provider, priced so that
// its runs spend dollars as well as tokens. Its mock latency is a key of
// the user's config, which the walk must leave alone.
const vocabPricedConfig = `tactic_type: chat
global:
  model_name: mock/demo
agent_configs:
  - name: assistant
    system_prompt: You are concise.
prices:
  demo: {input: 1.5, output: 6}
mock:
  latency: 1ms
  replies:
    - text: "Paris."
`

// vocabGet fetches an API path, walks its JSON and returns it decoded.
func vocabGet(t *testing.T, h *Handler, path string, priced bool) map[string]any {
	t.Helper()
	var v map[string]any
	get(t, h, path, 200, &v)
	for _, p := range vocab.Problems(v, priced) {
		t.Errorf("GET %s: %s", path, p)
	}
	return v
}

// vocabCheckRun checks a run object of /api/runs or /api/runs/{run}: it
// names its run by run_id, and its directory by dir, and nothing by id.
func vocabCheckRun(t *testing.T, what, root string, run map[string]any) string {
	t.Helper()
	id, _ := run["run_id"].(string)
	if !vocab.RunID.MatchString(id) {
		t.Fatalf("%s: run_id %v is not a run id: %v", what, run["run_id"], run)
	}
	if d := run["dir"]; d != filepath.Join(root, id) {
		t.Errorf("%s: dir %v, want %s", what, d, filepath.Join(root, id))
	}
	if _, ok := run["id"]; ok {
		t.Errorf("%s: has an id besides its run_id: %v", what, run)
	}
	return id
}

// vocabWalkRun fetches every route of one run: the run, every page of
// the tree, and every dialog with all its messages. It returns the
// messages fetched, by dialog.
func vocabWalkRun(t *testing.T, h *Handler, root, id string, priced bool) map[string][]map[string]any {
	t.Helper()
	base := "/api/runs/" + id
	run := vocabGet(t, h, base, priced)
	if vocabCheckRun(t, "GET "+base, root, run) != id {
		t.Errorf("GET %s: run_id %v", base, run["run_id"])
	}
	// version is the log's format version in run_start; what the viewer
	// polls is indexed_bytes.
	if _, ok := run["version"]; ok {
		t.Errorf("GET %s: has a version, which the log uses for its format version: %v", base, run["version"])
	}
	if n, _ := run["indexed_bytes"].(float64); n <= 0 || n > run["bytes"].(float64) {
		t.Errorf("GET %s: indexed_bytes %v of bytes %v", base, run["indexed_bytes"], run["bytes"])
	}

	messages := map[string][]map[string]any{}
	var walk func(parent string)
	walk = func(parent string) {
		for off := 0; ; {
			q := url.Values{"offset": {fmt.Sprint(off)}, "limit": {"2"}}
			if parent != "" {
				q.Set("parent", parent)
			}
			page := vocabGet(t, h, base+"/tree?"+q.Encode(), priced)
			nodes, _ := page["nodes"].([]any)
			for _, n := range nodes {
				n := n.(map[string]any)
				did := n["id"].(string)
				info := vocabGet(t, h, base+"/dialogs/"+did, priced)
				if info["node"].(map[string]any)["id"] != did {
					t.Errorf("dialog %s: node %v", did, info["node"])
				}
				messages[did] = []map[string]any{}
				for mo := 0; ; {
					p := vocabGet(t, h, fmt.Sprintf("%s/dialogs/%s/messages?offset=%d&limit=3", base, did, mo), priced)
					for _, m := range p["messages"].([]any) {
						messages[did] = append(messages[did], m.(map[string]any))
					}
					next, total := int(p["next"].(float64)), int(p["total"].(float64))
					if next >= total {
						break
					}
					if next <= mo {
						t.Fatalf("dialog %s: the page at %d did not advance", did, mo)
					}
					mo = next
				}
				if n["children"].(float64) > 0 {
					walk(did)
				}
			}
			off += len(nodes)
			if len(nodes) == 0 || off >= int(page["total"].(float64)) {
				return
			}
		}
	}
	walk("")
	if len(messages) != int(run["dialogs"].(float64)) {
		t.Errorf("run %s: walked %d dialogs with messages, the run has %v", id, len(messages), run["dialogs"])
	}
	return messages
}

// Every route on the recorded runs of the fixture (a best_of_n run of the
// mock provider, failed attempts, images and tool calls), unpriced.
func TestVocabularyOfAPI(t *testing.T) {
	f := newFixture(t)
	h := New(f.root, Options{})
	list := vocabGet(t, h, "/api/runs", false)
	runs, _ := list["runs"].([]any)
	var ids []string
	for i, r := range runs {
		ids = append(ids, vocabCheckRun(t, fmt.Sprintf("GET /api/runs: runs[%d]", i), f.root, r.(map[string]any)))
	}
	slices.Sort(ids)
	want := []string{f.bestOfN, f.retries, f.images}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("GET /api/runs lists %v, want %v", ids, want)
	}
	walked := 0
	for _, id := range ids {
		for _, msgs := range vocabWalkRun(t, h, f.root, id, false) {
			walked += len(msgs)
		}
	}
	if walked < 20 {
		t.Errorf("walked %d messages; the fixture has more", walked)
	}
}

// A priced run, a running run and a message missing from its log: dollars
// in the cost, no ended or run_end totals while running, and no time for a
// message that has no record.
func TestVocabularyOfAPIPricedAndRunning(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(t.TempDir(), "priced.yaml")
	if err := os.WriteFile(path, []byte(vocabPricedConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tactics.Run(t.Context(), cfg, "Capital of France?", tactics.RunOptions{LogDir: root, Labels: map[string]string{"lab": "vocab"}})
	if err != nil || res.Status != logs.StatusOK {
		t.Fatalf("priced run: %v %+v", err, res)
	}

	// A run still going, whose dialog's message 1 is missing: the Writer
	// wrote message 0, and a message 2 is written by hand after it.
	_, live, d := liveRun(t, root, "first") // its Writer is closed by liveRun's cleanup
	appendLine(t, root, live.ID, fmt.Sprintf(`{"seq":4,"ts":%q,"kind":"message","dialog":%q,"index":2,"message":{"role":"user","content":"third"}}`+"\n",
		time.Now().UTC().Format(time.RFC3339Nano), d.ID()))

	h := New(root, Options{})
	list := vocabGet(t, h, "/api/runs", true)
	byID := map[string]map[string]any{}
	for i, r := range list["runs"].([]any) {
		r := r.(map[string]any)
		byID[vocabCheckRun(t, fmt.Sprintf("GET /api/runs: runs[%d]", i), root, r)] = r
	}
	if len(byID) != 2 || byID[res.RunID] == nil || byID[live.ID] == nil {
		t.Fatalf("GET /api/runs: %v, want %s and %s", list, res.RunID, live.ID)
	}

	priced := vocabGet(t, h, "/api/runs/"+res.RunID, true)
	totals, _ := priced["totals"].(map[string]any)
	cost, _ := totals["cost"].(map[string]any)
	if usd, _ := cost["usd"].(float64); usd <= 0 || totals["model_calls"] != 1.0 {
		t.Errorf("the priced run's totals: %v, want one model call that cost dollars", totals)
	}
	if ms, _ := priced["duration_ms"].(float64); ms <= 0 || priced["ended"] == nil {
		t.Errorf("the priced run: duration_ms %v, ended %v", priced["duration_ms"], priced["ended"])
	}
	vocabWalkRun(t, h, root, res.RunID, true)

	running := byID[live.ID]
	for _, k := range []string{"ended", "duration_ms", "totals"} {
		if _, ok := running[k]; ok {
			t.Errorf("the running run has %s: %v", k, running)
		}
	}
	if running["status"] != "running" || running["started"] == nil {
		t.Errorf("the running run: %v", running)
	}
	msgs := vocabWalkRun(t, h, root, live.ID, true)[d.ID()]
	missing := 0
	for _, m := range msgs {
		_, hasTS := m["ts"]
		_, hasSeq := m["seq"]
		switch {
		case m["error"] != nil:
			missing++
			if m["index"] != 1.0 || hasTS || hasSeq {
				t.Errorf("a message without its record: %v, want message 1, with no ts or seq", m)
			}
		case !hasTS || !hasSeq:
			t.Errorf("message %v: %v, want its record's ts and seq", m["index"], m)
		}
	}
	if len(msgs) < 2 || missing != 1 {
		t.Errorf("the running run's dialog: %v, want message 1 missing", msgs)
	}
}
